//===- TrainShardingRules.cpp - factor rules of train ops -----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Each op states how its dims relate as an einsum over factors (see
// ShardingRuleOpInterface.td). Shapes are valid here: rules are only asked of
// verified ops.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/DecomposeCrossEntropy.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include <numeric>

using namespace mlir;
using namespace mlir::train;
using dist::FactorKind;
using dist::ShardingRule;
using dist::ShardingRuleBuilder;

static ArrayRef<int64_t> shapeOf(Value value) {
  if (auto shaped = dyn_cast<ShapedType>(value.getType()))
    return shaped.getShape();
  return {};
}

static SmallVector<ArrayRef<int64_t>> shapesOf(ValueRange values) {
  return llvm::map_to_vector(values, [](Value v) { return shapeOf(v); });
}

static SmallVector<int64_t> ranksOf(ValueRange values) {
  return llvm::map_to_vector(
      values, [](Value v) { return static_cast<int64_t>(shapeOf(v).size()); });
}

/// A builder with the ranks of `op`'s operands and results.
static ShardingRuleBuilder makeBuilder(Operation *op) {
  return ShardingRuleBuilder(ranksOf(op->getOperands()),
                             ranksOf(op->getResults()));
}

namespace {
/// Names one operand or result of an op in the rule helpers below.
struct TensorRef {
  bool isResult;
  int64_t index;
};
} // namespace

static TensorRef operand(int64_t index) { return {false, index}; }
static TensorRef result(int64_t index) { return {true, index}; }

static ArrayRef<int64_t> shapeOf(Operation *op, TensorRef t) {
  return shapeOf(t.isResult ? op->getResult(t.index) : op->getOperand(t.index));
}

static void map(ShardingRuleBuilder &builder, TensorRef t, int64_t dim,
                int64_t factor) {
  if (t.isResult)
    builder.mapResult(t.index, dim, factor);
  else
    builder.mapOperand(t.index, dim, factor);
}

ShardingRule mlir::train::getPointwiseRule(Operation *op, bool linear,
                                           bool positional,
                                           ArrayRef<unsigned> scaled) {
  ShardingRuleBuilder builder = makeBuilder(op);
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  builder.addBroadcastPointwise(shape, shapesOf(op->getOperands()),
                                shapesOf(op->getResults()));
  if (linear)
    builder.markLinear();
  for (unsigned index : scaled)
    builder.markScaled(index);
  if (positional) // One factor per dim, created in dim order.
    for (int64_t d = 0, e = shape.size(); d < e; ++d)
      builder.markPositional(d);
  return builder.build();
}

ShardingRule mlir::train::getSoftmaxRule(Operation *op, int64_t dim) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  int64_t rank = shape.size();
  if (dim < 0)
    dim += rank;
  ShardingRuleBuilder builder = makeBuilder(op);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t factor = builder.addFactor(
        shape[d], d == dim ? FactorKind::NeedReplication : FactorKind::Pass);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      builder.mapOperand(i, d, factor);
    builder.mapResult(0, d, factor);
  }
  return builder.build();
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions
//===----------------------------------------------------------------------===//

ShardingRule MatmulOp::getShardingRule() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  ArrayRef<int64_t> result = shapeOf(getResult());
  int64_t lr = lhs.size(), rr = rhs.size(), batch = result.size() - 2;
  ShardingRuleBuilder builder = makeBuilder(*this);
  for (int64_t d = 0; d < batch; ++d) {
    int64_t factor = builder.addFactor(result[d]);
    if (lr > 2)
      builder.mapOperand(0, d, factor);
    if (rr > 2)
      builder.mapOperand(1, d, factor);
    builder.mapResult(0, d, factor);
  }
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  int64_t m = builder.addFactor(result[batch]);
  int64_t n = builder.addFactor(result[batch + 1]);
  int64_t k =
      builder.addFactor(tl ? lhs[lr - 2] : lhs[lr - 1], FactorKind::Reduction);
  builder.mapOperand(0, tl ? lr - 1 : lr - 2, m)
      .mapOperand(0, tl ? lr - 2 : lr - 1, k)
      .mapOperand(1, tr ? rr - 1 : rr - 2, k)
      .mapOperand(1, tr ? rr - 2 : rr - 1, n)
      .mapResult(0, batch, m)
      .mapResult(0, batch + 1, n);
  return builder.build();
}

namespace {
/// Where the tensors of a convolution op sit among its operands and results.
/// `activation` is `[n, (g, c), h, w]`, `filter` is `[(g, f), c, kh, kw]`,
/// `output` is `[n, (g, f), oh, ow]`; each is {isResult, index}.
struct ConvTensors {
  TensorRef activation, filter, output;
  /// The factor that is summed over: c (forward), f (backward input), n
  /// (backward filter).
  enum class Reduced { Channels, Features, Batch } reduced;
};
} // namespace

static ShardingRule getConvRule(Operation *op, const ConvTensors &tensors,
                                int64_t groups) {
  ArrayRef<int64_t> act = shapeOf(op, tensors.activation);
  ArrayRef<int64_t> filter = shapeOf(op, tensors.filter);
  ArrayRef<int64_t> out = shapeOf(op, tensors.output);
  ShardingRuleBuilder builder = makeBuilder(op);
  using Reduced = ConvTensors::Reduced;
  auto kindOf = [&](Reduced which) {
    return tensors.reduced == which ? FactorKind::Reduction : FactorKind::Pass;
  };
  int64_t n = builder.addFactor(act[0], kindOf(Reduced::Batch));
  map(builder, tensors.activation, 0, n);
  map(builder, tensors.output, 0, n);
  if (groups > 1) {
    int64_t g = builder.addFactor(groups);
    map(builder, tensors.activation, 1, g);
    map(builder, tensors.filter, 0, g);
    map(builder, tensors.output, 1, g);
  }
  int64_t f = builder.addFactor(filter[0] / groups, kindOf(Reduced::Features));
  int64_t c = builder.addFactor(filter[1], kindOf(Reduced::Channels));
  map(builder, tensors.activation, 1, c);
  map(builder, tensors.filter, 0, f);
  map(builder, tensors.filter, 1, c);
  map(builder, tensors.output, 1, f);
  for (int64_t d = 2; d < 4; ++d) {
    map(builder, tensors.activation, d,
        builder.addFactor(act[d], FactorKind::NeedReplication));
    map(builder, tensors.filter, d,
        builder.addFactor(filter[d], FactorKind::NeedReplication));
    map(builder, tensors.output, d,
        builder.addFactor(out[d], FactorKind::NeedReplication));
  }
  return builder.build();
}

ShardingRule Conv2dOp::getShardingRule() {
  return getConvRule(
      *this,
      {operand(0), operand(1), result(0), ConvTensors::Reduced::Channels},
      getGroups());
}

ShardingRule Conv2dBackwardInputOp::getShardingRule() {
  return getConvRule(
      *this,
      {result(0), operand(1), operand(0), ConvTensors::Reduced::Features},
      getGroups());
}

ShardingRule Conv2dBackwardFilterOp::getShardingRule() {
  return getConvRule(
      *this, {operand(0), result(0), operand(1), ConvTensors::Reduced::Batch},
      getGroups());
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

ShardingRule ReduceOp::getShardingRule() {
  ArrayRef<int64_t> shape = shapeOf(getOperand());
  ArrayRef<int64_t> reduced = getDims();
  ShardingRuleBuilder builder = makeBuilder(*this);
  int64_t resultDim = 0;
  // A sharded max / min is combined across devices right after the op.
  if (getKind() == ReduceKind::max)
    builder.setCombiner(dist::Combiner::Max);
  else if (getKind() == ReduceKind::min)
    builder.setCombiner(dist::Combiner::Min);
  else // A sum (or mean) of partial sums is their partial sum.
    builder.markLinear();
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    bool isReduced = llvm::is_contained(reduced, d);
    int64_t factor = builder.addFactor(
        shape[d], isReduced ? FactorKind::Reduction : FactorKind::Pass);
    if (isReduced && getKind() == ReduceKind::mean)
      builder.markMean(factor);
    builder.mapOperand(0, d, factor);
    if (!isReduced)
      builder.mapResult(0, resultDim, factor);
    if (!isReduced || getKeepdims())
      ++resultDim;
  }
  return builder.build();
}

/// Layer norm and its backward op: `leading` factors map the first `axis`
/// dims of `full` tensors and all dims of `stats` tensors; the normalized
/// dims (need replication) map the trailing dims of `full` tensors and all
/// dims of `weights` tensors. `shape` is the input's.
static ShardingRule getLayerNormRule(Operation *op, ArrayRef<int64_t> shape,
                                     int64_t axis, FactorKind leadingKind,
                                     ArrayRef<TensorRef> full,
                                     ArrayRef<TensorRef> stats,
                                     ArrayRef<TensorRef> weights) {
  ShardingRuleBuilder builder = makeBuilder(op);
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    bool leading = d < axis;
    int64_t factor = builder.addFactor(
        shape[d], leading ? leadingKind : FactorKind::NeedReplication);
    for (auto t : full)
      map(builder, t, d, factor);
    for (auto t : leading ? stats : weights)
      map(builder, t, leading ? d : d - axis, factor);
  }
  return builder.build();
}

ShardingRule LayerNormOp::getShardingRule() {
  // Operands: input, weight, bias; results: output, mean, rstd.
  return getLayerNormRule(*this, shapeOf(getInput()), getAxis(),
                          FactorKind::Pass, {operand(0), result(0)},
                          {result(1), result(2)}, {operand(1), operand(2)});
}

ShardingRule LayerNormBackwardOp::getShardingRule() {
  // Operands: grad_output, input, mean, rstd, weight; results: grad_input,
  // grad_weight, grad_bias.
  return getLayerNormRule(
      *this, shapeOf(getInput()), getAxis(), FactorKind::Reduction,
      {operand(0), operand(1), result(0)}, {operand(2), operand(3)},
      {operand(4), result(1), result(2)});
}

/// Batch norm and its backward op: channel dim 1 of `full` tensors and the
/// only dim of `perChannel` tensors pass; the other dims need replication.
static ShardingRule getBatchNormRule(Operation *op, ArrayRef<TensorRef> full,
                                     ArrayRef<TensorRef> perChannel) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  ShardingRuleBuilder builder = makeBuilder(op);
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    int64_t factor = builder.addFactor(
        shape[d], d == 1 ? FactorKind::Pass : FactorKind::NeedReplication);
    for (auto t : full)
      map(builder, t, d, factor);
    if (d == 1)
      for (auto t : perChannel)
        map(builder, t, 0, factor);
  }
  return builder.build();
}

ShardingRule BatchNormOp::getShardingRule() {
  return getBatchNormRule(*this, {operand(0), result(0)},
                          {operand(1), operand(2), result(1), result(2)});
}

ShardingRule BatchNormBackwardOp::getShardingRule() {
  return getBatchNormRule(
      *this, {operand(0), operand(1), result(0)},
      {operand(2), operand(3), operand(4), result(1), result(2)});
}

//===----------------------------------------------------------------------===//
// Pooling and loss
//===----------------------------------------------------------------------===//

/// Batch and channels pass through every NCHW tensor; the spatial dims of
/// each distinct spatial size get their own need-replication factors.
static ShardingRule getPoolRule(Operation *op) {
  ShardingRuleBuilder builder = makeBuilder(op);
  ArrayRef<int64_t> result = shapeOf(op->getResult(0));
  for (int64_t d = 0; d < 2; ++d) {
    int64_t factor = builder.addFactor(result[d]);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      builder.mapOperand(i, d, factor);
    builder.mapResult(0, d, factor);
  }
  // Tensors with the same spatial shape share factors.
  SmallVector<std::pair<ArrayRef<int64_t>, std::pair<int64_t, int64_t>>>
      spatial;
  auto spatialFactors = [&](ArrayRef<int64_t> shape) {
    for (auto &[known, factors] : spatial)
      if (known == shape.drop_front(2))
        return factors;
    std::pair<int64_t, int64_t> factors = {
        builder.addFactor(shape[2], FactorKind::NeedReplication),
        builder.addFactor(shape[3], FactorKind::NeedReplication)};
    spatial.push_back({shape.drop_front(2), factors});
    return factors;
  };
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto [h, w] = spatialFactors(shapeOf(op->getOperand(i)));
    builder.mapOperand(i, 2, h).mapOperand(i, 3, w);
  }
  auto [h, w] = spatialFactors(result);
  builder.mapResult(0, 2, h).mapResult(0, 3, w);
  return builder.build();
}

ShardingRule MaxPool2dOp::getShardingRule() { return getPoolRule(*this); }
ShardingRule AvgPool2dOp::getShardingRule() { return getPoolRule(*this); }
ShardingRule MaxPool2dBackwardOp::getShardingRule() {
  return getPoolRule(*this);
}
ShardingRule AvgPool2dBackwardOp::getShardingRule() {
  return getPoolRule(*this);
}

/// Cross-entropy ops: `logits` is operand `logitsIndex`, `labels` the next
/// one; the batch dims have kind `batchKind` and map to `gradResult` too
/// when it is set; the class dim needs replication.
static ShardingRule getCrossEntropyRule(Operation *op, int64_t logitsIndex,
                                        FactorKind batchKind, bool gradResult) {
  ArrayRef<int64_t> logits = shapeOf(op->getOperand(logitsIndex));
  int64_t rank = logits.size();
  ShardingRuleBuilder builder = makeBuilder(op);
  for (int64_t d = 0; d < rank; ++d) {
    bool isClass = d == rank - 1;
    int64_t factor = builder.addFactor(
        logits[d], isClass ? FactorKind::NeedReplication : batchKind);
    // Both ops divide by the number of labels.
    if (!isClass)
      builder.markMean(factor);
    builder.mapOperand(logitsIndex, d, factor);
    if (!isClass)
      builder.mapOperand(logitsIndex + 1, d, factor);
    if (gradResult)
      builder.mapResult(0, d, factor);
  }
  return builder.build();
}

ShardingRule CrossEntropyOp::getShardingRule() {
  return getCrossEntropyRule(*this, 0, FactorKind::Reduction, false);
}

bool CrossEntropyOp::isDecomposableOver(unsigned operand, int64_t dim) {
  return operand == 0 &&
         dim + 1 == cast<RankedTensorType>(getLogits().getType()).getRank();
}

void CrossEntropyOp::decompose() {
  decomposeCrossEntropy(getLogits(), getLabels());
}

ShardingRule CrossEntropyBackwardOp::getShardingRule() {
  return getCrossEntropyRule(*this, 1, FactorKind::Pass, true);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Factors a row-major reshape: walking both shapes, each step takes a factor
/// of size gcd(rest of operand dim, rest of result dim). When the gcd is 1
/// the rest of both groups (up to where their products agree again) gets
/// need-replication factors of its own.
ShardingRule ReshapeOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getOperand()), out = shapeOf(getResult());
  ShardingRuleBuilder builder = makeBuilder(*this);
  size_t i = 0, o = 0;
  int64_t restIn = in.empty() ? 1 : in[0];
  int64_t restOut = out.empty() ? 1 : out[0];
  auto advanceIn = [&] { restIn = ++i < in.size() ? in[i] : 1; };
  auto advanceOut = [&] { restOut = ++o < out.size() ? out[o] : 1; };
  while (i < in.size() || o < out.size()) {
    if (i < in.size() && restIn == 1) {
      advanceIn();
      continue;
    }
    if (o < out.size() && restOut == 1) {
      advanceOut();
      continue;
    }
    int64_t g = std::gcd(restIn, restOut);
    if (g > 1) {
      int64_t factor = builder.addFactor(g);
      builder.mapOperand(0, i, factor).mapResult(0, o, factor);
      restIn /= g;
      restOut /= g;
      continue;
    }
    // Coprime remainders: consume dims on both sides until the products of
    // the consumed parts agree, giving each part its own factor.
    int64_t prodIn = restIn, prodOut = restOut;
    builder.mapOperand(0, i,
                       builder.addFactor(restIn, FactorKind::NeedReplication));
    builder.mapResult(0, o,
                      builder.addFactor(restOut, FactorKind::NeedReplication));
    advanceIn();
    advanceOut();
    // Size-1 dims map no factor, as everywhere else.
    while (prodIn != prodOut) {
      if (prodIn < prodOut) {
        prodIn *= restIn;
        if (restIn != 1)
          builder.mapOperand(
              0, i, builder.addFactor(restIn, FactorKind::NeedReplication));
        advanceIn();
      } else {
        prodOut *= restOut;
        if (restOut != 1)
          builder.mapResult(
              0, o, builder.addFactor(restOut, FactorKind::NeedReplication));
        advanceOut();
      }
    }
  }
  return builder.build();
}

ShardingRule TransposeOp::getShardingRule() {
  ArrayRef<int64_t> shape = shapeOf(getOperand());
  ShardingRuleBuilder builder = makeBuilder(*this);
  SmallVector<int64_t> factors;
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    factors.push_back(builder.addFactor(shape[d]));
    builder.mapOperand(0, d, factors.back());
  }
  for (auto [d, from] : llvm::enumerate(getPermutation()))
    builder.mapResult(0, d, factors[from]);
  return builder.build();
}

ShardingRule BroadcastOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getOperand()), out = shapeOf(getResult());
  ShardingRuleBuilder builder = makeBuilder(*this);
  SmallVector<int64_t> factors;
  for (int64_t d = 0, e = out.size(); d < e; ++d) {
    factors.push_back(builder.addFactor(out[d]));
    builder.mapResult(0, d, factors.back());
  }
  for (auto [d, to] : llvm::enumerate(getDims()))
    if (in[d] == out[to])
      builder.mapOperand(0, d, factors[to]);
  return builder.build();
}

/// For ops whose operands and result have one rank: a dim whose size agrees
/// everywhere is a pass factor; otherwise every tensor gets its own
/// need-replication factor for it (slice, pad, concat).
static ShardingRule getPointwiseIfSizesMatchRule(Operation *op) {
  ArrayRef<int64_t> result = shapeOf(op->getResult(0));
  ShardingRuleBuilder builder = makeBuilder(op);
  for (int64_t d = 0, e = result.size(); d < e; ++d) {
    bool match = llvm::all_of(
        op->getOperands(), [&](Value v) { return shapeOf(v)[d] == result[d]; });
    if (match) {
      int64_t factor = builder.addFactor(result[d]);
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        builder.mapOperand(i, d, factor);
      builder.mapResult(0, d, factor);
      continue;
    }
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      builder.mapOperand(i, d,
                         builder.addFactor(shapeOf(op->getOperand(i))[d],
                                           FactorKind::NeedReplication));
    builder.mapResult(
        0, d, builder.addFactor(result[d], FactorKind::NeedReplication));
  }
  return builder.build();
}

ShardingRule SliceOp::getShardingRule() {
  return getPointwiseIfSizesMatchRule(*this);
}

void SliceOp::adaptToLocalShapes() {
  // A dim the slice takes whole passes; on a shard its limit is the
  // shard's size (a sliced dim needs replication, so it stays whole).
  ArrayRef<int64_t> shape = shapeOf(getOperand());
  SmallVector<int64_t> limit(getLimit());
  for (auto [d, size] : llvm::enumerate(shape))
    if (getStart()[d] == 0 && limit[d] > size)
      limit[d] = size;
  setLimit(limit);
}
ShardingRule ConcatOp::getShardingRule() {
  return getPointwiseIfSizesMatchRule(*this);
}
ShardingRule PadOp::getShardingRule() {
  return getPointwiseIfSizesMatchRule(*this);
}

/// Embedding ops: `table` `[v, d...]`, `indices` `[i...]`, `rows`
/// `[i..., d...]`; `v` and the index dims have the
/// given kinds.
static ShardingRule getEmbeddingRule(Operation *op, ArrayRef<TensorRef> tables,
                                     int64_t indicesOperand, TensorRef rows,
                                     FactorKind rowKind, FactorKind indexKind) {
  ShardingRuleBuilder builder = makeBuilder(op);
  ArrayRef<int64_t> table = shapeOf(op, tables.front());
  ArrayRef<int64_t> indices = shapeOf(op->getOperand(indicesOperand));
  int64_t v = builder.addFactor(table[0], rowKind);
  builder.markPositional(v);
  for (auto t : tables)
    map(builder, t, 0, v);
  for (int64_t d = 0, e = indices.size(); d < e; ++d) {
    int64_t factor = builder.addFactor(indices[d], indexKind);
    builder.mapOperand(indicesOperand, d, factor);
    map(builder, rows, d, factor);
  }
  for (int64_t d = 1, e = table.size(); d < e; ++d) {
    int64_t factor = builder.addFactor(table[d]);
    for (auto t : tables)
      map(builder, t, d, factor);
    map(builder, rows, indices.size() + d - 1, factor);
  }
  return builder.build();
}

ShardingRule GatherOp::getShardingRule() {
  return getEmbeddingRule(*this, {operand(0)}, 1, result(0),
                          FactorKind::Reduction, FactorKind::Pass);
}

ShardingRule ScatterAddOp::getShardingRule() {
  return getEmbeddingRule(*this, {operand(0), result(0)}, 1, operand(2),
                          FactorKind::Pass, FactorKind::Reduction);
}

void GatherOp::setShardOffsets(ValueRange offsets, ArrayRef<int64_t>) {
  getRowOffsetMutable().assign(offsets.front());
}

void ScatterAddOp::setShardOffsets(ValueRange offsets, ArrayRef<int64_t>) {
  getRowOffsetMutable().assign(offsets.front());
}

void DropoutOp::setShardOffsets(ValueRange offsets,
                                ArrayRef<int64_t> globalSizes) {
  getOffsetsMutable().assign(offsets);
  setGlobalShape(globalSizes);
}

ShardingRule IotaOp::getShardingRule() {
  ArrayRef<int64_t> shape = shapeOf(getResult());
  ShardingRuleBuilder builder = makeBuilder(*this);
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    builder.mapResult(
        0, d,
        builder.addFactor(shape[d], d == static_cast<int64_t>(getDim())
                                        ? FactorKind::NeedReplication
                                        : FactorKind::Pass));
  return builder.build();
}

ShardingRule ConstantOp::getShardingRule() {
  // The op materializes its whole (global) value: a shard of it is a local
  // slice of the result, never a different constant.
  ArrayRef<int64_t> shape = shapeOf(getResult());
  ShardingRuleBuilder builder = makeBuilder(*this);
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    builder.mapResult(0, d,
                      builder.addFactor(shape[d], FactorKind::NeedReplication));
  return builder.build();
}
