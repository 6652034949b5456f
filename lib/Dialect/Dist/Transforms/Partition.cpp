//===- Partition.cpp - rewrite a sharded program into its SPMD program ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/Debug.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPARTITIONPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-partition"

using namespace mlir;
using namespace mlir::dist;

namespace {
/// Rewrites one function; values are rewritten in place (their types become
/// local), and `current` tracks how each local value is sharded.
class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshOp mesh, bool scalePartials)
      : func(func), mesh(mesh), meshShape(mesh.getShape()),
        builder(func.getContext()), scalePartials(scalePartials) {}

  LogicalResult run();

private:
  /// Emits the collectives that move `value` (sharded as `current[value]`,
  /// global shape `shape`) to `target`, before `before`; returns the new
  /// local value. Unless `reuse` is false (a `dist.annotate`, which asks
  /// for a resharding at its place), an earlier identical resharding of
  /// `value` is reused.
  FailureOr<Value> reshard(Value value, ArrayRef<int64_t> shape,
                           const TensorSharding &target, Operation *user,
                           bool reuse = true);
  Value emitStep(Value value, const ReshardStep &step, Location loc);
  ArrayAttr axisNames(ArrayRef<int64_t> axes);
  RankedTensorType localType(RankedTensorType global,
                             const TensorSharding &sharding);
  LogicalResult checkDivisible(Value value, RankedTensorType global,
                               const TensorSharding &sharding,
                               Operation *where);
  LogicalResult partitionOp(Operation *op);
  /// Gives `op` the offsets of its shard along its rule's positional factors
  /// (sharded as `factors`).
  void setShardOffsets(ShardingRuleOpInterface op, const ShardingRule &rule,
                       const FactorAxes &factors);
  /// The partial axes all of `op`'s operands share, when they are all
  /// pending sums over the same axes.
  std::optional<AxisIndices> getCommonPartial(Operation *op);
  /// The operand of `op` that is a partial sum the op scales by scalars
  /// (ShardingRule::getScaledOperands), the other operands being whole
  /// scalars; none otherwise.
  /// Whether a user of `value` (a partial sum) needs it whole, so that it
  /// is reduced anyway: one that is neither linear nor scales it.
  bool isReducedAnyway(Value value) const;
  std::optional<unsigned> getScaledPartial(Operation *op,
                                           const ShardingRule &rule);
  LogicalResult partitionReturn(func::ReturnOp ret);
  /// Gives `value` (computed from `from` without resharding it) `from`'s
  /// sharding and global type.
  void inherit(Value value, Value from);
  TensorSharding recorded(Value value, int64_t rank);

  func::FuncOp func;
  MeshOp mesh;
  ArrayRef<int64_t> meshShape;
  OpBuilder builder;
  /// See the pass's scale-partials option.
  bool scalePartials;
  /// Global types and shardings, read before anything is rewritten.
  llvm::DenseMap<Value, RankedTensorType> globalTypes;
  llvm::DenseMap<Value, TensorSharding> current;
  llvm::DenseMap<Operation *, ShardingRule> rules;
  /// Reshardings already emitted per value (target, result), so that a
  /// value used by several ops is communicated once.
  llvm::DenseMap<Value, SmallVector<std::pair<TensorSharding, Value>, 1>>
      reshardings;
};
} // namespace

ArrayAttr Partitioner::axisNames(ArrayRef<int64_t> axes) {
  SmallVector<Attribute> names;
  for (int64_t axis : axes)
    names.push_back(mesh.getAxes()[axis]);
  return builder.getArrayAttr(names);
}

RankedTensorType Partitioner::localType(RankedTensorType global,
                                        const TensorSharding &sharding) {
  return global.clone(getLocalShape(global.getShape(), sharding, meshShape));
}

LogicalResult Partitioner::checkDivisible(Value value, RankedTensorType global,
                                          const TensorSharding &sharding,
                                          Operation *where) {
  for (auto [dim, axes] : llvm::enumerate(sharding.dims)) {
    int64_t group = getGroupSize(meshShape, axes);
    if (global.getDimSize(dim) % group == 0)
      continue;
    std::string name;
    llvm::raw_string_ostream os(name);
    value.printAsOperand(os, OpPrintingFlags());
    // An argument is reported at its own location: an error on the
    // function would print the whole function.
    InFlightDiagnostic diag = isa<BlockArgument>(value)
                                  ? mlir::emitError(value.getLoc())
                                  : where->emitOpError();
    return diag << "cannot shard " << name << ": dim " << dim << " of size "
                << global.getDimSize(dim) << " does not divide over mesh axes "
                << axisNames(axes) << " (" << group << " devices)";
  }
  return success();
}

Value Partitioner::emitStep(Value value, const ReshardStep &step,
                            Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t group = getGroupSize(meshShape, step.axes);
  StringRef meshRef = mesh.getSymName();
  ArrayAttr axes = axisNames(step.axes);
  switch (step.kind) {
  case ReshardStep::Kind::AllReduce:
    return AllReduceOp::create(builder, loc, TypeRange{type}, ValueRange{value},
                               ReductionKind::sum, meshRef, axes)
        .getResult(0);
  case ReshardStep::Kind::ReduceScatter:
    shape[step.dim] /= group;
    return ReduceScatterOp::create(builder, loc, TypeRange{type.clone(shape)},
                                   ValueRange{value},
                                   builder.getDenseI64ArrayAttr({step.dim}),
                                   ReductionKind::sum, meshRef, axes)
        .getResult(0);
  case ReshardStep::Kind::AllGather:
    shape[step.dim] *= group;
    return AllGatherOp::create(builder, loc, type.clone(shape), value, step.dim,
                               meshRef, axes);
  case ReshardStep::Kind::AllToAll:
    shape[step.dim] *= group;
    shape[step.toDim] /= group;
    return AllToAllOp::create(builder, loc, type.clone(shape), value,
                              step.toDim, step.dim, meshRef, axes);
  case ReshardStep::Kind::LocalSlice:
    shape[step.dim] /= group;
    return LocalSliceOp::create(builder, loc, type.clone(shape), value,
                                step.dim, meshRef, axes);
  }
  llvm_unreachable("unknown step");
}

FailureOr<Value> Partitioner::reshard(Value value, ArrayRef<int64_t> shape,
                                      const TensorSharding &target,
                                      Operation *user, bool reuse) {
  const TensorSharding &from = current.at(value);
  if (from == target)
    return value;
  if (reuse)
    for (const auto &[done, result] : reshardings.lookup(value))
      if (done == target)
        return result;
  std::string reason;
  FailureOr<SmallVector<ReshardStep>> steps =
      planResharding(from, target, &reason);
  if (failed(steps))
    return user->emitOpError("cannot reshard an operand from ")
           << toShardingAttr(from, mesh) << " to "
           << toShardingAttr(target, mesh) << ": " << reason;
  Value result = value;
  TensorSharding sharding = from;
  RankedTensorType global = globalTypes.at(value);
  for (const ReshardStep &step : *steps) {
    result = emitStep(result, step, user->getLoc());
    applyReshardStep(sharding, step);
    current[result] = sharding;
    globalTypes[result] = global;
  }
  if (reuse)
    reshardings[value].push_back({target, result});
  return result;
}

TensorSharding Partitioner::recorded(Value value, int64_t rank) {
  Operation *def = value.getDefiningOp();
  auto shardings =
      def ? def->getAttrOfType<ArrayAttr>(DistDialect::kResultShardingsAttrName)
          : ArrayAttr();
  if (!shardings)
    return TensorSharding::replicated(rank);
  return toTensorSharding(
      cast<ShardingAttr>(shardings[cast<OpResult>(value).getResultNumber()]),
      mesh);
}

void Partitioner::inherit(Value value, Value from) {
  // Copies first: inserting `value` may grow the maps and move the entries
  // of `from` (a reference into them would dangle).
  TensorSharding sharding = current.at(from);
  RankedTensorType global = globalTypes.at(from);
  current[value] = std::move(sharding);
  globalTypes[value] = global;
}

/// Multiplies `value` by `scale` (an arith.mulf with a splat constant).
static Value scaleBy(OpBuilder &builder, Location loc, Value value,
                     double scale) {
  auto type = cast<RankedTensorType>(value.getType());
  auto element = cast<FloatType>(type.getElementType());
  auto splat = DenseElementsAttr::get(
      type, builder.getFloatAttr(element, scale).getValue());
  Value constant = arith::ConstantOp::create(builder, loc, type, splat);
  return arith::MulFOp::create(builder, loc, value, constant);
}

std::optional<AxisIndices> Partitioner::getCommonPartial(Operation *op) {
  std::optional<AxisIndices> common;
  for (Value operand : op->getOperands()) {
    auto it = current.find(operand);
    if (it == current.end() || it->second.partial.empty())
      return std::nullopt;
    if (common && *common != it->second.partial)
      return std::nullopt;
    common = it->second.partial;
  }
  return common;
}

bool Partitioner::isReducedAnyway(Value value) const {
  for (OpOperand &use : value.getUses()) {
    auto it = rules.find(use.getOwner());
    if (it == rules.end())
      return true;
    const ShardingRule &rule = it->second;
    if (!rule.isLinear() &&
        !(scalePartials &&
          llvm::is_contained(rule.getScaledOperands(), use.getOperandNumber())))
      return true;
  }
  return false;
}

std::optional<unsigned>
Partitioner::getScaledPartial(Operation *op, const ShardingRule &rule) {
  std::optional<unsigned> found;
  for (OpOperand &operand : op->getOpOperands()) {
    auto it = current.find(operand.get());
    bool partial = it != current.end() && !it->second.partial.empty();
    if (!partial) {
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type || type.getRank() != 0)
        return std::nullopt;
      continue;
    }
    if (found || !llvm::is_contained(rule.getScaledOperands(),
                                     operand.getOperandNumber()))
      return std::nullopt;
    found = operand.getOperandNumber();
  }
  return found;
}

void Partitioner::setShardOffsets(ShardingRuleOpInterface op,
                                  const ShardingRule &rule,
                                  const FactorAxes &factors) {
  SmallVector<Value> offsets;
  SmallVector<int64_t> sizes;
  Location loc = op->getLoc();
  for (int64_t factor : rule.getPositionalFactors()) {
    int64_t size = rule.getFactorSizes()[factor];
    sizes.push_back(size);
    if (factors[factor].empty()) {
      offsets.push_back(arith::ConstantIndexOp::create(builder, loc, 0));
      continue;
    }
    offsets.push_back(ShardOffsetOp::create(
        builder, loc, builder.getIndexType(), mesh.getSymName(),
        axisNames(factors[factor]), size));
  }
  op.setShardOffsets(offsets, sizes);
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  auto ruleIt = rules.find(op);
  SmallVector<TensorSharding> operandTargets, produced;
  FactorAxes factors;
  if (ruleIt != rules.end()) {
    const ShardingRule &rule = ruleIt->second;
    // The factors follow the results' recorded shardings, then the operands'
    // for the factors no result maps (the reductions).
    SmallVector<std::optional<AxisIndices>> chosen(rule.getNumFactors());
    auto take = [&](Value value, const TensorMapping &mapping,
                    const TensorSharding &sharding) {
      auto candidates = getFactorAxesOf(rule, mapping, sharding, meshShape);
      for (auto [f, axes] : llvm::enumerate(candidates))
        if (axes && !chosen[f] &&
            rule.getFactorKinds()[f] != FactorKind::NeedReplication)
          chosen[f] = *axes;
    };
    auto takeResults = [&] {
      for (auto [i, result] : llvm::enumerate(op->getResults()))
        take(result, rule.getResultMappings()[i],
             recorded(result, globalTypes.at(result).getRank()));
    };
    auto takeOperands = [&] {
      for (auto [i, operand] : llvm::enumerate(op->getOperands()))
        if (current.count(operand))
          take(operand, rule.getOperandMappings()[i], current.at(operand));
    };
    // A narrowing conversion runs where its operand is and moves the narrow
    // result (a ZeRO-3 weight gathered in 16 bits); other ops follow their
    // results' layout.
    if (isNarrowingConversion(op)) {
      takeOperands();
      takeResults();
    } else {
      takeResults();
      takeOperands();
    }
    llvm::SmallDenseSet<int64_t> used;
    factors.resize(rule.getNumFactors());
    for (auto [f, axes] : llvm::enumerate(chosen))
      if (axes)
        for (int64_t axis : *axes) {
          if (!used.insert(axis).second)
            break;
          factors[f].push_back(axis);
        }
    normalizeFactorAxes(rule, factors, meshShape);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      operandTargets.push_back(projectOperand(rule, factors, i));
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      produced.push_back(projectResult(rule, factors, i));
    // A linear op of partial sums over the same axes is their partial sum:
    // the reduction waits for a user that needs the value whole, unless
    // another user needs an operand whole (then it reads that sum too,
    // rather than a second reduction after it: a gradient's finiteness).
    auto reducedAnyway = [&](ArrayRef<Value> values) {
      return llvm::any_of(values, [&](Value v) { return isReducedAnyway(v); });
    };
    if (std::optional<AxisIndices> partial = getCommonPartial(op)) {
      if (rule.isLinear() &&
          !reducedAnyway(llvm::to_vector(op->getOperands()))) {
        for (TensorSharding &target : operandTargets)
          target.partial = *partial;
        for (TensorSharding &result : produced)
          result.partial = *partial;
      }
    } else if (std::optional<unsigned> scaled =
                   scalePartials ? getScaledPartial(op, rule) : std::nullopt;
               scaled && !reducedAnyway(op->getOperand(*scaled))) {
      // A partial sum times (or over) a whole scalar stays a partial sum
      // (an unscaled gradient before its reduce-scatter).
      AxisIndices axes = current.find(op->getOperand(*scaled))->second.partial;
      operandTargets[*scaled].partial = axes;
      for (TensorSharding &result : produced)
        result.partial = axes;
    }
  } else {
    // An op without a rule runs on whole values.
    for (Value operand : op->getOperands())
      if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
        operandTargets.push_back(TensorSharding::replicated(type.getRank()));
      else
        operandTargets.push_back({});
    for (Value result : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType()))
        produced.push_back(TensorSharding::replicated(type.getRank()));
      else
        produced.push_back({});
  }

  // What propagation decided for the results, read before the op changes.
  SmallVector<TensorSharding> wanted;
  for (Value result : op->getResults())
    if (auto type = dyn_cast<RankedTensorType>(result.getType()))
      wanted.push_back(recorded(result, type.getRank()));
    else
      wanted.push_back({});

  builder.setInsertionPoint(op);
  // Ops whose result depends on global positions learn where their shard
  // starts when one of those positions is split (the operands they get may
  // be appended, so this comes first).
  if (ruleIt != rules.end() &&
      llvm::any_of(ruleIt->second.getPositionalFactors(),
                   [&](int64_t factor) { return !factors[factor].empty(); }))
    setShardOffsets(cast<ShardingRuleOpInterface>(op), ruleIt->second, factors);
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!current.count(operand))
      continue;
    RankedTensorType global = globalTypes.at(operand);
    if (failed(checkDivisible(operand, global, operandTargets[i], op)))
      return failure();
    FailureOr<Value> local =
        reshard(operand, global.getShape(), operandTargets[i], op);
    if (failed(local))
      return failure();
    op->setOperand(i, *local);
  }
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto global = dyn_cast<RankedTensorType>(result.getType());
    if (!global)
      continue;
    if (failed(checkDivisible(result, global, produced[i], op)))
      return failure();
    result.setType(localType(global, produced[i]));
    current[result] = produced[i];
  }
  op->removeAttr(DistDialect::kResultShardingsAttrName);
  if (ruleIt != rules.end())
    cast<ShardingRuleOpInterface>(op).adaptToLocalShapes();
  if (failed(mlir::verify(op)))
    return op->emitOpError("cannot run on local shapes after partitioning");

  // Scale the results of ops that average over a sharded factor, then bring
  // each result to its recorded sharding.
  builder.setInsertionPointAfter(op);
  for (OpResult result : op->getResults()) {
    if (!current.count(result))
      continue;
    // The uses to redirect, taken before new users of `result` appear.
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : result.getUses())
      uses.push_back(&use);
    Value value = result;
    if (ruleIt != rules.end()) {
      // A max / min over a split factor: combine the devices' results now.
      const ShardingRule &rule = ruleIt->second;
      AxisIndices combined =
          getCombinedAxes(rule, factors, result.getResultNumber());
      if (!combined.empty()) {
        ReductionKind kind = rule.getCombiner() == Combiner::Max
                                 ? ReductionKind::max
                                 : ReductionKind::min;
        value =
            AllReduceOp::create(builder, op->getLoc(),
                                TypeRange{value.getType()}, ValueRange{value},
                                kind, mesh.getSymName(), axisNames(combined))
                .getResult(0);
        inherit(value, result);
      }
      int64_t shards = 1;
      for (int64_t f : ruleIt->second.getMeanFactors())
        shards *= getGroupSize(meshShape, factors[f]);
      if (shards > 1) {
        value = scaleBy(builder, op->getLoc(), value, 1.0 / shards);
        inherit(value, result);
      }
    }
    // Lay the result out as propagation decided, but leave pending sums
    // pending (unless an axis of one splits a dim): each user reduces them
    // when it needs them whole, as late as possible and once per target.
    TensorSharding target = wanted[result.getResultNumber()];
    target.partial.clear();
    for (int64_t axis : current.at(value).partial)
      if (!target.usesAxis(axis))
        target.partial.push_back(axis);
    if (failed(checkDivisible(result, globalTypes.at(result), target, op)))
      return failure();
    FailureOr<Value> local =
        reshard(value, globalTypes.at(result).getShape(), target, op);
    if (failed(local))
      return failure();
    for (OpOperand *use : uses)
      use->set(*local);
    builder.setInsertionPointAfterValue(*local);
  }
  return success();
}

LogicalResult Partitioner::partitionReturn(func::ReturnOp ret) {
  builder.setInsertionPoint(ret);
  SmallVector<Type> resultTypes;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    auto attr = func.getResultAttrOfType<ShardingAttr>(
        i, DistDialect::kShardingAttrName);
    if (!attr || !current.count(operand)) {
      resultTypes.push_back(operand.getType());
      continue;
    }
    TensorSharding target = toTensorSharding(attr, mesh);
    RankedTensorType global = globalTypes.at(operand);
    if (failed(checkDivisible(operand, global, target, ret)))
      return failure();
    FailureOr<Value> local = reshard(operand, global.getShape(), target, ret);
    if (failed(local))
      return failure();
    ret.setOperand(i, *local);
    resultTypes.push_back(localType(global, target));
  }
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 resultTypes));
  return success();
}

LogicalResult Partitioner::run() {
  // Read everything global first: rules depend on the global types.
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType()))
        globalTypes[result] = type;
    if (auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op))
      rules.try_emplace(op, ruleOp.getShardingRule());
  });
  SmallVector<Type> argTypes;
  for (BlockArgument arg : func.getArguments()) {
    auto global = dyn_cast<RankedTensorType>(arg.getType());
    if (!global) {
      argTypes.push_back(arg.getType());
      continue;
    }
    globalTypes[arg] = global;
    auto attr = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), DistDialect::kShardingAttrName);
    TensorSharding sharding =
        attr ? toTensorSharding(attr, mesh)
             : TensorSharding::replicated(global.getRank());
    if (failed(checkDivisible(arg, global, sharding, func)))
      return failure();
    current[arg] = sharding;
    arg.setType(localType(global, sharding));
    argTypes.push_back(arg.getType());
  }
  func.setType(
      FunctionType::get(func.getContext(), argTypes, func.getResultTypes()));

  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      builder.setInsertionPoint(op);
      Value input = annotate.getInput();
      FailureOr<Value> local =
          reshard(input, globalTypes.at(annotate.getResult()).getShape(),
                  toTensorSharding(annotate.getSharding(), mesh), op,
                  /*reuse=*/false);
      if (failed(local))
        return failure();
      annotate.getResult().replaceAllUsesWith(*local);
      op->erase();
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(partitionReturn(ret)))
        return failure();
      continue;
    }
    if (op->getNumRegions() != 0)
      return op->emitOpError("ops with regions cannot be partitioned yet");
    if (failed(partitionOp(op)))
      return failure();
  }
  // Collectives of values nothing reads (a resharding of a dead value) would
  // still move bytes on every step: drop every op whose results are unused
  // and that has no effects, last to first so that chains go at once.
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
    if (isOpTriviallyDead(&op))
      op.erase();
  func->setAttr(DistDialect::kPartitionedAttrName, builder.getUnitAttr());
  // What was written must keep the step contract (state results shaped and
  // split as their arguments), whatever the shardings it was given.
  if (train::TrainingStep::isTrainingStep(func))
    return verifyStepContract(func);
  return success();
}

namespace {
struct DistPartitionPass
    : public mlir::dist::impl::DistPartitionPassBase<DistPartitionPass> {
  using Base::Base;
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal() || func->hasAttr(DistDialect::kPartitionedAttrName))
        return WalkResult::advance();
      // The mesh of the function's shardings, if any.
      ShardingAttr any;
      for (unsigned i = 0; i < func.getNumArguments() && !any; ++i)
        any = func.getArgAttrOfType<ShardingAttr>(
            i, DistDialect::kShardingAttrName);
      if (!any)
        return WalkResult::advance();
      FailureOr<MeshOp> mesh =
          lookupMesh(func, any.getMesh(), [&] { return func.emitOpError(); });
      if (failed(mesh))
        return WalkResult::interrupt();
      Partitioner partitioner(func, *mesh, scalePartials);
      [[maybe_unused]] CommunicationTally before = tallyCommunication(func);
      if (failed(partitioner.run()))
        return WalkResult::interrupt();
      [[maybe_unused]] CommunicationTally after = tallyCommunication(func);
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE << ": @" << func.getSymName()
                              << ": " << after.collectives - before.collectives
                              << " collectives inserted, "
                              << after.collectiveBytes - before.collectiveBytes
                              << " bytes\n");
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
