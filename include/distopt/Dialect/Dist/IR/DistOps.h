//===- DistOps.h - dist dialect ops and attributes --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_IR_DISTOPS_H
#define DISTOPT_DIALECT_DIST_IR_DISTOPS_H

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/Sharding.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "distopt/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "distopt/Dialect/Dist/IR/DistOps.h.inc"

namespace mlir::dist {

/// Looks up the mesh `name` from `from` (through `tables` when given, as in
/// `verifySymbolUses`); reports through `emitError` when no symbol `name`
/// exists or when it is not a `dist.mesh`.
FailureOr<MeshOp> lookupMesh(Operation *from, FlatSymbolRefAttr name,
                             function_ref<InFlightDiagnostic()> emitError,
                             SymbolTableCollection *tables = nullptr);

/// Checks that `sharding` fits a tensor of type `type` on `mesh`: same rank,
/// axes exist and, with `checkDivisible`, every static dim divides by the
/// product of its axes' sizes (a local type of a partitioned function need
/// not). `what` names the value in messages ("argument #0").
LogicalResult verifyShardingFor(ShardingAttr sharding, Type type, MeshOp mesh,
                                StringRef what,
                                function_ref<InFlightDiagnostic()> emitError,
                                bool checkDivisible = true);

/// The local (per-device) shape of `shape` under `sharding` on `mesh`.
SmallVector<int64_t> getLocalShape(ArrayRef<int64_t> shape,
                                   ShardingAttr sharding, MeshOp mesh);

/// Checks that `place` fits its mesh: the mesh exists, the fixed axes are
/// its axes and the coordinates are in range.
LogicalResult verifyPlace(PlaceAttr place, Operation *from,
                          function_ref<InFlightDiagnostic()> emitError,
                          SymbolTableCollection *tables = nullptr);

/// Sets `dist.sharding` on many arguments and results of a function at once.
/// Setting them one by one rebuilds the function's attribute arrays every
/// time: quadratic in the number of arguments, in time and in (uniqued,
/// never freed) attributes, which a step with thousands of state tensors
/// cannot afford.
class FunctionShardingUpdate {
public:
  explicit FunctionShardingUpdate(FunctionOpInterface func);
  void setArgument(unsigned index, ShardingAttr sharding);
  void setResult(unsigned index, ShardingAttr sharding);
  /// Writes the updates back to the function.
  void apply();

private:
  FunctionOpInterface func;
  SmallVector<NamedAttrList> arguments, results;
  bool argumentsChanged = false, resultsChanged = false;
};

/// The communication under an op, as the passes' debug output counts it: the
/// collectives (all-reduces, reduce-scatters, all-gathers, all-to-alls,
/// broadcasts and the asynchronous starts; local slices move nothing) and
/// the point-to-point transfers (sends), each with the bytes of its tensor
/// operands on one device.
struct CommunicationTally {
  int64_t collectives = 0, collectiveBytes = 0;
  int64_t transfers = 0, transferBytes = 0;
};
CommunicationTally tallyCommunication(Operation *root);

/// The sharding `attr` (on `mesh`, whose axes it must use) as axis indices.
TensorSharding toTensorSharding(ShardingAttr attr, MeshOp mesh);
/// The attribute form of `sharding` on `mesh`.
ShardingAttr toShardingAttr(const TensorSharding &sharding, MeshOp mesh);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_IR_DISTOPS_H
