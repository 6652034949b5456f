//===- TrainShapeInference.cpp - result types of compute ops --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every op whose result type follows from its operands and attributes infers
// it here; the checks double as the op's verifier (InferTypeOpInterface runs
// inference when verifying), so each failure names the offending value.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::detail;

static FailureOr<SmallVector<int64_t>>
broadcastShapes(const ShapeDiagnostics &diag, TypeRange types) {
  size_t rank = 0;
  for (Type type : types)
    rank = std::max(rank, shapeOf(type).size());
  SmallVector<int64_t> result(rank, 1);
  for (auto [index, type] : llvm::enumerate(types)) {
    ArrayRef<int64_t> shape = shapeOf(type);
    size_t offset = rank - shape.size();
    for (auto [dim, size] : llvm::enumerate(shape)) {
      int64_t &out = result[offset + dim];
      if (size == out || size == 1)
        continue;
      if (out != 1)
        return diag.fail("operand #", index, " of shape ", fmtShape(shape),
                         " does not broadcast: dim ", dim, " has size ", size,
                         " where another operand has ", out);
      out = size;
    }
  }
  return result;
}

LogicalResult
mlir::train::inferBroadcastTypes(const ShapeDiagnostics &diag, TypeRange types,
                                 Type elementType,
                                 SmallVectorImpl<Type> &inferred) {
  if (!elementType) {
    if (failed(checkSameElementType(diag, types, "operands")))
      return failure();
    elementType = getElementTypeOrSelf(types.front());
  }
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(diag, types);
  if (failed(shape))
    return failure();
  inferred.push_back(tensorOf(*shape, elementType));
  return success();
}

/// Checks `dim` indexes a dim of a rank-`rank` tensor; negative counts from
/// the back. Returns the non-negative dim.
static FailureOr<int64_t> normalizeDim(const ShapeDiagnostics &diag,
                                       StringRef what, int64_t dim,
                                       int64_t rank) {
  if (dim < -rank || dim >= rank)
    return diag.fail(what, " ", dim, " is out of range for rank ", rank);
  return dim < 0 ? dim + rank : dim;
}

LogicalResult mlir::train::inferSoftmaxTypes(const ShapeDiagnostics &diag,
                                             TypeRange types, int64_t dim,
                                             SmallVectorImpl<Type> &inferred) {
  for (Type type : types.drop_front())
    if (type != types.front())
      return diag.fail("operands must have one type, got ", types.front(),
                       " and ", type);
  if (failed(normalizeDim(diag, "dim", dim, shapeOf(types.front()).size())))
    return failure();
  inferred.push_back(types.front());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  if (failed(checkSameElementType(diag, adaptor.getOperands().getTypes(),
                                  "operands")))
    return failure();
  return inferBroadcastTypes(diag, adaptor.getOperands().getTypes(),
                             IntegerType::get(context, 1), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type onTrue = adaptor.getOnTrue().getType();
  if (failed(checkSameElementType(diag,
                                  {onTrue, adaptor.getOnFalse().getType()},
                                  "on_true and on_false")))
    return failure();
  return inferBroadcastTypes(diag, adaptor.getOperands().getTypes(),
                             getElementTypeOrSelf(onTrue), types);
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type lhsType = adaptor.getLhs().getType(),
       rhsType = adaptor.getRhs().getType();
  ArrayRef<int64_t> lhs = shapeOf(lhsType), rhs = shapeOf(rhsType);
  if (lhs.size() < 2 || rhs.size() < 2)
    return diag.fail("operands must have rank >= 2, got ", lhs.size(), " and ",
                     rhs.size());
  if (failed(checkSameElementType(diag, {lhsType, rhsType}, "operands")))
    return failure();
  ArrayRef<int64_t> lhsBatch = lhs.drop_back(2), rhsBatch = rhs.drop_back(2);
  if (!lhsBatch.empty() && !rhsBatch.empty() && lhsBatch != rhsBatch)
    return diag.fail("batch dims differ: lhs has ", fmtShape(lhsBatch),
                     ", rhs has ", fmtShape(rhsBatch));
  int64_t lr = lhs.size(), rr = rhs.size();
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = tl ? lhs[lr - 1] : lhs[lr - 2];
  int64_t kl = tl ? lhs[lr - 2] : lhs[lr - 1];
  int64_t kr = tr ? rhs[rr - 1] : rhs[rr - 2];
  int64_t n = tr ? rhs[rr - 2] : rhs[rr - 1];
  if (kl != kr)
    return diag.fail("contracting dims differ: lhs dim ", tl ? lr - 2 : lr - 1,
                     " has size ", kl, ", rhs dim ", tr ? rr - 1 : rr - 2,
                     " has size ", kr);
  SmallVector<int64_t> shape(lhsBatch.empty() ? rhsBatch : lhsBatch);
  shape.append({m, n});
  types.push_back(tensorOf(shape, getElementTypeOrSelf(lhsType)));
  return success();
}

namespace {
/// The attributes every convolution op shares.
struct ConvParams {
  ArrayRef<int64_t> strides, padding, dilations;
  int64_t groups;
};
} // namespace

/// Forward output size of spatial dim `d` (0 = h, 1 = w): 0 when the
/// window does not fit, nullopt when the arithmetic overflows.
static std::optional<int64_t> convOutputSize(const ConvParams &p, int64_t d,
                                             int64_t in, int64_t kernel) {
  std::optional<int64_t> padded = llvm::checkedAdd(in, p.padding[2 * d]);
  if (padded)
    padded = llvm::checkedAdd(*padded, p.padding[2 * d + 1]);
  std::optional<int64_t> span = llvm::checkedMul(p.dilations[d], kernel - 1);
  if (!padded || !span)
    return std::nullopt;
  if (*padded < *span + 1)
    return 0;
  return (*padded - *span - 1) / p.strides[d] + 1;
}

/// Computes [oh, ow] for input [h, w] and kernel [kh, kw], failing when a
/// window does not fit.
static FailureOr<SmallVector<int64_t>>
convOutputSpatial(const ShapeDiagnostics &diag, const ConvParams &p,
                  ArrayRef<int64_t> in, ArrayRef<int64_t> kernel) {
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < 2; ++d) {
    StringRef name = d == 0 ? "h" : "w";
    std::optional<int64_t> size = convOutputSize(p, d, in[d], kernel[d]);
    if (!size)
      return diag.fail("spatial dim ", name, ": padding ", p.padding[2 * d],
                       "+", p.padding[2 * d + 1], " or dilation ",
                       p.dilations[d], " overflows the size arithmetic");
    if (*size < 1) {
      std::string dilation =
          p.dilations[d] == 1
              ? std::string()
              : (" with dilation " + Twine(p.dilations[d])).str();
      return diag.fail("spatial dim ", name, ": kernel ", kernel[d], dilation,
                       " does not fit input ", in[d], " padded by ",
                       p.padding[2 * d], "+", p.padding[2 * d + 1]);
    }
    out.push_back(*size);
  }
  return out;
}

static LogicalResult checkGroups(const ShapeDiagnostics &diag,
                                 const ConvParams &p, int64_t channels,
                                 int64_t features) {
  if (channels % p.groups || features % p.groups)
    return diag.fail("groups ", p.groups, " must divide the input channels (",
                     channels, ") and output channels (", features, ")");
  return success();
}

/// Checks the two operands of a convolution op: rank 4, one element type.
static LogicalResult checkConvOperands(const ShapeDiagnostics &diag,
                                       StringRef firstName, Type first,
                                       StringRef secondName, Type second) {
  if (failed(expectRank(diag, firstName, first, 4)) ||
      failed(expectRank(diag, secondName, second, 4)))
    return failure();
  return checkSameElementType(diag, {first, second}, "operands");
}

/// Checks that the forward output size `[oh, ow]` implied by `given` (the
/// backward op's `what` attribute) is the spatial size of `grad`.
static LogicalResult checkForwardOutput(const ShapeDiagnostics &diag,
                                        StringRef what, ArrayRef<int64_t> given,
                                        ArrayRef<int64_t> out,
                                        ArrayRef<int64_t> grad) {
  if (out != grad.drop_front(2))
    return diag.fail(what, " ", fmtShape(given), " gives a forward output of ",
                     fmtShape(out), " but grad_output has ",
                     fmtShape(grad.drop_front(2)));
  return success();
}

template <typename AdaptorT> static ConvParams getConvParams(AdaptorT adaptor) {
  return {adaptor.getStrides(), adaptor.getPadding(), adaptor.getDilations(),
          static_cast<int64_t>(adaptor.getGroups())};
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type inputType = adaptor.getInput().getType();
  Type filterType = adaptor.getFilter().getType();
  if (failed(checkConvOperands(diag, "input", inputType, "filter", filterType)))
    return failure();
  ConvParams p = getConvParams(adaptor);
  ArrayRef<int64_t> in = shapeOf(inputType), filter = shapeOf(filterType);
  if (failed(checkGroups(diag, p, in[1], filter[0])))
    return failure();
  if (filter[1] * p.groups != in[1])
    return diag.fail("filter has ", filter[1],
                     " input channels per group but "
                     "input has ",
                     in[1], " channels in ", p.groups, " group(s)");
  FailureOr<SmallVector<int64_t>> out =
      convOutputSpatial(diag, p, in.drop_front(2), filter.drop_front(2));
  if (failed(out))
    return failure();
  types.push_back(tensorOf({in[0], filter[0], (*out)[0], (*out)[1]},
                           getElementTypeOrSelf(inputType)));
  return success();
}

LogicalResult Conv2dBackwardInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type gradType = adaptor.getGradOutput().getType();
  Type filterType = adaptor.getFilter().getType();
  if (failed(checkConvOperands(diag, "grad_output", gradType, "filter",
                               filterType)))
    return failure();
  ConvParams p = getConvParams(adaptor);
  ArrayRef<int64_t> grad = shapeOf(gradType), filter = shapeOf(filterType);
  if (filter[0] != grad[1])
    return diag.fail("filter has ", filter[0],
                     " output channels but "
                     "grad_output has ",
                     grad[1]);
  int64_t channels = filter[1] * p.groups;
  if (failed(checkGroups(diag, p, channels, filter[0])))
    return failure();
  FailureOr<SmallVector<int64_t>> out =
      convOutputSpatial(diag, p, adaptor.getInputSize(), filter.drop_front(2));
  if (failed(out) ||
      failed(checkForwardOutput(diag, "input_size", adaptor.getInputSize(),
                                *out, grad)))
    return failure();
  ArrayRef<int64_t> size = adaptor.getInputSize();
  types.push_back(tensorOf({grad[0], channels, size[0], size[1]},
                           getElementTypeOrSelf(gradType)));
  return success();
}

LogicalResult Conv2dBackwardFilterOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type inputType = adaptor.getInput().getType();
  Type gradType = adaptor.getGradOutput().getType();
  if (failed(
          checkConvOperands(diag, "input", inputType, "grad_output", gradType)))
    return failure();
  ConvParams p = getConvParams(adaptor);
  ArrayRef<int64_t> in = shapeOf(inputType), grad = shapeOf(gradType);
  if (in[0] != grad[0])
    return diag.fail("input has batch ", in[0], " but grad_output has ",
                     grad[0]);
  if (failed(checkGroups(diag, p, in[1], grad[1])))
    return failure();
  ArrayRef<int64_t> kernel = adaptor.getKernelSize();
  FailureOr<SmallVector<int64_t>> out =
      convOutputSpatial(diag, p, in.drop_front(2), kernel);
  if (failed(out) ||
      failed(checkForwardOutput(diag, "kernel_size", kernel, *out, grad)))
    return failure();
  types.push_back(tensorOf({grad[1], in[1] / p.groups, kernel[0], kernel[1]},
                           getElementTypeOrSelf(inputType)));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type type = adaptor.getOperand().getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  int64_t rank = shape.size();
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t dim : adaptor.getDims()) {
    if (dim < 0 || dim >= rank)
      return diag.fail("reduced dim ", dim, " is out of range for rank ", rank);
    if (!reduced.insert(dim).second)
      return diag.fail("reduced dim ", dim, " is listed twice");
  }
  if (adaptor.getKind() == ReduceKind::mean &&
      !isa<FloatType>(getElementTypeOrSelf(type)))
    return diag.fail("mean needs a float operand, got ",
                     getElementTypeOrSelf(type));
  SmallVector<int64_t> result;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (!reduced.contains(dim))
      result.push_back(shape[dim]);
    else if (adaptor.getKeepdims())
      result.push_back(1);
  }
  types.push_back(tensorOf(result, getElementTypeOrSelf(type)));
  return success();
}

/// Checks a layer norm's `axis` and its weight-shaped operands; returns the
/// leading (statistics) shape.
static FailureOr<ArrayRef<int64_t>>
checkLayerNorm(const ShapeDiagnostics &diag, Type input, int64_t axis,
               ArrayRef<std::pair<StringRef, Type>> weights) {
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t rank = shape.size();
  if (axis < 0 || axis >= rank)
    return diag.fail("axis ", axis, " is out of range for rank ", rank);
  for (auto [name, type] : weights)
    if (failed(expectShape(diag, name, type, shape.drop_front(axis),
                           getElementTypeOrSelf(input))))
      return failure();
  return shape.take_front(axis);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type input = adaptor.getInput().getType();
  if (failed(checkNonNegative(diag, "epsilon", adaptor.getEpsilon())))
    return failure();
  FailureOr<ArrayRef<int64_t>> stats =
      checkLayerNorm(diag, input, adaptor.getAxis(),
                     {{"weight", adaptor.getWeight().getType()},
                      {"bias", adaptor.getBias().getType()}});
  if (failed(stats))
    return failure();
  Type statsType = tensorOf(*stats, getElementTypeOrSelf(input));
  types.append({input, statsType, statsType});
  return success();
}

LogicalResult LayerNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type input = adaptor.getInput().getType();
  if (adaptor.getGradOutput().getType() != input)
    return diag.fail("grad_output type ", adaptor.getGradOutput().getType(),
                     " does not match input type ", input);
  Type weight = adaptor.getWeight().getType();
  FailureOr<ArrayRef<int64_t>> stats =
      checkLayerNorm(diag, input, adaptor.getAxis(), {{"weight", weight}});
  if (failed(stats))
    return failure();
  Type element = getElementTypeOrSelf(input);
  if (failed(expectShape(diag, "mean", adaptor.getMean().getType(), *stats,
                         element)) ||
      failed(expectShape(diag, "rstd", adaptor.getRstd().getType(), *stats,
                         element)))
    return failure();
  types.append({input, weight, weight});
  return success();
}

/// Checks a batch norm's input rank and its per-channel operands.
static LogicalResult
checkBatchNorm(const ShapeDiagnostics &diag, Type input,
               ArrayRef<std::pair<StringRef, Type>> perChannel) {
  ArrayRef<int64_t> shape = shapeOf(input);
  if (shape.size() < 2)
    return diag.fail("input must have rank >= 2 (batch, channels, ...), got ",
                     shape.size());
  for (auto [name, type] : perChannel)
    if (failed(expectShape(diag, name, type, {shape[1]},
                           getElementTypeOrSelf(input))))
      return failure();
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type input = adaptor.getInput().getType();
  Type weight = adaptor.getWeight().getType();
  if (failed(checkNonNegative(diag, "epsilon", adaptor.getEpsilon())))
    return failure();
  if (failed(checkBatchNorm(
          diag, input,
          {{"weight", weight}, {"bias", adaptor.getBias().getType()}})))
    return failure();
  types.append({input, weight, weight});
  return success();
}

LogicalResult BatchNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type input = adaptor.getInput().getType();
  Type weight = adaptor.getWeight().getType();
  if (adaptor.getGradOutput().getType() != input)
    return diag.fail("grad_output type ", adaptor.getGradOutput().getType(),
                     " does not match input type ", input);
  if (failed(checkNonNegative(diag, "epsilon", adaptor.getEpsilon())))
    return failure();
  if (failed(checkBatchNorm(diag, input,
                            {{"mean", adaptor.getMean().getType()},
                             {"var", adaptor.getVar().getType()},
                             {"weight", weight}})))
    return failure();
  types.append({input, weight, weight});
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Computes the pooled type of `input` and checks the window attributes.
template <typename AdaptorT>
static FailureOr<Type> inferPooledType(const ShapeDiagnostics &diag,
                                       AdaptorT adaptor) {
  Type input = adaptor.getInput().getType();
  if (failed(expectRank(diag, "input", input, 4)))
    return failure();
  ArrayRef<int64_t> kernel = adaptor.getKernelSize();
  ArrayRef<int64_t> padding = adaptor.getPadding();
  for (int64_t i = 0; i < 4; ++i)
    if (padding[i] > kernel[i / 2] / 2)
      return diag.fail("padding ", padding[i], " exceeds half the kernel size ",
                       kernel[i / 2]);
  SmallVector<int64_t> one = {1, 1};
  ConvParams p{adaptor.getStrides(), padding, one, 1};
  ArrayRef<int64_t> shape = shapeOf(input);
  FailureOr<SmallVector<int64_t>> out =
      convOutputSpatial(diag, p, shape.drop_front(2), kernel);
  if (failed(out))
    return failure();
  return Type(tensorOf({shape[0], shape[1], (*out)[0], (*out)[1]},
                       getElementTypeOrSelf(input)));
}

template <typename AdaptorT>
static LogicalResult inferPoolBackward(const ShapeDiagnostics &diag,
                                       AdaptorT adaptor,
                                       SmallVectorImpl<Type> &types) {
  FailureOr<Type> pooled = inferPooledType(diag, adaptor);
  if (failed(pooled))
    return failure();
  if (adaptor.getGradOutput().getType() != *pooled)
    return diag.fail("grad_output type ", adaptor.getGradOutput().getType(),
                     " does not match the pooled type ", *pooled);
  types.push_back(adaptor.getInput().getType());
  return success();
}

static LogicalResult pushPooled(FailureOr<Type> type,
                                SmallVectorImpl<Type> &types) {
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  return pushPooled(inferPooledType(diag, adaptor), types);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  return pushPooled(inferPooledType(diag, adaptor), types);
}

LogicalResult MaxPool2dBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferPoolBackward(ShapeDiagnostics(loc, getOperationName()), adaptor,
                           types);
}

LogicalResult AvgPool2dBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferPoolBackward(ShapeDiagnostics(loc, getOperationName()), adaptor,
                           types);
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

static LogicalResult checkLogitsAndLabels(const ShapeDiagnostics &diag,
                                          Type logits, Type labels) {
  ArrayRef<int64_t> shape = shapeOf(logits);
  if (shape.size() < 2)
    return diag.fail("logits must have rank >= 2 (batch..., classes), got ",
                     shape.size());
  if (shapeOf(labels) != shape.drop_back())
    return diag.fail("labels must have shape ", fmtShape(shape.drop_back()),
                     " (the logits without the class dim), got ",
                     fmtShape(shapeOf(labels)));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type logits = adaptor.getLogits().getType();
  if (failed(checkLogitsAndLabels(diag, logits, adaptor.getLabels().getType())))
    return failure();
  types.push_back(tensorOf({}, getElementTypeOrSelf(logits)));
  return success();
}

LogicalResult CrossEntropyBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ShapeDiagnostics diag(loc, getOperationName());
  Type logits = adaptor.getLogits().getType();
  if (failed(
          checkLogitsAndLabels(diag, logits, adaptor.getLabels().getType())) ||
      failed(checkSameElementType(diag,
                                  {adaptor.getGradLoss().getType(), logits},
                                  "grad_loss and logits")))
    return failure();
  types.push_back(logits);
  return success();
}
