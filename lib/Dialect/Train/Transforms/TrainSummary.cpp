//===- TrainSummary.cpp - print a summary of every training step ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace mlir::train {
#define GEN_PASS_DEF_TRAINSUMMARYPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
struct Tally {
  int64_t count = 0, elements = 0, bytes = 0;
};
} // namespace

static void printValues(raw_ostream &os, ArrayRef<StepValue> values) {
  std::map<Role, Tally> byRole;
  for (const StepValue &value : values) {
    if (!value.role)
      continue;
    Tally &tally = byRole[*value.role];
    ++tally.count;
    tally.elements += dist::getNumElements(value.type);
    tally.bytes += dist::getTensorBytes(value.type);
  }
  for (auto &[role, tally] : byRole)
    os << llvm::formatv("    {0,-10} {1,4} tensors {2,14} elements {3,14} "
                        "bytes\n",
                        stringifyRole(role), tally.count, tally.elements,
                        tally.bytes);
}

static void printSummary(raw_ostream &os, TrainingStep step) {
  os << "training step @" << step.func.getName() << "\n  arguments\n";
  printValues(os, step.arguments);
  os << "  results\n";
  printValues(os, step.results);

  std::map<std::string, int64_t> opCounts;
  dist::OpCost total;
  int64_t numOps = 0;
  step.func->walk([&](Operation *op) {
    if (op == step.func.getOperation() || op->hasTrait<OpTrait::IsTerminator>())
      return;
    ++numOps;
    ++opCounts[op->getName().getStringRef().str()];
    if (auto costOp = dyn_cast<dist::CostOpInterface>(op))
      total += costOp.getCost();
  });
  os << "  ops " << numOps << "\n";
  for (auto &[name, count] : opCounts)
    os << llvm::formatv("    {0,-32} {1,6}\n", name, count);
  os << llvm::formatv("  flops {0}\n  bytes read {1}\n  bytes written {2}\n",
                      total.flops, total.bytesRead, total.bytesWritten);
}

namespace {
struct TrainSummaryPass
    : public mlir::train::impl::TrainSummaryPassBase<TrainSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(outputFile, &error);
    if (!output) {
      getOperation().emitError()
          << "cannot open summary output '" << outputFile << "': " << error;
      return signalPassFailure();
    }
    getOperation().walk([&](FunctionOpInterface func) {
      // Placed programs' kept single-device module is not a step of theirs.
      if (TrainingStep::isTrainingStep(func) &&
          !dist::isInPlacementSource(func))
        printSummary(output->os(), TrainingStep::get(func));
    });
    output->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
