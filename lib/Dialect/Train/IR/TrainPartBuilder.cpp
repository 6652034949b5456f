//===- TrainPartBuilder.cpp - the train ops distributed programs add ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The train dialect's PartBuilderDialectInterface: the adds, scalings,
// constants, concatenations, slices, lookups and scatter-adds that
// dist-pipeline and dist-parameter-server write around a step's ops.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Interfaces/PartBuilderInterface.h"

using namespace mlir;
using namespace mlir::train;

namespace {
struct TrainPartBuilder : public dist::PartBuilderDialectInterface {
  using PartBuilderDialectInterface::PartBuilderDialectInterface;

  Value buildAdd(OpBuilder &b, Location loc, Value lhs,
                 Value rhs) const override {
    return AddOp::create(b, loc, lhs, rhs).getResult();
  }
  Value buildMul(OpBuilder &b, Location loc, Value lhs,
                 Value rhs) const override {
    return MulOp::create(b, loc, lhs, rhs).getResult();
  }
  Value buildConstant(OpBuilder &b, Location loc,
                      DenseElementsAttr value) const override {
    return ConstantOp::create(b, loc, value).getResult();
  }
  Value buildConcat(OpBuilder &b, Location loc, ValueRange pieces,
                    int64_t dim) const override {
    return ConcatOp::create(b, loc, pieces, dim).getResult();
  }
  Value buildSlice(OpBuilder &b, Location loc, Value whole,
                   ArrayRef<int64_t> start,
                   ArrayRef<int64_t> limit) const override {
    return SliceOp::create(b, loc, whole, b.getDenseI64ArrayAttr(start),
                           b.getDenseI64ArrayAttr(limit), nullptr)
        .getResult();
  }
  Value buildGatherRows(OpBuilder &b, Location loc, Type type, Value table,
                        Value indices, Value rowOffset) const override {
    return GatherOp::create(b, loc, type, table, indices, rowOffset)
        .getResult();
  }
  Value buildScatterAddRows(OpBuilder &b, Location loc, Type type, Value into,
                            Value indices, Value updates,
                            Value rowOffset) const override {
    return ScatterAddOp::create(b, loc, type, into, indices, updates, rowOffset)
        .getResult();
  }
};
} // namespace

void mlir::train::registerPartBuilder(TrainDialect *dialect) {
  dialect->addInterfaces<TrainPartBuilder>();
}
