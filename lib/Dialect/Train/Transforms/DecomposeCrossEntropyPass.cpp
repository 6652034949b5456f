//===- DecomposeCrossEntropyPass.cpp - the rewrite as a pass --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/DecomposeCrossEntropy.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_TRAINDECOMPOSECROSSENTROPYPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
struct TrainDecomposeCrossEntropyPass
    : public mlir::train::impl::TrainDecomposeCrossEntropyPassBase<
          TrainDecomposeCrossEntropyPass> {
  void runOnOperation() override {
    llvm::SetVector<std::pair<Value, Value>> pairs;
    getOperation().walk([&](CrossEntropyOp op) {
      pairs.insert({op.getLogits(), op.getLabels()});
    });
    getOperation().walk([&](CrossEntropyBackwardOp op) {
      pairs.insert({op.getLogits(), op.getLabels()});
    });
    for (auto [logits, labels] : pairs)
      decomposeCrossEntropy(logits, labels);
  }
};
} // namespace
