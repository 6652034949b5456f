//===- MapToGPU.cpp - linalg ops on buffers to mapped parallel loops ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One flat grid per op: the op's parallel iteration space, row-major, in
// blocks of threads, each thread one point (its reductions serial). The
// nests are plain scf.parallel loops with GPU mapping attributes, so the
// same IR becomes kernels (dist-lower-cuda) or CPU loops (the tests).
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTMAPTOGPUPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// `loop` mapped to `processor`.
static void setMapping(scf::ParallelOp loop, gpu::Processor processor) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  (void)gpu::setMappingAttr(loop, {gpu::ParallelLoopDimMappingAttr::get(
                                      context, processor, identity, identity)});
}

/// The values `map` selects from `ivs`, as indices: the loop's index
/// itself for a dim, an affine.apply of the loop indices otherwise.
static SmallVector<Value> applyMap(OpBuilder &builder, Location loc,
                                   AffineMap map, ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      indices.push_back(
          arith::ConstantIndexOp::create(builder, loc, constant.getValue()));
      continue;
    }
    indices.push_back(affine::AffineApplyOp::create(
        builder, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
  }
  return indices;
}

/// Operand `operand` of `op` at the loop point `ivs`: a load of a buffer,
/// or the scalar itself.
static Value readOperand(OpBuilder &builder, Location loc, linalg::GenericOp op,
                         OpOperand &operand, ValueRange ivs) {
  Value value = operand.get();
  if (!isa<MemRefType>(value.getType()))
    return value;
  return memref::LoadOp::create(
      builder, loc, value,
      applyMap(builder, loc, op.getMatchingIndexingMap(&operand), ivs));
}

/// Clones `op`'s body at the loop point `ivs` with its block arguments
/// bound to `args` (null for an output the body does not read); returns
/// the yielded values.
static SmallVector<Value> cloneBody(OpBuilder &builder, linalg::GenericOp op,
                                    ValueRange args, ValueRange ivs) {
  IRMapping mapping;
  Block &body = op.getRegion().front();
  for (auto [arg, value] : llvm::zip_equal(body.getArguments(), args))
    if (value)
      mapping.map(arg, value);
  for (Operation &nested : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    // An assertion (a gather's index out of range) under an scf.if of its
    // failure: convert-parallel-loops-to-gpu leaves a nest whose body
    // holds a bare cf.assert on the host (which dist-gpu-host then
    // refuses), and takes it inside a region.
    if (auto assertion = dyn_cast<cf::AssertOp>(nested)) {
      Location loc = assertion.getLoc();
      Value holds = mapping.lookupOrDefault(assertion.getArg());
      Value fails = arith::XOrIOp::create(
          builder, loc, holds,
          arith::ConstantOp::create(builder, loc, builder.getBoolAttr(true)));
      auto guard = scf::IfOp::create(builder, loc, fails);
      OpBuilder::InsertionGuard insertion(builder);
      builder.setInsertionPointToStart(&guard.getThenRegion().front());
      builder.clone(nested, mapping);
      continue;
    }
    builder.clone(nested, mapping);
  }
  return llvm::map_to_vector(body.getTerminator()->getOperands(), [&](Value v) {
    return mapping.lookupOrDefault(v);
  });
}

/// Rewrites `op` (a generic on buffers with static loop ranges) into a
/// mapped nest of `blockSize` threads per block.
static LogicalResult mapGeneric(linalg::GenericOp op, int64_t blockSize) {
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("must run on buffers to be mapped to a GPU grid");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError(
        "has a dynamic iteration space, which dist-map-to-gpu cannot map");
  SmallVector<unsigned> parallelDims, reductionDims;
  op.getParallelDims(parallelDims);
  op.getReductionDims(reductionDims);
  int64_t points = 1;
  SmallVector<int64_t> parallelRanges;
  for (unsigned d : parallelDims) {
    parallelRanges.push_back(ranges[d]);
    points *= ranges[d];
  }
  if (points == 0) {
    op.erase();
    return success();
  }
  int64_t threads = std::min(blockSize, points);
  int64_t blocks = llvm::divideCeil(points, threads);

  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  // Every bound before the grid, so the kernel takes them as arguments or
  // constants rather than recomputing them per thread.
  Value zero = constant(0), one = constant(1), blockCount = constant(blocks),
        threadCount = constant(threads), pointCount = constant(points);
  DenseMap<unsigned, Value> reductionBounds;
  for (unsigned d : reductionDims)
    reductionBounds[d] = constant(ranges[d]);
  auto grid = scf::ParallelOp::create(builder, loc, zero, blockCount, one);
  setMapping(grid, gpu::Processor::BlockX);
  builder.setInsertionPointToStart(grid.getBody());
  auto block = scf::ParallelOp::create(builder, loc, zero, threadCount, one);
  setMapping(block, gpu::Processor::ThreadX);
  builder.setInsertionPointToStart(block.getBody());
  MLIRContext *context = op.getContext();
  AffineExpr bx = getAffineDimExpr(0, context),
             tx = getAffineDimExpr(1, context);
  Value point = affine::AffineApplyOp::create(
      builder, loc, AffineMap::get(2, 0, bx * threads + tx),
      ValueRange{grid.getInductionVars()[0], block.getInductionVars()[0]});
  if (blocks * threads != points) {
    Value inside = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ult, point, pointCount);
    auto guard = scf::IfOp::create(builder, loc, inside);
    builder.setInsertionPointToStart(&guard.getThenRegion().front());
  }

  // The point's indices, then the reduction loops' as they are made.
  SmallVector<Value> ivs(ranges.size());
  if (!parallelDims.empty()) {
    ValueRange split =
        parallelDims.size() == 1
            ? ValueRange(point)
            : affine::AffineDelinearizeIndexOp::create(
                  builder, loc, point, parallelRanges, /*hasOuterBound=*/true)
                  .getResults();
    for (auto [d, v] : llvm::zip_equal(parallelDims, split))
      ivs[d] = v;
  }

  // Outputs: read once when the body uses them, written once.
  SmallVector<Value> outs;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init) || !reductionDims.empty())
      outs.push_back(readOperand(builder, loc, op, init, ivs));
    else
      outs.push_back(Value()); // (the body never reads it)
  }
  auto evaluate = [&](OpBuilder &b, ValueRange current) {
    SmallVector<Value> args;
    for (OpOperand *input : op.getDpsInputOperands())
      args.push_back(readOperand(b, loc, op, *input, ivs));
    llvm::append_range(args, current);
    return cloneBody(b, op, args, ivs);
  };
  SmallVector<Value> results;
  if (reductionDims.empty()) {
    results = evaluate(builder, outs);
  } else {
    // One scf.for per reduction dim, the outputs carried through them.
    std::function<SmallVector<Value>(OpBuilder &, unsigned, ValueRange)> nest =
        [&](OpBuilder &b, unsigned level,
            ValueRange current) -> SmallVector<Value> {
      if (level == reductionDims.size())
        return evaluate(b, current);
      unsigned d = reductionDims[level];
      auto loop = scf::ForOp::create(
          b, loc, zero, reductionBounds[d], one, current,
          [&](OpBuilder &inner, Location, Value iv, ValueRange iterArgs) {
            ivs[d] = iv;
            scf::YieldOp::create(inner, loc, nest(inner, level + 1, iterArgs));
          });
      return SmallVector<Value>(loop.getResults());
    };
    results = nest(builder, 0, outs);
  }
  for (auto [value, init] : llvm::zip_equal(results, op.getDpsInitsMutable()))
    memref::StoreOp::create(
        builder, loc, value, init.get(),
        applyMap(builder, loc, op.getMatchingIndexingMap(&init), ivs));
  op.erase();
  return success();
}

namespace {
struct DistMapToGPUPass
    : public mlir::train::impl::DistMapToGPUPassBase<DistMapToGPUPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (blockSize >= 1 && blockSize <= 1024)
      return success();
    return emitError(UnknownLoc::get(context))
           << "dist-map-to-gpu: block-size must be 1 to 1024, got "
           << blockSize.getValue();
  }

  void runOnOperation() override {
    // Copies and named ops as generics first.
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<memref::CopyOp, linalg::LinalgOp>(op) &&
          !op->getParentOfType<linalg::LinalgOp>())
        ops.push_back(op);
    });
    SmallVector<linalg::GenericOp> generics;
    for (Operation *op : ops) {
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        rewriter.setInsertionPoint(copy);
        op = linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                                    copy.getTarget());
        rewriter.eraseOp(copy);
      }
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        generics.push_back(generic);
        continue;
      }
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, linalgOp);
      if (failed(generic)) {
        op->emitOpError("cannot be generalized to be mapped to a GPU grid");
        return signalPassFailure();
      }
      generics.push_back(*generic);
    }
    for (linalg::GenericOp generic : generics)
      if (failed(mapGeneric(generic, blockSize)))
        return signalPassFailure();
  }
};
} // namespace
