//===- Pipeline.cpp - pipeline parallelism (dist-pipeline) ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Turns a single-device training step into one program per pipeline device.
//
// 1. Microbatches are shards of the batch in time: the step is partitioned
//    over a temporary 1-D mesh of `microbatches` devices exactly as data
//    parallelism would partition it. The all-reduces partitioning inserts
//    over that mesh are the values the step sums over the batch (weight
//    gradients, the loss): they become accumulations over microbatches.
//    What depends on them is the once-per-step update (U); the rest runs
//    once per microbatch. Any other collective over the microbatches, or
//    an accumulated value feeding per-microbatch work, means an op needs
//    the whole batch mid-step, which a pipeline cannot give it: an error.
// 2. Per-microbatch ops are forward (F: what the loss depends on) or
//    backward (B; with zb-h1 split into the input gradient B and the
//    weight gradients W). Forward ops get stages from `train.stage` or
//    from the cost model; backward ops, parameters and updates follow
//    (see assignStages).
// 3. The schedule (distopt/Analysis/PipelineSchedule.h) orders each
//    device's units; it is simulated (deadlock, bubble) and each device's
//    program is written: per unit a `dist.fragment` of the unit's ops on
//    that microbatch, `dist.recv` before it for what other devices made,
//    `dist.send` after it for what they need, accumulators threaded
//    through the units of successive microbatches.
//
//===----------------------------------------------------------------------===//

#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Analysis/PipelineSchedule.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/CostOpInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINEPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-pipeline"

using namespace mlir;
using namespace mlir::dist;
namespace schedule = mlir::dist::pipeline;

double mlir::dist::estimateOpSeconds(Operation *op) {
  auto costOp = dyn_cast<CostOpInterface>(op);
  if (!costOp)
    return 0;
  OpCost cost = costOp.getCost();
  return std::max(cost.flops / 50e9,
                  (cost.bytesRead + cost.bytesWritten) / 10e9);
}

//===----------------------------------------------------------------------===//
// Microbatches
//===----------------------------------------------------------------------===//

LogicalResult PipelineBuilder::partitionMicrobatches(
    function_ref<LogicalResult(OpPassManager &)> run) {
  train::TrainingStep step = train::TrainingStep::get(func);
  for (const train::StepValue &arg : step.arguments) {
    argAttrs.push_back(func.getArgAttrDict(arg.index));
    argRoles.push_back(arg.role);
  }
  for (const train::StepValue &result : step.results) {
    resultAttrs.push_back(func.getResultAttrDict(result.index));
    resultRoles.push_back(result.role);
  }
  // A batch that does not split is the user's error, in the pipeline's
  // words (data parallelism would speak of replicas).
  for (const train::StepValue &arg : step.arguments) {
    auto type = dyn_cast<RankedTensorType>(arg.type);
    if (!type || type.getRank() == 0 ||
        (arg.role != train::Role::input && arg.role != train::Role::label))
      continue;
    if (type.getDimSize(0) % (dp * microbatches) != 0) {
      InFlightDiagnostic diag = step.emitArgumentError(arg)
                                << "has batch " << type.getDimSize(0)
                                << ", which does not split into ";
      if (dp > 1)
        diag << dp << " data-parallel replicas x ";
      return diag << microbatches << " " << parts.plural << ": use a "
                  << parts.singular << " count that divides "
                  << (dp > 1 ? "its share" : "it");
    }
  }
  // The mesh of one stage's devices, plus the microbatches (minor to the
  // data axis: a data replica's block of the batch is split into the
  // microbatches).
  SmallVector<StringRef> axes;
  SmallVector<int64_t> shape, batchAxes;
  if (dp > 1) {
    batchAxes.push_back(axes.size());
    axes.push_back("data");
    shape.push_back(dp);
  }
  batchAxes.push_back(axes.size());
  axes.push_back(kMicrobatchAxis);
  shape.push_back(microbatches);
  if (tp > 1) {
    axes.push_back("model");
    shape.push_back(tp);
  }
  FailureOr<MeshOp> mesh =
      getOrCreateMesh(module, kMicrobatchMesh, axes, shape, {});
  if (failed(mesh))
    return failure();
  if (tp > 1 && failed(annotateTensorParallel(module, *mesh,
                                              /*modelAxis=*/axes.size() - 1,
                                              /*sequenceParallel=*/false)))
    return failure();
  if (failed(annotateDataParallel(module, *mesh, batchAxes, dp * microbatches,
                                  /*replicateState=*/tp == 1 && zero == 0)))
    return failure();
  if (zero > 0)
    applyZero(module, *mesh, zero, /*dataAxes=*/{0}, dp);
  OpPassManager pm(ModuleOp::getOperationName());
  pm.addPass(createDistPropagateShardingPass());
  // Reductions land where the microbatch split looks for them.
  pm.addPass(createDistPartitionPass(
      DistPartitionPassOptions{/*scalePartials=*/false}));
  if (failed(run(pm)))
    return failure();
  return splitMicrobatchAxis();
}

bool PipelineBuilder::isMicrobatchCollective(Operation *op) const {
  if (!isa<DistDialect>(op->getDialect()))
    return false;
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  auto axes = op->getAttrOfType<ArrayAttr>("axes");
  return mesh && mesh.getValue() == kMicrobatchMesh && axes &&
         llvm::is_contained(axes,
                            StringAttr::get(op->getContext(), kMicrobatchAxis));
}

ShardingAttr PipelineBuilder::toProgramSharding(ShardingAttr sharding) const {
  if (!sharding)
    return nullptr;
  ModuleOp module = this->module;
  MeshOp from = module.lookupSymbol<MeshOp>(kMicrobatchMesh);
  MeshOp to = module.lookupSymbol<MeshOp>(kPipeMesh);
  TensorSharding local = toTensorSharding(sharding, from);
  auto axisIn = [&](int64_t axis) -> std::optional<int64_t> {
    StringRef name = cast<StringAttr>(from.getAxes()[axis]).getValue();
    if (name == kMicrobatchAxis)
      return std::nullopt;
    return to.getAxisIndex(name);
  };
  TensorSharding mapped;
  for (const AxisIndices &dim : local.dims) {
    AxisIndices &axes = mapped.dims.emplace_back();
    for (int64_t axis : dim)
      if (std::optional<int64_t> index = axisIn(axis))
        axes.push_back(*index);
  }
  for (int64_t axis : local.partial)
    if (std::optional<int64_t> index = axisIn(axis))
      mapped.partial.push_back(*index);
  if (mapped.isReplicated())
    return nullptr;
  return toShardingAttr(mapped, to);
}

LogicalResult PipelineBuilder::createProgramMesh() {
  SmallVector<StringRef> axes = {kPipeAxis};
  SmallVector<int64_t> shape = {ranks};
  if (dp > 1) {
    axes.push_back("data");
    shape.push_back(dp);
  }
  if (tp > 1) {
    axes.push_back("model");
    shape.push_back(tp);
  }
  return getOrCreateMesh(module, kPipeMesh, axes, shape, {});
}

LogicalResult PipelineBuilder::splitMicrobatchAxis() {
  MeshOp mesh = module.lookupSymbol<MeshOp>(kMicrobatchMesh);
  int64_t microbatchAxis = *mesh.getAxisIndex(kMicrobatchAxis);
  auto shardingOf = [](DictionaryAttr attrs) {
    return attrs ? attrs.getAs<ShardingAttr>(DistDialect::kShardingAttrName)
                 : ShardingAttr();
  };
  // The programs' arguments: local but for the microbatches, which the
  // fragments slice.
  for (BlockArgument arg : func.getArguments()) {
    ShardingAttr sharding = shardingOf(func.getArgAttrDict(arg.getArgNumber()));
    argShardings.push_back(sharding);
    int64_t dim = -1;
    Type type = arg.getType();
    if (sharding)
      for (auto [d, axes] :
           llvm::enumerate(toTensorSharding(sharding, mesh).dims))
        if (llvm::is_contained(axes, microbatchAxis))
          dim = d;
    if (dim >= 0) {
      auto tensor = cast<RankedTensorType>(type);
      SmallVector<int64_t> shape(tensor.getShape());
      shape[dim] *= microbatches;
      type = tensor.clone(shape);
    }
    microbatchDim.push_back(dim);
    programArgTypes.push_back(type);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    ShardingAttr sharding = shardingOf(func.getResultAttrDict(i));
    resultShardings.push_back(sharding);
    if (sharding && toTensorSharding(sharding, mesh).usesAxis(microbatchAxis))
      return func.emitError()
             << "dist-pipeline: result #" << i
             << " is split over the batch; a pipeline returns values of the "
                "whole step (state, loss, metrics)";
  }

  // Collectives over the microbatches and other axes. The microbatches
  // are the minor axis of the batch dim (see partitionMicrobatches).
  StringAttr microbatch = StringAttr::get(module.getContext(), kMicrobatchAxis);
  WalkResult result = func.walk([&](Operation *op) {
    if (!isMicrobatchCollective(op))
      return WalkResult::advance();
    auto axes = op->getAttrOfType<ArrayAttr>("axes");
    if (axes.size() == 1)
      return WalkResult::advance();
    SmallVector<StringRef> others;
    for (Attribute axis : axes)
      if (axis != microbatch)
        others.push_back(cast<StringAttr>(axis).getValue());
    OpBuilder b(op);
    Location loc = op->getLoc();
    StringRef meshRef = mesh.getSymName();
    ArrayAttr othersAttr = b.getStrArrayAttr(others);
    ArrayAttr microbatchAttr = b.getArrayAttr({microbatch});
    if (auto sum = dyn_cast<AllReduceOp>(op)) {
      // Summed over the microbatches first (the accumulation), then over
      // the other axes once per step.
      auto inner = AllReduceOp::create(
          b, loc, TypeRange(sum.getResultTypes()), ValueRange(sum.getInputs()),
          sum.getReduction(), meshRef, microbatchAttr);
      auto outer = AllReduceOp::create(b, loc, TypeRange(sum.getResultTypes()),
                                       ValueRange(inner.getResults()),
                                       sum.getReduction(), meshRef, othersAttr);
      sum.replaceAllUsesWith(outer.getResults());
      sum.erase();
      return WalkResult::advance();
    }
    if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      // A gradient of a ZeRO stage: summed over the microbatches, then
      // reduce-scattered over the data axis once per step.
      auto inner =
          AllReduceOp::create(b, loc, TypeRange(scatter.getInputs().getTypes()),
                              ValueRange(scatter.getInputs()),
                              scatter.getReduction(), meshRef, microbatchAttr);
      auto outer = ReduceScatterOp::create(
          b, loc, TypeRange(scatter.getResultTypes()),
          ValueRange(inner.getResults()), scatter.getScatterDimsAttr(),
          scatter.getReduction(), meshRef, othersAttr);
      scatter.replaceAllUsesWith(outer.getResults());
      scatter.erase();
      return WalkResult::advance();
    }
    if (cast<StringAttr>(axes[axes.size() - 1]) != microbatch) {
      op->emitError() << "dist-pipeline: '" << op->getName()
                      << "' splits over the microbatches before other axes ("
                      << axes << "): the microbatches must be the minor axis";
      return WalkResult::interrupt();
    }
    if (auto slice = dyn_cast<LocalSliceOp>(op)) {
      // This device's block, then the microbatch's block of it.
      auto type = cast<RankedTensorType>(slice.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[slice.getDim()] *= microbatches;
      auto block =
          LocalSliceOp::create(b, loc, type.clone(shape), slice.getInput(),
                               slice.getDim(), meshRef, othersAttr);
      auto piece =
          LocalSliceOp::create(b, loc, type, block.getResult(), slice.getDim(),
                               meshRef, microbatchAttr);
      slice.replaceAllUsesWith(piece.getResult());
      slice.erase();
      return WalkResult::advance();
    }
    if (auto offset = dyn_cast<ShardOffsetOp>(op)) {
      // This device's block's start plus the microbatch's start in it.
      int64_t size = offset.getSize();
      auto block = ShardOffsetOp::create(b, loc, b.getIndexType(), meshRef,
                                         othersAttr, size);
      auto piece = ShardOffsetOp::create(b, loc, b.getIndexType(), meshRef,
                                         microbatchAttr,
                                         size / mesh.getGroupSize(othersAttr));
      offset.replaceAllUsesWith(
          arith::AddIOp::create(b, loc, block, piece).getResult());
      offset.erase();
      return WalkResult::advance();
    }
    // Anything else over the microbatches is reported by analyzePhases.
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();

  // Partitioning reduce-scatters a ZeRO gradient over the data axis before
  // summing the shard over the microbatches (the cheaper order when both
  // are communication). In a pipeline the sum over the microbatches is a
  // local accumulation: with ZeRO-1, whose gradients are whole anyway,
  // accumulate first and reduce-scatter once per step. From stage 2 the
  // gradient memory stays sharded: one reduce-scatter per microbatch.
  if (zero != 1)
    return success();
  func.walk([&](AllReduceOp sum) {
    auto scatter = sum.getInputs().size() == 1
                       ? sum.getInputs()[0].getDefiningOp<ReduceScatterOp>()
                       : ReduceScatterOp();
    if (!isMicrobatchCollective(sum) || !scatter ||
        scatter.getInputs().size() != 1 || !scatter->hasOneUse())
      return;
    OpBuilder b(sum);
    auto accumulated = AllReduceOp::create(
        b, sum.getLoc(), TypeRange(scatter.getInputs().getTypes()),
        ValueRange(scatter.getInputs()), sum.getReduction(), sum.getMesh(),
        sum.getAxes());
    auto once = ReduceScatterOp::create(
        b, scatter.getLoc(), TypeRange(scatter.getResultTypes()),
        ValueRange(accumulated.getResults()), scatter.getScatterDimsAttr(),
        scatter.getReduction(), scatter.getMesh(), scatter.getAxes());
    sum.replaceAllUsesWith(once.getResults());
    sum.erase();
    scatter.erase();
  });
  return success();
}

/// Splits the ops into the per-microbatch ones and the update; returns an
/// accumulation whose sum per-sample work reads (null when there is none).
FailureOr<AllReduceOp> PipelineBuilder::classifyOps() {
  Block &body = func.front();
  DenseSet<Value> accumulated;
  DenseMap<Value, AllReduceOp> sourceOf;
  for (AllReduceOp op : accumulations) {
    accumulated.insert(op.getResult(0));
    sourceOf[op.getResult(0)] = op;
  }
  DenseSet<Value> batch;
  for (auto [i, role] : llvm::enumerate(argRoles))
    if (role == train::Role::input || role == train::Role::label)
      batch.insert(func.getArgument(i));
  for (Operation &op : body.without_terminator()) {
    if (auto sum = dyn_cast<AllReduceOp>(op);
        sum && llvm::is_contained(accumulations, sum))
      continue;
    AllReduceOp source;
    for (Value operand : op.getOperands())
      if (accumulated.contains(operand))
        source = sourceOf.lookup(operand);
    bool perMicrobatch = llvm::any_of(
        op.getOperands(), [&](Value v) { return batch.contains(v); });
    if (source && perMicrobatch)
      return source;
    if (source) {
      stepOps.insert(&op);
      for (Value result : op.getResults()) {
        accumulated.insert(result);
        sourceOf[result] = source;
      }
      continue;
    }
    mbOps.insert(&op);
    if (perMicrobatch) {
      batchOps.insert(&op);
      for (Value result : op.getResults())
        batch.insert(result);
    }
  }
  return AllReduceOp();
}

LogicalResult PipelineBuilder::analyzePhases() {
  Block &body = func.front();
  // With one microbatch the collectives over it are identities: those
  // that are not sums to accumulate go at once, the sums that turn out to
  // feed per-sample work (batch statistics) below, so that any step runs.
  // One over other axes too (a batch norm's gather over [data,
  // microbatch]) stays a collective over those: the microbatch axis has
  // one device.
  StringAttr microbatchAxis =
      StringAttr::get(module.getContext(), kMicrobatchAxis);
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (microbatches != 1 || !isMicrobatchCollective(&op) ||
        isa<ShardOffsetOp, AllReduceOp>(op))
      continue;
    auto axes = op.getAttrOfType<ArrayAttr>("axes");
    if (axes.size() > 1) {
      SmallVector<Attribute> others;
      for (Attribute axis : axes)
        if (axis != microbatchAxis)
          others.push_back(axis);
      op.setAttr("axes", ArrayAttr::get(module.getContext(), others));
      continue;
    }
    op.getResult(0).replaceAllUsesWith(op.getOperand(0));
    op.erase();
  }
  while (true) {
    accumulations.clear();
    mbOps.clear();
    batchOps.clear();
    stepOps.clear();
    for (Operation &op : body.without_terminator()) {
      // A shard's offset and a local slice (a batch-shaped value the step
      // makes, as a constant gradient seed) are per microbatch: their
      // fragments take the microbatch's.
      if (!isMicrobatchCollective(&op) || isa<ShardOffsetOp, LocalSliceOp>(op))
        continue;
      auto allReduce = dyn_cast<AllReduceOp>(op);
      if (!allReduce || allReduce.getReduction() != ReductionKind::sum ||
          allReduce.getNumOperands() != 1)
        return op.emitError()
               << "this value is needed whole-batch in the middle of the step "
                  "('"
               << op.getName() << "' over the " << parts.plural
               << "): it cannot be split into " << microbatches << " "
               << parts.plural << "; use " << parts.plural << "=1";
      accumulations.push_back(allReduce);
    }
    FailureOr<AllReduceOp> misplaced = classifyOps();
    if (failed(misplaced))
      return failure();
    if (!*misplaced)
      break;
    // An accumulation that per-sample work reads: a statistic over the
    // whole batch. Only one microbatch has it.
    AllReduceOp sum = *misplaced;
    if (microbatches != 1) {
      Operation *origin = sum.getOperand(0).getDefiningOp();
      return (origin ? origin : sum.getOperation())->emitError()
             << "this value is summed over the whole batch and then used by "
                "per-sample work: it cannot be split into "
             << microbatches << " " << parts.plural << "; use " << parts.plural
             << "=1";
    }
    sum.getResult(0).replaceAllUsesWith(sum.getOperand(0));
    sum.erase();
  }

  // Forward: what the loss and the metrics depend on.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> worklist;
  for (auto [i, role] : llvm::enumerate(resultRoles)) {
    if (role != train::Role::loss && role != train::Role::metric)
      continue;
    worklist.push_back(ret.getOperand(i));
  }
  // Through the update (a loss plus a penalty on the parameters) and the
  // accumulations to the per-microbatch ops.
  DenseSet<Operation *> forward, visited;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !visited.insert(def).second)
      continue;
    if (mbOps.contains(def))
      forward.insert(def);
    else if (!stepOps.contains(def) && !isa<AllReduceOp>(def))
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  for (Operation *op : mbOps)
    unitKind[op] =
        forward.contains(op) ? UnitKind::forward : UnitKind::backward;
  for (Operation *op : stepOps)
    unitKind[op] = UnitKind::update;
  return success();
}

//===----------------------------------------------------------------------===//
// Units and schedule
//===----------------------------------------------------------------------===//

LogicalResult PipelineBuilder::collectUnits() {
  DenseMap<Operation *, UnitOps *> unitOf;
  for (Operation &op : func.front().without_terminator()) {
    if (!stage.count(&op) || isFree(&op))
      continue;
    UnitOps &unit = lossScaling.gate.contains(&op)
                        ? gateUnits[stage[&op]]
                        : units[{stage[&op], unitKind[&op]}];
    unit.ops.push_back(&op);
    unitOf[&op] = &unit;
  }
  SmallVector<UnitOps *> all;
  for (auto &[key, unit] : units)
    all.push_back(&unit);
  for (auto &[key, unit] : gateUnits)
    all.push_back(&unit);
  for (UnitOps *unit : all) {
    for (Operation *op : unit->ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && (isFree(def) || unitOf.lookup(def) == unit))
          continue;
        unit->inputs.insert(operand);
      }
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (isa<func::ReturnOp>(user) ||
              (unitOf.count(user) && unitOf[user] != unit))
            unit->outputs.insert(result);
    }
  }
  for (AllReduceOp op : accumulations) {
    Operation *def =
        op.getNumOperands() == 1 ? op.getOperand(0).getDefiningOp() : nullptr;
    if (!def || !unitOf.count(def))
      return op.emitError() << "cannot accumulate this value over the "
                               "microbatches: it is not computed per "
                               "microbatch";
    unitOf[def]->accumulations.push_back(op);
  }
  return success();
}

LogicalResult PipelineBuilder::buildSchedule() {
  bool split = kind == schedule::ScheduleKind::ZeroBubbleH1;
  costs.forward.assign(numStages, 0);
  costs.backward.assign(numStages, 0);
  if (split)
    costs.weight.assign(numStages, 0);
  for (auto &[key, unit] : units) {
    auto [s, unitKind] = key;
    double ms = 0;
    for (Operation *op : unit.ops)
      ms += estimateOpSeconds(op) * 1e3;
    if (unitKind == UnitKind::forward)
      costs.forward[s] += ms;
    else if (unitKind == UnitKind::backward ||
             (unitKind == UnitKind::weight && !split))
      costs.backward[s] += ms;
    else if (unitKind == UnitKind::weight)
      costs.weight[s] += ms;
  }
  llvm::Expected<schedule::Schedule> built = schedule::buildSchedule(
      kind, ranks, numStages / ranks, microbatches, &costs);
  if (!built)
    return module.emitError()
           << "dist-pipeline: " << llvm::toString(built.takeError());
  plan = std::move(*built);
  // Accumulators run through the microbatches of a (stage, kind) in order.
  for (auto [r, order] : llvm::enumerate(plan.ranks)) {
    std::map<std::pair<int64_t, schedule::UnitKind>, int64_t> next;
    for (const schedule::Unit &unit : order)
      if (next[{unit.stage, unit.kind}]++ != unit.microbatch)
        return module.emitError()
               << "dist-pipeline: the " << schedule::stringifyScheduleKind(kind)
               << " schedule runs " << unit.str() << " on device " << r
               << " out of microbatch order";
  }
  llvm::Expected<schedule::Simulation> simulation =
      schedule::simulate(plan, costs);
  if (!simulation)
    return module.emitError()
           << "dist-pipeline: " << llvm::toString(simulation.takeError());
  std::string stages;
  llvm::raw_string_ostream os(stages);
  for (int64_t s = 0; s < numStages; ++s)
    os << llvm::formatv("{0}stage {1}: {2:F3} ms", s ? ", " : "", s,
                        costs.forward[s] + costs.backward[s] +
                            (split ? costs.weight[s] : 0));
  mlir::emitRemark(func.getLoc())
      << "dist-pipeline: " << schedule::stringifyScheduleKind(kind) << ", "
      << numStages << " stages on " << ranks << " devices, " << microbatches
      << " microbatches; estimated time per microbatch (forward + backward): "
      << stages
      << llvm::formatv("; simulated step {0:F3} ms, bubble {1:F1}%",
                       simulation->makespan, simulation->bubbleFraction * 100);
  bubble = simulation->bubbleFraction;
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

FailureOr<func::FuncOp> mlir::dist::getSingleTrainingStep(ModuleOp module,
                                                          StringRef pass) {
  if (failed(checkSingleDevice(module)))
    return failure();
  SmallVector<func::FuncOp> steps;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!train::TrainingStep::isTrainingStep(func))
      continue;
    if (!train::TrainingStep::isEvalFunction(func))
      steps.push_back(func);
  }
  if (steps.size() != 1)
    return emitOptionError(module, pass)
           << "needs exactly one training step in the module, found "
           << steps.size();
  return steps.front();
}

SetAsideEvaluation::SetAsideEvaluation(ModuleOp module, StringRef pass)
    : module(module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (train::TrainingStep::isEvalFunction(func))
      functions.push_back(func);
  for (func::FuncOp func : functions) {
    mlir::emitRemark(func.getLoc())
        << pass << ": the evaluation function '" << func.getSymName()
        << "' stays single-device: dist-run gathers the parameters to rank 0 "
           "for each evaluation and evaluates there";
    func->remove();
  }
}

SetAsideEvaluation::~SetAsideEvaluation() { restore(); }

void SetAsideEvaluation::restore() {
  for (func::FuncOp func : functions)
    module.getBody()->push_back(func);
  functions.clear();
}

LogicalResult mlir::dist::finishPrograms(ModuleOp module, func::FuncOp step) {
  step.erase();
  if (auto mesh = module.lookupSymbol<MeshOp>(kMicrobatchMesh))
    mesh.erase();
  // What dist-verify checks: the step contract of every program, one
  // loss, matched transfers, no deadlock.
  bool broken = false;
  for (auto program : module.getOps<func::FuncOp>())
    if (program->hasAttr(DistDialect::kPlaceAttrName) &&
        failed(verifyStepContract(program)))
      broken = true;
  return failure(broken || failed(verifyPrograms(module)));
}

std::string mlir::dist::getPipelineText(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << ModuleOp::getOperationName() << "(";
  pass.printAsTextualPipeline(os);
  os << ")";
  return text;
}

namespace {
struct DistPipelinePass
    : public mlir::dist::impl::DistPipelinePassBase<DistPipelinePass> {
  using Base::Base;

  /// Warns at `loc` when the interleaved plan's simulated `bubble` is
  /// larger than that of 1F1B with one stage per device, which it builds
  /// on `copy` (the module before the pass) with its diagnostics dropped:
  /// uneven chunks (9 layers cut into 6 on 3 devices) can idle more than
  /// the interleaving saves.
  void compareWithOneFOneB(ModuleOp copy, Location loc, double bubble) {
    std::optional<double> other = simulateOneFOneB(copy);
    if (!other || bubble <= *other + 1e-3)
      return;
    mlir::emitWarning(loc) << llvm::formatv(
        "dist-pipeline: the interleaved schedule's {0} chunks on {1} devices "
        "are uneven: simulated bubble {2:F1}% against {3:F1}% for 1f1b with "
        "one stage per device; use schedule=1f1b, or a virtual-stages count "
        "that cuts the step into even chunks",
        static_cast<int64_t>(stages * virtualStages),
        static_cast<int64_t>(stages), bubble * 100, *other * 100);
  }

  /// The simulated bubble of 1F1B with one stage per device on `copy`
  /// (none when it cannot be built), its diagnostics dropped.
  std::optional<double> simulateOneFOneB(ModuleOp copy) {
    ScopedDiagnosticHandler quiet(copy.getContext(),
                                  [](Diagnostic &) { return success(); });
    FailureOr<func::FuncOp> step = getSingleTrainingStep(copy, "dist-pipeline");
    if (failed(step))
      return std::nullopt;
    SetAsideEvaluation evaluation(copy, "dist-pipeline");
    PipelineBuilder oneFOneB(copy, *step, stages, /*virtualStages=*/1,
                             microbatches, schedule::ScheduleKind::OneFOneB, dp,
                             tp, zero);
    auto run = [&](OpPassManager &) {
      PassManager pm(copy.getContext());
      pm.addPass(createDistPropagateShardingPass());
      pm.addPass(createDistPartitionPass(
          DistPartitionPassOptions{/*scalePartials=*/false}));
      return pm.run(copy);
    };
    if (failed(oneFOneB.partitionMicrobatches(run)) ||
        failed(oneFOneB.analyzePhases()) || failed(oneFOneB.assignStages()) ||
        failed(oneFOneB.collectUnits()) || failed(oneFOneB.buildSchedule()))
      return std::nullopt;
    return oneFOneB.getBubble();
  }

  /// The device counts and the microbatches against the most a mesh may
  /// have.
  LogicalResult checkCounts(ModuleOp module, schedule::ScheduleKind kind) {
    Location loc = getOptionLocation(module);
    StringRef pass = "dist-pipeline";
    return success(
        succeeded(checkDeviceCounts(
            loc, pass, {{"stages", stages}, {"dp", dp}, {"tp", tp}})) &&
        succeeded(checkCountBound(loc, pass, "microbatches", microbatches,
                                  kMaxDevices,
                                  "the most parts a batch may be split "
                                  "into")) &&
        succeeded(checkCountBound(loc, pass, "virtual-stages", virtualStages,
                                  kMaxDevices,
                                  "the most model chunks a device may "
                                  "take")));
  }

  /// The counts against what they count in `func`: the microbatches
  /// (times the data-parallel replicas) against the batch, the stages
  /// against the ops that could take one, and an interleaved schedule's
  /// microbatches against the pipeline's devices and the batch.
  LogicalResult checkStepCounts(func::FuncOp func,
                                schedule::ScheduleKind kind) {
    ModuleOp module = getOperation();
    if (failed(checkBatchBound(module, "dist-pipeline", "microbatches",
                               microbatches, "microbatch", dp)))
      return failure();
    // Every stage takes a forward op on the batch: there are fewer of them
    // than ops.
    int64_t ops =
        func.getBody().empty()
            ? 0
            : std::distance(func.front().begin(), func.front().end()) - 1;
    if (stages * virtualStages > ops)
      return mlir::emitError(func.getLoc())
             << "dist-pipeline: stages=" << static_cast<int64_t>(stages)
             << " x virtual-stages=" << static_cast<int64_t>(virtualStages)
             << " is more than " << ops << ", the ops of step '"
             << func.getSymName() << "' (each stage takes a forward op)";
    if (kind != schedule::ScheduleKind::Interleaved || virtualStages == 1 ||
        microbatches % stages == 0)
      return success();
    // The microbatch counts nearest below and above that both interleave
    // and divide each replica's share of the batch.
    train::TrainingStep step = train::TrainingStep::get(func);
    auto batch = getStepBatch(step);
    if (failed(batch))
      return failure();
    int64_t share = *batch ? (*batch)->second / dp : 0;
    auto fits = [&](int64_t count) {
      return count % stages == 0 && (!share || share % count == 0);
    };
    std::optional<int64_t> below, above;
    for (int64_t count = microbatches - 1; count >= 1 && !below; --count)
      if (fits(count))
        below = count;
    int64_t limit = share ? share : microbatches + stages;
    for (int64_t count = microbatches + 1; count <= limit && !above; ++count)
      if (fits(count))
        above = count;
    InFlightDiagnostic diag =
        mlir::emitError(func.getLoc())
        << "dist-pipeline: interleaved schedule needs microbatches to be a "
           "multiple of the "
        << static_cast<int64_t>(stages) << " pipeline ranks (got "
        << static_cast<int64_t>(microbatches) << "): ";
    if (!below && !above)
      return diag << "no multiple of " << static_cast<int64_t>(stages)
                  << " divides " << (dp > 1 ? "each replica's share of " : "")
                  << "the batch of " << (*batch)->second
                  << "; use schedule=1f1b";
    diag << "use ";
    if (below)
      diag << *below << (above ? " or " : "");
    if (above)
      diag << *above;
    diag << " microbatches";
    if (share)
      diag << (below && above ? " (they divide " : " (it divides ")
           << (dp > 1 ? "each replica's share of " : "") << "the batch of "
           << (*batch)->second << ")";
    return diag << ", or schedule=1f1b";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<schedule::ScheduleKind> kind =
        schedule::symbolizeScheduleKind(schedule);
    if (stages < 1 || microbatches < 1 || virtualStages < 1 || !kind ||
        dp < 1 || tp < 1 || zero < 0 || zero > 3) {
      emitOptionError(module, "dist-pipeline")
          << "needs stages >= 1, microbatches >= 1, virtual-stages >= 1, "
             "dp >= 1, tp >= 1, zero 0-3 and "
             "schedule=gpipe|1f1b|interleaved|zb-h1, "
             "got stages="
          << static_cast<int64_t>(stages)
          << " microbatches=" << static_cast<int64_t>(microbatches)
          << " virtual-stages=" << static_cast<int64_t>(virtualStages)
          << " dp=" << static_cast<int64_t>(dp)
          << " tp=" << static_cast<int64_t>(tp)
          << " zero=" << static_cast<int64_t>(zero) << " schedule=" << schedule;
      return signalPassFailure();
    }
    if (zero > 0 && dp == 1) {
      emitOptionError(module, "dist-pipeline")
          << "zero=" << static_cast<int64_t>(zero)
          << " shards over the data axis of each stage: it needs dp > 1";
      return signalPassFailure();
    }
    // The counts against what they count, before anything is sized by
    // them.
    if (failed(checkCounts(module, *kind)))
      return signalPassFailure();
    FailureOr<func::FuncOp> step =
        getSingleTrainingStep(module, "dist-pipeline");
    if (failed(step) || failed(checkStepCounts(*step, *kind)))
      return signalPassFailure();
    func::FuncOp func = *step;
    // An interleaved plan is compared with 1F1B on the same devices: a
    // copy of the module to cut into one stage per device.
    OwningOpRef<ModuleOp> copy;
    if (*kind == schedule::ScheduleKind::Interleaved && virtualStages > 1)
      copy = module.clone();
    // The schedule's own constraints: they need no analysis.
    if (llvm::Expected<schedule::Schedule> check =
            schedule::buildSchedule(*kind, stages, virtualStages, microbatches);
        !check) {
      mlir::emitError(func.getLoc())
          << "dist-pipeline: " << llvm::toString(check.takeError());
      return signalPassFailure();
    }
    // The module as it was, kept with the programs (PlacementSource.h).
    OwningOpRef<ModuleOp> source = module.clone();
    SetAsideEvaluation evaluation(module, "dist-pipeline");
    PipelineBuilder pipeline(module, func, stages, virtualStages, microbatches,
                             *kind, dp, tp, zero);
    auto run = [&](OpPassManager &pm) { return runPipeline(pm, module); };
    if (failed(pipeline.partitionMicrobatches(run)) ||
        failed(pipeline.analyzePhases()) || failed(pipeline.assignStages()) ||
        failed(pipeline.collectUnits()) || failed(pipeline.buildSchedule()))
      return signalPassFailure();
    if (copy && pipeline.isAutoCut())
      compareWithOneFOneB(*copy, func.getLoc(), pipeline.getBubble());
    if (failed(pipeline.createProgramMesh()) ||
        failed(pipeline.writePrograms()))
      return signalPassFailure();
    if (failed(finishPrograms(module, func)))
      return signalPassFailure();
    // The fingerprint covers the evaluation functions too.
    evaluation.restore();
    keepPlacementSource(module, std::move(source), getPipelineText(*this));
    countPrograms(module);
  }

  void countPrograms(ModuleOp module) {
    LLVM_DEBUG({
      int64_t programs = llvm::count_if(
          module.getOps<func::FuncOp>(), [](func::FuncOp program) {
            return program->hasAttr(DistDialect::kPlaceAttrName);
          });
      CommunicationTally tally = tallyCommunication(module);
      llvm::dbgs() << DEBUG_TYPE << ": " << programs << " programs, "
                   << tally.transfers << " sends of " << tally.transferBytes
                   << " bytes\n";
    });
  }
};
} // namespace
