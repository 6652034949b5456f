//===- TrainOps.h - train dialect ops ---------------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAINOPS_H
#define DISTOPT_DIALECT_TRAIN_IR_TRAINOPS_H

#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Interfaces/CostOpInterface.h"
#include "distopt/Interfaces/ShardingRuleOpInterface.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::train {
/// Whether `op` has one ranked tensor result and every operand is a ranked
/// tensor of rank 0 or of that result's shape (ElementwiseOpInterface's
/// default answer; also what a generic transform asks of upstream ops with
/// the Elementwise trait).
bool hasElementwiseShapes(Operation *op);
} // namespace mlir::train

#include "distopt/Dialect/Train/IR/ElementwiseOpInterface.h.inc"
#include "distopt/Dialect/Train/IR/OptimizerOpInterface.h.inc"
#include "distopt/Dialect/Train/IR/TrainEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Train/IR/TrainAttrs.h.inc"

namespace mlir::OpTrait::train {
/// Fails on discardable attributes whose name has no dialect prefix.
LogicalResult verifyStrictAttributes(Operation *op);

/// Rejects unknown (misspelled) attributes: a train op accepts only its own
/// attributes and dialect-prefixed discardable ones.
template <typename ConcreteType>
class StrictAttributes : public TraitBase<ConcreteType, StrictAttributes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyStrictAttributes(op);
  }
};
} // namespace mlir::OpTrait::train

namespace mlir::train {

/// Reports shape errors from `inferReturnTypes` as `'train.x' op <message>`
/// at the op's location; silent when there is no location (builders).
class ShapeDiagnostics {
public:
  ShapeDiagnostics(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args> LogicalResult fail(Args &&...args) const {
    if (loc) {
      InFlightDiagnostic diag = mlir::emitError(*loc);
      diag << "'" << opName << "' op ";
      (diag << ... << std::forward<Args>(args));
    }
    return failure();
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

/// Infers the NumPy broadcast of `types`; the result element type is
/// `elementType`, or the (common) operand element type when null.
LogicalResult inferBroadcastTypes(const ShapeDiagnostics &diag, TypeRange types,
                                  Type elementType,
                                  SmallVectorImpl<Type> &inferred);
/// Infers the type of a softmax-like op: all operands of one type, `dim` in
/// range.
LogicalResult inferSoftmaxTypes(const ShapeDiagnostics &diag, TypeRange types,
                                int64_t dim, SmallVectorImpl<Type> &inferred);

/// A rule pointwise over the shape of the first result, see
/// `Train_PointwiseOp`.
/// The rule of an elementwise op over its first result's shape; `linear`
/// and `positional` mark the op linear or its dims positional, `scaled` the
/// operands it is linear in when the others are scalars.
dist::ShardingRule getPointwiseRule(Operation *op, bool linear = false,
                                    bool positional = false,
                                    ArrayRef<unsigned> scaled = {});
/// The rule of a softmax-like op: `dim` needs replication.
dist::ShardingRule getSoftmaxRule(Operation *op, int64_t dim);
/// Streaming cost with `flopsPerElement` operations per element of result 0.
dist::OpCost getPointwiseCost(Operation *op, int64_t flopsPerElement);

class TrainDialect;
/// Registers the train dialect's dist::PartBuilderDialectInterface (the
/// ops dist-pipeline and dist-parameter-server add to programs).
void registerPartBuilder(TrainDialect *dialect);

} // namespace mlir::train

#define GET_OP_CLASSES
#include "distopt/Dialect/Train/IR/TrainOps.h.inc"

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAINOPS_H
