//===- TrainToLinalgWindow.cpp - pooling to linalg ------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Windowed ops in NCHW: the input is padded first (`buildPad`), then a
// forward op is one `linalg.generic` whose input map walks the window
// (`oh * stride + kh * dilation`); window loops without an operand of their
// own get their bounds from an empty `[kh, kw]`-shaped tensor, as linalg's
// named pooling ops do. Backward ops gather, one generic per phase of the
// input positions modulo the stride: every position sums the output
// positions whose window holds it, read through affine maps.
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

/// An index constant.
static Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// An empty tensor whose shape gives window loops their bounds.
static Value buildWindow(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

/// The divisor of avg pooling at output index `(oh, ow)`: the window size,
/// or without `count_include_pad` its in-bounds part.
static Value poolDivisor(OpBuilder &b, Location loc, Type element, Value oh,
                         Value ow, ArrayRef<int64_t> kernel,
                         ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
                         ArrayRef<int64_t> inputSize, bool includePad) {
  if (includePad)
    return floatConstant(b, loc, element, double(kernel[0] * kernel[1]));
  auto extent = [&](Value o, int64_t d) {
    Value start = arith::SubIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, o, indexConstant(b, loc, strides[d])),
        indexConstant(b, loc, padding[2 * d]));
    Value end =
        arith::AddIOp::create(b, loc, start, indexConstant(b, loc, kernel[d]));
    Value lo = arith::MaxSIOp::create(b, loc, start, indexConstant(b, loc, 0));
    Value hi = arith::MinSIOp::create(b, loc, end,
                                      indexConstant(b, loc, inputSize[d]));
    return arith::SubIOp::create(b, loc, hi, lo);
  };
  Value count = arith::MulIOp::create(b, loc, extent(oh, 0), extent(ow, 1));
  return arith::SIToFPOp::create(
      b, loc, element,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), count));
}

namespace {
/// max / avg pooling: a reduction over the window of the padded input (-inf
/// padding for max, zeros for avg), then the division for avg.
template <typename OpT, bool isMax>
struct PoolPattern : public OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize(), strides = op.getStrides(),
                      padding = op.getPadding();
    ReduceKind kind = isMax ? ReduceKind::max : ReduceKind::sum;
    Value identity = identityOf(rewriter, loc, element, kind);
    Value padded = padSpatial(rewriter, loc, op.getInput(), padding, identity);
    AffineExpr d[6];
    for (int i = 0; i < 6; ++i)
      d[i] = getAffineDimExpr(i, context);
    SmallVector<AffineMap> maps = {
        AffineMap::get(
            6, 0,
            {d[0], d[1], d[2] * strides[0] + d[4], d[3] * strides[1] + d[5]},
            context),
        AffineMap::get(6, 0, {d[4], d[5]}, context),
        AffineMap::get(6, 0, {d[0], d[1], d[2], d[3]}, context)};
    // Operands built one statement at a time: as arguments of one call
    // their order (and so the IR's) would be the compiler's choice.
    Value window = buildWindow(rewriter, loc, kernel, element);
    Value init = buildFilled(rewriter, loc, type, identity);
    Value result = buildWindowGeneric(
        rewriter, loc, ValueRange{padded, window}, ValueRange{init}, maps, 4, 2,
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          return {combine(b, l, kind, a[2], a[0])};
        })[0];
    if (!isMax) {
      bool includePad = true;
      if constexpr (!isMax)
        includePad = op.getCountIncludePad();
      SmallVector<int64_t> inputSize = {inputType.getDimSize(2),
                                        inputType.getDimSize(3)};
      result = buildGeneric(
          rewriter, loc, TypeRange{type}, ValueRange{result},
          {rewriter.getMultiDimIdentityMap(4)},
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            SmallVector<Value> at = getIndices(b, l, 4);
            return {arith::DivFOp::create(
                b, l, a[0],
                poolDivisor(b, l, element, at[2], at[3], kernel, strides,
                            padding, inputSize, includePad))};
          })[0];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The window offsets along one spatial dim that reach the input positions
/// `i = q * stride + phase`: `k = first + t * stride` for `t < taps`, each
/// from output `o = q + base - t` (exact: no division, no remainder).
struct PhaseTaps {
  int64_t first, taps, base, positions;
};

static PhaseTaps getPhaseTaps(int64_t phase, int64_t padLo, int64_t kernel,
                              int64_t stride, int64_t inputSize) {
  PhaseTaps taps;
  taps.first = (phase + padLo) % stride;
  taps.taps =
      taps.first < kernel ? (kernel - taps.first + stride - 1) / stride : 0;
  taps.base = (phase + padLo - taps.first) / stride;
  taps.positions =
      phase < inputSize ? (inputSize - phase + stride - 1) / stride : 0;
  return taps;
}

/// Pooling gradients, by the input positions' phase modulo the stride: the
/// positions `(q_h * stride_h + r_h, q_w * stride_w + r_w)` of one phase
/// `(r_h, r_w)` are reached by the same window offsets, each from output
/// `(q_h + a, q_w + b)` for constants `a, b`, so one parallel generic per
/// phase reads the (zero-padded) output gradient through affine maps, one
/// operand per offset, and writes the phase's strided slice of the input
/// gradient. For max, an offset counts where it is its window's first
/// maximum (an argmax reduction first; its padding, -1, matches none); for
/// avg, the gradient is divided by its window's divisor. The offsets are
/// summed in row-major order, as the window loops of the forward op run.
template <typename OpT, bool isMax>
struct PoolBackwardPattern : public OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value grad = op.getGradOutput();
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelSize(), strides = op.getStrides(),
                      padding = op.getPadding();
    // The argmax's offsets in the narrowest integer holding them (read once
    // per offset by the gather).
    int64_t area = kernel[0] * kernel[1];
    Type offsetType =
        rewriter.getIntegerType(area < 128 ? 8 : (area < 32768 ? 16 : 32));
    AffineExpr d[6];
    for (int i = 0; i < 6; ++i)
      d[i] = getAffineDimExpr(i, context);
    Value argmax;
    if (isMax) {
      // The row-major window offset of each window's first maximum.
      AffineMap window = AffineMap::get(6, 0, {d[4], d[5]}, context);
      AffineMap outer = AffineMap::get(6, 0, {d[0], d[1], d[2], d[3]}, context);
      Value lowest = identityOf(rewriter, loc, element, ReduceKind::max);
      Value padded = padSpatial(rewriter, loc, op.getInput(), padding, lowest);
      AffineMap walk = AffineMap::get(
          6, 0,
          {d[0], d[1], d[2] * strides[0] + d[4], d[3] * strides[1] + d[5]},
          context);
      auto indexType = RankedTensorType::get(gradType.getShape(), offsetType);
      Value zero = arith::ConstantOp::create(
          rewriter, loc, rewriter.getIntegerAttr(offsetType, 0));
      Value windowShape = buildWindow(rewriter, loc, kernel, element);
      Value maxInit = buildFilled(rewriter, loc, gradType, lowest);
      Value indexInit = buildFilled(rewriter, loc, indexType, zero);
      argmax = buildWindowGeneric(
          rewriter, loc, ValueRange{padded, windowShape},
          ValueRange{maxInit, indexInit}, {walk, window, outer, outer}, 4, 2,
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            Value offset = arith::AddIOp::create(
                b, l,
                arith::MulIOp::create(b, l, linalg::IndexOp::create(b, l, 4),
                                      indexConstant(b, l, kernel[1])),
                linalg::IndexOp::create(b, l, 5));
            Value greater = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OGT, a[0], a[2]);
            return {arith::SelectOp::create(b, l, greater, a[0], a[2]),
                    arith::SelectOp::create(
                        b, l, greater,
                        arith::IndexCastOp::create(b, l, offsetType, offset),
                        a[3])};
          })[1];
    }
    bool includePad = true;
    if constexpr (!isMax)
      includePad = op.getCountIncludePad();
    SmallVector<int64_t> inputSize = {type.getDimSize(2), type.getDimSize(3)};
    SmallVector<int64_t> outputSize = {gradType.getDimSize(2),
                                       gradType.getDimSize(3)};
    // Every phase's taps, and one padding of the output gradient (and the
    // argmax) that serves them all.
    SmallVector<PhaseTaps> phases[2];
    int64_t low[2] = {0, 0}, high[2] = {0, 0};
    bool complete = true;
    for (int dim = 0; dim < 2; ++dim) {
      for (int64_t r = 0; r < strides[dim]; ++r) {
        PhaseTaps taps = getPhaseTaps(r, padding[2 * dim], kernel[dim],
                                      strides[dim], inputSize[dim]);
        phases[dim].push_back(taps);
        if (taps.positions == 0)
          continue;
        if (taps.taps == 0) {
          complete = false;
          continue;
        }
        low[dim] = std::max(low[dim], taps.taps - 1 - taps.base);
        high[dim] = std::max(high[dim], taps.positions - 1 + taps.base -
                                            (outputSize[dim] - 1));
      }
    }
    Value zero = identityOf(rewriter, loc, element, ReduceKind::sum);
    Value paddedGrad = buildPad(rewriter, loc, grad, {0, 0, low[0], low[1]},
                                {0, 0, high[0], high[1]}, zero);
    Value paddedArgmax;
    if (isMax)
      paddedArgmax =
          buildPad(rewriter, loc, argmax, {0, 0, low[0], low[1]},
                   {0, 0, high[0], high[1]},
                   arith::ConstantOp::create(
                       rewriter, loc, rewriter.getIntegerAttr(offsetType, -1)));
    // Positions no window reaches (a stride above the kernel) stay zero.
    Value result = complete ? tensor::EmptyOp::create(rewriter, loc,
                                                      type.getShape(), element)
                                  .getResult()
                            : buildFilled(rewriter, loc, type, zero);
    for (auto [rh, ph] : llvm::enumerate(phases[0])) {
      for (auto [rw, pw] : llvm::enumerate(phases[1])) {
        if (!ph.taps || !pw.taps || !ph.positions || !pw.positions)
          continue;
        auto phaseType =
            RankedTensorType::get({type.getDimSize(0), type.getDimSize(1),
                                   ph.positions, pw.positions},
                                  element);
        SmallVector<OpFoldResult> sizes;
        for (int64_t size : phaseType.getShape())
          sizes.push_back(rewriter.getIndexAttr(size));
        SmallVector<OpFoldResult> unit(4, rewriter.getIndexAttr(1));
        // Each offset reads the output positions `(q_h + a, q_w + b)`: a
        // slice of the padded tensors (a view once bufferized).
        SmallVector<Value> operands;
        for (int64_t th = 0; th < ph.taps; ++th) {
          for (int64_t tw = 0; tw < pw.taps; ++tw) {
            SmallVector<OpFoldResult> at = {
                rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
                rewriter.getIndexAttr(ph.base - th + low[0]),
                rewriter.getIndexAttr(pw.base - tw + low[1])};
            operands.push_back(tensor::ExtractSliceOp::create(
                rewriter, loc, paddedGrad, at, sizes, unit));
            if (isMax)
              operands.push_back(tensor::ExtractSliceOp::create(
                  rewriter, loc, paddedArgmax, at, sizes, unit));
          }
        }
        // Written in place: the generic's output is the phase's strided
        // slice of the input gradient.
        SmallVector<OpFoldResult> offsets = {
            rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
            rewriter.getIndexAttr(rh), rewriter.getIndexAttr(rw)};
        SmallVector<OpFoldResult> steps = {rewriter.getIndexAttr(1),
                                           rewriter.getIndexAttr(1),
                                           rewriter.getIndexAttr(strides[0]),
                                           rewriter.getIndexAttr(strides[1])};
        Value slice = tensor::ExtractSliceOp::create(
            rewriter, loc, phaseType, result, offsets, sizes, steps);
        SmallVector<AffineMap> maps(operands.size() + 1,
                                    rewriter.getMultiDimIdentityMap(4));
        Value phaseResult = buildWindowGeneric(
            rewriter, loc, operands, ValueRange{slice}, maps, 4, 0,
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              // The first offset starts the sum (no 0 + g).
              Value zero = floatConstant(b, l, element, 0.0), sum;
              auto add = [&](Value g) {
                return sum ? arith::AddFOp::create(b, l, sum, g).getResult()
                           : g;
              };
              // The phase's positions (for avg's divisors).
              SmallVector<Value> at =
                  isMax ? SmallVector<Value>() : getIndices(b, l, 4);
              unsigned next = 0;
              for (int64_t th = 0; th < ph.taps; ++th) {
                for (int64_t tw = 0; tw < pw.taps; ++tw) {
                  Value g = a[next++];
                  if (isMax) {
                    int64_t offset = (ph.first + th * strides[0]) * kernel[1] +
                                     pw.first + tw * strides[1];
                    Value hit = arith::CmpIOp::create(
                        b, l, arith::CmpIPredicate::eq, a[next++],
                        arith::ConstantOp::create(
                            b, l, b.getIntegerAttr(offsetType, offset)));
                    sum = arith::SelectOp::create(b, l, hit, add(g),
                                                  sum ? sum : zero);
                    continue;
                  }
                  // The window's output, clamped: where it is outside,
                  // the padded gradient is zero.
                  auto source = [&](Value q, int64_t shift, int64_t size) {
                    Value o = arith::AddIOp::create(b, l, q,
                                                    indexConstant(b, l, shift));
                    return arith::MinSIOp::create(
                        b, l,
                        arith::MaxSIOp::create(b, l, o, indexConstant(b, l, 0)),
                        indexConstant(b, l, size - 1));
                  };
                  Value oh = source(at[2], ph.base - th, outputSize[0]);
                  Value ow = source(at[3], pw.base - tw, outputSize[1]);
                  sum = add(arith::DivFOp::create(
                      b, l, g,
                      poolDivisor(b, l, element, oh, ow, kernel, strides,
                                  padding, inputSize, includePad)));
                }
              }
              return {sum};
            })[0];
        result = tensor::InsertSliceOp::create(rewriter, loc, phaseResult,
                                               result, offsets, sizes, steps);
      }
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void linalg_lowering::populateWindowPatterns(RewritePatternSet &patterns) {
  patterns.add<PoolPattern<MaxPool2dOp, true>, PoolPattern<AvgPool2dOp, false>,
               PoolBackwardPattern<MaxPool2dBackwardOp, true>,
               PoolBackwardPattern<AvgPool2dBackwardOp, false>>(
      patterns.getContext());
}
