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

#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"
#include "distopt/Interfaces/CostOpInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// Recomputes the saved activations of one step.
class Rematerializer {
public:
  Rematerializer(func::FuncOp func, Policy policy)
      : func(func), policy(policy) {}

  /// Splits the step into forward and backward; fails (diagnosed) when its
  /// backward's seed cannot be told.
  LogicalResult analyze();
  /// Recomputes; returns the number of ops cloned.
  int64_t rewrite();

private:
  bool isBackward(Operation *op) const { return backward.contains(op); }
  /// True when `op` (a forward op) is recomputed rather than kept.
  bool isRecomputed(Operation *op) const;
  /// The value to read in place of forward value `value` at the backward
  /// point `before`: a clone of its op (and of the recomputed ops it
  /// reads), made once.
  Value recompute(Value value, Operation *before);
  void chooseCheckpoints();

  func::FuncOp func;
  Policy policy;
  llvm::DenseSet<Operation *> backward;
  /// Forward values kept for the backward (policy `full`).
  llvm::DenseSet<Value> checkpoints;
  IRMapping recomputed;
  int64_t clones = 0;
};
} // namespace

LogicalResult Rematerializer::analyze() {
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
  if (policy == Policy::full)
    chooseCheckpoints();
  return success();
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
  // Chen et al. 2016: the forward cut into sqrt(n) segments of even work;
  // what crosses a segment boundary is kept, the rest recomputed segment
  // by segment in the backward.
  SmallVector<Operation *> forward;
  double total = 0;
  for (Operation &op : func.getBody().front().without_terminator())
    if (!isBackward(&op)) {
      forward.push_back(&op);
      total += getWork(&op);
    }
  int64_t segments = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(std::sqrt(double(forward.size())))));
  llvm::DenseMap<Operation *, int64_t> segmentOf;
  double done = 0;
  for (Operation *op : forward) {
    segmentOf[op] =
        total > 0 ? std::min<int64_t>(segments - 1, done / total * segments)
                  : 0;
    done += getWork(op);
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
  ++clones;
  return recomputed.lookup(value);
}

int64_t Rematerializer::rewrite() {
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
  return clones;
}

namespace {
struct TrainRematPass : public train::impl::TrainRematPassBase<TrainRematPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Policy> kind =
        policy == "none"        ? std::optional(Policy::none)
        : policy == "full"      ? std::optional(Policy::full)
        : policy == "selective" ? std::optional(Policy::selective)
                                : std::nullopt;
    if (!kind) {
      module.emitError() << "train-remat: policy must be none, full or "
                            "selective, got '"
                         << policy << "'";
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
      Rematerializer remat(func, *kind);
      if (failed(remat.analyze()))
        return signalPassFailure();
      remat.rewrite();
      func->setAttr(TrainDialect::kRematAttrName,
                    StringAttr::get(&getContext(), policy));
    }
  }
};
} // namespace
