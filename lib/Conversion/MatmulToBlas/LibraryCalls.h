//===- LibraryCalls.h - linalg ops on buffers to libdistopt_cpu calls -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What dist-matmul-to-blas and dist-conv-to-kernels share: finding the zero
// fill a library call (which overwrites its output) makes dead, and
// replacing a generic by the call on its very buffers.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CONVERSION_MATMULTOBLAS_LIBRARYCALLS_H
#define DISTOPT_LIB_CONVERSION_MATMULTOBLAS_LIBRARYCALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::train {

/// The buffer `value` is a view of (through view-like ops), or `value`.
Value getRootBuffer(Value value);

/// Calls `visit` on every use of the buffer `value` is (a view of): the
/// uses of that buffer and, recursively, of its views (the view-like ops
/// themselves among them).
void forEachBufferUse(Value value, function_ref<void(OpOperand &)> visit);

/// The zero fill that last wrote `out` before `op`, when nothing else
/// touches `out`'s buffer in between: `out` must be (a view of) a local
/// allocation, so that every alias of it is a use of that allocation or of
/// a view of it. Looks at those uses only (a block's op order is cached), so
/// that matching every product of a large step stays linear.
linalg::FillOp findZeroFill(linalg::GenericOp op, Value out);

/// On a library function's declaration: the operands it writes (the rest
/// it only reads), where not all from the third on as a product's
/// (distopt_matmul_*(A, B, C, ...)). dist-map-to-gpu's scheduler reads it.
inline constexpr llvm::StringLiteral kWrittenOperandsAttrName =
    "distopt.written_operands";

/// The private declaration of the runtime library function `name` taking
/// `arguments` (C interface; `distopt.sync_buffers`: done with its buffers
/// when it returns), made at the end of `module` on first use.
func::FuncOp getLibraryFunction(ModuleOp module, StringRef name,
                                TypeRange arguments);

/// Replaces `op` and `fill` by a call of the library function `name` on
/// `op`'s operands (as unranked memrefs of their element types) followed by the
/// scalars `buildScalars` appends (built before the call), declaring `name` in
/// the module on first use.
void replaceByLibraryCall(
    linalg::GenericOp op, linalg::FillOp fill, StringRef name,
    function_ref<void(OpBuilder &, Location, SmallVectorImpl<Value> &)>
        buildScalars);

} // namespace mlir::train

#endif // DISTOPT_LIB_CONVERSION_MATMULTOBLAS_LIBRARYCALLS_H
