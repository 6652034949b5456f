//===- PropagateSharding.cpp - infer a sharding for every value -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Debug.h"

#include <deque>

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPROPAGATESHARDINGPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-propagate-sharding"

using namespace mlir;
using namespace mlir::dist;

/// Finds the one mesh the shardings of `func` use; nullptr when there are
/// none. Reports functions that mix meshes.
static FailureOr<MeshOp> findMesh(func::FuncOp func) {
  FlatSymbolRefAttr name;
  Operation *where = nullptr;
  auto visit = [&](ShardingAttr sharding, Operation *op) -> LogicalResult {
    if (!name) {
      name = sharding.getMesh();
      where = op;
      return success();
    }
    if (sharding.getMesh() != name)
      return op->emitOpError("uses mesh ")
             << sharding.getMesh() << " but the function already uses " << name
             << "; one function runs on one mesh";
    return success();
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto s = func.getArgAttrOfType<ShardingAttr>(
            i, DistDialect::kShardingAttrName))
      if (failed(visit(s, func)))
        return failure();
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto s = func.getResultAttrOfType<ShardingAttr>(
            i, DistDialect::kShardingAttrName))
      if (failed(visit(s, func)))
        return failure();
  WalkResult walk = func.walk([&](AnnotateOp op) {
    return failed(visit(op.getSharding(), op)) ? WalkResult::interrupt()
                                               : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!name)
    return MeshOp();
  return lookupMesh(where, name, [&] { return where->emitOpError(); });
}

namespace {
/// The propagation state of one function.
class Propagation {
public:
  Propagation(MeshOp mesh) : mesh(mesh), meshShape(mesh.getShape()) {}

  LogicalResult run(func::FuncOp func);
  /// Values with a sharding, and those of them the user annotated.
  size_t getNumSharded() const { return shardings.size(); }
  size_t getNumAnnotated() const { return annotated.size(); }

private:
  /// Visits one op; returns the values whose sharding it set.
  /// When `strict`, only values all of whose factors are decided by their
  /// neighbours are offered a sharding (nothing is guessed yet).
  FailureOr<SmallVector<Value>> visit(ShardingRuleOpInterface op, bool strict);
  /// Sets `value`'s sharding when it has none.
  bool offer(Value value, TensorSharding sharding);
  void record(func::FuncOp func);

  MeshOp mesh;
  ArrayRef<int64_t> meshShape;
  llvm::DenseMap<Value, TensorSharding> shardings;
  llvm::DenseSet<Value> annotated;
};
} // namespace

bool Propagation::offer(Value value, TensorSharding sharding) {
  if (!isa<RankedTensorType>(value.getType()) || shardings.count(value))
    return false;
  shardings[value] = std::move(sharding);
  return true;
}

/// Prints `[data]` for the axes of a factor in messages.
static std::string axisNames(MeshOp mesh, ArrayRef<int64_t> axes) {
  std::string text = "[";
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (i)
      text += ", ";
    text += cast<StringAttr>(mesh.getAxes()[axis]).getValue();
  }
  return text + "]";
}

FailureOr<SmallVector<Value>> Propagation::visit(ShardingRuleOpInterface op,
                                                 bool strict) {
  ShardingRule rule = op.getShardingRule();
  int64_t numFactors = rule.getNumFactors();
  // Candidates per factor: from annotated values (which must agree) and from
  // inferred ones (the first non-empty wins).
  SmallVector<std::optional<AxisIndices>> fromAnnotation(numFactors),
      inferred(numFactors);
  SmallVector<std::string> annotationSource(numFactors);
  auto consider = [&](Value value, const TensorMapping &mapping, StringRef what,
                      unsigned index) -> LogicalResult {
    auto it = shardings.find(value);
    if (it == shardings.end())
      return success();
    SmallVector<std::optional<AxisIndices>> candidates =
        getFactorAxesOf(rule, mapping, it->second, meshShape);
    bool isAnnotated = annotated.contains(value);
    for (int64_t f = 0; f < numFactors; ++f) {
      if (!candidates[f] ||
          rule.getFactorKinds()[f] == FactorKind::NeedReplication)
        continue;
      std::string source = (what + " #" + Twine(index)).str();
      if (isAnnotated) {
        // A replicated annotation holds a split either way (the op takes a
        // free local slice of it), so only two different splits conflict.
        if (!fromAnnotation[f] ||
            (fromAnnotation[f]->empty() && !candidates[f]->empty())) {
          fromAnnotation[f] = candidates[f];
          annotationSource[f] = source;
        } else if (!candidates[f]->empty() &&
                   *fromAnnotation[f] != *candidates[f]) {
          return op->emitOpError("conflicting shardings for factor '")
                 << ShardingRule::getFactorName(f) << "' (size "
                 << rule.getFactorSizes()[f] << "): " << annotationSource[f]
                 << " is annotated " << axisNames(mesh, *fromAnnotation[f])
                 << ", " << source << " is annotated "
                 << axisNames(mesh, *candidates[f])
                 << "; annotate one of them again to reshard it";
        }
      } else if (!inferred[f] ||
                 (inferred[f]->empty() && !candidates[f]->empty())) {
        inferred[f] = candidates[f];
      }
    }
    return success();
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (failed(consider(operand, rule.getOperandMappings()[i], "operand", i)))
      return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (failed(consider(result, rule.getResultMappings()[i], "result", i)))
      return failure();

  // Nothing known about any factor: wait until a neighbour knows more (the
  // op is visited again then); values never reached end up replicated.
  if (llvm::none_of(fromAnnotation, [](auto &c) { return c.has_value(); }) &&
      llvm::none_of(inferred, [](auto &c) { return c.has_value(); }))
    return SmallVector<Value>();

  // Decide each factor: annotated factors claim their axes first, then
  // inferred ones take what is left (an axis goes to the first factor that
  // claims it).
  FactorAxes factors(numFactors);
  llvm::SmallDenseSet<int64_t> used;
  auto claim = [&](ArrayRef<std::optional<AxisIndices>> choices) {
    for (int64_t f = 0; f < numFactors; ++f) {
      if (!choices[f] || !factors[f].empty())
        continue;
      for (int64_t axis : *choices[f]) {
        if (!used.insert(axis).second)
          break; // Keep the major axes that are still free.
        factors[f].push_back(axis);
      }
    }
  };
  claim(fromAnnotation);
  SmallVector<std::optional<AxisIndices>> rest(inferred);
  for (int64_t f = 0; f < numFactors; ++f)
    if (fromAnnotation[f])
      rest[f].reset();
  claim(rest);
  normalizeFactorAxes(rule, factors, meshShape);
  // A value is decided when each of its factors is: known from a neighbour,
  // or one that must stay whole anyway (the normalized dim of a layer norm).
  auto decided = [&](const TensorMapping &mapping) {
    return !strict || llvm::all_of(mapping, [&](const DimMapping &dim) {
      return llvm::all_of(dim, [&](int64_t f) {
        return fromAnnotation[f].has_value() || inferred[f].has_value() ||
               rule.getFactorKinds()[f] == FactorKind::NeedReplication;
      });
    });
  };
  SmallVector<Value> changed;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (decided(rule.getOperandMappings()[i]) &&
        offer(operand, projectOperand(rule, factors, i)))
      changed.push_back(operand);
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (decided(rule.getResultMappings()[i]) &&
        offer(result, projectResult(rule, factors, i)))
      changed.push_back(result);
  return changed;
}

LogicalResult Propagation::run(func::FuncOp func) {
  // The user's shardings.
  for (BlockArgument arg : func.getArguments())
    if (auto s = func.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), DistDialect::kShardingAttrName)) {
      shardings[arg] = toTensorSharding(s, mesh);
      annotated.insert(arg);
    }
  func.walk([&](AnnotateOp op) {
    shardings[op.getResult()] = toTensorSharding(op.getSharding(), mesh);
    annotated.insert(op.getResult());
  });

  // Only ops with a rule, annotations and the return take part; values of
  // other ops run whole (partitioning replicates them).
  auto takesPart = [](Operation *op) {
    return isa<ShardingRuleOpInterface, AnnotateOp, func::ReturnOp>(op);
  };
  // A FIFO worklist over ops, first in program order; an op is queued again
  // (unless already queued) when one of its values gains a sharding.
  std::deque<Operation *> worklist;
  llvm::DenseSet<Operation *> queued;
  auto enqueue = [&](Operation *op) {
    if (takesPart(op) && queued.insert(op).second)
      worklist.push_back(op);
  };
  func.walk([&](Operation *op) { enqueue(op); });
  auto enqueueNeighbours = [&](Value value) {
    if (Operation *def = value.getDefiningOp())
      enqueue(def);
    for (Operation *user : value.getUsers())
      enqueue(user);
  };
  // Two rounds. First only what follows from known shardings: a value waits
  // while one of its factors is unknown, and annotations do not yet hint
  // their operands (a resharding requested downstream should not reshape
  // the ops upstream when the data flow already decides them). Then the
  // rest, with hints, unknown factors replicated.
  for (bool strict : {true, false}) {
    if (!strict)
      func.walk([&](Operation *op) { enqueue(op); });
    while (!worklist.empty()) {
      Operation *op = worklist.front();
      worklist.pop_front();
      queued.erase(op);
      SmallVector<Value> changed;
      if (auto annotate = dyn_cast<AnnotateOp>(op)) {
        // The operand takes the annotation as a hint when it has nothing.
        TensorSharding hint = shardings[annotate.getResult()];
        hint.partial.clear();
        if (!strict && offer(annotate.getInput(), hint))
          changed.push_back(annotate.getInput());
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, value] : llvm::enumerate(ret.getOperands()))
          if (auto s = func.getResultAttrOfType<ShardingAttr>(
                  i, DistDialect::kShardingAttrName))
            if (offer(value, toTensorSharding(s, mesh)))
              changed.push_back(value);
      } else {
        FailureOr<SmallVector<Value>> set =
            visit(cast<ShardingRuleOpInterface>(op), strict);
        if (failed(set))
          return failure();
        changed = std::move(*set);
      }
      for (Value value : changed)
        enqueueNeighbours(value);
    }
  }
  record(func);
  return success();
}

void Propagation::record(func::FuncOp func) {
  auto shardingOf = [&](Value value) {
    auto it = shardings.find(value);
    int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
    return toShardingAttr(
        it == shardings.end() ? TensorSharding::replicated(rank) : it->second,
        mesh);
  };
  FunctionShardingUpdate update(func);
  for (BlockArgument arg : func.getArguments())
    if (isa<RankedTensorType>(arg.getType()))
      update.setArgument(arg.getArgNumber(), shardingOf(arg));
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 0 || isa<AnnotateOp>(op) ||
        !llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
      return;
    SmallVector<Attribute> results;
    for (Value result : op->getResults())
      results.push_back(shardingOf(result));
    op->setAttr(DistDialect::kResultShardingsAttrName,
                ArrayAttr::get(op->getContext(), results));
  });
  // Results without a sharding are returned as the value is laid out, with
  // pending sums reduced.
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (!isa<RankedTensorType>(value.getType()) ||
        func.getResultAttr(i, DistDialect::kShardingAttrName))
      continue;
    TensorSharding sharding = toTensorSharding(shardingOf(value), mesh);
    sharding.partial.clear();
    update.setResult(i, toShardingAttr(sharding, mesh));
  }
  update.apply();
}

namespace {
struct DistPropagateShardingPass
    : public mlir::dist::impl::DistPropagateShardingPassBase<
          DistPropagateShardingPass> {
  void runOnOperation() override {
    shareStepShardings();
    WalkResult result = getOperation().walk([&](func::FuncOp func) {
      FailureOr<MeshOp> mesh = findMesh(func);
      if (failed(mesh))
        return WalkResult::interrupt();
      if (!*mesh || func.isExternal())
        return WalkResult::advance();
      Propagation propagation(*mesh);
      if (failed(propagation.run(func)))
        return WalkResult::interrupt();
      LLVM_DEBUG(llvm::dbgs()
                 << DEBUG_TYPE << ": @" << func.getSymName() << ": "
                 << propagation.getNumSharded() << " sharded values, "
                 << propagation.getNumAnnotated() << " annotated\n");
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// An evaluation function (train-derive-eval) takes its arrays as its
  /// training step does: each argument gets the sharding of the step's
  /// argument of the same name (a ZeRO-3 parameter stays sharded, and is
  /// gathered where the forward pass reads it).
  void shareStepShardings() {
    ModuleOp module = getOperation();
    auto shardingName =
        StringAttr::get(module.getContext(), DistDialect::kShardingAttrName);
    for (auto eval : module.getOps<func::FuncOp>()) {
      auto of = eval->getAttrOfType<FlatSymbolRefAttr>(
          train::TrainDialect::kEvalOfAttrName);
      auto step = of ? module.lookupSymbol<func::FuncOp>(of) : nullptr;
      if (!step)
        continue;
      llvm::StringMap<Attribute> byName;
      for (unsigned i = 0; i < step.getNumArguments(); ++i)
        if (auto name = step.getArgAttrOfType<StringAttr>(
                i, train::TrainDialect::kNameAttrName))
          if (Attribute sharding = step.getArgAttr(i, shardingName))
            byName[name.getValue()] = sharding;
      for (unsigned i = 0; i < eval.getNumArguments(); ++i)
        if (auto name = eval.getArgAttrOfType<StringAttr>(
                i, train::TrainDialect::kNameAttrName))
          if (Attribute sharding = byName.lookup(name.getValue()))
            eval.setArgAttr(i, shardingName, sharding);
    }
  }
};
} // namespace
