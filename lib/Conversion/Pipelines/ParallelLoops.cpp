//===- ParallelLoops.cpp - linalg ops to loops, large ones in parallel ----===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTPARALLELLOOPSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when `op`'s outermost loop should run on the team: a static
/// iteration space of at least `minIterations` points, an outermost
/// parallel iterator of two iterations or more, and no parallel loop
/// around it.
static bool shouldParallelize(linalg::LinalgOp op, int64_t minIterations) {
  if (minIterations <= 0 || op->getParentOfType<scf::ParallelOp>())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || ranges.front() < 2 ||
      op.getIteratorTypesArray().front() != utils::IteratorType::parallel)
    return false;
  int64_t iterations = 1;
  for (int64_t range : ranges) {
    if (ShapedType::isDynamic(range))
      return false;
    iterations *= range;
  }
  return iterations >= minIterations;
}

/// Replaces `loop` (an scf.for without loop-carried values) by an
/// scf.parallel over the same range with the same body.
static void makeParallel(RewriterBase &rewriter, scf::ForOp loop) {
  rewriter.setInsertionPoint(loop);
  auto parallel = scf::ParallelOp::create(
      rewriter, loop.getLoc(), ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  Block *body = parallel.getBody();
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), body->getTerminator(),
                             body->getArguments());
  rewriter.eraseOp(loop);
}

namespace {
struct DistParallelLoopsPass
    : public mlir::train::impl::DistParallelLoopsPassBase<
          DistParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      bool parallel = shouldParallelize(op, minIterations);
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      if (failed(loops)) {
        op->emitOpError("cannot be lowered to loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
      if (parallel && !loops->empty())
        if (auto outer = dyn_cast<scf::ForOp>(loops->front());
            outer && outer.getInitArgs().empty())
          makeParallel(rewriter, outer);
    }
    // The loops index the buffers through affine.apply of their maps:
    // fold the trivial ones, as convert-linalg-to-loops does.
    RewritePatternSet patterns(&getContext());
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
