//===- TrainCost.cpp - FLOPs and bytes of train ops -----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Conventions: a multiply-add counts as two FLOPs; pointwise ops count the
// per-element operations given in their ODS definition; data movement does
// no arithmetic. Bytes: every operand read once and every result written
// once, except where an op touches less (a reshape is a view, a gather reads
// only the rows it returns).
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainOps.h"

using namespace mlir;
using namespace mlir::train;
using dist::OpCost;

static int64_t numElements(Value value) {
  return dist::getNumElements(value.getType());
}

OpCost mlir::train::getPointwiseCost(Operation *op, int64_t flopsPerElement) {
  return dist::getStreamingCost(op, flopsPerElement *
                                        numElements(op->getResult(0)));
}

OpCost MatmulOp::getCost() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  // The result holds batch * m * n elements, each a k-long dot product.
  return dist::getStreamingCost(*this, 2 * numElements(getResult()) * k);
}

/// 2 * n * f * oh * ow * (c / groups) * kh * kw for a convolution whose
/// output is `output` and filter is `filter`.
static int64_t convFlops(Value output, Value filter) {
  ArrayRef<int64_t> f = cast<ShapedType>(filter.getType()).getShape();
  return 2 * numElements(output) * f[1] * f[2] * f[3];
}

OpCost Conv2dOp::getCost() {
  return dist::getStreamingCost(*this, convFlops(getResult(), getFilter()));
}

OpCost Conv2dBackwardInputOp::getCost() {
  return dist::getStreamingCost(*this, convFlops(getGradOutput(), getFilter()));
}

OpCost Conv2dBackwardFilterOp::getCost() {
  return dist::getStreamingCost(*this, convFlops(getGradOutput(), getResult()));
}

OpCost ReduceOp::getCost() {
  return dist::getStreamingCost(*this, numElements(getOperand()));
}

OpCost LayerNormOp::getCost() {
  return dist::getStreamingCost(*this, 8 * numElements(getInput()));
}

OpCost LayerNormBackwardOp::getCost() {
  return dist::getStreamingCost(*this, 12 * numElements(getInput()));
}

OpCost BatchNormOp::getCost() {
  return dist::getStreamingCost(*this, 8 * numElements(getInput()));
}

OpCost BatchNormBackwardOp::getCost() {
  return dist::getStreamingCost(*this, 12 * numElements(getInput()));
}

/// One operation per window element per pooled element.
template <typename PoolOp> static OpCost getPoolCost(PoolOp op, Value pooled) {
  ArrayRef<int64_t> kernel = op.getKernelSize();
  return dist::getStreamingCost(op,
                                numElements(pooled) * kernel[0] * kernel[1]);
}

OpCost MaxPool2dOp::getCost() { return getPoolCost(*this, getResult()); }
OpCost AvgPool2dOp::getCost() { return getPoolCost(*this, getResult()); }
OpCost MaxPool2dBackwardOp::getCost() {
  return getPoolCost(*this, getGradOutput());
}
OpCost AvgPool2dBackwardOp::getCost() {
  // The forward input only gives the shape: its values are not read.
  OpCost cost = getPoolCost(*this, getGradOutput());
  cost.bytesRead = dist::getTensorBytes(getGradOutput().getType());
  return cost;
}

OpCost CrossEntropyOp::getCost() {
  return dist::getStreamingCost(*this, 6 * numElements(getLogits()));
}

OpCost CrossEntropyBackwardOp::getCost() {
  return dist::getStreamingCost(*this, 5 * numElements(getLogits()));
}

OpCost ReshapeOp::getCost() { return {}; }
OpCost TransposeOp::getCost() { return dist::getStreamingCost(*this, 0); }
OpCost BroadcastOp::getCost() { return dist::getStreamingCost(*this, 0); }
OpCost ConcatOp::getCost() { return dist::getStreamingCost(*this, 0); }
OpCost PadOp::getCost() { return dist::getStreamingCost(*this, 0); }
OpCost IotaOp::getCost() { return dist::getStreamingCost(*this, 0); }
OpCost ConstantOp::getCost() { return dist::getStreamingCost(*this, 0); }

OpCost SliceOp::getCost() {
  // Reads only the elements it returns.
  int64_t bytes = dist::getTensorBytes(getResult().getType());
  return {0, bytes, bytes};
}

OpCost GatherOp::getCost() {
  // Reads the indices and the rows it returns.
  int64_t rows = dist::getTensorBytes(getResult().getType());
  return {0, dist::getTensorBytes(getIndices().getType()) + rows, rows};
}

OpCost ScatterAddOp::getCost() {
  return dist::getStreamingCost(*this, numElements(getUpdates()));
}
