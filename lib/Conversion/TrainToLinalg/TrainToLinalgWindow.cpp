//===- TrainToLinalgWindow.cpp - pooling and convolution to linalg --------===//
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

/// One `linalg.generic` with `parallel` leading loops and `reduced`
/// reduction loops, reading `inputs` through `maps` and accumulating into
/// `inits` (one map each, appended).
static SmallVector<Value>
buildWindowGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                   ValueRange inits, ArrayRef<AffineMap> maps, int64_t parallel,
                   int64_t reduced, BodyBuilder body) {
  SmallVector<utils::IteratorType> iterators(parallel,
                                             utils::IteratorType::parallel);
  iterators.append(reduced, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange(inits), inputs, inits, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResults();
}

/// A tensor of `type`'s shape filled with `value`.
static Value buildFilled(OpBuilder &b, Location loc, RankedTensorType type,
                         Value value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

/// An empty tensor whose shape gives window loops their bounds.
static Value buildWindow(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

/// NCHW padded by `[top, bottom, left, right]`.
static Value padSpatial(OpBuilder &b, Location loc, Value input,
                        ArrayRef<int64_t> padding, Value value) {
  return buildPad(b, loc, input, {0, 0, padding[0], padding[2]},
                  {0, 0, padding[1], padding[3]}, value);
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
    Value result = buildWindowGeneric(
        rewriter, loc,
        ValueRange{padded, buildWindow(rewriter, loc, kernel, element)},
        ValueRange{buildFilled(rewriter, loc, type, identity)}, maps, 4, 2,
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
      argmax = buildWindowGeneric(
          rewriter, loc,
          ValueRange{padded, buildWindow(rewriter, loc, kernel, element)},
          ValueRange{buildFilled(rewriter, loc, gradType, lowest),
                     buildFilled(rewriter, loc, indexType, zero)},
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
    Value result = buildWindowGeneric(
        rewriter, loc, ValueRange{buildWindow(rewriter, loc, kernel, element)},
        ValueRange{buildFilled(rewriter, loc, type, zero)}, {window, outer}, 4,
        2, [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
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

/// The attributes every conv op shares, with the channel counts per group.
struct ConvParams {
  ArrayRef<int64_t> strides, padding, dilations;
  int64_t groups, channelsPerGroup, filtersPerGroup;
};

template <typename OpT>
static ConvParams getConvParams(OpT op, int64_t channels, int64_t filters) {
  int64_t groups = op.getGroups();
  return {op.getStrides(), op.getPadding(),   op.getDilations(),
          groups,          channels / groups, filters / groups};
}

/// The padded input read at `(n, group(f) * c/groups + c, oh * sh + kh * dh,
/// ow * sw + kw * dw)` for loop dims `n, f, c, oh, ow, kh, kw`.
static AffineMap getConvInputMap(MLIRContext *context, unsigned numDims,
                                 AffineExpr n, AffineExpr f, AffineExpr c,
                                 AffineExpr oh, AffineExpr ow, AffineExpr kh,
                                 AffineExpr kw, const ConvParams &p) {
  AffineExpr channel = f.floorDiv(p.filtersPerGroup) * p.channelsPerGroup + c;
  return AffineMap::get(numDims, 0,
                        {n, channel, oh * p.strides[0] + kh * p.dilations[0],
                         ow * p.strides[1] + kw * p.dilations[1]},
                        context);
}

/// A multiply-accumulate over 7 loops (4 parallel, 3 reduction) of the
/// zero-padded `input` of a conv op and `other` into a zero-filled tensor of
/// `type`: conv2d and its filter gradient differ only in which loops index
/// what. `inputDims` orders the loops as getConvInputMap takes them,
/// `otherDims` and the output use loops directly.
template <typename OpT>
static Value buildConvContraction(PatternRewriter &rewriter, OpT op,
                                  Value other, RankedTensorType type,
                                  int64_t filters, ArrayRef<unsigned> inputDims,
                                  ArrayRef<unsigned> otherDims) {
  Location loc = op.getLoc();
  MLIRContext *context = rewriter.getContext();
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  ConvParams p = getConvParams(op, inputType.getDimSize(1), filters);
  Value zero =
      identityOf(rewriter, loc, type.getElementType(), ReduceKind::sum);
  Value padded = padSpatial(rewriter, loc, op.getInput(), p.padding, zero);
  AffineExpr d[7];
  for (int i = 0; i < 7; ++i)
    d[i] = getAffineDimExpr(i, context);
  SmallVector<AffineExpr> otherExprs;
  for (unsigned i : otherDims)
    otherExprs.push_back(d[i]);
  SmallVector<AffineMap> maps = {
      getConvInputMap(context, 7, d[inputDims[0]], d[inputDims[1]],
                      d[inputDims[2]], d[inputDims[3]], d[inputDims[4]],
                      d[inputDims[5]], d[inputDims[6]], p),
      AffineMap::get(7, 0, otherExprs, context),
      AffineMap::get(7, 0, {d[0], d[1], d[2], d[3]}, context)};
  return buildWindowGeneric(
      rewriter, loc, ValueRange{padded, other},
      ValueRange{buildFilled(rewriter, loc, type, zero)}, maps, 4, 3,
      [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
        return {arith::AddFOp::create(b, l, a[2],
                                      arith::MulFOp::create(b, l, a[0], a[1]))};
      })[0];
}

/// conv2d: loops (n, f, oh, ow | c, kh, kw) over the padded input.
struct Conv2dPattern : public OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildConvContraction(rewriter, op, op.getFilter(),
                                                type, type.getDimSize(1),
                                                {0, 1, 4, 2, 3, 5, 6},
                                                {1, 4, 5, 6}));
    return success();
  }
};

/// conv2d_backward_filter: loops (f, c, kh, kw | n, oh, ow) over the padded
/// input and the output gradient.
struct Conv2dBackwardFilterPattern
    : public OpRewritePattern<Conv2dBackwardFilterOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Conv2dBackwardFilterOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, buildConvContraction(rewriter, op, op.getGradOutput(), type,
                                 type.getDimSize(0), {4, 0, 1, 5, 6, 2, 3},
                                 {4, 0, 5, 6}));
    return success();
  }
};

/// conv2d_backward_input: loops (n, c, h, w | f in the group, kh, kw); each
/// input position sums grad_output at the output positions whose window
/// reaches it times the filter tap.
struct Conv2dBackwardInputPattern
    : public OpRewritePattern<Conv2dBackwardInputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Conv2dBackwardInputOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Value grad = op.getGradOutput();
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto filterType = cast<RankedTensorType>(op.getFilter().getType());
    ConvParams p =
        getConvParams(op, type.getDimSize(1), gradType.getDimSize(1));
    Type element = type.getElementType();
    AffineExpr d[7];
    for (int i = 0; i < 7; ++i)
      d[i] = getAffineDimExpr(i, context);
    AffineExpr filter =
        d[1].floorDiv(p.channelsPerGroup) * p.filtersPerGroup + d[4];
    SmallVector<AffineMap> maps = {
        AffineMap::get(7, 0, {filter, d[1] % p.channelsPerGroup, d[5], d[6]},
                       context),
        AffineMap::get(7, 0, {d[4], d[5], d[6]}, context),
        AffineMap::get(7, 0, {d[0], d[1], d[2], d[3]}, context)};
    Value zero = identityOf(rewriter, loc, element, ReduceKind::sum);
    Value window = buildWindow(
        rewriter, loc,
        {p.filtersPerGroup, filterType.getDimSize(2), filterType.getDimSize(3)},
        element);
    rewriter.replaceOp(
        op,
        buildWindowGeneric(
            rewriter, loc, ValueRange{op.getFilter(), window},
            ValueRange{buildFilled(rewriter, loc, type, zero)}, maps, 4, 3,
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              SmallVector<Value> at = getIndices(b, l, 7);
              auto [oh, validH] =
                  windowSource(b, l, at[2], at[5], p.padding[0], p.strides[0],
                               p.dilations[0], gradType.getDimSize(2));
              auto [ow, validW] =
                  windowSource(b, l, at[3], at[6], p.padding[2], p.strides[1],
                               p.dilations[1], gradType.getDimSize(3));
              Value f = arith::AddIOp::create(
                  b, l,
                  arith::MulIOp::create(
                      b, l,
                      arith::DivSIOp::create(
                          b, l, at[1], indexConstant(b, l, p.channelsPerGroup)),
                      indexConstant(b, l, p.filtersPerGroup)),
                  at[4]);
              Value g = tensor::ExtractOp::create(b, l, grad,
                                                  ValueRange{at[0], f, oh, ow});
              Value sum = arith::AddFOp::create(
                  b, l, a[2], arith::MulFOp::create(b, l, g, a[0]));
              return {arith::SelectOp::create(
                  b, l, arith::AndIOp::create(b, l, validH, validW), sum,
                  a[2])};
            }));
    return success();
  }
};
} // namespace

void linalg_lowering::populateWindowPatterns(RewritePatternSet &patterns) {
  patterns.add<PoolPattern<MaxPool2dOp, true>, PoolPattern<AvgPool2dOp, false>,
               PoolBackwardPattern<MaxPool2dBackwardOp, true>,
               PoolBackwardPattern<AvgPool2dBackwardOp, false>, Conv2dPattern,
               Conv2dBackwardFilterPattern, Conv2dBackwardInputPattern>(
      patterns.getContext());
}
