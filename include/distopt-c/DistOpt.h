/*===- distopt-c/DistOpt.h - DistOpt's C API -----------------------*- C -*-===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * What an ML compiler or a language binding needs to use DistOpt without
 * C++: a context with every dialect and pass registered, parse / verify /
 * run a pass pipeline (a strategy, the CPU lowering) / print, and the cost
 * report as JSON. Handles are MLIR's (mlir-c/IR.h): a context or module made
 * here can be used with MLIR's C API and the reverse. Library
 * libDistOptCAPI.so (CMake: DistOpt::DistOpt); it needs no other C API
 * library.
 *
 * Diagnostics: functions that can fail take a `diagnostics` callback, called
 * once per diagnostic with its text ("file:line:col: error: message", notes
 * on their own lines); null prints them on stderr. `userData` is passed to
 * every callback of the call.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_C_DISTOPT_H
#define DISTOPT_C_DISTOPT_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers DistOpt's dialects, the upstream ones training steps are
 * combined with, and what the CPU lowering needs into `registry`. */
MLIR_CAPI_EXPORTED void
distoptRegisterAllDialects(MlirDialectRegistry registry);

/* Registers every DistOpt pass and strategy pipeline (and the upstream
 * passes run between them) for distoptModuleRunPipeline. Idempotent. */
MLIR_CAPI_EXPORTED void distoptRegisterAllPasses(void);

/* A context with every dialect loaded on use and every pass registered.
 * Destroy it with distoptContextDestroy (or mlirContextDestroy). */
MLIR_CAPI_EXPORTED MlirContext distoptContextCreate(void);
MLIR_CAPI_EXPORTED void distoptContextDestroy(MlirContext context);

/* Parses `source` (MLIR text or bytecode) as a module named `bufferName` in
 * diagnostics; a null module (mlirModuleIsNull) on error. */
MLIR_CAPI_EXPORTED MlirModule distoptModuleParse(MlirContext context,
                                                 MlirStringRef source,
                                                 MlirStringRef bufferName,
                                                 MlirStringCallback diagnostics,
                                                 void *userData);
MLIR_CAPI_EXPORTED void distoptModuleDestroy(MlirModule module);

/* Runs the op and attribute verifiers (the step contract is the
 * `train-verify` / `dist-verify` passes' work). */
MLIR_CAPI_EXPORTED MlirLogicalResult distoptModuleVerify(
    MlirModule module, MlirStringCallback diagnostics, void *userData);

/* Runs textual pass pipeline `pipeline` on the module, as dist-opt's
 * --pass-pipeline does: "builtin.module(dist-mirrored{replicas=2})", or
 * the passes alone ("dist-mirrored{replicas=2},dist-lower-cpu"). The
 * passes run on a copy: a failure leaves the module unchanged. */
MLIR_CAPI_EXPORTED MlirLogicalResult
distoptModuleRunPipeline(MlirModule module, MlirStringRef pipeline,
                         MlirStringCallback diagnostics, void *userData);

/* Prints the module (generic form when `generic`) to `callback`, in chunks. */
MLIR_CAPI_EXPORTED void distoptModulePrint(MlirModule module, bool generic,
                                           MlirStringCallback callback,
                                           void *userData);

/* The cost report (--dist-cost-report) as `format` "json" or "text" to
 * `report`, in one call. */
MLIR_CAPI_EXPORTED MlirLogicalResult distoptModuleCostReport(
    MlirModule module, MlirStringRef format, MlirStringCallback report,
    MlirStringCallback diagnostics, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_C_DISTOPT_H */
