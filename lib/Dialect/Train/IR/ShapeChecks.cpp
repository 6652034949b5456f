//===- ShapeChecks.cpp - helpers for train shape inference ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"

#include <cmath>

using namespace mlir;
using namespace mlir::train;

namespace mlir::train::detail {

ArrayRef<int64_t> shapeOf(Type type) {
  return cast<ShapedType>(type).getShape();
}

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

/// Prints a shape as `8x4` (`scalar` for rank 0) in diagnostics.
std::string fmtShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::interleave(shape, os, "x");
  return result;
}

LogicalResult checkSameElementType(const ShapeDiagnostics &diag,
                                   TypeRange types, StringRef what) {
  for (Type type : types.drop_front())
    if (getElementTypeOrSelf(type) != getElementTypeOrSelf(types.front()))
      return diag.fail(what, " have different element types ",
                       getElementTypeOrSelf(types.front()), " and ",
                       getElementTypeOrSelf(type));
  return success();
}

/// Checks `0 <= value` (NaN fails).
LogicalResult checkNonNegative(const ShapeDiagnostics &diag, StringRef name,
                               const APFloat &value) {
  double v = value.convertToDouble();
  if (!(v >= 0))
    return diag.fail(name, " must be non-negative, got ", v);
  return success();
}

/// Checks `0 < value < inf` (NaN fails).
LogicalResult checkPositive(const ShapeDiagnostics &diag, StringRef name,
                            const APFloat &value) {
  double v = value.convertToDouble();
  if (!(v > 0 && std::isfinite(v)))
    return diag.fail(name, " must be positive and finite, got ", v);
  return success();
}

/// Checks `0 <= value < 1` (NaN fails).
LogicalResult checkProbability(const ShapeDiagnostics &diag, StringRef name,
                               const APFloat &value) {
  double v = value.convertToDouble();
  if (!(v >= 0 && v < 1))
    return diag.fail(name, " must be in [0, 1), got ", v);
  return success();
}

/// Prints a list of integers as `[1, 2]` in diagnostics.
std::string fmtList(ArrayRef<int64_t> values) {
  std::string result;
  llvm::raw_string_ostream os(result);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return result;
}

/// Checks that `type` has exactly `shape` and the element type `element`.
LogicalResult expectShape(const ShapeDiagnostics &diag, StringRef what,
                          Type type, ArrayRef<int64_t> shape, Type element) {
  if (shapeOf(type) != shape)
    return diag.fail(what, " must have shape ", fmtShape(shape), ", got ",
                     fmtShape(shapeOf(type)));
  if (getElementTypeOrSelf(type) != element)
    return diag.fail(what, " must have element type ", element, ", got ",
                     getElementTypeOrSelf(type));
  return success();
}

LogicalResult expectRank(const ShapeDiagnostics &diag, StringRef what,
                         Type type, int64_t rank) {
  if (static_cast<int64_t>(shapeOf(type).size()) != rank)
    return diag.fail(what, " must have rank ", rank, ", got ",
                     shapeOf(type).size());
  return success();
}

LogicalResult checkPerDim(const ShapeDiagnostics &diag, StringRef what,
                          ArrayRef<int64_t> values, size_t rank) {
  if (values.size() != rank)
    return diag.fail(what, " has ", values.size(),
                     " entries for an operand of rank ", rank);
  return success();
}

} // namespace mlir::train::detail
