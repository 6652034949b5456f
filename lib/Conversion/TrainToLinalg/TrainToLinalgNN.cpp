//===- TrainToLinalgNN.cpp - softmax and normalization to linalg ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The softmax family, layer and batch normalization (with their backward
// ops) as reductions (`buildReduction`) and parallel `linalg.generic`s
// reading the statistics through maps that drop the reduced dims; dropout
// as an elementwise Philox4x32-10.
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

/// `dim` counted from the front.
static int64_t normalizeDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

/// `[first, last)`.
static SmallVector<int64_t> dimRange(int64_t first, int64_t last) {
  SmallVector<int64_t> dims(last - first);
  std::iota(dims.begin(), dims.end(), first);
  return dims;
}

namespace {
/// softmax and log_softmax along `dim`: the row max, exp(x - max) and its
/// row sum, then the normalized (or log-normalized) value.
template <typename OpT, bool isLog>
struct SoftmaxPattern : public OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    int64_t dim = normalizeDim(op.getDim(), rank);
    RankedTensorType rowType = dropDims(type, {dim});
    MLIRContext *context = rewriter.getContext();
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap rowMap = getDropDimsMap(context, rank, {dim});
    Value max =
        buildReduction(rewriter, loc, x, {dim}, ReduceKind::max, rowType);
    Value shifted = buildGeneric(
        rewriter, loc, TypeRange{type}, ValueRange{x, max}, {identity, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          return {arith::SubFOp::create(b, l, a[0], a[1])};
        })[0];
    Value exp = buildGeneric(
        rewriter, loc, TypeRange{type}, ValueRange{shifted}, {identity},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          return {math::ExpOp::create(b, l, a[0])};
        })[0];
    Value sum =
        buildReduction(rewriter, loc, exp, {dim}, ReduceKind::sum, rowType);
    Value result = buildGeneric(
        rewriter, loc, TypeRange{type}, ValueRange{isLog ? shifted : exp, sum},
        {identity, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          if (isLog)
            return {arith::SubFOp::create(b, l, a[0],
                                          math::LogOp::create(b, l, a[1]))};
          return {arith::DivFOp::create(b, l, a[0], a[1])};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// softmax_backward: y * (g - sum(g * y)); log_softmax_backward:
/// g - exp(y) * sum(g).
template <typename OpT, bool isLog>
struct SoftmaxBackwardPattern : public OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value grad = op.getGradOutput(), y = op.getOutput();
    auto type = cast<RankedTensorType>(grad.getType());
    int64_t rank = type.getRank();
    int64_t dim = normalizeDim(op.getDim(), rank);
    RankedTensorType rowType = dropDims(type, {dim});
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap rowMap = getDropDimsMap(rewriter.getContext(), rank, {dim});
    Value summand = grad;
    if (!isLog)
      summand = buildGeneric(
          rewriter, loc, TypeRange{type}, ValueRange{grad, y},
          {identity, identity},
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            return {arith::MulFOp::create(b, l, a[0], a[1])};
          })[0];
    Value sum =
        buildReduction(rewriter, loc, summand, {dim}, ReduceKind::sum, rowType);
    Value result = buildGeneric(
        rewriter, loc, TypeRange{type}, ValueRange{grad, y, sum},
        {identity, identity, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          if (isLog)
            return {arith::SubFOp::create(
                b, l, a[0],
                arith::MulFOp::create(b, l, math::ExpOp::create(b, l, a[1]),
                                      a[2]))};
          return {arith::MulFOp::create(
              b, l, a[1], arith::SubFOp::create(b, l, a[0], a[2]))};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Where a normalization takes its statistics and applies its parameters:
/// `statDims` are reduced for the mean and variance (read back through
/// `statMap`), the weight and bias are read through `paramMap` and their
/// gradients sum over `paramDims`.
struct NormLayout {
  SmallVector<int64_t> statDims;
  AffineMap statMap;
  RankedTensorType statType;
  SmallVector<int64_t> paramDims;
  AffineMap paramMap;
  RankedTensorType paramType;
};

/// layer_norm: statistics over `[axis, rank)`, parameters of those dims.
static NormLayout getLayerNormLayout(OpBuilder &b, RankedTensorType type,
                                     int64_t axis, Type statType,
                                     Type paramType) {
  int64_t rank = type.getRank();
  return {dimRange(axis, rank),
          getLeadingDimsMap(b.getContext(), rank, axis),
          cast<RankedTensorType>(statType),
          dimRange(0, axis),
          getBroadcastMap(b.getContext(), type.getShape(), paramType),
          cast<RankedTensorType>(paramType)};
}

/// batch_norm: statistics over every dim but the channels (dim 1),
/// parameters of the channels.
static NormLayout getBatchNormLayout(OpBuilder &b, RankedTensorType type,
                                     Type statType) {
  SmallVector<int64_t> dims = dimRange(0, type.getRank());
  dims.erase(dims.begin() + 1);
  AffineMap channel = AffineMap::get(type.getRank(), 0, b.getAffineDimExpr(1));
  return {dims, channel, cast<RankedTensorType>(statType),
          dims, channel, cast<RankedTensorType>(statType)};
}

/// rsqrt(var + epsilon) of a statistics tensor.
static Value buildRstd(OpBuilder &b, Location loc, Value var, double epsilon) {
  auto type = cast<RankedTensorType>(var.getType());
  return buildGeneric(
      b, loc, TypeRange{type}, ValueRange{var},
      {b.getMultiDimIdentityMap(type.getRank())},
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        return {math::RsqrtOp::create(
            nb, l,
            arith::AddFOp::create(
                nb, l, a[0],
                floatConstant(nb, l, type.getElementType(), epsilon)))};
      })[0];
}

/// The mean, the biased variance of the centered input, rstd, and
/// (x - mean) * rstd * weight + bias.
struct NormForward {
  Value output, mean, var, rstd;
};

static NormForward buildNormForward(OpBuilder &b, Location loc, Value x,
                                    Value weight, Value bias, double epsilon,
                                    const NormLayout &layout) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  Value mean = buildReduction(b, loc, x, layout.statDims, ReduceKind::mean,
                              layout.statType);
  // Each pass recomputes x - mean rather than reading it back: three reads
  // of x and one write instead of five passes.
  Value var = buildReductions(
      b, loc, ValueRange{x, mean}, {identity, layout.statMap}, rank,
      layout.statDims, ReduceKind::mean, layout.statType, 1,
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        Value centered = arith::SubFOp::create(nb, l, a[0], a[1]);
        return {arith::MulFOp::create(nb, l, centered, centered)};
      })[0];
  Value rstd = buildRstd(b, loc, var, epsilon);
  Value y = buildGeneric(
      b, loc, TypeRange{type}, ValueRange{x, mean, rstd, weight, bias},
      {identity, layout.statMap, layout.statMap, layout.paramMap,
       layout.paramMap},
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        Value centered = arith::SubFOp::create(nb, l, a[0], a[1]);
        Value normalized = arith::MulFOp::create(nb, l, centered, a[2]);
        return {arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, normalized, a[3]), a[4])};
      })[0];
  return {y, mean, var, rstd};
}

/// With xhat = (x - mean) * rstd and gy = grad * weight: grad_input =
/// rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) (means over the
/// statistics dims), grad_weight = sum(grad * xhat), grad_bias = sum(grad)
/// (over the parameter dims).
static SmallVector<Value> buildNormBackward(OpBuilder &b, Location loc,
                                            Value grad, Value x, Value mean,
                                            Value rstd, Value weight,
                                            const NormLayout &layout) {
  auto type = cast<RankedTensorType>(grad.getType());
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  AffineMap stat = layout.statMap;
  auto mul = [&](OpBuilder &nb, Location l,
                 ValueRange a) -> SmallVector<Value> {
    return {arith::MulFOp::create(nb, l, a[0], a[1])};
  };
  Value xhat = buildGeneric(
      b, loc, TypeRange{type}, ValueRange{x, mean, rstd},
      {identity, stat, stat},
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        return {arith::MulFOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], a[1]), a[2])};
      })[0];
  Value gy = buildGeneric(b, loc, TypeRange{type}, ValueRange{grad, weight},
                          {identity, layout.paramMap}, mul)[0];
  Value gyXhat = buildGeneric(b, loc, TypeRange{type}, ValueRange{gy, xhat},
                              {identity, identity}, mul)[0];
  Value meanGy = buildReduction(b, loc, gy, layout.statDims, ReduceKind::mean,
                                layout.statType);
  Value meanGyXhat = buildReduction(b, loc, gyXhat, layout.statDims,
                                    ReduceKind::mean, layout.statType);
  Value gradInput = buildGeneric(
      b, loc, TypeRange{type}, ValueRange{gy, xhat, meanGy, meanGyXhat, rstd},
      {identity, identity, stat, stat, stat},
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        Value centered = arith::SubFOp::create(nb, l, a[0], a[2]);
        Value projected = arith::SubFOp::create(
            nb, l, centered, arith::MulFOp::create(nb, l, a[1], a[3]));
        return {arith::MulFOp::create(nb, l, a[4], projected)};
      })[0];
  Value gradXhat = buildGeneric(b, loc, TypeRange{type}, ValueRange{grad, xhat},
                                {identity, identity}, mul)[0];
  Value gradWeight = buildReduction(b, loc, gradXhat, layout.paramDims,
                                    ReduceKind::sum, layout.paramType);
  Value gradBias = buildReduction(b, loc, grad, layout.paramDims,
                                  ReduceKind::sum, layout.paramType);
  return {gradInput, gradWeight, gradBias};
}

/// layer_norm: statistics over the trailing dims from `axis`.
struct LayerNormPattern : public OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    NormLayout layout =
        getLayerNormLayout(rewriter, type, op.getAxis(), op.getMean().getType(),
                           op.getWeight().getType());
    NormForward forward = buildNormForward(
        rewriter, op.getLoc(), op.getInput(), op.getWeight(), op.getBias(),
        op.getEpsilon().convertToDouble(), layout);
    rewriter.replaceOp(op, {forward.output, forward.mean, forward.rstd});
    return success();
  }
};

struct LayerNormBackwardPattern : public OpRewritePattern<LayerNormBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormBackwardOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    NormLayout layout =
        getLayerNormLayout(rewriter, type, op.getAxis(), op.getMean().getType(),
                           op.getWeight().getType());
    rewriter.replaceOp(op, buildNormBackward(rewriter, op.getLoc(),
                                             op.getGradOutput(), op.getInput(),
                                             op.getMean(), op.getRstd(),
                                             op.getWeight(), layout));
    return success();
  }
};

/// batch_norm (training mode): statistics over every dim but the channels.
struct BatchNormPattern : public OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    NormLayout layout =
        getBatchNormLayout(rewriter, type, op.getMean().getType());
    NormForward forward = buildNormForward(
        rewriter, op.getLoc(), op.getInput(), op.getWeight(), op.getBias(),
        op.getEpsilon().convertToDouble(), layout);
    rewriter.replaceOp(op, {forward.output, forward.mean, forward.var});
    return success();
  }
};

/// batch_norm_backward in two passes over the activations, as PyTorch's CPU
/// kernel computes it: one generic sums, per channel, grad and grad * (x -
/// mean); with M the reduced extent, grad_input = (grad - sum(grad) / M - (x
/// - mean) * k) * rstd * weight where k = sum(grad * (x - mean)) * rstd^2 /
/// M, grad_weight = sum(grad * (x - mean)) * rstd, grad_bias = sum(grad).
/// (layer_norm's backward reduces its statistics and its parameters' sums
/// over different dims; batch norm's are the same sums.)
struct BatchNormBackwardPattern : public OpRewritePattern<BatchNormBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormBackwardOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value grad = op.getGradOutput(), x = op.getInput(), mean = op.getMean();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    NormLayout layout =
        getBatchNormLayout(rewriter, type, op.getMean().getType());
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap channel = layout.statMap;
    Type element = type.getElementType();
    int64_t extent = 1;
    for (int64_t d : layout.statDims)
      extent *= type.getDimSize(d);
    Value rstd = buildRstd(rewriter, loc, op.getVar(),
                           op.getEpsilon().convertToDouble());
    SmallVector<Value> sums = buildReductions(
        rewriter, loc, ValueRange{grad, x, mean}, {identity, identity, channel},
        rank, layout.statDims, ReduceKind::sum, layout.statType, 2,
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value centered = arith::SubFOp::create(b, l, a[1], a[2]);
          return {a[0], arith::MulFOp::create(b, l, a[0], centered)};
        });
    Value gradSum = sums[0], dot = sums[1];
    // Per channel: the input gradient's scale, its mean and the projection
    // coefficient k, then grad_weight.
    RankedTensorType statType = layout.statType;
    AffineMap statIdentity =
        rewriter.getMultiDimIdentityMap(statType.getRank());
    SmallVector<Value> coefficients = buildGeneric(
        rewriter, loc, TypeRange{statType, statType, statType, statType},
        ValueRange{rstd, op.getWeight(), gradSum, dot},
        {statIdentity, statIdentity, statIdentity, statIdentity},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value inverse = floatConstant(b, l, element, 1.0 / double(extent));
          Value rstdSquared = arith::MulFOp::create(b, l, a[0], a[0]);
          return {arith::MulFOp::create(b, l, a[0], a[1]),
                  arith::MulFOp::create(b, l, a[2], inverse),
                  arith::MulFOp::create(
                      b, l, arith::MulFOp::create(b, l, a[3], rstdSquared),
                      inverse),
                  arith::MulFOp::create(b, l, a[3], a[0])};
        });
    Value gradInput = buildGeneric(
        rewriter, loc, TypeRange{type},
        ValueRange{grad, x, mean, coefficients[0], coefficients[1],
                   coefficients[2]},
        {identity, identity, channel, channel, channel, channel},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value centered = arith::SubFOp::create(b, l, a[1], a[2]);
          Value shifted = arith::SubFOp::create(b, l, a[0], a[4]);
          Value projected = arith::SubFOp::create(
              b, l, shifted, arith::MulFOp::create(b, l, centered, a[5]));
          return {arith::MulFOp::create(b, l, projected, a[3])};
        })[0];
    rewriter.replaceOp(op, {gradInput, coefficients[3], gradSum});
    return success();
  }
};

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3") of `counter` (4 x i32) under `key` (2 x i32): the first output word.
static Value buildPhilox4x32(OpBuilder &b, Location loc,
                             SmallVector<Value, 4> counter,
                             SmallVector<Value, 2> key) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto constant32 = [&](uint32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, v));
  };
  Value shift = arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, 32));
  // (hi, lo) of the 64-bit product of two 32-bit words.
  auto mulHiLo = [&](uint32_t m, Value v) -> std::pair<Value, Value> {
    Value wide = arith::MulIOp::create(
        b, loc, arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, m)),
        arith::ExtUIOp::create(b, loc, i64, v));
    Value hi = arith::TruncIOp::create(
        b, loc, i32, arith::ShRUIOp::create(b, loc, wide, shift));
    return {hi, arith::TruncIOp::create(b, loc, i32, wide)};
  };
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] = arith::AddIOp::create(b, loc, key[0], constant32(0x9E3779B9));
      key[1] = arith::AddIOp::create(b, loc, key[1], constant32(0xBB67AE85));
    }
    auto [hi0, lo0] = mulHiLo(0xD2511F53, counter[0]);
    auto [hi1, lo1] = mulHiLo(0xCD9E8D57, counter[2]);
    counter = {
        arith::XOrIOp::create(
            b, loc, arith::XOrIOp::create(b, loc, hi1, counter[1]), key[0]),
        lo1,
        arith::XOrIOp::create(
            b, loc, arith::XOrIOp::create(b, loc, hi0, counter[3]), key[1]),
        lo0};
  }
  return counter[0];
}

/// The (low, high) 32-bit words of an i64.
static SmallVector<Value, 2> splitWords(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  Value shift =
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(v.getType(), 32));
  return {arith::TruncIOp::create(b, loc, i32, v),
          arith::TruncIOp::create(b, loc, i32,
                                  arith::ShRUIOp::create(b, loc, v, shift))};
}

/// dropout: keep = philox4x32_10(key = seed, counter = global row-major
/// index)[0] >= rate * 2^32 (key words: the seed's low and high halves;
/// counter words: the index's low and high halves, then zeros), kept
/// elements scaled by 1 / (1 - rate).
struct DropoutPattern : public OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> global(type.getShape());
    if (std::optional<ArrayRef<int64_t>> shape = op.getGlobalShape())
      global.assign(shape->begin(), shape->end());
    ValueRange offsets = op.getOffsets();
    double rate = op.getRate().convertToDouble();
    uint64_t threshold = uint64_t(std::ceil(std::ldexp(rate, 32)));
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap scalar = AffineMap::get(rank, 0, {}, rewriter.getContext());
    Value result = buildGeneric(
        rewriter, op.getLoc(), TypeRange{type},
        ValueRange{op.getOperand(), op.getSeed()}, {identity, scalar},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Type i64 = b.getI64Type(), i32 = b.getI32Type();
          Value index = arith::ConstantIndexOp::create(b, l, 0);
          SmallVector<Value> at = getIndices(b, l, rank);
          for (int64_t d = 0; d < rank; ++d) {
            Value position = at[d];
            if (!offsets.empty())
              position = arith::AddIOp::create(b, l, position, offsets[d]);
            index = arith::AddIOp::create(
                b, l,
                arith::MulIOp::create(
                    b, l, index,
                    arith::ConstantIndexOp::create(b, l, global[d])),
                position);
          }
          Value zero =
              arith::ConstantOp::create(b, l, b.getIntegerAttr(i32, 0));
          SmallVector<Value, 2> words =
              splitWords(b, l, arith::IndexCastOp::create(b, l, i64, index));
          Value bits = buildPhilox4x32(b, l, {words[0], words[1], zero, zero},
                                       splitWords(b, l, a[1]));
          Value keep = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::uge,
              arith::ExtUIOp::create(b, l, i64, bits),
              arith::ConstantOp::create(b, l,
                                        b.getIntegerAttr(i64, threshold)));
          Type element = a[0].getType();
          Value scaled = arith::MulFOp::create(
              b, l, a[0], floatConstant(b, l, element, 1.0 / (1.0 - rate)));
          return {arith::SelectOp::create(b, l, keep, scaled,
                                          floatConstant(b, l, element, 0))};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

void linalg_lowering::populateNormalizationPatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<SoftmaxPattern<SoftmaxOp, false>, SoftmaxPattern<LogSoftmaxOp, true>,
           SoftmaxBackwardPattern<SoftmaxBackwardOp, false>,
           SoftmaxBackwardPattern<LogSoftmaxBackwardOp, true>, LayerNormPattern,
           LayerNormBackwardPattern, BatchNormPattern, BatchNormBackwardPattern,
           DropoutPattern>(patterns.getContext());
}
