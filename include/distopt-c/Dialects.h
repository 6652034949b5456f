/*===- distopt-c/Dialects.h - DistOpt's dialects in MLIR's C API ---*- C -*-===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * Dialect handles of the `train` and `dist` dialects, MLIR style: pass them
 * to mlirDialectHandleRegisterDialect / mlirDialectHandleInsertDialect of
 * MLIR's C API (mlir-c/IR.h). distoptRegisterAllDialects (distopt-c/DistOpt.h)
 * registers them with everything else DistOpt needs.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_C_DIALECTS_H
#define DISTOPT_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Train, train);
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Dist, dist);

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_C_DIALECTS_H */
