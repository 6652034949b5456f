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
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/MapVector.h"
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
/// The pipeline's mesh and axis.
static constexpr StringLiteral kPipeMesh = "pipe", kPipeAxis = "pipe";

double mlir::dist::estimateOpSeconds(Operation *op) {
  auto costOp = dyn_cast<CostOpInterface>(op);
  if (!costOp)
    return 0;
  OpCost cost = costOp.getCost();
  return std::max(cost.flops / 50e9,
                  (cost.bytesRead + cost.bytesWritten) / 10e9);
}

static schedule::UnitKind toScheduleKind(UnitKind kind) {
  switch (kind) {
  case UnitKind::forward:
    return schedule::UnitKind::Forward;
  case UnitKind::backward:
    return schedule::UnitKind::Backward;
  default:
    return schedule::UnitKind::Weight;
  }
}

static UnitKind fromScheduleKind(schedule::UnitKind kind) {
  switch (kind) {
  case schedule::UnitKind::Forward:
    return UnitKind::forward;
  case schedule::UnitKind::Backward:
    return UnitKind::backward;
  case schedule::UnitKind::Weight:
    return UnitKind::weight;
  }
  llvm_unreachable("unknown unit kind");
}

namespace {
/// The ops of one (stage, kind) in program order: the body of its
/// fragments, one per microbatch (one in all for U).
struct UnitOps {
  SmallVector<Operation *> ops;
  /// Values the ops read that other units (or arguments) define.
  llvm::SetVector<Value> inputs;
  /// Values the ops define that other units or the return read.
  llvm::SetVector<Value> outputs;
  /// The accumulations (all-reduces over the microbatches) of values the
  /// ops define.
  SmallVector<AllReduceOp> accumulations;
};

class PipelineBuilder {
public:
  PipelineBuilder(ModuleOp module, func::FuncOp func, int64_t ranks,
                  int64_t virtualStages, int64_t microbatches,
                  schedule::ScheduleKind kind)
      : module(module), func(func), ranks(ranks),
        numStages(ranks * virtualStages), microbatches(microbatches),
        kind(kind), builder(module.getContext()) {}

  /// Records the single-device signature, then partitions the step over
  /// the microbatches.
  LogicalResult
  partitionMicrobatches(function_ref<LogicalResult(OpPassManager &)> run);
  LogicalResult analyzePhases();
  FailureOr<AllReduceOp> classifyOps();
  LogicalResult assignStages();
  LogicalResult collectUnits();
  LogicalResult buildSchedule();
  LogicalResult writePrograms();

private:
  int64_t rankOf(int64_t stage) const { return stage % ranks; }
  bool isMicrobatchCollective(Operation *op) const;
  bool isFree(Operation *op) const {
    return mbOps.contains(op) && op->getNumOperands() == 0;
  }
  std::optional<int64_t> annotatedStage(Operation *op) const;
  LogicalResult assignForwardStages();
  void autoForwardStages(ArrayRef<Operation *> forward);
  void splitWeightGradients();
  LogicalResult checkParameters();
  PlaceAttr placeOf(int64_t rank) const;
  /// The device whose program defines `value` (an argument: -1, every
  /// device that needs it has it).
  int64_t producerRank(Value value) const;
  Value getOrReceive(int64_t rank, Value value, int64_t microbatch,
                     Location loc);
  int64_t getChannel(Value value, int64_t microbatch, int64_t toRank);
  LogicalResult writeUnit(int64_t rank, int64_t unitStage, UnitKind unitKind,
                          int64_t microbatch);
  void sendOutputs(int64_t rank, Value value, Value local, int64_t microbatch,
                   Location loc);

  ModuleOp module;
  func::FuncOp func;
  int64_t ranks, numStages, microbatches;
  schedule::ScheduleKind kind;
  OpBuilder builder;

  /// The single-device arguments' and results' types and attributes.
  SmallVector<Type> globalArgTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  SmallVector<std::optional<train::Role>> argRoles, resultRoles;

  /// The per-microbatch ops, those of them that depend on the batch, and
  /// the once-per-step update.
  llvm::SetVector<Operation *> mbOps, batchOps, stepOps;
  SmallVector<AllReduceOp> accumulations;
  DenseMap<Operation *, int64_t> stage;
  DenseMap<Operation *, UnitKind> unitKind;
  /// Per argument, its stage (-1: not bound to one, as hyper-parameters
  /// and the batch).
  SmallVector<int64_t> argStage;
  /// Where the accumulated value of an all-reduce is needed first.
  DenseMap<Operation *, int64_t> accumulationStage;
  std::map<std::pair<int64_t, UnitKind>, UnitOps> units;

  schedule::Schedule plan;
  schedule::UnitCosts costs;

  /// Per device: its program, argument of each single-device argument,
  /// and the values it holds, by (single-device value, microbatch).
  SmallVector<func::FuncOp> programs;
  SmallVector<DenseMap<unsigned, Value>> programArgs;
  SmallVector<DenseMap<std::pair<Value, int64_t>, Value>> held;
  /// Per device, the running sums of the accumulations, by microbatch.
  SmallVector<DenseMap<std::pair<Operation *, int64_t>, Value>> partialSums;
  /// The channel of each transfer: (value, microbatch, receiving device).
  DenseMap<std::tuple<Value, int64_t, int64_t>, int64_t> channels;
};
} // namespace

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
      if (!isMicrobatchCollective(&op) || isa<ShardOffsetOp>(op))
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
// Stages
//===----------------------------------------------------------------------===//

std::optional<int64_t> PipelineBuilder::annotatedStage(Operation *op) const {
  if (auto attr =
          op->getAttrOfType<IntegerAttr>(train::TrainDialect::kStageAttrName))
    return attr.getInt();
  return std::nullopt;
}

/// Cuts `weights` (in order) into `parts` non-empty contiguous groups whose
/// largest sum is as small as possible; returns each group's first index.
static SmallVector<size_t> cutEvenly(ArrayRef<double> weights, int64_t parts) {
  auto greedy = [&](double cap) {
    SmallVector<size_t> starts = {0};
    double sum = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (sum + weights[i] > cap && sum > 0) {
        starts.push_back(i);
        sum = 0;
      }
      sum += weights[i];
    }
    return starts;
  };
  double low = *llvm::max_element(weights), high = 0;
  for (double w : weights)
    high += w;
  for (int i = 0; i < 100 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    if (static_cast<int64_t>(greedy(mid).size()) <= parts)
      high = mid;
    else
      low = mid;
  }
  SmallVector<size_t> starts = greedy(high);
  // Fewer groups than parts: split the heaviest splittable group, which
  // keeps the largest sum within the bound.
  while (static_cast<int64_t>(starts.size()) < parts) {
    size_t best = 0;
    double bestSum = -1;
    for (size_t g = 0; g < starts.size(); ++g) {
      size_t end = g + 1 < starts.size() ? starts[g + 1] : weights.size();
      if (end - starts[g] < 2)
        continue;
      double sum = 0;
      for (size_t i = starts[g]; i < end; ++i)
        sum += weights[i];
      if (sum > bestSum) {
        bestSum = sum;
        best = g;
      }
    }
    size_t end = best + 1 < starts.size() ? starts[best + 1] : weights.size();
    double half = 0;
    size_t cut = starts[best] + 1;
    for (size_t i = starts[best]; i + 1 < end; ++i) {
      half += weights[i];
      cut = i + 1;
      if (half >= bestSum / 2)
        break;
    }
    starts.insert(starts.begin() + best + 1, cut);
  }
  return starts;
}

void PipelineBuilder::autoForwardStages(ArrayRef<Operation *> forward) {
  // Each forward op's weight is its own time plus the backward ops that
  // work on its values: a backward op is charged to the latest forward op
  // whose value it reads (else to what the gradients it reads were
  // charged to, else to the last forward op).
  DenseMap<Operation *, size_t> index, charged;
  for (auto [i, op] : llvm::enumerate(forward))
    index[op] = i;
  SmallVector<double> weights;
  for (Operation *op : forward)
    weights.push_back(estimateOpSeconds(op));
  for (Operation *op : mbOps) {
    if (index.count(op) || isFree(op))
      continue;
    std::optional<size_t> latest, fromGradients;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      if (auto it = index.find(def); it != index.end())
        latest = std::max(latest.value_or(0), it->second);
      else if (auto it = charged.find(def); it != charged.end())
        fromGradients = std::min(fromGradients.value_or(it->second),
                                 it->second);
    }
    size_t at = latest ? *latest
                       : fromGradients.value_or(forward.size() - 1);
    if (latest && fromGradients)
      at = std::min(*latest, *fromGradients);
    charged[op] = at;
    weights[at] += estimateOpSeconds(op);
  }
  SmallVector<size_t> starts = cutEvenly(weights, numStages);
  for (auto [g, start] : llvm::enumerate(starts)) {
    size_t end = g + 1 < starts.size() ? starts[g + 1] : forward.size();
    for (size_t i = start; i < end; ++i)
      stage[forward[i]] = g;
  }
}

LogicalResult PipelineBuilder::assignForwardStages() {
  SmallVector<Operation *> forward;
  bool annotated = false;
  for (Operation *op : batchOps) {
    if (unitKind[op] != UnitKind::forward)
      continue;
    forward.push_back(op);
    annotated |= annotatedStage(op).has_value();
  }
  if (static_cast<int64_t>(forward.size()) < numStages)
    return func.emitError() << "the step has " << forward.size()
                            << " forward ops on the batch, fewer than the "
                            << numStages << " pipeline stages";
  if (!annotated) {
    autoForwardStages(forward);
    return success();
  }
  SmallVector<bool> used(numStages, false);
  for (Operation *op : forward) {
    int64_t at = 0;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && stage.count(def))
        at = std::max(at, stage[def]);
    if (std::optional<int64_t> annotation = annotatedStage(op)) {
      if (*annotation >= numStages)
        return op->emitError()
               << "'" << train::TrainDialect::kStageAttrName << "' "
               << *annotation << " is not a stage of this pipeline (stages 0 to "
               << numStages - 1 << ")";
      if (*annotation < at)
        return op->emitError()
               << "is annotated stage " << *annotation
               << " but reads a value computed on stage " << at
               << ": stages must not decrease along the forward computation";
      at = *annotation;
    }
    stage[op] = at;
    used[at] = true;
  }
  for (auto [s, isUsed] : llvm::enumerate(used))
    if (!isUsed)
      return func.emitError()
             << "pipeline stage " << s << " of " << numStages
             << " gets no forward op from the '"
             << train::TrainDialect::kStageAttrName
             << "' annotations: annotate an op of every stage";
  return success();
}

LogicalResult PipelineBuilder::assignStages() {
  if (failed(assignForwardStages()))
    return failure();
  auto isForwardBatch = [&](Operation *op) {
    return batchOps.contains(op) && unitKind[op] == UnitKind::forward;
  };
  for (Operation *op : mbOps)
    if (!isForwardBatch(op) && annotatedStage(op))
      op->emitRemark() << "'" << train::TrainDialect::kStageAttrName
                       << "' is ignored on this op: only forward ops take "
                          "stages, the others follow them";

  // Parameters: the first stage whose forward ops reach them.
  argStage.assign(func.getNumArguments(), -1);
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    if (role != train::Role::param && role != train::Role::opt_state)
      continue;
    SmallVector<Value> worklist = {arg};
    int64_t first = -1;
    DenseSet<Operation *> seen;
    while (!worklist.empty()) {
      for (Operation *user : worklist.pop_back_val().getUsers()) {
        if (!seen.insert(user).second)
          continue;
        if (isForwardBatch(user))
          first = first < 0 ? stage[user] : std::min(first, stage[user]);
        else if (mbOps.contains(user) && unitKind[user] == UnitKind::forward)
          llvm::append_range(worklist, user->getResults());
      }
    }
    argStage[arg.getArgNumber()] = first;
  }

  auto stageOfUsers = [&](Operation *op) {
    int64_t at = -1;
    for (Operation *user : op->getUsers())
      if (auto it = stage.find(user); it != stage.end() && it->second >= 0)
        at = at < 0 ? it->second : std::min(at, it->second);
    return at;
  };
  // The update: optimizers on their parameter's stage, the rest with their
  // first user.
  for (Operation *op : llvm::reverse(stepOps)) {
    int64_t at = -1;
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op)) {
      if (auto param = dyn_cast<BlockArgument>(optimizer.getParam()))
        at = argStage[param.getArgNumber()];
    } else {
      at = stageOfUsers(op);
    }
    stage[op] = at;
  }
  for (AllReduceOp op : accumulations)
    accumulationStage[op] = stageOfUsers(op);

  // Backward (and batch-independent) ops: on the latest stage whose forward
  // values or parameters they read or whose ops read them, ...
  for (Operation *op : llvm::reverse(mbOps)) {
    if (isForwardBatch(op) || isFree(op))
      continue;
    int64_t at = -1;
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        at = std::max(at, argStage[arg.getArgNumber()]);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      if (isForwardBatch(def))
        at = std::max(at, stage[def]);
    }
    for (Operation *user : op->getUsers()) {
      if (auto it = accumulationStage.find(user);
          it != accumulationStage.end())
        at = std::max(at, it->second);
      else if (auto it = stage.find(user); it != stage.end())
        at = std::max(at, it->second);
    }
    stage[op] = std::max<int64_t>(at, 0);
  }
  // ... but never later than the gradients they read (gradients flow to
  // earlier stages only, so a stage's backward never waits on its own
  // later work).
  for (Operation *op : mbOps) {
    if (unitKind[op] != UnitKind::backward || isFree(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && mbOps.contains(def) && !isFree(def) &&
          unitKind[def] == UnitKind::backward)
        stage[op] = std::min(stage[op], stage[def]);
  }
  // What is left: arguments only the backward or the update reads live
  // with their first user; updates only returned run where their operands
  // are; an accumulation only returned stays where it is made.
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    int64_t &at = argStage[arg.getArgNumber()];
    if (at >= 0 ||
        (role != train::Role::param && role != train::Role::opt_state))
      continue;
    for (Operation *user : arg.getUsers())
      if (auto it = stage.find(user); it != stage.end() && it->second >= 0)
        at = at < 0 ? it->second : std::min(at, it->second);
    at = std::max<int64_t>(at, 0);
  }
  for (AllReduceOp op : accumulations)
    if (accumulationStage[op] < 0)
      if (Operation *def = op.getOperand(0).getDefiningOp())
        accumulationStage[op] = stage.lookup(def);
  for (Operation *op : stepOps) {
    if (stage[op] >= 0)
      continue;
    int64_t at = 0;
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand))
        at = std::max(at, argStage[arg.getArgNumber()]);
      else if (auto acc = operand.getDefiningOp<AllReduceOp>();
               acc && accumulationStage.count(acc))
        at = std::max(at, accumulationStage[acc]);
      else if (auto it = stage.find(operand.getDefiningOp());
               it != stage.end())
        at = std::max(at, it->second);
    }
    stage[op] = at;
  }
  if (kind == schedule::ScheduleKind::ZeroBubbleH1)
    splitWeightGradients();
  return checkParameters();
}

void PipelineBuilder::splitWeightGradients() {
  // The input gradient (B) of a stage is what another stage's backward
  // needs; the rest of its backward is weight gradients (W).
  DenseSet<Operation *> input;
  SmallVector<Operation *> worklist;
  for (Operation *op : mbOps) {
    if (unitKind[op] != UnitKind::backward || isFree(op))
      continue;
    for (Operation *user : op->getUsers())
      if (mbOps.contains(user) && stage.lookup(user) != stage[op])
        worklist.push_back(op);
  }
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!input.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && mbOps.contains(def) && !isFree(def) &&
          unitKind[def] == UnitKind::backward && stage[def] == stage[op])
        worklist.push_back(def);
  }
  for (Operation *op : mbOps)
    if (unitKind[op] == UnitKind::backward && !isFree(op) &&
        !input.contains(op))
      unitKind[op] = UnitKind::weight;
}

LogicalResult PipelineBuilder::checkParameters() {
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    if (role != train::Role::param && role != train::Role::opt_state)
      continue;
    std::map<int64_t, int64_t> stageOfRank;
    for (Operation *user : arg.getUsers())
      if (auto it = stage.find(user); it != stage.end())
        stageOfRank.emplace(rankOf(it->second), it->second);
    if (stageOfRank.size() < 2)
      continue;
    auto first = stageOfRank.begin(), second = std::next(first);
    StringAttr name = argAttrs[arg.getArgNumber()]
                          ? argAttrs[arg.getArgNumber()].getAs<StringAttr>(
                                train::TrainDialect::kNameAttrName)
                          : nullptr;
    return mlir::emitError(arg.getLoc())
           << "parameter '" << (name ? name.getValue() : "?")
           << "' is used on pipeline devices " << first->first << " (stage "
           << first->second << ") and " << second->first << " (stage "
           << second->second
           << "): a parameter lives on one device; put the ops that use it "
              "on stages of one device with 'train.stage' (a tied embedding "
              "and LM head: untie them, or keep both on one device)";
  }
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
// Programs
//===----------------------------------------------------------------------===//

PlaceAttr PipelineBuilder::placeOf(int64_t rank) const {
  MLIRContext *context = builder.getContext();
  return PlaceAttr::get(context, FlatSymbolRefAttr::get(context, kPipeMesh),
                        {StringAttr::get(context, kPipeAxis)}, {rank});
}

int64_t PipelineBuilder::producerRank(Value value) const {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return argStage[arg.getArgNumber()] < 0
               ? -1
               : rankOf(argStage[arg.getArgNumber()]);
  Operation *def = value.getDefiningOp();
  if (auto acc = dyn_cast<AllReduceOp>(def);
      acc && llvm::is_contained(accumulations, acc))
    return rankOf(stage.lookup(acc.getOperand(0).getDefiningOp()));
  auto it = stage.find(def);
  return it == stage.end() ? -1 : rankOf(it->second);
}

/// The `train.*` attributes of a single-device argument or result (its
/// shardings over the microbatches stay behind).
static DictionaryAttr filterTrainAttrs(DictionaryAttr attrs) {
  NamedAttrList kept;
  for (NamedAttribute attr : attrs)
    if (attr.getName().getValue().starts_with("train."))
      kept.push_back(attr);
  return kept.getDictionary(attrs.getContext());
}

int64_t PipelineBuilder::getChannel(Value value, int64_t microbatch,
                                    int64_t toRank) {
  return channels.try_emplace({value, microbatch, toRank}, channels.size())
      .first->second;
}

Value PipelineBuilder::getOrReceive(int64_t rank, Value value,
                                    int64_t microbatch, Location loc) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return programArgs[rank].lookup(arg.getArgNumber());
  if (Value held = this->held[rank].lookup({value, microbatch}))
    return held;
  int64_t from = producerRank(value);
  assert(from != rank && "a value of this device is used before it is made");
  Value received = RecvOp::create(builder, loc, value.getType(),
                                  placeOf(from),
                                  getChannel(value, microbatch, rank));
  held[rank][{value, microbatch}] = received;
  return received;
}

void PipelineBuilder::sendOutputs(int64_t rank, Value value, Value local,
                                  int64_t microbatch, Location loc) {
  std::set<int64_t> to;
  for (Operation *user : value.getUsers()) {
    auto it = stage.find(user);
    if (it == stage.end() || (stepOps.contains(user) && microbatch != 0 &&
                              !isa<AllReduceOp>(value.getDefiningOp())))
      continue;
    to.insert(rankOf(it->second));
  }
  to.erase(rank);
  for (int64_t peer : to)
    SendOp::create(builder, loc, local, placeOf(peer),
                   getChannel(value, microbatch, peer));
}

LogicalResult PipelineBuilder::writeUnit(int64_t rank, int64_t unitStage,
                                         UnitKind unitKind,
                                         int64_t microbatch) {
  UnitOps &unit = units[{unitStage, unitKind}];
  MLIRContext *context = module.getContext();
  Location loc = unit.ops.empty() ? func.getLoc() : unit.ops.front()->getLoc();
  SmallVector<Value> operands;
  for (Value input : unit.inputs)
    operands.push_back(getOrReceive(rank, input, microbatch, loc));
  size_t numInputs = operands.size();
  for (AllReduceOp acc : unit.accumulations)
    if (microbatch > 0)
      operands.push_back(partialSums[rank].lookup({acc, microbatch - 1}));
  SmallVector<Type> resultTypes;
  for (Value output : unit.outputs)
    resultTypes.push_back(output.getType());
  for (AllReduceOp acc : unit.accumulations)
    resultTypes.push_back(acc.getOperand(0).getType());
  auto fragment = FragmentOp::create(
      builder, loc, resultTypes, operands, placeOf(rank),
      ScheduleUnitAttr::get(context, unitKind, unitStage, microbatch));
  fragment.setOriginAttr(builder.getStrArrayAttr(
      {(func.getSymName() + "/stage" + Twine(unitStage)).str()}));

  OpBuilder body = OpBuilder::atBlockBegin(&fragment.getBodyBlock());
  IRMapping mapping;
  for (auto [input, arg] :
       llvm::zip(unit.inputs, fragment.getBodyBlock().getArguments())) {
    auto funcArg = dyn_cast<BlockArgument>(input);
    auto local = dyn_cast<RankedTensorType>(input.getType());
    if (funcArg && local && microbatches > 1 &&
        globalArgTypes[funcArg.getArgNumber()] != local) {
      // This microbatch's block of the batch.
      SmallVector<int64_t> start(local.getRank(), 0),
          limit(local.getShape());
      start[0] = microbatch * local.getDimSize(0);
      limit[0] = start[0] + local.getDimSize(0);
      mapping.map(input, train::SliceOp::create(
                             body, input.getLoc(), arg,
                             body.getDenseI64ArrayAttr(start),
                             body.getDenseI64ArrayAttr(limit), nullptr)
                             .getResult());
      continue;
    }
    mapping.map(input, arg);
  }
  auto materializeFree = [&](Operation *op) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !isFree(def) || mapping.contains(operand))
        continue;
      if (auto offset = dyn_cast<ShardOffsetOp>(def)) {
        // The microbatch's first sample, a constant in its fragment.
        mapping.map(operand,
                    arith::ConstantIndexOp::create(
                        body, def->getLoc(),
                        microbatch * (offset.getSize() / microbatches)));
        continue;
      }
      Operation *clone = body.clone(*def);
      clone->removeAttr(DistDialect::kResultShardingsAttrName);
      mapping.map(def->getResults(), clone->getResults());
    }
  };
  for (Operation *op : unit.ops) {
    materializeFree(op);
    Operation *clone = body.clone(*op, mapping);
    clone->removeAttr(DistDialect::kResultShardingsAttrName);
  }
  SmallVector<Value> yielded;
  for (Value output : unit.outputs)
    yielded.push_back(mapping.lookup(output));
  for (auto [i, acc] : llvm::enumerate(unit.accumulations)) {
    Value addend = mapping.lookup(acc.getOperand(0));
    if (microbatch > 0)
      addend = train::AddOp::create(
                   body, acc.getLoc(),
                   fragment.getBodyBlock().getArgument(numInputs + i), addend)
                   .getResult();
    yielded.push_back(addend);
  }
  YieldOp::create(body, loc, yielded);

  for (auto [output, result] : llvm::zip(unit.outputs, fragment.getResults())) {
    held[rank][{output, microbatch}] = result;
    sendOutputs(rank, output, result, microbatch, loc);
  }
  for (auto [i, acc] : llvm::enumerate(unit.accumulations)) {
    Value sum = fragment.getResult(unit.outputs.size() + i);
    if (microbatch + 1 < microbatches) {
      partialSums[rank][{acc, microbatch}] = sum;
      continue;
    }
    held[rank][{acc.getResult(0), 0}] = sum;
    sendOutputs(rank, acc.getResult(0), sum, 0, acc.getLoc());
  }
  return success();
}

LogicalResult PipelineBuilder::writePrograms() {
  MLIRContext *context = module.getContext();
  // Which single-device arguments and results each device's program has.
  SmallVector<SmallVector<unsigned>> argsOf(ranks), resultsOf(ranks);
  SmallVector<llvm::SmallSetVector<unsigned, 8>> usedArgs(ranks);
  for (auto &[key, unit] : units)
    for (Value input : unit.inputs)
      if (auto arg = dyn_cast<BlockArgument>(input))
        usedArgs[rankOf(key.first)].insert(arg.getArgNumber());
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    int64_t rank = std::max<int64_t>(producerRank(operand), 0);
    resultsOf[rank].push_back(i);
    if (auto arg = dyn_cast<BlockArgument>(operand))
      usedArgs[rank].insert(arg.getArgNumber());
  }
  for (int64_t r = 0; r < ranks; ++r) {
    argsOf[r].assign(usedArgs[r].begin(), usedArgs[r].end());
    llvm::sort(argsOf[r]);
  }

  programArgs.resize(ranks);
  held.resize(ranks);
  partialSums.resize(ranks);
  builder.setInsertionPointAfter(func);
  for (int64_t r = 0; r < ranks; ++r) {
    SmallVector<Type> argTypes, resultTypes;
    for (unsigned i : argsOf[r])
      argTypes.push_back(globalArgTypes[i]);
    for (unsigned i : resultsOf[r])
      resultTypes.push_back(func.getResultTypes()[i]);
    auto program = func::FuncOp::create(
        builder, func.getLoc(),
        (func.getSymName() + "_pipe" + Twine(r)).str(),
        builder.getFunctionType(argTypes, resultTypes));
    for (auto [j, i] : llvm::enumerate(argsOf[r]))
      if (argAttrs[i])
        program.setArgAttrs(j, filterTrainAttrs(argAttrs[i]));
    for (auto [j, i] : llvm::enumerate(resultsOf[r]))
      if (resultAttrs[i])
        program.setResultAttrs(j, filterTrainAttrs(resultAttrs[i]));
    program->setAttr(DistDialect::kPlaceAttrName, placeOf(r));
    program->setAttr(
        DistDialect::kScheduleAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("strategy", builder.getStringAttr("pipeline")),
            builder.getNamedAttr(
                "schedule", builder.getStringAttr(
                                schedule::stringifyScheduleKind(kind))),
            builder.getNamedAttr("stages", builder.getI64IntegerAttr(ranks)),
            builder.getNamedAttr("virtual_stages",
                                 builder.getI64IntegerAttr(numStages / ranks)),
            builder.getNamedAttr("microbatches",
                                 builder.getI64IntegerAttr(microbatches)),
        }));
    Block *entry = program.addEntryBlock();
    for (auto [j, i] : llvm::enumerate(argsOf[r]))
      programArgs[r][i] = entry->getArgument(j);
    programs.push_back(program);
  }
  (void)context;

  for (int64_t r = 0; r < ranks; ++r) {
    builder.setInsertionPointToEnd(&programs[r].front());
    for (const schedule::Unit &unit : plan.ranks[r])
      if (failed(writeUnit(r, unit.stage, fromScheduleKind(unit.kind),
                           unit.microbatch)))
        return failure();
    for (int64_t s = r; s < numStages; s += ranks)
      if (failed(writeUnit(r, s, UnitKind::update, 0)))
        return failure();
    SmallVector<Value> results;
    for (unsigned i : resultsOf[r]) {
      Value operand = ret.getOperand(i);
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        results.push_back(programArgs[r].lookup(arg.getArgNumber()));
        continue;
      }
      Operation *def = operand.getDefiningOp();
      int64_t microbatch =
          mbOps.contains(def) ? microbatches - 1 : 0;
      Value value = held[r].lookup({operand, microbatch});
      if (!value)
        return ret.emitError() << "dist-pipeline: result #" << i
                               << " is not computed on pipeline device " << r;
      results.push_back(value);
    }
    func::ReturnOp::create(builder, ret.getLoc(), results);
  }
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
