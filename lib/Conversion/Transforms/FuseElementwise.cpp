//===- FuseElementwise.cpp - elementwise fusion that keeps gemms ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTFUSEELEMENTWISEPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when `op` is a contraction that must stay whole for a library call
/// (BLAS or the convolution kernels).
static bool isKept(Operation *op) {
  auto linalgOp = dyn_cast_if_present<linalg::LinalgOp>(op);
  return linalgOp && (train::isBlasContraction(linalgOp) ||
                      train::isConvContraction(linalgOp));
}

/// Gives every kept contraction a zero fill of its own (CSE merges equal
/// fills of equal empty tensors): bufferization would otherwise fill one
/// buffer and copy it into each product's, which hides the fill from
/// dist-matmul-to-blas and costs a copy.
static void unshareFills(Operation *root) {
  root->walk([](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || !isKept(op))
      return;
    OpOperand &init = op.getDpsInitsMutable()[0];
    auto fill = init.get().getDefiningOp<linalg::FillOp>();
    if (!fill || fill->hasOneUse())
      return;
    OpBuilder builder(op);
    IRMapping mapping;
    if (auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
      mapping.map(empty.getResult(), builder.clone(*empty)->getResult(0));
    init.set(builder.clone(*fill, mapping)->getResult(0));
  });
}

namespace {
struct DistFuseElementwisePass
    : public mlir::train::impl::DistFuseElementwisePassBase<
          DistFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    unshareFills(getOperation());
    // The fused operand joins its owner (a generic or a reshape) and its
    // producer: neither may be a kept contraction. Producers with several
    // uses would be computed twice.
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      if (!producer || !producer->hasOneUse() || isKept(producer) ||
          isKept(fused->getOwner()))
        return false;
      // A consumer that reads an element more than once (a window, a
      // broadcast) would recompute the producer each time: a padding's
      // guarded gathers fused into a conv's patches ran once per tap.
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      return !consumer ||
             consumer.getMatchingIndexingMap(fused).isPermutation();
    };
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    // Like upstream's pass: not converging within the iteration limit leaves
    // correct, less fused IR.
    (void)applyPatternsGreedily(
        getOperation(), std::move(patterns),
        GreedyRewriteConfig().setUseTopDownTraversal(true));
  }
};
} // namespace
