/*===- CudaRuntime.h - libdistopt_cuda: the device of a CUDA step --*- C -*-===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * libdistopt_cuda (lib/Runtime/CudaRuntime.cpp) implements the host
 * functions MLIR's GPU lowering calls (mgpuModuleLoad, mgpuLaunchKernel,
 * mgpuStreamCreate, mgpuMemAlloc, ...) over the CUDA driver API, and the
 * library calls of CUDA steps (products through cuBLAS). Every process
 * runs its steps on one device and one stream: all work of a step is
 * ordered on it (distrt's `nccl` backend forks its collectives onto a
 * communication stream of its own and joins them back by events), and the
 * host waits only where it reads a result.
 *
 * Every call that can fail returns 0, or -1 with a message in
 * distopt_cuda_last_error() naming the call and the CUDA error.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_RUNTIME_CUDARUNTIME_H
#define DISTOPT_RUNTIME_CUDARUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of CUDA devices (0 without a driver or a device; the reason is
 * then in distopt_cuda_last_error()). */
int distopt_cuda_device_count(void);
/* Makes device `ordinal` this process's device (before any other call; the
 * default is device 0). Creates its primary context and the stream. */
int distopt_cuda_set_device(int ordinal);
/* The device of this process (-1 before it is chosen). */
int distopt_cuda_device(void);
/* The stream of this process's steps (a CUstream; null with the reason in
 * distopt_cuda_last_error() when no device can be used). */
void *distopt_cuda_stream(void);
/* Waits until everything enqueued on the stream has completed. */
int distopt_cuda_synchronize(void);
/* Device memory, stream ordered. */
void *distopt_cuda_alloc(size_t bytes);
int distopt_cuda_free(void *pointer);
/* Copies between host and device memory on the stream; a copy to the host
 * completes before it returns. */
int distopt_cuda_copy_to_device(void *device, const void *host, size_t bytes);
int distopt_cuda_copy_to_host(void *host, const void *device, size_t bytes);
/* Copies between device buffers on the stream. */
int distopt_cuda_copy_on_device(void *to, const void *from, size_t bytes);
/* The last failure's message. */
const char *distopt_cuda_last_error(void);

/* Page-locked host memory (cuMemHostAlloc): a copy from it to the device
 * runs asynchronously, while the host goes on. */
void *distopt_cuda_host_alloc(size_t bytes);
int distopt_cuda_host_free(void *pointer);
/* Staging (dist-run's dataset batches, copied while the step before runs).
 * distopt_cuda_stage enqueues a copy of pinned `host` to `device` on the
 * copy stream, a second stream, after the compute stream's last
 * distopt_cuda_use_staged (which reads the staging buffer it overwrites),
 * and returns at once. distopt_cuda_use_staged orders the compute stream
 * after every copy staged so far, then copies `from` (a staging buffer)
 * to `to` on it. distopt_cuda_staged_wait returns once every staged copy
 * has read its host buffer, which the host may then overwrite. */
int distopt_cuda_stage(void *device, const void *host, size_t bytes);
int distopt_cuda_use_staged(void *to, const void *from, size_t bytes);
int distopt_cuda_staged_wait(void);

/* What the grouped products (distopt_matmul_group_f32) of this process did:
 * calls run as one grouped cuBLAS product, calls run as one product each
 * (cuBLAS refused the grouped one on this device), and copies of a set of
 * A, B and C addresses to the device (once per set: a step whose
 * allocations repeat copies nothing after its first call). */
typedef struct {
  int64_t groupedCalls;
  int64_t separateCalls;
  int64_t pointerCopies;
} DistoptCudaProductStats;
DistoptCudaProductStats distopt_cuda_product_stats(void);

/* The workspaces of this process's steps (distopt_workspace: the buffers
 * dist-plan-workspace hoisted out of each function's calls): how many
 * functions have one, their bytes in all, how many device allocations made
 * them (one per function, and one more each time a call asked for more),
 * and how many calls answered one. */
typedef struct {
  int64_t workspaces;
  int64_t bytes;
  int64_t allocations;
  int64_t calls;
  /* The constant globals copied to the device (distopt_constant: once
   * each, by the first call that reads one) and their bytes. */
  int64_t constants;
  int64_t constantBytes;
} DistoptCudaWorkspaceStats;
DistoptCudaWorkspaceStats distopt_cuda_workspace_stats(void);

/* CUDA graphs: the work calls enqueue on the stream, captured once and
 * replayed. distopt_cuda_capture_begin starts capturing the stream: what
 * is enqueued from then on is recorded, not run. distopt_cuda_capture_end
 * ends the capture and answers the graph, instantiated, or null with the
 * reason in distopt_cuda_last_error(): a call during the capture failed
 * or could not be captured (its error), or the work allocates device
 * memory (a replayed graph would hand out the same memory each launch,
 * which the step's callers would then hold). The graph reads and writes
 * the buffers at the addresses the capture saw. */
int distopt_cuda_capture_begin(void);
void *distopt_cuda_capture_end(void);
/* Runs a captured graph on the stream (asynchronously). */
int distopt_cuda_graph_launch(void *graph);
void distopt_cuda_graph_destroy(void *graph);

/* The graphs of this process: captured, refused at the end of a capture,
 * launches, and the nodes of the last one captured. */
typedef struct {
  int64_t captures;
  int64_t refused;
  int64_t launches;
  int64_t nodes;
} DistoptCudaGraphStats;
DistoptCudaGraphStats distopt_cuda_graph_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_RUNTIME_CUDARUNTIME_H */
