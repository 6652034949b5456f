//===- CostReport.cpp - per-rank FLOPs, communication and memory ----------===//

#include "distopt/Analysis/CostModel.h"
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
struct DistCostReportPass
    : public mlir::dist::impl::DistCostReportPassBase<DistCostReportPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format != "text" && format != "json") {
      module.emitError("dist-cost-report: unknown format '")
          << format << "' (expected 'text' or 'json')";
      return signalPassFailure();
    }
    SmallVector<StepCost> costs;
    WalkResult walk = module.walk([&](func::FuncOp func) {
      if (func.isExternal())
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
      return signalPassFailure();

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(outputFile, &error);
    if (!file) {
      module.emitError("dist-cost-report: cannot write '")
          << outputFile << "': " << error;
      return signalPassFailure();
    }
    raw_ostream &os = file->os();
    if (format == "json") {
      llvm::json::Array functions;
      for (const StepCost &cost : costs)
        functions.push_back(toJSON(cost));
      os << llvm::formatv(
          "{0:2}\n", llvm::json::Value(llvm::json::Object{
                         {"functions", std::move(functions)}}));
    } else {
      for (const StepCost &cost : costs)
        printStepCostTable(cost, os);
    }
    os.flush();
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
