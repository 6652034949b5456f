//===- TrainOps.cpp - train dialect ops -----------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Verifiers of the ops whose result type is their specification (the others
// verify through shape inference, see TrainShapeInference.cpp) and folders.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::train;

LogicalResult mlir::OpTrait::train::verifyStrictAttributes(Operation *op) {
  for (NamedAttribute attr : op->getDiscardableAttrs())
    if (!attr.getName().getValue().contains('.'))
      return op->emitOpError("unknown attribute '")
             << attr.getName().getValue() << "' (the op's attributes are: " <<
             [&]() {
               std::string names;
               llvm::raw_string_ostream os(names);
               llvm::interleaveComma(
                   op->getRegisteredInfo()->getAttributeNames(), os,
                   [&](StringAttr name) { os << name.getValue(); });
               return names.empty() ? std::string("none") : names;
             }()
             << ")";
  return success();
}

LogicalResult ConvertOp::verify() {
  if (getOperand().getType().getShape() != getResult().getType().getShape())
    return emitOpError("result shape must match the operand's, got ")
           << getResult().getType() << " for " << getOperand().getType();
  return success();
}

bool ConvertOp::isExactWidening() {
  auto from = dyn_cast<FloatType>(getOperand().getType().getElementType());
  auto to = dyn_cast<FloatType>(getResult().getType().getElementType());
  if (!from || !to)
    return false;
  const llvm::fltSemantics &source = from.getFloatSemantics();
  const llvm::fltSemantics &target = to.getFloatSemantics();
  return llvm::APFloat::semanticsPrecision(target) >=
             llvm::APFloat::semanticsPrecision(source) &&
         llvm::APFloat::semanticsMaxExponent(target) >=
             llvm::APFloat::semanticsMaxExponent(source) &&
         llvm::APFloat::semanticsMinExponent(target) <=
             llvm::APFloat::semanticsMinExponent(source);
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType operand = getOperand().getType();
  RankedTensorType result = getResult().getType();
  if (operand.getElementType() != result.getElementType())
    return emitOpError("element type changes from ")
           << operand.getElementType() << " to " << result.getElementType()
           << " (use train.convert)";
  if (operand.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ")
           << operand << " (" << operand.getNumElements() << " elements) to "
           << result << " (" << result.getNumElements() << " elements)";
  return success();
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType operand = getOperand().getType();
  RankedTensorType result = getResult().getType();
  if (operand.getElementType() != result.getElementType())
    return emitOpError("element type changes from ")
           << operand.getElementType() << " to " << result.getElementType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != operand.getRank())
    return emitOpError("dims has ")
           << dims.size() << " entries for an operand of rank "
           << operand.getRank();
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= result.getRank())
      return emitOpError("dims[")
             << index << "] = " << dim << " is out of range for result rank "
             << result.getRank();
    if (index > 0 && dim <= dims[index - 1])
      return emitOpError("dims must be strictly increasing");
    int64_t size = operand.getDimSize(index);
    if (size != 1 && size != result.getDimSize(dim))
      return emitOpError("operand dim ")
             << index << " of size " << size << " cannot broadcast to result "
             << "dim " << dim << " of size " << result.getDimSize(dim);
  }
  return success();
}

LogicalResult IotaOp::verify() {
  int64_t rank = getResult().getType().getRank();
  int64_t dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  if (getResult().getType().getElementType().isInteger(1))
    return emitOpError("cannot count in i1");
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

#define GET_OP_CLASSES
#include "distopt/Dialect/Train/IR/TrainOps.cpp.inc"
