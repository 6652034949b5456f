//===- TrainShapeInferenceMovement.cpp - result types of the other ops ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Shape inference of data movement, dropout and optimizer ops (see
// TrainShapeInference.cpp for the conventions).
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"

#include <cmath>

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::detail;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type type = adaptor.getOperand().getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (perm.size() != shape.size())
    return diag.fail("permutation has ", perm.size(),
                     " entries for an operand of rank ", shape.size());
  SmallVector<bool> seen(shape.size(), false);
  SmallVector<int64_t> result;
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size()) || seen[dim])
      return diag.fail("permutation ", fmtList(perm),
                       " is not a permutation of "
                       "0..",
                       shape.size() - 1);
    seen[dim] = true;
    result.push_back(shape[dim]);
  }
  types.push_back(tensorOf(result, getElementTypeOrSelf(type)));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type type = adaptor.getOperand().getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit();
  SmallVector<int64_t> strides(shape.size(), 1);
  if (std::optional<ArrayRef<int64_t>> given = adaptor.getStrides()) {
    if (failed(checkPerDim(diag, "strides", *given, shape.size())))
      return failure();
    strides.assign(given->begin(), given->end());
  }
  if (failed(checkPerDim(diag, "start", start, shape.size())) ||
      failed(checkPerDim(diag, "limit", limit, shape.size())))
    return failure();
  SmallVector<int64_t> result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > shape[d])
      return diag.fail("dim ", d, ": need 0 <= start <= limit <= ", shape[d],
                       ", got start ", start[d], " and limit ", limit[d]);
    if (strides[d] < 1)
      return diag.fail("dim ", d, ": stride must be positive, got ",
                       strides[d]);
    result.push_back((limit[d] - start[d] + strides[d] - 1) / strides[d]);
  }
  types.push_back(tensorOf(result, getElementTypeOrSelf(type)));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  TypeRange inputs = adaptor.getInputs().getTypes();
  if (inputs.empty())
    return diag.fail("needs at least one input");
  if (failed(checkSameElementType(diag, inputs, "inputs")))
    return failure();
  SmallVector<int64_t> result(shapeOf(inputs.front()));
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= static_cast<int64_t>(result.size()))
    return diag.fail("dim ", dim, " is out of range for rank ", result.size());
  for (auto [index, type] : llvm::enumerate(inputs.drop_front())) {
    ArrayRef<int64_t> shape = shapeOf(type);
    if (shape.size() != result.size())
      return diag.fail("input #", index + 1, " has rank ", shape.size(),
                       ", input #0 has rank ", result.size());
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != dim && shape[d] != result[d])
        return diag.fail("input #", index + 1, " has size ", shape[d],
                         " in dim ", d, ", input #0 has ", result[d]);
    result[dim] += shape[dim];
  }
  types.push_back(tensorOf(result, getElementTypeOrSelf(inputs.front())));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type type = adaptor.getOperand().getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (failed(checkPerDim(diag, "low", low, shape.size())) ||
      failed(checkPerDim(diag, "high", high, shape.size())))
    return failure();
  SmallVector<int64_t> result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      return diag.fail("dim ", d, ": padding must be non-negative, got low ",
                       low[d], " and high ", high[d]);
    result.push_back(shape[d] + low[d] + high[d]);
  }
  // The fill value must be representable in an integer element type.
  if (auto intType = dyn_cast<IntegerType>(getElementTypeOrSelf(type))) {
    double value = adaptor.getValue().convertToDouble();
    unsigned width = intType.getWidth();
    double lo = width == 1 ? 0 : -std::ldexp(1.0, width - 1);
    double hi = std::ldexp(1.0, width) - 1;
    if (!(value == std::trunc(value) && value >= lo && value <= hi))
      return diag.fail("padding value ", value, " is not representable in ",
                       intType);
  }
  types.push_back(tensorOf(result, getElementTypeOrSelf(type)));
  return success();
}

/// The shape of the rows an embedding op gathers or scatters:
/// `[indices..., table.shape[1:]...]`.
static FailureOr<SmallVector<int64_t>>
getRowsShape(const ShapeDiagnostics &diag, StringRef tableName, Type table,
             Type indices) {
  if (shapeOf(table).empty())
    return diag.fail(tableName, " must have rank >= 1");
  SmallVector<int64_t> rows(shapeOf(indices));
  llvm::append_range(rows, shapeOf(table).drop_front());
  return rows;
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type table = adaptor.getTable().getType();
  FailureOr<SmallVector<int64_t>> rows =
      getRowsShape(diag, "table", table, adaptor.getIndices().getType());
  if (failed(rows))
    return failure();
  types.push_back(tensorOf(*rows, getElementTypeOrSelf(table)));
  return success();
}

LogicalResult ScatterAddOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type init = adaptor.getInit().getType();
  FailureOr<SmallVector<int64_t>> rows =
      getRowsShape(diag, "init", init, adaptor.getIndices().getType());
  if (failed(rows) ||
      failed(expectShape(diag, "updates", adaptor.getUpdates().getType(), *rows,
                         getElementTypeOrSelf(init))))
    return failure();
  types.push_back(init);
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout and optimizers
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type type = adaptor.getOperand().getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  if (failed(checkProbability(diag, "rate", adaptor.getRate())))
    return failure();
  std::optional<ArrayRef<int64_t>> global = adaptor.getGlobalShape();
  size_t numOffsets = adaptor.getOffsets().size();
  if (!global && numOffsets != 0)
    return diag.fail("offsets need a global_shape");
  if (global) {
    if (numOffsets != shape.size() || global->size() != shape.size())
      return diag.fail("needs one offset and one global_shape entry per dim "
                       "(rank ",
                       shape.size(), "), got ", numOffsets, " and ",
                       global->size());
    for (size_t d = 0; d < shape.size(); ++d)
      if ((*global)[d] < shape[d])
        return diag.fail("global_shape ", fmtShape(*global),
                         " is smaller than the operand's ", fmtShape(shape));
  }
  types.push_back(type);
  return success();
}

static LogicalResult expectSameType(const ShapeDiagnostics &diag,
                                    StringRef what, Type type, Type param) {
  if (type != param)
    return diag.fail(what, " type ", type, " does not match param type ",
                     param);
  return success();
}

LogicalResult SgdOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type param = adaptor.getParam().getType();
  if (failed(checkNonNegative(diag, "momentum", adaptor.getMomentum())) ||
      failed(checkNonNegative(diag, "weight_decay", adaptor.getWeightDecay())))
    return failure();
  double momentum = adaptor.getMomentum().convertToDouble();
  if (failed(expectSameType(diag, "grad", adaptor.getGrad().getType(), param)))
    return failure();
  Value buffer = adaptor.getMomentumBuffer();
  if ((momentum > 0) != static_cast<bool>(buffer))
    return diag.fail(momentum > 0
                         ? "momentum > 0 needs a momentum_buffer operand"
                         : "a momentum_buffer operand needs momentum > 0");
  if (adaptor.getNesterov() && momentum == 0)
    return diag.fail("nesterov needs momentum > 0");
  types.push_back(param);
  if (buffer) {
    if (failed(
            expectSameType(diag, "momentum_buffer", buffer.getType(), param)))
      return failure();
    types.push_back(param);
  }
  return success();
}

template <typename AdaptorT>
static LogicalResult inferAdamTypes(const ShapeDiagnostics &diag,
                                    AdaptorT adaptor,
                                    SmallVectorImpl<Type> &types) {
  Type param = adaptor.getParam().getType();
  if (failed(checkProbability(diag, "beta1", adaptor.getBeta1())) ||
      failed(checkProbability(diag, "beta2", adaptor.getBeta2())) ||
      failed(checkPositive(diag, "epsilon", adaptor.getEpsilon())) ||
      failed(checkNonNegative(diag, "weight_decay", adaptor.getWeightDecay())))
    return failure();
  if (failed(
          expectSameType(diag, "grad", adaptor.getGrad().getType(), param)) ||
      failed(expectSameType(diag, "exp_avg", adaptor.getExpAvg().getType(),
                            param)) ||
      failed(expectSameType(diag, "exp_avg_sq", adaptor.getExpAvgSq().getType(),
                            param)))
    return failure();
  types.append({param, param, param, adaptor.getStep().getType()});
  return success();
}

LogicalResult AdamOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferAdamTypes(ShapeDiagnostics(loc, getOperationName()), adaptor,
                        types);
}

LogicalResult AdamWOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferAdamTypes(ShapeDiagnostics(loc, getOperationName()), adaptor,
                        types);
}

SmallVector<Value> SgdOp::getParamShapedState() {
  if (Value buffer = getMomentumBuffer())
    return {buffer};
  return {};
}

SmallVector<Value> AdamOp::getParamShapedState() {
  return {getExpAvg(), getExpAvgSq()};
}

SmallVector<Value> AdamWOp::getParamShapedState() {
  return {getExpAvg(), getExpAvgSq()};
}
