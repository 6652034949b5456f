//===- TrainVerify.cpp - check that training steps are well formed --------===//

#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::train {
#define GEN_PASS_DEF_TRAINVERIFYPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
struct TrainVerifyPass
    : public mlir::train::impl::TrainVerifyPassBase<TrainVerifyPass> {
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](FunctionOpInterface func) {
      if (TrainingStep::isTrainingStep(func) &&
          failed(TrainingStep::get(func).verify()))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
