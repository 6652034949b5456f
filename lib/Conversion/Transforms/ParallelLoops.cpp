//===- ParallelLoops.cpp - linalg ops to loops, large ones in parallel ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

/// Moves `op`'s first parallel loop of two iterations or more outermost
/// when the loops before it are reductions or of one iteration: a batch
/// norm's statistics over [n, c, h, w] loop over c first, so that the
/// channels split over the team (each channel's sum keeps its order: the
/// other loops keep theirs); an update of a grouped conv filter [1, f, c,
/// kh, kw] splits f, not the group loop of one iteration (SGD on ResNet's
/// 512 x 512 x 3 x 3 filters ran on one thread). Unless that loop is the
/// innermost one, the one LLVM vectorizes: a column sum's inner loop over
/// the columns would become a strided walk.
static linalg::LinalgOp hoistParallelLoop(RewriterBase &rewriter,
                                          linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return op;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned count = iterators.size(), hoisted = 0;
  while (hoisted < count &&
         (iterators[hoisted] != utils::IteratorType::parallel ||
          ranges[hoisted] == 1))
    ++hoisted;
  if (hoisted == 0 || hoisted >= count - 1)
    return op;
  SmallVector<unsigned> order = {hoisted};
  for (unsigned i = 0; i < count; ++i)
    if (i != hoisted)
      order.push_back(i);
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  return succeeded(interchanged) ? *interchanged : op;
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

/// Carries the elements of the buffers `outs` (the outputs of the linalg op
/// whose innermost loop `loop` is, a reduction dim) in registers:
/// convert-linalg-to-loops loads and stores each output element on every
/// iteration, a chain LLVM can neither keep in a register (it cannot prove the
/// buffers apart) nor vectorize. Each output element is loaded once before the
/// loop, carried through it and stored once after; its combiner (the op that
/// reads the carried value, when it is floating-point arithmetic) is marked
/// reassociative, so that LLVM vectorizes the loop into partial sums, as
/// every BLAS and compiler sums. Leaves `loop` alone unless each output is
/// loaded and stored exactly once in its body, at indices defined outside
/// it.
static void carryOutputs(RewriterBase &rewriter, scf::ForOp loop,
                         ValueRange outs) {
  SmallVector<memref::LoadOp> loads;
  SmallVector<memref::StoreOp> stores;
  for (Value out : outs) {
    memref::LoadOp load;
    memref::StoreOp store;
    for (Operation &inner : *loop.getBody()) {
      if (auto l = dyn_cast<memref::LoadOp>(inner); l && l.getMemRef() == out) {
        if (load)
          return;
        load = l;
      }
      if (auto s = dyn_cast<memref::StoreOp>(inner);
          s && s.getMemRef() == out) {
        if (store)
          return;
        store = s;
      }
    }
    if (!load || !store || load.getIndices() != store.getIndices() ||
        !llvm::all_of(load.getIndices(), [&](Value index) {
          return loop.isDefinedOutsideOfLoop(index);
        }))
      return;
    loads.push_back(load);
    stores.push_back(store);
  }
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (memref::LoadOp load : loads)
    inits.push_back(rewriter.clone(*load)->getResult(0));
  auto carried = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
      rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return llvm::map_to_vector(stores, [](memref::StoreOp store) {
          return store.getValueToStore();
        });
      }));
  rewriter.setInsertionPointAfter(carried);
  for (auto [i, load, store] : llvm::enumerate(loads, stores)) {
    BlockArgument value = carried.getRegionIterArgs()[i];
    for (Operation *user : load->getUsers()) {
      auto math = dyn_cast<arith::ArithFastMathInterface>(user);
      if (!math)
        continue;
      arith::FastMathFlags flags = arith::FastMathFlags::reassoc;
      if (arith::FastMathFlagsAttr old = math.getFastMathFlagsAttr())
        flags = flags | old.getValue();
      user->setAttr(
          math.getFastMathAttrName(),
          arith::FastMathFlagsAttr::get(rewriter.getContext(), flags));
    }
    rewriter.replaceAllUsesWith(load.getResult(), value);
    memref::StoreOp::create(rewriter, store.getLoc(), carried.getResult(i),
                            store.getMemRef(), store.getIndices());
    rewriter.eraseOp(store);
    rewriter.eraseOp(load);
  }
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
    // The innermost loops that walk a reduction dim, with their ops'
    // outputs.
    SmallVector<std::pair<scf::ForOp, SmallVector<Value>>> reductions;
    for (linalg::LinalgOp op : ops) {
      if (minIterations > 0)
        op = hoistParallelLoop(rewriter, op);
      bool parallel = shouldParallelize(op, minIterations);
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      if (failed(loops)) {
        op->emitOpError("cannot be lowered to loops");
        return signalPassFailure();
      }
      // (A one-loop nest is either carried, a reduction, or made parallel,
      // a parallel loop: never both.)
      if (!loops->empty() &&
          op.getIteratorTypesArray().back() == utils::IteratorType::reduction)
        if (auto inner = dyn_cast<scf::ForOp>(loops->back()))
          reductions.push_back({inner, SmallVector<Value>(op.getDpsInits())});
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
    // Then an output element's indices are the outer loops' induction
    // variables, defined outside the reduction loop.
    for (auto &[loop, outs] : reductions)
      carryOutputs(rewriter, loop, outs);
  }
};
} // namespace
