//===- Pipeline.cpp - pipeline parallelism (dist-pipeline) ----------------===//
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
#include "llvm/Support/FormatVariadic.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPIPELINEPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace schedule = mlir::dist::pipeline;

/// The temporary mesh of microbatches.
static constexpr StringLiteral kMicrobatchMesh = "pipeline_microbatches";

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
    globalArgTypes.push_back(arg.type);
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
    if (type.getDimSize(0) % microbatches != 0)
      return step.emitArgumentError(arg)
             << "has batch " << type.getDimSize(0)
             << ", which does not split into " << microbatches
             << " microbatches: use a microbatch count that divides it";
  }
  StringRef axis = "microbatch";
  FailureOr<MeshOp> mesh = getOrCreateMesh(module, kMicrobatchMesh, {axis},
                                           {microbatches}, {});
  if (failed(mesh))
    return failure();
  int64_t batchAxis = 0;
  if (failed(annotateDataParallel(module, *mesh, {batchAxis}, microbatches,
                                  /*replicateState=*/true)))
    return failure();
  OpPassManager pm(ModuleOp::getOperationName());
  pm.addPass(createDistPropagateShardingPass());
  pm.addPass(createDistPartitionPass());
  return run(pm);
}

bool PipelineBuilder::isMicrobatchCollective(Operation *op) const {
  if (!isa<DistDialect>(op->getDialect()))
    return false;
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  return mesh && mesh.getValue() == kMicrobatchMesh;
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
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (microbatches != 1 || !isMicrobatchCollective(&op) ||
        isa<ShardOffsetOp, AllReduceOp>(op))
      continue;
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
               << op.getName() << "' over the microbatches): it cannot be "
               << "split into " << microbatches
               << " microbatches; use microbatches=1";
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
             << microbatches << " microbatches; use microbatches=1";
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
    unitKind[op] = forward.contains(op) ? UnitKind::forward
                                        : UnitKind::backward;
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
    UnitOps &unit = units[{stage[&op], unitKind[&op]}];
    unit.ops.push_back(&op);
    unitOf[&op] = &unit;
  }
  for (auto &[key, unit] : units) {
    for (Operation *op : unit.ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && (isFree(def) || unitOf.lookup(def) == &unit))
          continue;
        unit.inputs.insert(operand);
      }
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (isa<func::ReturnOp>(user) ||
              (unitOf.count(user) && unitOf[user] != &unit))
            unit.outputs.insert(result);
    }
  }
  for (AllReduceOp op : accumulations) {
    Operation *def = op.getNumOperands() == 1
                         ? op.getOperand(0).getDefiningOp()
                         : nullptr;
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
                       simulation->makespan,
                       simulation->bubbleFraction * 100);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct DistPipelinePass
    : public mlir::dist::impl::DistPipelinePassBase<DistPipelinePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<schedule::ScheduleKind> kind =
        schedule::symbolizeScheduleKind(schedule);
    if (stages < 1 || microbatches < 1 || virtualStages < 1 || !kind) {
      emitOptionError(module, "dist-pipeline")
          << "needs stages >= 1, microbatches >= 1, virtual-stages >= 1 and "
             "schedule=gpipe|1f1b|interleaved|zb-h1, got stages="
          << static_cast<int64_t>(stages)
          << " microbatches=" << static_cast<int64_t>(microbatches)
          << " virtual-stages=" << static_cast<int64_t>(virtualStages)
          << " schedule=" << schedule;
      return signalPassFailure();
    }
    // The schedule's own constraints first: they need no analysis.
    if (llvm::Expected<schedule::Schedule> check = schedule::buildSchedule(
            *kind, stages, virtualStages, microbatches);
        !check) {
      emitOptionError(module, "dist-pipeline")
          << llvm::toString(check.takeError());
      return signalPassFailure();
    }
    if (failed(checkSingleDevice(module)))
      return signalPassFailure();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (train::TrainingStep::isTrainingStep(func))
        steps.push_back(func);
    if (steps.size() != 1) {
      emitOptionError(module, "dist-pipeline")
          << "needs exactly one training step in the module, found "
          << steps.size();
      return signalPassFailure();
    }
    func::FuncOp func = steps.front();
    PipelineBuilder pipeline(module, func, stages, virtualStages, microbatches,
                             *kind);
    auto run = [&](OpPassManager &pm) { return runPipeline(pm, module); };
    if (failed(pipeline.partitionMicrobatches(run)) ||
        failed(pipeline.analyzePhases()) || failed(pipeline.assignStages()) ||
        failed(pipeline.collectUnits()) || failed(pipeline.buildSchedule()))
      return signalPassFailure();
    if (failed(getOrCreateMesh(module, kPipeMesh, {kPipeAxis}, {stages}, {})) ||
        failed(pipeline.writePrograms()))
      return signalPassFailure();
    func.erase();
    if (auto mesh = module.lookupSymbol<MeshOp>(kMicrobatchMesh))
      mesh.erase();
    // What dist-verify checks: the step contract of every program, one
    // loss, matched transfers, no deadlock.
    bool broken = false;
    for (auto program : module.getOps<func::FuncOp>())
      if (program->hasAttr(DistDialect::kPlaceAttrName) &&
          failed(verifyStepContract(program)))
        broken = true;
    if (broken || failed(verifyPrograms(module)))
      return signalPassFailure();
  }
};
} // namespace
