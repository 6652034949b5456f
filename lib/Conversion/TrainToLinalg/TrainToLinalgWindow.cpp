//===- TrainToLinalgWindow.cpp - pooling to linalg ------------------------===//
//
// Windowed ops in NCHW: the input is padded first (`buildPad`), then a
// forward op is one `linalg.generic` whose input map walks the window
// (`oh * stride + kh * dilation`); window loops without an operand of their
// own get their bounds from an empty `[kh, kw]`-shaped tensor, as linalg's
// named pooling ops do. Backward ops gather: every input position sums the
// output positions whose window holds it (guarded `tensor.extract` reads).
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


/// The output index of window offset `k` for input index `i` along one
/// spatial dim, and whether there is one: `o = (i + padLo - k * dilation) /
/// stride` when that divides exactly and `0 <= o < size`. `o` is clamped.
static std::pair<Value, Value> windowSource(OpBuilder &b, Location loc, Value i,
                                            Value k, int64_t padLo,
                                            int64_t stride, int64_t dilation,
                                            int64_t size) {
  Value shifted = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, i, indexConstant(b, loc, padLo)),
      arith::MulIOp::create(b, loc, k, indexConstant(b, loc, dilation)));
  Value zero = indexConstant(b, loc, 0);
  Value strideValue = indexConstant(b, loc, stride);
  Value o = arith::DivSIOp::create(b, loc, shifted, strideValue);
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, shifted, zero),
      arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::RemSIOp::create(b, loc, shifted, strideValue), zero));
  valid = arith::AndIOp::create(
      b, loc, valid,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, o,
                            indexConstant(b, loc, size)));
  Value clamped =
      arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, o, zero),
                             indexConstant(b, loc, size - 1));
  return {clamped, valid};
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
        rewriter, loc, ValueRange{padded, window}, ValueRange{init}, maps, 4,
        2,
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

/// Pooling gradients: every input position sums, over the window offsets
/// `(kh, kw)` that reach an output position, that position's gradient
/// (divided by its divisor for avg; for max only where the position is its
/// window's first maximum, found by an argmax reduction first).
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
    Type i64 = rewriter.getI64Type();
    ArrayRef<int64_t> kernel = op.getKernelSize(), strides = op.getStrides(),
                      padding = op.getPadding();
    AffineExpr d[6];
    for (int i = 0; i < 6; ++i)
      d[i] = getAffineDimExpr(i, context);
    AffineMap window = AffineMap::get(6, 0, {d[4], d[5]}, context);
    AffineMap outer = AffineMap::get(6, 0, {d[0], d[1], d[2], d[3]}, context);
    Value argmax;
    if (isMax) {
      // The row-major window offset of each window's first maximum.
      Value lowest = identityOf(rewriter, loc, element, ReduceKind::max);
      Value padded = padSpatial(rewriter, loc, op.getInput(), padding, lowest);
      AffineMap walk = AffineMap::get(
          6, 0,
          {d[0], d[1], d[2] * strides[0] + d[4], d[3] * strides[1] + d[5]},
          context);
      auto indexType = RankedTensorType::get(gradType.getShape(), i64);
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getIntegerAttr(i64, 0));
      Value windowShape = buildWindow(rewriter, loc, kernel, element);
      Value maxInit = buildFilled(rewriter, loc, gradType, lowest);
      Value indexInit = buildFilled(rewriter, loc, indexType, zero);
      argmax = buildWindowGeneric(
          rewriter, loc, ValueRange{padded, windowShape},
          ValueRange{maxInit, indexInit},
          {walk, window, outer, outer}, 4, 2,
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
                        arith::IndexCastOp::create(b, l, i64, offset), a[3])};
          })[1];
    }
    bool includePad = true;
    if constexpr (!isMax)
      includePad = op.getCountIncludePad();
    SmallVector<int64_t> inputSize = {type.getDimSize(2), type.getDimSize(3)};
    Value zero = identityOf(rewriter, loc, element, ReduceKind::sum);
    Value windowShape = buildWindow(rewriter, loc, kernel, element);
    Value init = buildFilled(rewriter, loc, type, zero);
    Value result = buildWindowGeneric(
        rewriter, loc, ValueRange{windowShape}, ValueRange{init},
        {window, outer}, 4, 2, [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          SmallVector<Value> at = getIndices(b, l, 6);
          auto [oh, validH] =
              windowSource(b, l, at[2], at[4], padding[0], strides[0], 1,
                           gradType.getDimSize(2));
          auto [ow, validW] =
              windowSource(b, l, at[3], at[5], padding[2], strides[1], 1,
                           gradType.getDimSize(3));
          Value hit = arith::AndIOp::create(b, l, validH, validW);
          SmallVector<Value> source = {at[0], at[1], oh, ow};
          Value g = tensor::ExtractOp::create(b, l, grad, source);
          if (isMax) {
            Value offset = arith::AddIOp::create(
                b, l,
                arith::MulIOp::create(b, l, at[4],
                                      indexConstant(b, l, kernel[1])),
                at[5]);
            Value best = tensor::ExtractOp::create(b, l, argmax, source);
            hit = arith::AndIOp::create(
                b, l, hit,
                arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::eq, best,
                    arith::IndexCastOp::create(b, l, i64, offset)));
          } else {
            g = arith::DivFOp::create(b, l, g,
                                      poolDivisor(b, l, element, oh, ow, kernel,
                                                  strides, padding, inputSize,
                                                  includePad));
          }
          Value sum = arith::AddFOp::create(b, l, a[1], g);
          return {arith::SelectOp::create(b, l, hit, sum, a[1])};
        })[0];
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
