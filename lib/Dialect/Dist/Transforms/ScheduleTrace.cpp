//===- ScheduleTrace.cpp - simulated timeline of MPMD programs ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Analysis/PipelineSchedule.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTSCHEDULETRACEPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
namespace schedule = mlir::dist::pipeline;

bool mlir::dist::isPipelineProgram(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (auto info =
            func->getAttrOfType<DictionaryAttr>(DistDialect::kScheduleAttrName))
      if (auto strategy = info.getAs<StringAttr>("strategy");
          strategy && strategy.getValue() != "pipeline")
        return false;
  return true;
}

FailureOr<ProgramSchedule>
mlir::dist::readProgramSchedule(ModuleOp module, StringRef pass,
                                function_ref<double(Operation *)> opSeconds) {
  if (!isPipelineProgram(module))
    return emitOptionError(module, pass)
           << "the placed programs are not a pipeline's (their "
              "dist.schedule names another strategy): there is no pipeline "
              "schedule to read";
  ProgramSchedule result;
  schedule::Schedule &plan = result.plan;
  std::map<int64_t, std::vector<schedule::Unit>> ranks;
  std::map<std::pair<int64_t, UnitKind>, double> unitMs;
  int64_t stages = 0, microbatches = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto place = func->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName);
    if (!place || place.getCoords().empty())
      continue;
    if (auto info =
            func->getAttrOfType<DictionaryAttr>(DistDialect::kScheduleAttrName))
      if (auto kind = info.getAs<StringAttr>("schedule"))
        result.kind = kind.str();
    std::vector<schedule::Unit> &order = ranks[place.getCoords().front()];
    for (auto fragment : func.front().getOps<FragmentOp>()) {
      ScheduleUnitAttr unit = fragment.getUnitAttr();
      if (!unit || unit.getKind() == UnitKind::update)
        continue;
      stages = std::max(stages, unit.getStage() + 1);
      microbatches = std::max(microbatches, unit.getMicrobatch() + 1);
      order.push_back({unit.getStage(), unit.getMicrobatch(),
                       toScheduleKind(unit.getKind())});
      plan.splitBackward |= unit.getKind() == UnitKind::weight;
      if (unit.getMicrobatch() != 0)
        continue;
      double &ms = unitMs[{unit.getStage(), unit.getKind()}];
      fragment.getBody().walk(
          [&](Operation *op) { ms += opSeconds(op) * 1e3; });
    }
  }
  if (ranks.empty())
    return emitOptionError(module, pass)
           << "the module has no placed programs with scheduled fragments "
              "(run a pipeline strategy first)";
  plan.numRanks = ranks.rbegin()->first + 1;
  plan.numStages = stages;
  plan.numMicrobatches = microbatches;
  plan.ranks.resize(plan.numRanks);
  for (auto &[rank, order] : ranks)
    plan.ranks[rank] = order;
  for (int64_t s = 0; s < stages; ++s) {
    result.costs.forward.push_back(unitMs[{s, UnitKind::forward}]);
    result.costs.backward.push_back(unitMs[{s, UnitKind::backward}]);
    if (plan.splitBackward)
      result.costs.weight.push_back(unitMs[{s, UnitKind::weight}]);
  }
  return result;
}

namespace {
struct DistScheduleTracePass
    : public mlir::dist::impl::DistScheduleTracePassBase<
          DistScheduleTracePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    if (format != "chrome" && format != "svg") {
      emitOptionError(module, "dist-schedule-trace")
          << "format must be chrome or svg, got '" << format << "'";
      return signalPassFailure();
    }
    FailureOr<ProgramSchedule> programs =
        readProgramSchedule(module, "dist-schedule-trace");
    if (failed(programs))
      return signalPassFailure();
    const schedule::Schedule &plan = programs->plan;
    const schedule::UnitCosts &costs = programs->costs;
    llvm::Expected<schedule::Simulation> simulation =
        schedule::simulate(plan, costs);
    if (!simulation) {
      module.emitError() << "dist-schedule-trace: "
                         << llvm::toString(simulation.takeError());
      return signalPassFailure();
    }
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(outputFile, &error);
    if (!output) {
      emitOptionError(module, "dist-schedule-trace") << error;
      return signalPassFailure();
    }
    if (format == "chrome") {
      output->os() << llvm::formatv(
          "{0:2}\n", schedule::toChromeTrace(*simulation, plan.numRanks));
    } else {
      std::string title;
      if (!programs->kind.empty())
        title = (programs->kind + ", " + Twine(plan.numRanks) + " devices, " +
                 Twine(plan.numMicrobatches) + " microbatches")
                    .str();
      schedule::writeSVG(*simulation, plan.numRanks, title, output->os());
    }
    output->keep();
  }
};
} // namespace
