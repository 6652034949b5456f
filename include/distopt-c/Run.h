/*===- distopt-c/Run.h - running a training step from C ------------*- C -*-===*
 *
 * Part of the DistOpt project, under the Apache License v2.0 with LLVM
 * Exceptions. See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * A training run in this process, as `dist-run` does it (the runner
 * library, include/distopt/Runner/Run.h): options by dist-run's names,
 * the state and the batch as in-memory arrays (or npz files and a dataset
 * directory by option), the run's events as JSON objects while it trains,
 * and the final state and every step's loss as arrays afterwards. Runs in
 * one process (the local backend): a distributed step runs under mpirun
 * through dist-run.
 *
 *   DistoptRun run = distoptRunCreate();
 *   distoptRunSetOption(run, mlirStringRefCreate("steps", 5),
 *                       mlirStringRefCreate("3", 1), NULL, NULL);
 *   distoptRunSetArray(run, DistoptArrayState, name, "<f4", rank, shape,
 *                      data, NULL, NULL);            (each array)
 *   if (mlirLogicalResultIsSuccess(distoptRunExecute(run, module, ...)))
 *     for (intptr_t i = 0; i < distoptRunGetNumResults(run); ++i) ...
 *   distoptRunDestroy(run);
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_C_RUN_H
#define DISTOPT_C_RUN_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A run: its options, its input arrays and, once executed, its results. */
typedef struct DistoptRun {
  void *ptr;
} DistoptRun;

/* What an input array is: state (parameters, optimizer state,
 * hyperparameters: dist-run's --state) or data (inputs and labels, fed to
 * every step: --data). */
typedef enum DistoptArrayKind {
  DistoptArrayState = 0,
  DistoptArrayData = 1
} DistoptArrayKind;

/* Called after each epoch but the last (with a dataset and epochs), on
 * the epoch just ended (0-based): false stops the run there. */
typedef bool (*DistoptEpochCallback)(intptr_t epoch, void *userData);

MLIR_CAPI_EXPORTED DistoptRun distoptRunCreate(void);
MLIR_CAPI_EXPORTED void distoptRunDestroy(DistoptRun run);
static inline bool distoptRunIsNull(DistoptRun run) { return !run.ptr; }

/* Sets one of dist-run's options by its name without the dashes: "steps",
 * "dataset", "epochs", "seed", "checkpoint-dir", "checkpoint-every",
 * "resume" ("true" / "false"), "eval-dataset", "on-nonfinite", "cache-dir",
 * "opt-level", "out", ... (docs/guides/running-a-step.md). An unknown name
 * or a bad value fails, naming both. */
MLIR_CAPI_EXPORTED MlirLogicalResult
distoptRunSetOption(DistoptRun run, MlirStringRef name, MlirStringRef value,
                    MlirStringCallback diagnostics, void *userData);

/* Binds the array named `name` (a step argument's `train.name`): `dtype`
 * is a NumPy type string ("<f4", "<f8", "<i4", "<i8"), `shape` its `rank`
 * extents, `data` its elements in C order (copied). With the option
 * "state" (or "data") set too, the arrays set here complete or replace
 * those of that npz file (a trained state handed back beside the file's
 * hyperparameters). Fails on an unknown dtype or a negative extent. */
MLIR_CAPI_EXPORTED MlirLogicalResult distoptRunSetArray(
    DistoptRun run, DistoptArrayKind kind, MlirStringRef name,
    MlirStringRef dtype, intptr_t rank, const int64_t *shape, const void *data,
    MlirStringCallback diagnostics, void *userData);

/* Trains `module` (a step at any stage) in this process with the options
 * and arrays set. `events` (may be null) gets each event as one JSON object
 * ("start", "step", "eval", "checkpoint", "epoch_end", "end"; the objects
 * of `dist-run --events`); `continueAfterEpoch` (may be null: go on) may
 * stop the run after an epoch. On failure `diagnostics` gets the runner's
 * message (dist-run's, without its "dist-run: rank R: ") and the run holds
 * no results; the process goes on. */
MLIR_CAPI_EXPORTED MlirLogicalResult
distoptRunExecute(DistoptRun run, MlirModule module, MlirStringCallback events,
                  DistoptEpochCallback continueAfterEpoch,
                  MlirStringCallback diagnostics, void *userData);

/* The results of the last successful distoptRunExecute: the final state
 * arrays and "loss" (every step's, float32), sorted by name. */
MLIR_CAPI_EXPORTED intptr_t distoptRunGetNumResults(DistoptRun run);
MLIR_CAPI_EXPORTED MlirStringRef distoptRunGetResultName(DistoptRun run,
                                                         intptr_t index);
MLIR_CAPI_EXPORTED MlirStringRef distoptRunGetResultDtype(DistoptRun run,
                                                          intptr_t index);
MLIR_CAPI_EXPORTED intptr_t distoptRunGetResultRank(DistoptRun run,
                                                    intptr_t index);
MLIR_CAPI_EXPORTED const int64_t *distoptRunGetResultShape(DistoptRun run,
                                                           intptr_t index);
MLIR_CAPI_EXPORTED const void *distoptRunGetResultData(DistoptRun run,
                                                       intptr_t index);
/* The number of steps run and whether an epoch callback stopped it. */
MLIR_CAPI_EXPORTED intptr_t distoptRunGetStepsDone(DistoptRun run);
MLIR_CAPI_EXPORTED bool distoptRunStoppedEarly(DistoptRun run);

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_C_RUN_H */
