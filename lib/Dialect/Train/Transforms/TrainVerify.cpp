//===- TrainVerify.cpp - check that training steps are well formed --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

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
    // The placed programs of a pipelined or parameter-server step (functions
    // with `dist.place`) are one step: only one of them returns the loss
    // (dist-verify checks the programs together).
    getOperation().walk([&](FunctionOpInterface func) {
      bool placed = func->hasAttr("dist.place");
      if (TrainingStep::isTrainingStep(func) &&
          failed(TrainingStep::get(func).verify(/*requireLoss=*/!placed)))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
