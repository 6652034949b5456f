//===- ApproximateMath.cpp - vectorizable f32 transcendental functions ----===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

  void runOnOperation() override {
    llvm::StringSet<> names;
    for (const std::string &name : functions)
      names.insert(name);
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) {
          // Upstream asks by operation name (math.tanh).
          name.consume_front("math.");
          return names.contains(name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
