//===- DistAutoAnalytic.cpp - dist-auto without building each plan --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-auto's analytic mode predicts a plan from the single-device step
// annotated once per tensor-parallel degree and recomputation policy, on a
// `[data, model]` mesh, with the shardings propagated (nothing partitioned):
//
// - an op whose results are split or partial over `data` is per-sample
//   work: it runs once per microbatch and takes 1 / (dp * microbatches) of
//   its single-device roofline; one split or partial over `model` takes
//   1 / tp of it; the others (the update, the loss's scalars) run whole, the
//   update over 1 / dp of the state with ZeRO;
// - a value partial over `model` is all-reduced over the tensor-parallel
//   group, and a gradient (partial over `data`) over the data-parallel
//   group once per step (ZeRO's reduce-scatter and all-gather);
// - pipeline stages are cut as dist-pipeline cuts them (chargeToForward,
//   cutEvenly); the schedule is simulated with each stage's forward,
//   backward and weight-gradient time and the largest transfer between
//   stages, and gives each stage's microbatches in flight;
// - memory per device: the stage's parameters and optimizer state (twice:
//   the arguments and the update's results, as the cost model counts them)
//   and gradients, in ZeRO's shares, the activations its forward keeps for the
//   backward times the microbatches in flight, the largest op's results,
//   and the replica's share of the inputs.
//
// Plans that `dp * pp == 1` leaves on one stage and one replica are built
// as in the build mode: they are the annotated program itself.
//
//===----------------------------------------------------------------------===//

#include "DistAuto.h"
#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Analysis/CostModel.h"
#include "distopt/Analysis/PipelineSchedule.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::autoplan;

namespace {
enum class Phase { Forward, Backward, Weight, Update };

/// One op of the annotated step.
struct OpRecord {
  Phase phase = Phase::Update;
  /// Per-sample work: divided over the replicas and microbatches.
  bool perSample = false;
  /// Seconds on one device of the tensor-parallel group, whole batch.
  double seconds = 0;
  /// Bytes all-reduced over the tensor-parallel group after it, per
  /// device, whole batch (per-sample when `perSampleComm`).
  double tpBytes = 0;
  bool perSampleComm = false;
  int64_t tpCollectives = 0;
  /// The forward op it is charged to.
  size_t anchor = 0;
};
} // namespace

/// The step annotated for one tensor-parallel degree and recomputation
/// policy, reduced to what plans need.
struct AnalyticModel::Core {
  std::string reason;
  int64_t tp = 1;
  SmallVector<OpRecord> ops;
  size_t numForward = 0;
  /// Per forward op: its time plus the backward's charged to it (the
  /// weight stages are cut by).
  SmallVector<double> weights;
  /// Per forward op, bytes per device: the activations its results keep
  /// for the backward (per-sample, and whole), the largest per-sample
  /// working set of the ops charged to it, the parameters, optimizer state
  /// and gradients charged to it.
  SmallVector<double> stashSample, stashWhole, transient, params, optState,
      grads;
  /// Per forward op: the parameters charged to it.
  SmallVector<int64_t> paramCount;
  /// Per forward op i: per-sample bytes of forward values defined before i
  /// and read at or after it (what a cut at i transfers), whole batch.
  SmallVector<double> crossing;
  double inputBytes = 0;
  /// The stages per pipeline depth.
  std::map<int64_t, std::unique_ptr<Cut>> cuts;
  /// Simulated schedules by (pp, microbatches, schedule, ZeRO stage).
  std::map<std::tuple<int64_t, int64_t, std::string, int64_t>,
           std::unique_ptr<Simulated>>
      simulations;
};

/// What one stage of a cut holds and runs.
struct AnalyticModel::StageSums {
  /// Forward, backward, weight-gradient seconds: per-sample work (whole
  /// batch) and the rest; the bytes all-reduced over the model axis after
  /// them (per-sample and not) and how many all-reduces.
  std::array<double, 3> sample = {}, whole = {}, tpSample = {}, tpWhole = {};
  std::array<int64_t, 3> tpCount = {};
  double update = 0;
  double grads = 0, params = 0, optState = 0, stashSample = 0, stashWhole = 0,
         transient = 0;
  int64_t paramCount = 0;
};

/// The step cut into pipeline stages.
struct AnalyticModel::Cut {
  SmallVector<size_t> starts;
  std::vector<StageSums> stages;
  /// Per boundary: the per-sample bytes that cross it, whole batch.
  std::vector<double> crossing;
};

/// One schedule's simulation.
struct AnalyticModel::Simulated {
  std::string reason;
  double makespan = 0, bubble = 0;
  std::vector<int64_t> inFlight;
};

AnalyticModel::AnalyticModel(ModuleOp module, const ClusterSpec &cluster,
                             std::optional<int64_t> batch,
                             llvm::StringSet<> &missingPeaks)
    : module(module), cluster(cluster), batch(batch),
      missingPeaks(missingPeaks) {}

AnalyticModel::~AnalyticModel() = default;

/// `value`'s sharding: an argument's attribute or its op's result's.
static TensorSharding getSharding(Value value, MeshOp mesh) {
  ShardingAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func)
      attr = func.getArgAttrOfType<ShardingAttr>(
          arg.getArgNumber(), DistDialect::kShardingAttrName);
  } else if (auto all = value.getDefiningOp()->getAttrOfType<ArrayAttr>(
                 DistDialect::kResultShardingsAttrName)) {
    unsigned index = cast<OpResult>(value).getResultNumber();
    if (index < all.size())
      attr = dyn_cast<ShardingAttr>(all[index]);
  }
  return attr ? toTensorSharding(attr, mesh) : TensorSharding();
}

static bool splitsDim(const TensorSharding &sharding, int64_t axis) {
  return llvm::any_of(sharding.dims, [&](const AxisIndices &axes) {
    return llvm::is_contained(axes, axis);
  });
}

AnalyticModel::Core &AnalyticModel::getCore(int64_t tp, StringRef remat) {
  std::unique_ptr<Core> &slot = cores[{tp, remat.str()}];
  if (slot)
    return *slot;
  slot = std::make_unique<Core>();
  Core &core = *slot;
  core.tp = tp;

  std::string firstError;
  ScopedDiagnosticHandler quiet(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = diag.str();
    return success();
  });
  auto fail = [&](StringRef what) -> Core & {
    core.reason = firstError.empty() ? what.str() : firstError;
    return core;
  };
  // The step recomputing as `remat` says, once for every tensor-parallel
  // degree.
  auto [recomputed, added] = rematSteps.try_emplace(remat.str());
  if (added) {
    recomputed->second = module.clone();
    if (remat != "none") {
      PassManager manager(module.getContext());
      std::string errors;
      llvm::raw_string_ostream os(errors);
      Plan plan;
      plan.remat = remat.str();
      if (failed(parsePassPipeline(plan.getRematStrategy(), manager, os)) ||
          failed(manager.run(*recomputed->second))) {
        rematErrors[remat.str()] =
            firstError.empty() ? "train-remat failed" : firstError;
        recomputed->second = nullptr;
      }
    }
  }
  if (!recomputed->second) {
    core.reason = rematErrors[remat.str()];
    return core;
  }
  OwningOpRef<ModuleOp> copy = recomputed->second->clone();
  SetAsideEvaluation aside(*copy, "dist-auto");
  FailureOr<func::FuncOp> func = getSingleTrainingStep(*copy, "dist-auto");
  if (failed(func))
    return fail("no single training step");
  // Two replicas tell per-sample work from the rest; the model axis is the
  // plan's.
  SmallVector<StringRef> axes = {"data"};
  SmallVector<int64_t> shape = {2};
  if (tp > 1) {
    axes.push_back("model");
    shape.push_back(tp);
  }
  FailureOr<MeshOp> mesh = getOrCreateMesh(*copy, "mesh", axes, shape, {});
  if (failed(mesh) ||
      (tp > 1 && failed(annotateTensorParallel(*copy, *mesh, /*modelAxis=*/1,
                                               /*sequenceParallel=*/false))) ||
      failed(annotateDataParallel(*copy, *mesh, /*batchAxes=*/{0},
                                  /*replicas=*/2,
                                  /*replicateState=*/tp == 1)))
    return fail("the step cannot be annotated");
  PassManager propagate(module.getContext());
  propagate.addPass(createDistPropagateShardingPass());
  if (failed(propagate.run(*copy)))
    return fail("the shardings do not propagate");

  const int64_t data = 0, model = tp > 1 ? 1 : -1;
  auto modelShare = [&](Value value) {
    return model >= 0 && splitsDim(getSharding(value, *mesh), model) ? tp : 1;
  };
  auto localBytes = [&](Value value) {
    return double(getTensorBytes(value.getType())) / modelShare(value);
  };
  train::TrainingStep step = train::TrainingStep::get(*func);
  Block &body = func->front();

  // Forward: what the loss and the metrics depend on.
  SmallVector<Value> worklist;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (const train::StepValue &result : step.results)
    if (result.role == train::Role::loss || result.role == train::Role::metric)
      worklist.push_back(ret.getOperand(result.index));
  DenseSet<Operation *> forwardSet;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !forwardSet.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
  }

  SmallVector<Operation *> all, forward;
  DenseMap<Operation *, size_t> position;
  DenseSet<Value> reduced; // gradients and what the update makes of them
  for (Operation &op : body.without_terminator()) {
    OpRecord record;
    bool gradient = op.getNumResults() > 0, modelSplit = false;
    for (Value result : op.getResults()) {
      TensorSharding sharding = getSharding(result, *mesh);
      bool split = splitsDim(sharding, data);
      bool partial = llvm::is_contained(sharding.partial, data);
      record.perSample |= split || partial;
      gradient &= partial && !split;
      if (model >= 0) {
        modelSplit |= splitsDim(sharding, model) ||
                      llvm::is_contained(sharding.partial, model);
        if (llvm::is_contained(sharding.partial, model)) {
          record.tpBytes += localBytes(result);
          record.perSampleComm |= split;
          ++record.tpCollectives;
        }
      }
    }
    bool readsReduced = llvm::any_of(
        op.getOperands(), [&](Value v) { return reduced.contains(v); });
    if (forwardSet.contains(&op))
      record.phase = Phase::Forward;
    else if (record.perSample)
      record.phase = gradient ? Phase::Weight : Phase::Backward;
    else
      record.phase = readsReduced ? Phase::Update : Phase::Backward;
    if (record.phase == Phase::Update || record.phase == Phase::Weight)
      for (Value result : op.getResults())
        reduced.insert(result);
    record.seconds =
        getRooflineSeconds(cluster, &op, missingPeaks) / (modelSplit ? tp : 1);
    position[&op] = all.size();
    all.push_back(&op);
    // Stages are cut along the per-sample forward, as dist-pipeline cuts
    // them.
    if (record.phase == Phase::Forward && record.perSample)
      forward.push_back(&op);
    core.ops.push_back(record);
  }
  if (forward.empty())
    return fail("the step has no forward ops on the batch");
  core.numForward = forward.size();
  DenseMap<Operation *, size_t> charged = chargeToForward(forward, all);
  for (auto [i, op] : llvm::enumerate(forward))
    charged[op] = i;
  // The rest of the forward (a parameter's 16-bit copy) goes with the
  // first per-sample work that reads it.
  for (Operation *op : llvm::reverse(all)) {
    OpRecord &record = core.ops[position[op]];
    if (record.phase != Phase::Forward || record.perSample)
      continue;
    std::optional<size_t> first;
    for (Operation *user : op->getUsers())
      if (auto it = position.find(user);
          it != position.end() && core.ops[it->second].phase == Phase::Forward)
        first = std::min(first.value_or(charged.lookup(user)),
                         charged.lookup(user));
    if (first)
      charged[op] = *first;
  }
  size_t n = forward.size();
  core.weights.assign(n, 0);
  core.stashSample.assign(n, 0);
  core.stashWhole.assign(n, 0);
  core.transient.assign(n, 0);
  core.params.assign(n, 0);
  core.optState.assign(n, 0);
  core.grads.assign(n, 0);
  core.paramCount.assign(n, 0);
  SmallVector<double> crossingDelta(n + 1, 0);
  for (auto [i, op] : llvm::enumerate(all)) {
    OpRecord &record = core.ops[i];
    record.anchor = charged.lookup(op);
    if (record.phase != Phase::Update)
      core.weights[record.anchor] += record.seconds;
    double working = 0;
    for (Value result : op->getResults()) {
      if (record.phase == Phase::Weight)
        core.grads[record.anchor] += localBytes(result);
      if (record.perSample)
        working += localBytes(result);
      if (record.phase != Phase::Forward)
        continue;
      // Kept for the backward; per-sample values cross the cuts between
      // here and their last forward reader.
      bool sampled = splitsDim(getSharding(result, *mesh), data);
      size_t lastForward = record.anchor;
      bool backward = false;
      for (Operation *user : result.getUsers()) {
        auto it = position.find(user);
        if (it == position.end())
          continue;
        if (core.ops[it->second].phase == Phase::Forward)
          lastForward = std::max(lastForward, charged.lookup(user));
        else if (core.ops[it->second].phase != Phase::Update)
          backward = true;
      }
      if (backward)
        (sampled ? core.stashSample : core.stashWhole)[record.anchor] +=
            localBytes(result);
      if (sampled && lastForward > record.anchor) {
        crossingDelta[record.anchor + 1] += localBytes(result);
        crossingDelta[lastForward + 1] -= localBytes(result);
      }
    }
    core.transient[record.anchor] =
        std::max(core.transient[record.anchor], working);
  }
  core.crossing.assign(n, 0);
  double running = 0;
  for (size_t i = 0; i < n; ++i)
    core.crossing[i] = running += crossingDelta[i];

  // State: each argument goes with the first op that reads it.
  for (const train::StepValue &arg : step.arguments) {
    Value value = func->getArgument(arg.index);
    std::optional<size_t> first;
    for (Operation *user : value.getUsers())
      if (auto it = position.find(user); it != position.end())
        first = std::min(first.value_or(it->second), it->second);
    if (arg.role == train::Role::input || arg.role == train::Role::label) {
      core.inputBytes += localBytes(value);
      continue;
    }
    if (!first)
      continue;
    size_t anchor = core.ops[*first].anchor;
    if (arg.role == train::Role::param) {
      core.params[anchor] += localBytes(value);
      ++core.paramCount[anchor];
    } else if (arg.role == train::Role::opt_state)
      core.optState[anchor] += localBytes(value);
  }
  return core;
}

AnalyticModel::Cut &AnalyticModel::getCut(Core &core, int64_t pp) {
  std::unique_ptr<Cut> &slot = core.cuts[pp];
  if (slot)
    return *slot;
  slot = std::make_unique<Cut>();
  Cut &cut = *slot;
  cut.starts = pp > 1 ? cutEvenly(core.weights, pp) : SmallVector<size_t>{0};
  auto stageOf = [&](size_t anchor) {
    return static_cast<int64_t>(llvm::upper_bound(cut.starts, anchor) -
                                cut.starts.begin()) -
           1;
  };
  cut.stages.resize(pp);
  for (const OpRecord &record : core.ops) {
    StageSums &stage = cut.stages[stageOf(record.anchor)];
    if (record.phase == Phase::Update) {
      stage.update += record.seconds;
      continue;
    }
    int unit = record.phase == Phase::Forward    ? 0
               : record.phase == Phase::Backward ? 1
                                                 : 2;
    (record.perSample ? stage.sample : stage.whole)[unit] += record.seconds;
    (record.perSampleComm ? stage.tpSample : stage.tpWhole)[unit] +=
        record.tpBytes;
    stage.tpCount[unit] += record.tpCollectives;
  }
  for (size_t i = 0; i < core.numForward; ++i) {
    StageSums &stage = cut.stages[stageOf(i)];
    stage.grads += core.grads[i];
    stage.params += core.params[i];
    stage.paramCount += core.paramCount[i];
    stage.optState += core.optState[i];
    stage.stashSample += core.stashSample[i];
    stage.stashWhole += core.stashWhole[i];
    stage.transient = std::max(stage.transient, core.transient[i]);
  }
  for (int64_t s = 1; s < pp; ++s)
    cut.crossing.push_back(core.crossing[cut.starts[s]]);
  return cut;
}

/// The seconds of `count` collectives of `kind` moving `bytes` in all over
/// `group` devices on `link`.
static double getCollectiveSeconds(CollectiveKind kind, int64_t group,
                                   double bytes, int64_t count,
                                   const LinkSpec &link) {
  if (group <= 1 || count <= 0)
    return 0;
  double bus = getRingBusBytes(kind, group, bytes);
  return getRingSeconds(kind, group, bus, link.gbPerSecond, link.latencyUs) +
         (count - 1) *
             getRingSeconds(kind, group, 0, link.gbPerSecond, link.latencyUs);
}

void AnalyticModel::predict(Plan &plan, bool prune,
                            std::optional<double> cutoff) {
  Core &core = getCore(plan.tp, plan.remat);
  if (!core.reason.empty()) {
    plan.reason = core.reason;
    return;
  }
  int64_t pp = plan.pp, dp = plan.dp, tp = plan.tp;
  int64_t mb = pp > 1 ? plan.microbatches : 1;
  // The strategies' own refusal.
  if (batch && *batch % (dp * mb) != 0) {
    plan.reason = llvm::formatv("the batch of {0} does not split into {1} "
                                "data-parallel replicas x {2} microbatches",
                                *batch, dp, mb)
                      .str();
    return;
  }
  if (static_cast<size_t>(pp) > core.numForward) {
    plan.reason =
        llvm::formatv("{0} stages for {1} forward ops", pp, core.numForward)
            .str();
    return;
  }
  // The simulator runs every unit: bound its work.
  constexpr int64_t kMaxUnits = 1 << 16;
  if (pp > 1 && pp * mb > kMaxUnits) {
    plan.reason = llvm::formatv("{0} stages x {1} microbatches: over the "
                                "{2} units the simulator runs",
                                pp, mb, kMaxUnits)
                      .str();
    return;
  }
  Cut &cut = getCut(core, pp);
  double share = double(dp) * mb; // per-sample work per microbatch
  const LinkSpec &tpLink = cluster.getLink(tp);
  const LinkSpec &dpLink = cluster.getLink(dp * tp);
  const LinkSpec &ppLink = cluster.getLink(pp * dp * tp);

  // Per stage: forward, backward and weight-gradient seconds per
  // microbatch, the update's per step, and the bytes a device sends.
  std::vector<std::array<double, 3>> units(pp);
  std::vector<double> compute(pp), update(pp), commBytes(pp);
  for (int64_t s = 0; s < pp; ++s) {
    const StageSums &stage = cut.stages[s];
    for (int unit = 0; unit < 3; ++unit) {
      double bytes = stage.tpSample[unit] / share + stage.tpWhole[unit];
      units[s][unit] = stage.sample[unit] / share + stage.whole[unit];
      compute[s] += units[s][unit];
      units[s][unit] += getCollectiveSeconds(
          CollectiveKind::AllReduce, tp, bytes, stage.tpCount[unit], tpLink);
      commBytes[s] +=
          getRingBusBytes(CollectiveKind::AllReduce, tp, bytes) * mb;
    }
    update[s] = plan.zero > 0 ? stage.update / dp : stage.update;
    // The gradients, as dist-hybrid reduces them: one bucket all-reduced
    // per step with the loss; with ZeRO reduce-scattered (per microbatch
    // from ZeRO-2 in a pipeline, one bucket) and the parameters
    // all-gathered after the update, one each; ZeRO-3 in a pipeline
    // gathers each parameter in each microbatch's forward and backward
    // instead. With ZeRO the loss is all-reduced alone.
    if (dp > 1) {
      auto seconds = [&](CollectiveKind kind, double bytes, int64_t count) {
        return getCollectiveSeconds(kind, dp, bytes, count, dpLink);
      };
      auto bus = [&](CollectiveKind kind, double bytes) {
        return getRingBusBytes(kind, dp, bytes);
      };
      if (plan.zero == 0) {
        update[s] += seconds(CollectiveKind::AllReduce, stage.grads, 1);
        commBytes[s] += bus(CollectiveKind::AllReduce, stage.grads);
      } else {
        update[s] += seconds(CollectiveKind::AllReduce, 4, 1);
        if (pp > 1 && plan.zero >= 2) {
          units[s][1] += seconds(CollectiveKind::ReduceScatter, stage.grads, 1);
          commBytes[s] += bus(CollectiveKind::ReduceScatter, stage.grads) * mb;
        } else {
          update[s] += seconds(CollectiveKind::ReduceScatter, stage.grads, 1);
          commBytes[s] += bus(CollectiveKind::ReduceScatter, stage.grads);
        }
      }
      if (plan.zero >= 3 && pp > 1) {
        double gather =
            seconds(CollectiveKind::AllGather, stage.params, stage.paramCount);
        units[s][0] += gather;
        units[s][1] += gather;
        commBytes[s] += 2 * bus(CollectiveKind::AllGather, stage.params) * mb;
      } else if (plan.zero >= 1) {
        update[s] +=
            seconds(CollectiveKind::AllGather, stage.params, stage.paramCount);
        commBytes[s] += bus(CollectiveKind::AllGather, stage.params);
      }
    }
  }
  // Between stages: each microbatch's activations forward and their
  // gradients back.
  double transfer = 0;
  for (int64_t s = 0; s + 1 < pp; ++s) {
    double bytes = cut.crossing[s] / share;
    transfer = std::max(transfer, bytes / (ppLink.gbPerSecond * 1e9) +
                                      ppLink.latencyUs * 1e-6);
    commBytes[s] += 2 * bytes * mb;
  }

  double slowestUpdate = 0, busiest = 0, slowestCompute = 0;
  for (int64_t s = 0; s < pp; ++s) {
    slowestUpdate = std::max(slowestUpdate, update[s]);
    busiest = std::max(busiest, (units[s][0] + units[s][1] + units[s][2]) * mb);
    slowestCompute = std::max(slowestCompute,
                              compute[s] * mb + cut.stages[s].update /
                                                    (plan.zero > 0 ? dp : 1));
  }
  // A bound that needs no simulation: stage k starts after the first
  // microbatch's forward through the stages before it, runs its units,
  // and after its last backward the stages before it run theirs.
  double before = 0, beforeForward = 0, bound = busiest;
  for (int64_t k = 0; k < pp; ++k) {
    const std::array<double, 3> &unit = units[k];
    bound = std::max(
        {bound, before + 2 * k * transfer + mb * (unit[0] + unit[1]),
         beforeForward + k * transfer + mb * (unit[0] + unit[1] + unit[2])});
    before += unit[0] + unit[1];
    beforeForward += unit[0];
  }
  plan.lowerBound = bound + slowestUpdate;
  // Memory per device with `inFlight` microbatches' activations kept on
  // each stage.
  auto getMemory = [&](ArrayRef<int64_t> inFlight) {
    int64_t memory = 0;
    for (int64_t s = 0; s < pp; ++s) {
      const StageSums &stage = cut.stages[s];
      // The state twice: the arguments and the update's results (the cost
      // model's liveness does not update in place).
      double bytes =
          2 * stage.params / (plan.zero >= 3 ? dp : 1) +
          2 * stage.optState / (plan.zero >= 1 ? dp : 1) +
          stage.grads / (plan.zero >= 2 ? dp : 1) +
          (stage.stashSample / share + stage.stashWhole) * inFlight[s] +
          stage.transient / share + core.inputBytes / dp;
      memory = std::max(memory, static_cast<int64_t>(bytes));
    }
    return memory;
  };
  std::vector<int64_t> inFlight(pp, 1);
  if (prune && pp > 1) {
    // 1F1B's warm-up: stage s runs pp - s forwards before its first
    // backward (zb-h1 keeps 1F1B's).
    std::vector<int64_t> warmUp(pp);
    for (int64_t s = 0; s < pp; ++s)
      warmUp[s] = std::min(pp - s, mb);
    plan.memoryBytes = getMemory(warmUp);
    if (plan.memoryBytes > cluster.device.memoryBytes) {
      plan.pruned = "over memory with 1F1B's warm-up microbatches in flight "
                    "(min(pp - stage, microbatches))";
      return;
    }
    if (cutoff && plan.lowerBound > *cutoff) {
      plan.pruned = "its lower bound (no bubble) is slower than a plan that "
                    "fits";
      return;
    }
  }

  // Time: one stage runs its units back to back; a pipeline is simulated.
  double makespan = busiest;
  plan.bubble = 0;
  if (pp > 1) {
    std::unique_ptr<Simulated> &sim =
        core.simulations[{pp, mb, plan.schedule, plan.zero}];
    if (!sim) {
      sim = std::make_unique<Simulated>();
      std::optional<pipeline::ScheduleKind> kind =
          pipeline::symbolizeScheduleKind(plan.schedule);
      pipeline::UnitCosts costs;
      bool split = kind == pipeline::ScheduleKind::ZeroBubbleH1;
      for (int64_t s = 0; s < pp; ++s) {
        costs.forward.push_back(units[s][0] * 1e3);
        costs.backward.push_back(
            (split ? units[s][1] : units[s][1] + units[s][2]) * 1e3);
        if (split)
          costs.weight.push_back(units[s][2] * 1e3);
      }
      costs.transferTime = transfer * 1e3;
      llvm::Expected<pipeline::Schedule> schedule =
          kind ? pipeline::buildSchedule(*kind, pp, 1, mb, &costs)
               : llvm::createStringError("unknown schedule");
      llvm::Expected<pipeline::Simulation> simulation =
          schedule ? pipeline::simulate(*schedule, costs)
                   : llvm::Expected<pipeline::Simulation>(schedule.takeError());
      if (!simulation) {
        sim->reason = llvm::toString(simulation.takeError());
      } else {
        sim->makespan = simulation->makespan / 1e3;
        sim->bubble = simulation->bubbleFraction;
        sim->inFlight = simulation->peakActivations;
      }
    }
    if (!sim->reason.empty()) {
      plan.reason = sim->reason;
      return;
    }
    makespan = sim->makespan;
    plan.bubble = sim->bubble;
    for (int64_t s = 0; s < pp && s < int64_t(sim->inFlight.size()); ++s)
      inFlight[s] = std::max<int64_t>(1, sim->inFlight[s]);
  }
  int64_t memory = getMemory(inFlight);
  double sent = 0;
  for (int64_t s = 0; s < pp; ++s)
    sent = std::max(sent, commBytes[s]);
  plan.stepSeconds = makespan + slowestUpdate;
  plan.computeSeconds = std::min(plan.stepSeconds, slowestCompute);
  plan.commSeconds = plan.stepSeconds - plan.computeSeconds;
  plan.memoryBytes = memory;
  plan.commBytes = sent;
  plan.built = true;
}
