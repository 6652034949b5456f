//===- ApproximateMath.cpp - vectorizable f32 transcendental functions ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTAPPROXIMATEMATHPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
struct DistApproximateMathPass
    : public mlir::train::impl::DistApproximateMathPassBase<
          DistApproximateMathPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    // The functions upstream approximates (it asks for each by op name),
    // but rsqrt, whose approximation is AVX2 intrinsics the CPU lowering
    // does not lower.
    llvm::StringSet<> known;
    RewritePatternSet probe(context);
    populateMathPolynomialApproximationPatterns(probe, [&](StringRef name) {
      name.consume_front("math.");
      if (name != "rsqrt")
        known.insert(name);
      return false;
    });
    for (const std::string &name : functions) {
      if (!known.contains(name)) {
        SmallVector<StringRef> sorted(known.keys());
        llvm::sort(sorted);
        return emitError(UnknownLoc::get(context))
               << "dist-approximate-math: no approximation of '" << name
               << "' (functions: " << llvm::join(sorted, ", ") << ")";
      }
      names.insert(name);
    }
    return success();
  }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [&](StringRef name) {
      // Upstream asks by operation name (math.tanh).
      name.consume_front("math.");
      return names.contains(name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }

  llvm::StringSet<> names;
};
} // namespace
