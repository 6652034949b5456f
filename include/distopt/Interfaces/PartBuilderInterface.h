//===- PartBuilderInterface.h - ops a distributed program adds --*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The ops a generic dist transform writes around the user's ops when it
// cuts a step into programs: the sum of two parts, a scaling, a constant,
// the concatenation of a variable's shards, a block of rows, and the
// looked-up rows of a sparse table and their gradient. Which ops those are
// belongs to the dialect of the step (the train dialect implements this
// interface, lib/Dialect/Train/IR/TrainPartBuilder.cpp), so that
// dist-pipeline and dist-parameter-server name none of its ops when they
// build.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_PARTBUILDERINTERFACE_H
#define DISTOPT_INTERFACES_PARTBUILDERINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectInterface.h"
#include "mlir/IR/MLIRContext.h"

namespace mlir::dist {

/// Builds the tensor ops a distributed program needs, in the dialect that
/// registers it. Every method builds at `b`'s insertion point and returns
/// the op's one result.
class PartBuilderDialectInterface
    : public DialectInterface::Base<PartBuilderDialectInterface> {
public:
  PartBuilderDialectInterface(Dialect *dialect) : Base(dialect) {}

  /// `lhs + rhs` (broadcasting as the dialect's add does).
  virtual Value buildAdd(OpBuilder &b, Location loc, Value lhs,
                         Value rhs) const = 0;
  /// `lhs * rhs` (a scaling when `rhs` is a scalar tensor).
  virtual Value buildMul(OpBuilder &b, Location loc, Value lhs,
                         Value rhs) const = 0;
  /// The constant tensor `value`.
  virtual Value buildConstant(OpBuilder &b, Location loc,
                              DenseElementsAttr value) const = 0;
  /// `pieces` joined along `dim` (a variable from its shards).
  virtual Value buildConcat(OpBuilder &b, Location loc, ValueRange pieces,
                            int64_t dim) const = 0;
  /// The block `[start, limit)` of `whole`, unit strides.
  virtual Value buildSlice(OpBuilder &b, Location loc, Value whole,
                           ArrayRef<int64_t> start,
                           ArrayRef<int64_t> limit) const = 0;
  /// The rows `indices` of `table` whose first row is row `rowOffset` of
  /// the whole table (an index; rows elsewhere read as zeros), of `type`.
  virtual Value buildGatherRows(OpBuilder &b, Location loc, Type type,
                                Value table, Value indices,
                                Value rowOffset) const = 0;
  /// `into` with `updates` added at rows `indices` less `rowOffset` (rows
  /// outside it dropped), of `type`.
  virtual Value buildScatterAddRows(OpBuilder &b, Location loc, Type type,
                                    Value into, Value indices, Value updates,
                                    Value rowOffset) const = 0;
};

/// The part builder of the first loaded dialect (in namespace order) that
/// registers one; null when none does.
inline const PartBuilderDialectInterface *
findPartBuilder(MLIRContext *context) {
  for (Dialect *dialect : context->getLoadedDialects())
    if (auto *parts =
            dialect->getRegisteredInterface<PartBuilderDialectInterface>())
      return parts;
  return nullptr;
}

} // namespace mlir::dist

#endif // DISTOPT_INTERFACES_PARTBUILDERINTERFACE_H
