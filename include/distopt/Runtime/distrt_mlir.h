/*===- distrt_mlir.h - distrt for compiled programs, host side -----*- C -*-===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * The entry points of lib/Runtime/MLIRInterface.cpp that a host program
 * (dist-run) calls around a compiled step; the step itself calls the
 * `_mlir_ciface_distrt_mlir_*` functions that `dist-to-runtime` emits.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_RUNTIME_DISTRT_MLIR_H
#define DISTOPT_RUNTIME_DISTRT_MLIR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the runtime with `backend` (mpi, local, or auto: DISTRT_BACKEND
 * when set, else mpi under an MPI launcher's environment, else local); a
 * failure is fatal (see distrt_mlir_set_error_handler). */
void distrt_mlir_init_backend(const char *backend);

/* Compiled code cannot handle an error code: a failed runtime call calls
 * `handler` with distrt_last_error()'s message. Without a handler (or when
 * it returns), the message is printed on stderr and the job ends with
 * distrt_abort(1). */
void distrt_mlir_set_error_handler(void (*handler)(const char *message));

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_RUNTIME_DISTRT_MLIR_H */
