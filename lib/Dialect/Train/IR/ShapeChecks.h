//===- ShapeChecks.h - helpers for train shape inference --------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Checks and formatting shared by the shape inference of train ops. Private
// to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_TRAIN_IR_SHAPECHECKS_H
#define DISTOPT_LIB_DIALECT_TRAIN_IR_SHAPECHECKS_H

#include "distopt/Dialect/Train/IR/TrainOps.h"

#include <string>

namespace mlir::train::detail {

/// The shape of a ranked tensor type.
ArrayRef<int64_t> shapeOf(Type type);

/// A ranked tensor type.
RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type element);

/// Prints a shape as `8x4` (`scalar` for rank 0) in diagnostics.
std::string fmtShape(ArrayRef<int64_t> shape);

/// Checks that all `types` (described as `what`) have one element type.
LogicalResult checkSameElementType(const ShapeDiagnostics &diag,
                                   TypeRange types, StringRef what);

/// Checks `0 <= value` (NaN fails).
LogicalResult checkNonNegative(const ShapeDiagnostics &diag, StringRef name,
                               const APFloat &value);

/// Checks `0 < value < inf` (NaN fails).
LogicalResult checkPositive(const ShapeDiagnostics &diag, StringRef name,
                            const APFloat &value);

/// Checks `0 <= value < 1` (NaN fails).
LogicalResult checkProbability(const ShapeDiagnostics &diag, StringRef name,
                               const APFloat &value);

/// Prints a list of integers as `[1, 2]` in diagnostics.
std::string fmtList(ArrayRef<int64_t> values);

/// Checks that `type` has exactly `shape` and the element type `element`.
LogicalResult expectShape(const ShapeDiagnostics &diag, StringRef what,
                          Type type, ArrayRef<int64_t> shape, Type element);

/// Checks that `type` (described as `what`) has rank `rank`.
LogicalResult expectRank(const ShapeDiagnostics &diag, StringRef what,
                         Type type, int64_t rank);

/// Checks that the attribute `what` has one entry per dim.
LogicalResult checkPerDim(const ShapeDiagnostics &diag, StringRef what,
                          ArrayRef<int64_t> values, size_t rank);

} // namespace mlir::train::detail

#endif // DISTOPT_LIB_DIALECT_TRAIN_IR_SHAPECHECKS_H
