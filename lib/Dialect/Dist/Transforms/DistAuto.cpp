//===- DistAuto.cpp - choose the strategy for a cluster -------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-auto builds every plan of the search space with the hand strategy on
// a copy of the module, predicts its step time and memory per device from
// the programs it writes and the cluster description, and applies the
// fastest plan that fits.
//
//===----------------------------------------------------------------------===//

#include "DistAuto.h"
#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Analysis/Cluster.h"
#include "distopt/Analysis/CostModel.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/CostOpInterface.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

namespace mlir::dist {
#define GEN_PASS_DEF_DISTAUTOPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::autoplan;

namespace {
/// Predicts plans' costs on a cluster.
class Predictor {
public:
  Predictor(const ClusterSpec &cluster, llvm::StringSet<> &missingPeaks)
      : cluster(cluster), missingPeaks(missingPeaks) {}

  /// The link a collective over `axes` of `mesh` (or a transfer along
  /// them) uses: across nodes when its group spans more consecutive ranks
  /// than a node has.
  const LinkSpec &getLink(MeshOp mesh, ArrayRef<std::string> axes) const {
    ArrayRef<int64_t> shape = mesh.getShape();
    std::optional<int64_t> outer;
    for (const std::string &axis : axes)
      if (std::optional<int64_t> index = mesh.getAxisIndex(axis))
        outer = outer ? std::min(*outer, *index) : *index;
    int64_t span = 1;
    for (int64_t i = outer.value_or(shape.size()); i < int64_t(shape.size());
         ++i)
      span *= shape[i];
    return cluster.getLink(span);
  }

  /// The seconds `op` takes on a device: a collective's ring time over its
  /// link, a compute op's roofline.
  double getOpSeconds(Operation *op) const {
    if (std::optional<CollectiveCost> collective = getCollectiveCost(op)) {
      auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
          op, op->getAttrOfType<FlatSymbolRefAttr>("mesh"));
      if (!mesh)
        return 0;
      const LinkSpec &link = getLink(mesh, collective->axes);
      return getRingSeconds(collective->kind, collective->groupSize,
                            collective->busBytes, link.gbPerSecond,
                            link.latencyUs);
    }
    return getRooflineSeconds(cluster, op, missingPeaks);
  }

  /// Predicts `plan` from `module`, the programs its strategy wrote.
  LogicalResult predict(ModuleOp module, Plan &plan) const {
    SmallVector<func::FuncOp> programs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && train::TrainingStep::isTrainingStep(func) &&
          !train::TrainingStep::isEvalFunction(func))
        programs.push_back(func);
    if (programs.empty())
      return failure();
    for (func::FuncOp program : programs) {
      StepCost cost = analyzeStepCost(program);
      plan.memoryBytes = std::max(plan.memoryBytes, cost.getPeakMemoryBytes());
      plan.commBytes =
          std::max(plan.commBytes, cost.commBytes + cost.sendBytes);
    }
    if (plan.pp == 1) {
      func::FuncOp step = programs.front();
      step.walk([&](Operation *op) {
        (getCollectiveCost(op) ? plan.commSeconds : plan.computeSeconds) +=
            getOpSeconds(op);
      });
      plan.stepSeconds = plan.computeSeconds + plan.commSeconds;
      return success();
    }
    return predictPipeline(module, programs, plan);
  }

private:
  LogicalResult predictPipeline(ModuleOp module,
                                ArrayRef<func::FuncOp> programs,
                                Plan &plan) const {
    auto seconds = [&](Operation *op) { return getOpSeconds(op); };
    FailureOr<ProgramSchedule> schedule =
        readProgramSchedule(module, "dist-auto", seconds);
    if (failed(schedule))
      return failure();
    // Transfers between stages (the largest), and the updates after the
    // last microbatch (the slowest device's).
    double transfer = 0, update = 0;
    for (func::FuncOp program : programs) {
      double programUpdate = 0;
      program.walk([&](Operation *op) {
        if (auto send = dyn_cast<SendOp>(op)) {
          // Stages are along the programs' mesh's first axis.
          auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
              op, send.getTo().getMesh());
          const LinkSpec &link =
              mesh ? getLink(mesh, {cast<StringAttr>(mesh.getAxes()[0]).str()})
                   : cluster.intraNode;
          transfer =
              std::max(transfer, getTensorBytes(send.getInput().getType()) /
                                         (link.gbPerSecond * 1e9) +
                                     link.latencyUs * 1e-6);
        }
        if (auto fragment = dyn_cast<FragmentOp>(op))
          if (ScheduleUnitAttr unit = fragment.getUnitAttr();
              unit && unit.getKind() == UnitKind::update)
            fragment.getBody().walk(
                [&](Operation *inner) { programUpdate += seconds(inner); });
      });
      update = std::max(update, programUpdate);
    }
    schedule->costs.transferTime = transfer * 1e3;
    llvm::Expected<pipeline::Simulation> simulation =
        pipeline::simulate(schedule->plan, schedule->costs);
    if (!simulation) {
      llvm::consumeError(simulation.takeError());
      return failure();
    }
    double busy = 0;
    for (double b : simulation->busy)
      busy = std::max(busy, b);
    plan.bubble = simulation->bubbleFraction;
    plan.stepSeconds = simulation->makespan / 1e3 + update;
    plan.computeSeconds = busy / 1e3 + update;
    plan.commSeconds = plan.stepSeconds - plan.computeSeconds;
    return success();
  }

  const ClusterSpec &cluster;
  llvm::StringSet<> &missingPeaks;
};

struct DistAutoPass : public dist::impl::DistAutoPassBase<DistAutoPass> {
  using Base::Base;

  void runOnOperation() override;

  /// The search space for `cluster` on `step`, in the order ties go by.
  /// With `layers` (the step has numbered modules), full recomputation
  /// per layer is tried too.
  std::vector<Plan> enumeratePlans(const ClusterSpec &cluster,
                                   std::optional<int64_t> batch, bool wide,
                                   bool layers);
  /// The devices' layouts (dp, tp, pp, ZeRO, sequence parallelism,
  /// microbatches, schedule), without recomputation.
  std::vector<Plan> enumerateLayouts(const ClusterSpec &cluster,
                                     std::optional<int64_t> batch, bool wide);
  /// Builds `plan`'s strategy on a copy of the module and predicts it.
  void evaluate(const Predictor &predictor, Plan &plan);
  LogicalResult writeReport(ArrayRef<const Plan *> order, double seconds,
                            bool analytic);
  LogicalResult writeExplain(const ClusterSpec &cluster,
                             ArrayRef<const Plan *> order, double seconds,
                             bool analytic);
};
} // namespace

double autoplan::getRooflineSeconds(const ClusterSpec &cluster, Operation *op,
                                    llvm::StringSet<> &missingPeaks) {
  auto costOp = dyn_cast<CostOpInterface>(op);
  if (!costOp)
    return 0;
  OpCost cost = costOp.getCost();
  Type type = op->getNumResults() ? op->getResult(0).getType() : Type();
  Type element = type ? getElementTypeOrSelf(type) : Type();
  StringRef name = element && element.isBF16()  ? "bf16"
                   : element && element.isF16() ? "f16"
                                                : "f32";
  std::optional<double> peak = cluster.device.getPeakFlops(name);
  if (!peak) {
    missingPeaks.insert(name);
    peak = cluster.device.getPeakFlops("f32");
  }
  return std::max(double(cost.flops) / *peak,
                  (double(cost.bytesRead) + double(cost.bytesWritten)) /
                      (cluster.device.memoryGBPerSecond * 1e9));
}

/// The divisors of `n`, ascending.
static SmallVector<int64_t> getDivisors(int64_t n) {
  SmallVector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      divisors.push_back(d);
  return divisors;
}

std::vector<Plan> DistAutoPass::enumeratePlans(const ClusterSpec &cluster,
                                               std::optional<int64_t> batch,
                                               bool wide, bool layers) {
  // Each layout without recomputation first (ties keep the activations),
  // then with the selective and the full policy, then full per layer.
  std::vector<Plan> layouts = enumerateLayouts(cluster, batch, wide), plans;
  SmallVector<StringRef> policies = {"none", "selective", "full"};
  if (layers)
    policies.push_back("layer");
  for (StringRef remat : policies)
    for (Plan plan : layouts) {
      plan.remat = remat.str();
      plans.push_back(plan);
    }
  return plans;
}

std::vector<Plan> DistAutoPass::enumerateLayouts(const ClusterSpec &cluster,
                                                 std::optional<int64_t> batch,
                                                 bool wide) {
  std::vector<Plan> plans;
  int64_t devices = cluster.getNumDevices();
  for (int64_t pp : getDivisors(devices)) {
    for (int64_t tp : getDivisors(devices / pp)) {
      // Tensor parallelism stays within a node, as Megatron places it.
      if (tp > cluster.devicesPerNode || cluster.devicesPerNode % tp != 0)
        continue;
      int64_t dp = devices / pp / tp;
      for (int64_t zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero) {
        Plan base;
        base.dp = dp;
        base.tp = tp;
        base.pp = pp;
        base.zero = zero;
        if (pp == 1) {
          plans.push_back(base);
          if (dp == 1 && tp > 1) {
            base.sequenceParallel = true;
            plans.push_back(base);
          }
          continue;
        }
        // pp, 2 pp, 4 pp microbatches; the analytic mode goes on doubling
        // while the batch splits, and tries one sample per microbatch.
        SmallVector<int64_t> counts = {pp, 2 * pp, 4 * pp};
        if (wide && batch) {
          for (int64_t m = 8 * pp; dp * m <= *batch; m *= 2)
            counts.push_back(m);
          if (*batch % dp == 0 && *batch / dp > counts.back())
            counts.push_back(*batch / dp);
        }
        for (int64_t microbatches : counts) {
          if (batch && (*batch % (dp * microbatches) != 0))
            continue;
          for (StringRef schedule : {"1f1b", "zb-h1"}) {
            Plan plan = base;
            plan.microbatches = microbatches;
            plan.schedule = schedule.str();
            plans.push_back(plan);
          }
        }
      }
    }
  }
  return plans;
}

void DistAutoPass::evaluate(const Predictor &predictor, Plan &plan) {
  ModuleOp module = getOperation();
  OwningOpRef<ModuleOp> copy = module.clone();
  std::string firstError;
  {
    ScopedDiagnosticHandler quiet(&getContext(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
        firstError = diag.str();
      return success();
    });
    std::string strategy = plan.getStrategy();
    if (!strategy.empty()) {
      PassManager manager(&getContext());
      std::string errors;
      llvm::raw_string_ostream os(errors);
      if (failed(parsePassPipeline(strategy, manager, os))) {
        plan.reason = "cannot read '" + strategy + "': " + errors;
        return;
      }
      if (failed(manager.run(*copy))) {
        plan.reason = firstError.empty() ? "the strategy failed" : firstError;
        return;
      }
    }
  }
  if (failed(predictor.predict(*copy, plan))) {
    plan.reason = "no training step to predict";
    return;
  }
  plan.built = true;
}

LogicalResult DistAutoPass::writeReport(ArrayRef<const Plan *> order,
                                        double seconds, bool analytic) {
  if (report.empty())
    return success();
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file;
  if (report != "-") {
    file = openOutputFile(report, &error);
    if (!file)
      return getOperation().emitError()
             << "dist-auto: cannot write the report '" << report
             << "': " << error;
  }
  raw_ostream &os = file ? file->os() : llvm::errs();
  os << llvm::formatv("{0,-4} {1,-44} {2,10} {3,10} {4,10} {5,7} {6,12} "
                      "{7,12} {8}\n",
                      "rank", "plan", "step ms", "compute ms", "comm ms",
                      "bubble", "MB/device", "comm MB", "fits");
  int64_t shown = 0;
  for (const Plan *plan : order) {
    if (!plan->built || shown++ >= top)
      continue;
    os << llvm::formatv("{0,-4} {1,-44} {2,10:F3} {3,10:F3} {4,10:F3} "
                        "{5,6:F1}% {6,12:F2} {7,12:F3} {8}\n",
                        shown, plan->describe(), plan->stepSeconds * 1e3,
                        plan->computeSeconds * 1e3, plan->commSeconds * 1e3,
                        plan->bubble * 100, plan->memoryBytes / 1e6,
                        plan->commBytes / 1e6, plan->fits ? "yes" : "no");
  }
  os << llvm::formatv(
      "{0} plans, {1} {2}{3}, searched in {4:F2} s\n", order.size(),
      llvm::count_if(order, [](const Plan *p) { return p->built; }),
      analytic ? "predicted analytically" : "built",
      analytic ? llvm::formatv(", {0} left at their lower bound",
                               llvm::count_if(order,
                                              [](const Plan *p) {
                                                return !p->pruned.empty();
                                              }))
                     .str()
               : "",
      seconds);
  if (file)
    file->keep();
  return success();
}

LogicalResult DistAutoPass::writeExplain(const ClusterSpec &cluster,
                                         ArrayRef<const Plan *> order,
                                         double seconds, bool analytic) {
  if (explain.empty())
    return success();
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(explain, &error);
  if (!file)
    return getOperation().emitError()
           << "dist-auto: cannot write the plans to '" << explain
           << "': " << error;
  llvm::json::Array plans;
  for (const Plan *plan : order)
    plans.push_back(plan->toJSON());
  llvm::json::Object object{{"cluster", toJSON(cluster)},
                            {"devices", cluster.getNumDevices()},
                            {"search_time_s", seconds},
                            {"mode", analytic ? "analytic" : "build"},
                            {"plans", std::move(plans)}};
  file->os() << llvm::formatv("{0:2}", llvm::json::Value(std::move(object)))
             << "\n";
  file->keep();
  return success();
}

void DistAutoPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto start = std::chrono::steady_clock::now();
  if (cluster.empty() || nodes < 0 || top < 1) {
    emitOptionError(module, "dist-auto")
        << "needs cluster=<a cluster description (JSON) or preset: "
        << llvm::join(getClusterPresetNames(), ", ")
        << ">, nodes >= 0 and top >= 1, got cluster='" << cluster
        << "' nodes=" << static_cast<int64_t>(nodes)
        << " top=" << static_cast<int64_t>(top);
    return signalPassFailure();
  }
  llvm::Expected<ClusterSpec> spec = loadCluster(
      cluster, nodes ? std::optional<int64_t>(nodes) : std::nullopt);
  if (!spec) {
    emitOptionError(module, "dist-auto") << llvm::toString(spec.takeError());
    return signalPassFailure();
  }
  FailureOr<func::FuncOp> func = getSingleTrainingStep(module, "dist-auto");
  if (failed(func))
    return signalPassFailure();
  train::TrainingStep step = train::TrainingStep::get(*func);
  auto batch = getStepBatch(step);
  if (failed(batch))
    return signalPassFailure();
  std::optional<int64_t> batchSize;
  if (*batch)
    batchSize = (*batch)->second;

  if (mode != "build" && mode != "analytic" && mode != "auto") {
    emitOptionError(module, "dist-auto")
        << "mode must be build, analytic or auto, got '" << mode << "'";
    return signalPassFailure();
  }
  // Building every plan costs about the step's ops per plan; past a few
  // million op builds the analytic model predicts instead.
  constexpr int64_t kMaxBuiltOps = 2'000'000;
  std::vector<Plan> plans =
      enumeratePlans(*spec, batchSize, false, train::hasLayers(step));
  int64_t stepOps = static_cast<int64_t>(func->front().getOperations().size());
  bool analytic = mode == "analytic" ||
                  (mode == "auto" &&
                   static_cast<int64_t>(plans.size()) * stepOps > kMaxBuiltOps);
  if (analytic)
    plans = enumeratePlans(*spec, batchSize, true, train::hasLayers(step));
  llvm::StringSet<> missingPeaks;
  Predictor predictor(*spec, missingPeaks);
  AnalyticModel model(module, *spec, batchSize, missingPeaks);
  // Built plans first; then the analytic ones by their lower bound, each
  // simulated only while it can beat the fastest plan that fits so far.
  std::optional<double> fastest;
  auto settle = [&](Plan &plan) {
    plan.fits = plan.built && plan.memoryBytes <= spec->device.memoryBytes;
    if (plan.fits)
      fastest = std::min(fastest.value_or(plan.stepSeconds), plan.stepSeconds);
  };
  SmallVector<Plan *> bounded;
  for (Plan &plan : plans) {
    if (analytic && plan.dp * plan.pp > 1) {
      // Bounds only: every pipeline is left at them for now.
      model.predict(plan, /*prune=*/true, /*cutoff=*/-1.0);
      if (!plan.pruned.empty())
        bounded.push_back(&plan);
      else
        settle(plan);
      continue;
    }
    evaluate(predictor, plan);
    settle(plan);
  }
  llvm::stable_sort(bounded, [](const Plan *a, const Plan *b) {
    return a->lowerBound < b->lowerBound;
  });
  for (Plan *plan : bounded) {
    if (plan->memoryBytes > spec->device.memoryBytes)
      continue;
    plan->pruned.clear();
    model.predict(*plan, /*prune=*/true, fastest);
    settle(*plan);
  }
  for (const auto &missing : missingPeaks)
    mlir::emitRemark(func->getLoc())
        << "dist-auto: cluster '" << spec->name << "' gives no "
        << missing.getKey() << " peak: " << missing.getKey()
        << " ops are predicted at its f32 peak";
  // Built plans that fit, fastest first; then those over memory; then the
  // refused ones. Stable: ties keep the search order.
  SmallVector<const Plan *> order;
  for (const Plan &plan : plans)
    order.push_back(&plan);
  auto rank = [](const Plan *p) {
    return p->fits ? 0 : p->built ? 1 : !p->pruned.empty() ? 2 : 3;
  };
  llvm::stable_sort(order, [&](const Plan *a, const Plan *b) {
    if (rank(a) != rank(b))
      return rank(a) < rank(b);
    if (rank(a) == 2)
      return a->lowerBound < b->lowerBound;
    return rank(a) < 2 && a->stepSeconds < b->stepSeconds;
  });
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (failed(writeReport(order, seconds, analytic)) ||
      failed(writeExplain(*spec, order, seconds, analytic)))
    return signalPassFailure();
  const Plan &best = *order.front();
  if (!best.fits) {
    InFlightDiagnostic diag = mlir::emitError(func->getLoc()) << "dist-auto: ";
    if (!best.built)
      diag << "no plan for " << spec->getNumDevices() << " devices of '"
           << spec->name << "' could be built; the first (" << best.describe()
           << "): " << best.reason;
    else
      diag << "no plan fits in the " << spec->device.memoryBytes
           << " bytes of a device of '" << spec->name << "'; the fastest ("
           << best.describe() << ") needs " << best.memoryBytes
           << " bytes per device";
    return signalPassFailure();
  }
  mlir::emitRemark(func->getLoc()) << llvm::formatv(
      "dist-auto: {0} on {1} device{2} of '{3}' ({4}): predicted step "
      "{5:F3} ms, {6:F2} MB per device; {7} plan{8} searched in {9:F2} s{10}",
      best.describe(), spec->getNumDevices(),
      spec->getNumDevices() == 1 ? "" : "s", spec->name,
      best.getStrategy().empty() ? "single device" : best.getStrategy(),
      best.stepSeconds * 1e3, best.memoryBytes / 1e6, plans.size(),
      plans.size() == 1 ? "" : "s", seconds,
      analytic ? " (predicted analytically: the plans were not built)" : "");
  std::string strategy = best.getStrategy();
  if (strategy.empty() || !apply)
    return;
  FailureOr<OpPassManager> apply = parsePassPipeline(
      (ModuleOp::getOperationName() + "(" + strategy + ")").str());
  if (failed(apply) || failed(runPipeline(*apply, module)))
    return signalPassFailure();
}
