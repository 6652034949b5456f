//===- Remat.cpp - recompute activations in the backward pass -------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// train-remat: the forward values the backward pass reads are recomputed
// right before their first backward use instead of being kept alive from
// the forward, from values the policy keeps (checkpoints). The backward is
// what depends on the loss's seed (LossSeed.h); the recomputation clones
// the same pure ops on the same operands, so the step computes bitwise what
// it computed.
//
//===----------------------------------------------------------------------===//

#include "LossSeed.h"

#include "distopt/Analysis/CostModel.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"
#include "distopt/Interfaces/CostOpInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace mlir::train {
#define GEN_PASS_DEF_TRAINREMATPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
enum class Policy { none, full, selective };

/// The arithmetic intensity from which `selective` keeps an op's results:
/// products (a 32^3 matmul does 5.3 FLOPs per byte, larger ones more)
/// rather than elementwise work, softmax and norms (below 3).
constexpr double kKeptFlopsPerByte = 4;

/// Where `full` keeps values: at ceil(sqrt(n)) segments of even work, or
/// at each module's input (a layer: a numbered module of the parameters'
/// names).
enum class Checkpoints { sqrt, layer };

/// What a parameter's module is: its numbered module, else its name up to
/// the last component (`ln_f` for `ln_f.weight`).
static StringRef getModule(StringRef name) {
  if (std::optional<StringRef> numbered = getNumberedModule(name))
    return *numbered;
  return name.rsplit('.').first;
}

/// Recomputes the saved activations of one step.
class Rematerializer {
public:
  Rematerializer(func::FuncOp func, Policy policy, Checkpoints checkpointAt,
                 int64_t maxLayers)
      : func(func), policy(policy), checkpointAt(checkpointAt),
        maxLayers(maxLayers) {}

  /// Splits the step into forward and backward, and the forward into its
  /// modules; fails (diagnosed) when its backward's seed cannot be told, or
  /// when the step needs layers and has none.
  LogicalResult analyze(bool needLayers);
  /// Recomputes the saved activations before their first backward use.
  void rewrite();
  /// The numbered modules of the forward, in the order it runs them.
  int64_t getNumLayers() const { return numLayers; }

private:
  bool isBackward(Operation *op) const { return backward.contains(op); }
  /// True when `op` (a forward op) is recomputed rather than kept.
  bool isRecomputed(Operation *op) const;
  /// The value to read in place of forward value `value` at the backward
  /// point `before`: a clone of its op (and of the recomputed ops it
  /// reads), made once.
  Value recompute(Value value, Operation *before);
  void chooseCheckpoints();
  /// Cuts the forward at the first op reading each module's parameters.
  void findModules();

  func::FuncOp func;
  Policy policy;
  Checkpoints checkpointAt;
  /// Only the first `maxLayers` layers recompute (-1: every op may).
  int64_t maxLayers;
  llvm::DenseSet<Operation *> backward;
  /// Per forward op: its module's index in order, and that module's layer
  /// index (-1 for a module that is not numbered, e.g. an embedding).
  llvm::DenseMap<Operation *, int64_t> moduleOf, layerOf;
  int64_t numLayers = 0;
  /// Forward values kept for the backward (policy `full`).
  llvm::DenseSet<Value> checkpoints;
  IRMapping recomputed;
};
} // namespace

LogicalResult Rematerializer::analyze(bool needLayers) {
  Value loss = mixed_precision::getStepLoss(func);
  if (!loss)
    return emitError(func.getLoc())
           << "train-remat: '" << func.getSymName()
           << "' returns no loss: it cannot tell its backward pass";
  FailureOr<mixed_precision::Linearity> seed = mixed_precision::findSeed(
      func, loss, mixed_precision::getUpdateGradients(func), /*report=*/true,
      "train-remat", "activation recomputation");
  if (failed(seed))
    return failure();
  // The backward region: from the first op that reads the seed on. What
  // memory recomputation saves is positional: a forward value the region
  // reads lives from the forward to its last read there (ops the region
  // runs that do not depend on the seed, as a transposed weight or a
  // mask, are read there too).
  bool inBackward = false;
  for (Operation &op : func.getBody().front().without_terminator()) {
    inBackward |= llvm::any_of(op.getOperands(), [&](Value v) {
      return v == seed->seed || seed->dependent.contains(v);
    });
    if (inBackward)
      backward.insert(&op);
  }
  findModules();
  if (needLayers && numLayers == 0)
    return emitError(func.getLoc())
           << "train-remat: '" << func.getSymName()
           << "' has no layers to recompute by: no parameter's train.name "
              "has a numbered module (as 'blocks.3.weight'); use "
              "checkpoints=sqrt without layers or budget";
  if (policy == Policy::full)
    chooseCheckpoints();
  return success();
}

void Rematerializer::findModules() {
  TrainingStep step = TrainingStep::get(func);
  // A parameter's module, and that of the values made from it alone (its
  // 16-bit copy, its transpose), which run apart from the module.
  llvm::DenseMap<Value, StringRef> moduleOfValue;
  for (const StepValue &arg : step.arguments)
    if (arg.role == Role::param && arg.name)
      moduleOfValue[func.getArgument(arg.index)] = getModule(arg.name);
  llvm::StringMap<int64_t> index;
  int64_t current = -1, currentLayer = -1;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (isBackward(&op))
      continue;
    std::optional<StringRef> only;
    bool fromOne = op.getNumOperands() > 0;
    for (Value operand : op.getOperands()) {
      auto it = moduleOfValue.find(operand);
      if (it == moduleOfValue.end() || (only && *only != it->second)) {
        fromOne = false;
        break;
      }
      only = it->second;
    }
    if (fromOne) {
      for (Value result : op.getResults())
        moduleOfValue[result] = *only;
    } else {
      for (Value operand : op.getOperands()) {
        auto it = moduleOfValue.find(operand);
        if (it == moduleOfValue.end())
          continue;
        auto [entry, added] = index.try_emplace(it->second, index.size());
        if (!added || entry->second <= current)
          continue;
        current = entry->second;
        currentLayer =
            getNumberedModule(it->second) ? numLayers++ : int64_t(-1);
      }
    }
    moduleOf[&op] = fromOne ? -1 : current;
    layerOf[&op] = fromOne ? -1 : currentLayer;
  }
}

/// The estimated work of `op`, to balance segments by.
static double getWork(Operation *op) {
  auto cost = dyn_cast<dist::CostOpInterface>(op);
  if (!cost)
    return 0;
  dist::OpCost c = cost.getCost();
  return c.flops + 4.0 * (c.bytesRead + c.bytesWritten);
}

void Rematerializer::chooseCheckpoints() {
  SmallVector<Operation *> forward;
  double total = 0;
  for (Operation &op : func.getBody().front().without_terminator())
    if (!isBackward(&op)) {
      forward.push_back(&op);
      total += getWork(&op);
    }
  llvm::DenseMap<Operation *, int64_t> segmentOf;
  if (checkpointAt == Checkpoints::layer) {
    // Megatron's full recomputation: each module's input is kept, its
    // inside recomputed.
    segmentOf = moduleOf;
  } else {
    // Chen et al. 2016: the forward cut into sqrt(n) segments of even
    // work; what crosses a segment boundary is kept, the rest recomputed
    // segment by segment in the backward.
    int64_t segments = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(std::sqrt(double(forward.size())))));
    double done = 0;
    for (Operation *op : forward) {
      segmentOf[op] =
          total > 0 ? std::min<int64_t>(segments - 1, done / total * segments)
                    : 0;
      done += getWork(op);
    }
  }
  for (Operation *op : forward)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (auto it = segmentOf.find(user);
            it != segmentOf.end() && it->second != segmentOf[op])
          checkpoints.insert(result);
}

bool Rematerializer::isRecomputed(Operation *op) const {
  if (!op || isBackward(op) || op->getNumRegions() || !isPure(op) ||
      op->hasTrait<OpTrait::ConstantLike>())
    return false;
  // Per layer: only (the first `maxLayers`) layers recompute; the modules
  // around them (embeddings, the head) keep what they make.
  if (checkpointAt == Checkpoints::layer || maxLayers >= 0) {
    int64_t layer = layerOf.lookup(op);
    if (layer < 0 || (maxLayers >= 0 && layer >= maxLayers))
      return false;
  }
  switch (policy) {
  case Policy::none:
    return false;
  case Policy::selective: {
    // Megatron's selective recomputation keeps what is costly to recompute
    // (the products) and recomputes the cheap, large rest: here, by
    // arithmetic intensity, what does fewer than kKeptFlopsPerByte FLOPs
    // per byte it reads and writes.
    auto cost = dyn_cast<dist::CostOpInterface>(op);
    if (!cost)
      return true;
    dist::OpCost c = cost.getCost();
    return c.flops < kKeptFlopsPerByte * (c.bytesRead + c.bytesWritten);
  }
  case Policy::full:
    return llvm::none_of(op->getResults(),
                         [&](Value r) { return checkpoints.contains(r); });
  }
  return false;
}

Value Rematerializer::recompute(Value value, Operation *before) {
  if (Value done = recomputed.lookupOrNull(value))
    return done;
  Operation *op = value.getDefiningOp();
  if (!isRecomputed(op))
    return value;
  for (Value operand : op->getOperands())
    recompute(operand, before);
  OpBuilder builder(before);
  builder.clone(*op, recomputed);
  return recomputed.lookup(value);
}

void Rematerializer::rewrite() {
  // Saved activations in the order the backward first reads them: a clone
  // made for an earlier read dominates the later ones.
  Block &body = func.getBody().front();
  llvm::MapVector<Value, Operation *> firstUse;
  for (Operation &op : body.without_terminator()) {
    if (!isBackward(&op))
      continue;
    for (Value operand : op.getOperands())
      if (isRecomputed(operand.getDefiningOp()))
        firstUse.insert({operand, &op});
  }
  for (auto [value, user] : firstUse) {
    Value copy = recompute(value, user);
    value.replaceUsesWithIf(
        copy, [&](OpOperand &use) { return isBackward(use.getOwner()); });
  }
}

/// The activation peak of `func` with its first `layers` layers
/// recomputed, as the cost model counts it (on a copy).
static int64_t getPeakWith(func::FuncOp func, Policy policy,
                           Checkpoints checkpointAt, int64_t layers) {
  OpBuilder builder(func);
  auto copy = cast<func::FuncOp>(builder.clone(*func));
  Rematerializer remat(copy, policy, checkpointAt, layers);
  int64_t peak = 0;
  if (succeeded(remat.analyze(/*needLayers=*/true))) {
    remat.rewrite();
    peak = dist::analyzeStepCost(copy).activationPeakBytes;
  }
  copy.erase();
  return peak;
}

namespace {
struct TrainRematPass : public train::impl::TrainRematPassBase<TrainRematPass> {
  using Base::Base;

  /// The fewest of `func`'s layers whose recomputation brings its
  /// activation peak within `budget` (remarked), or a diagnosed failure.
  FailureOr<int64_t> fitBudget(func::FuncOp func, Policy kind,
                               Checkpoints checkpointAt) {
    Rematerializer probe(func, kind, checkpointAt, /*maxLayers=*/0);
    if (failed(probe.analyze(/*needLayers=*/true)))
      return failure();
    int64_t total = probe.getNumLayers();
    int64_t unchanged = dist::analyzeStepCost(func).activationPeakBytes;
    int64_t all = getPeakWith(func, kind, checkpointAt, total);
    if (all > static_cast<int64_t>(budget))
      return func.emitError()
             << "train-remat: recomputing all " << total << " layers of '"
             << func.getSymName() << "' (policy=" << policy
             << ") leaves an activation peak of " << all
             << " bytes, over the budget of " << static_cast<int64_t>(budget)
             << " bytes"
             << (kind == Policy::selective ? "; try policy=full" : "");
    // The peak falls as layers are added: the fewest that fit.
    int64_t low = 0, high = total, peak = all;
    while (low < high) {
      int64_t mid = (low + high) / 2;
      int64_t midPeak = getPeakWith(func, kind, checkpointAt, mid);
      if (midPeak <= static_cast<int64_t>(budget)) {
        high = mid;
        peak = midPeak;
      } else {
        low = mid + 1;
      }
    }
    if (high == 0)
      peak = unchanged;
    emitRemark(func.getLoc())
        << "train-remat: recomputing the first " << high << " of " << total
        << " layers of '" << func.getSymName() << "': activation peak " << peak
        << " bytes (budget " << static_cast<int64_t>(budget) << ", "
        << unchanged << " without recomputation)";
    return high;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Policy> kind =
        policy == "none"        ? std::optional(Policy::none)
        : policy == "full"      ? std::optional(Policy::full)
        : policy == "selective" ? std::optional(Policy::selective)
                                : std::nullopt;
    std::optional<Checkpoints> checkpointAt =
        checkpoints == "sqrt"    ? std::optional(Checkpoints::sqrt)
        : checkpoints == "layer" ? std::optional(Checkpoints::layer)
                                 : std::nullopt;
    if (!kind || !checkpointAt || layers < -1 || budget < 0 ||
        (layers >= 0 && budget > 0)) {
      module.emitError()
          << "train-remat: needs policy=none|full|selective, "
             "checkpoints=sqrt|layer, layers >= 0 (or -1: all) or budget > 0 "
             "bytes (not both); got policy='"
          << policy << "' checkpoints='" << checkpoints
          << "' layers=" << static_cast<int64_t>(layers)
          << " budget=" << static_cast<int64_t>(budget);
      return signalPassFailure();
    }
    bool byLayer =
        checkpointAt == Checkpoints::layer || layers >= 0 || budget > 0;
    if ((*kind != Policy::full && checkpointAt == Checkpoints::layer) ||
        (*kind == Policy::none && byLayer)) {
      module.emitError() << "train-remat: "
                         << (*kind == Policy::none
                                 ? "layers and budget need policy=full or "
                                   "selective"
                                 : "checkpoints=layer is policy=full's")
                         << ", got policy='" << policy << "'";
      return signalPassFailure();
    }
    if (*kind == Policy::none)
      return markAllAnalysesPreserved();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || !TrainingStep::isTrainingStep(func) ||
          TrainingStep::isEvalFunction(func))
        continue;
      if (func->hasAttr(TrainDialect::kRematAttrName)) {
        func.emitError() << "train-remat: '" << func.getSymName()
                         << "' already recomputes its activations ("
                         << func->getAttr(TrainDialect::kRematAttrName) << ")";
        return signalPassFailure();
      }
      if (!func.getBody().hasOneBlock()) {
        func.emitError() << "train-remat: '" << func.getSymName()
                         << "' must have one block";
        return signalPassFailure();
      }
      int64_t maxLayers = layers;
      if (budget > 0) {
        FailureOr<int64_t> fit = fitBudget(func, *kind, *checkpointAt);
        if (failed(fit))
          return signalPassFailure();
        maxLayers = *fit;
      }
      Rematerializer remat(func, *kind, *checkpointAt, maxLayers);
      if (failed(remat.analyze(byLayer)))
        return signalPassFailure();
      remat.rewrite();
      std::string applied = policy;
      if (checkpointAt == Checkpoints::layer)
        applied += " checkpoints=layer";
      if (maxLayers >= 0)
        applied += " layers=" + std::to_string(maxLayers);
      func->setAttr(TrainDialect::kRematAttrName,
                    StringAttr::get(&getContext(), applied));
    }
  }
};
} // namespace
