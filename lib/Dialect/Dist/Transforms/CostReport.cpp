//===- CostReport.cpp - per-rank FLOPs, communication and memory ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineBuilder.h"

#include "distopt/Analysis/CostModel.h"
#include "distopt/Analysis/PipelineSchedule.h"
#include "distopt/Dialect/Dist/Transforms/CostReport.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTCOSTREPORTPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
/// The pipeline section of the report: what the schedule costs per stage
/// and device, from the programs' fragments and a simulation.
struct PipelineCost {
  std::string kind;
  int64_t ranks = 0, stages = 0, microbatches = 0;
  pipeline::UnitCosts costs;
  pipeline::Simulation simulation;
  /// Per stage: the bytes of a microbatch's forward results that the stage
  /// keeps for its backward (the activations in flight).
  std::vector<int64_t> stashBytes;
  /// Per device: point-to-point bytes sent per step.
  std::vector<int64_t> sendBytes;
};
} // namespace

/// The pipeline section, or nullopt for a module without scheduled
/// programs; failure (diagnosed) when their schedule deadlocks.
static FailureOr<std::optional<PipelineCost>> analyzePipeline(ModuleOp module) {
  bool scheduled = false;
  module.walk(
      [&](FragmentOp fragment) { scheduled |= bool(fragment.getUnit()); });
  if (!scheduled || !isPipelineProgram(module))
    return std::optional<PipelineCost>();
  FailureOr<ProgramSchedule> programs =
      readProgramSchedule(module, "dist-cost-report");
  if (failed(programs))
    return failure();
  llvm::Expected<pipeline::Simulation> simulation =
      pipeline::simulate(programs->plan, programs->costs);
  if (!simulation) {
    module.emitError() << "dist-cost-report: "
                       << llvm::toString(simulation.takeError());
    return failure();
  }
  PipelineCost cost;
  cost.kind = programs->kind;
  cost.ranks = programs->plan.numRanks;
  cost.stages = programs->plan.numStages;
  cost.microbatches = programs->plan.numMicrobatches;
  cost.costs = programs->costs;
  cost.simulation = std::move(*simulation);
  cost.stashBytes.assign(cost.stages, 0);
  cost.sendBytes.assign(cost.ranks, 0);
  // A value B and W both read is stashed once.
  llvm::DenseSet<Value> counted;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto place = func->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName);
    if (!place || place.getCoords().empty() ||
        place.getCoords().front() >= cost.ranks)
      continue;
    for (Operation &op : func.front()) {
      if (auto send = dyn_cast<SendOp>(op))
        cost.sendBytes[place.getCoords().front()] +=
            getTensorBytes(send.getInput().getType());
      // The stash: what a microbatch's backward (B, W) reads that its
      // forward made or received, kept alive between the two.
      auto fragment = dyn_cast<FragmentOp>(op);
      ScheduleUnitAttr unit = fragment ? fragment.getUnitAttr() : nullptr;
      if (!unit || unit.getMicrobatch() != 0 ||
          unit.getStage() >= cost.stages ||
          (unit.getKind() != UnitKind::backward &&
           unit.getKind() != UnitKind::weight))
        continue;
      auto isForward = [](Operation *user) {
        auto other = dyn_cast<FragmentOp>(user);
        return other && other.getUnitAttr() &&
               other.getUnitAttr().getKind() == UnitKind::forward;
      };
      for (Value input : fragment.getInputs()) {
        Operation *def = input.getDefiningOp();
        bool stashed =
            def &&
            (isForward(def) ||
             (isa<RecvOp>(def) && llvm::any_of(input.getUsers(), isForward)));
        if (stashed && counted.insert(input).second)
          cost.stashBytes[unit.getStage()] += getTensorBytes(input.getType());
      }
    }
  }
  return std::optional<PipelineCost>(std::move(cost));
}

/// The most stash bytes per microbatch of the stages on `rank`.
static int64_t getRankStash(const PipelineCost &cost, int64_t rank) {
  int64_t stash = 0;
  for (int64_t s = rank; s < cost.stages; s += cost.ranks)
    stash = std::max(stash, cost.stashBytes[s]);
  return stash;
}

static llvm::json::Value toJSON(const PipelineCost &cost) {
  llvm::json::Array stages, devices;
  for (int64_t s = 0; s < cost.stages; ++s) {
    llvm::json::Object stage{
        {"stage", s},
        {"device", s % cost.ranks},
        {"forward_ms", cost.costs.forward[s]},
        {"backward_ms", cost.costs.backward[s]},
        {"stash_bytes_per_microbatch", cost.stashBytes[s]}};
    if (cost.costs.isSplit())
      stage["weight_ms"] = cost.costs.weight[s];
    stages.push_back(std::move(stage));
  }
  for (int64_t r = 0; r < cost.ranks; ++r)
    devices.push_back(llvm::json::Object{
        {"device", r},
        {"busy_ms", cost.simulation.busy[r]},
        {"microbatches_in_flight", cost.simulation.peakActivations[r]},
        {"activation_bytes",
         cost.simulation.peakActivations[r] * getRankStash(cost, r)},
        {"send_bytes", cost.sendBytes[r]}});
  return llvm::json::Object{
      {"schedule", cost.kind},
      {"devices", cost.ranks},
      {"stages", std::move(stages)},
      {"microbatches", cost.microbatches},
      {"per_device", std::move(devices)},
      {"step_ms", cost.simulation.makespan},
      {"bubble_fraction", cost.simulation.bubbleFraction}};
}

static void printPipelineTable(const PipelineCost &cost, raw_ostream &os) {
  os << llvm::formatv("pipeline: {0}, {1} stages on {2} devices, {3} "
                      "microbatches\n",
                      cost.kind, cost.stages, cost.ranks, cost.microbatches);
  os << llvm::formatv("  {0,5} {1,6} {2,10} {3,11} {4,9} {5,18}\n", "stage",
                      "device", "forward ms", "backward ms", "weight ms",
                      "stash bytes / mb");
  for (int64_t s = 0; s < cost.stages; ++s)
    os << llvm::formatv(
        "  {0,5} {1,6} {2,10:F3} {3,11:F3} {4,9} {5,18}\n", s, s % cost.ranks,
        cost.costs.forward[s], cost.costs.backward[s],
        cost.costs.isSplit()
            ? llvm::formatv("{0:F3}", cost.costs.weight[s]).str()
            : std::string("-"),
        cost.stashBytes[s]);
  os << llvm::formatv("  {0,6} {1,8} {2,19} {3,16} {4,14}\n", "device",
                      "busy ms", "microbatches alive", "activation bytes",
                      "p2p bytes sent");
  for (int64_t r = 0; r < cost.ranks; ++r)
    os << llvm::formatv(
        "  {0,6} {1,8:F3} {2,19} {3,16} {4,14}\n", r, cost.simulation.busy[r],
        cost.simulation.peakActivations[r],
        cost.simulation.peakActivations[r] * getRankStash(cost, r),
        cost.sendBytes[r]);
  os << llvm::formatv("  simulated step {0:F3} ms, bubble {1:F4}\n",
                      cost.simulation.makespan, cost.simulation.bubbleFraction);
}

FailureOr<std::string> mlir::dist::renderCostReport(ModuleOp module,
                                                    StringRef format) {
  if (format != "text" && format != "json")
    return module.emitError("dist-cost-report: unknown format '")
           << format << "' (expected 'text' or 'json')";
  std::vector<StepCost> costs;
  WalkResult walk = module.walk([&](func::FuncOp func) {
    // Placed programs' kept single-device module is not one of them.
    if (func.isExternal() || isInPlacementSource(func))
      return WalkResult::advance();
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("dist-cost-report needs a function body of one "
                       "block");
      return WalkResult::interrupt();
    }
    costs.push_back(analyzeStepCost(func));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  FailureOr<std::optional<PipelineCost>> pipelineCost = analyzePipeline(module);
  if (failed(pipelineCost))
    return failure();

  std::string text;
  llvm::raw_string_ostream os(text);
  if (format == "json") {
    llvm::json::Array functions;
    for (const StepCost &cost : costs)
      functions.push_back(toJSON(cost));
    llvm::json::Object report{{"functions", std::move(functions)}};
    if (*pipelineCost)
      report["pipeline"] = ::toJSON(**pipelineCost);
    os << llvm::formatv("{0:2}\n", llvm::json::Value(std::move(report)));
  } else {
    for (const StepCost &cost : costs)
      printStepCostTable(cost, os);
    if (*pipelineCost)
      printPipelineTable(**pipelineCost, os);
  }
  return text;
}

namespace {
struct DistCostReportPass
    : public mlir::dist::impl::DistCostReportPassBase<DistCostReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::string> report = renderCostReport(module, format);
    if (failed(report))
      return signalPassFailure();
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(outputFile, &error);
    if (!file) {
      module.emitError("dist-cost-report: cannot write '")
          << outputFile << "': " << error;
      return signalPassFailure();
    }
    file->os() << *report;
    file->os().flush();
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
