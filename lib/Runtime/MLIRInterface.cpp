//===- MLIRInterface.cpp - distrt for compiled programs -------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The entry points `dist-to-runtime` calls: memref descriptors in (the
// `llvm.emit_c_interface` convention, `_mlir_ciface_` names), the mesh
// shape and group axes as i64 memrefs. An all-reduce takes a bucket: the
// addresses of its buffers (an index memref) and their element counts, and
// is one collective whatever the number of buffers. Compiled code cannot
// handle an error code, so a failure goes to the host's error handler
// (distrt_mlir_set_error_handler), or prints the runtime's message (rank and
// call) and ends the whole job (distrt_abort): a rank that exited alone would
// leave the others waiting in their next collective.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include "distopt/Runtime/distrt_mlir.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
/// A contiguous buffer of a memref (identity layout, as bufferization with
/// identity layouts produces).
struct Buffer {
  void *data;
  int64_t count;
};

template <typename T> Buffer getBuffer(UnrankedMemRefType<T> *memref) {
  DynamicMemRefType<T> view(*memref);
  int64_t count = 1;
  for (int64_t d = 0; d < view.rank; ++d)
    count *= view.sizes[d];
  return {view.data + view.offset, count};
}

std::vector<int64_t> toVector(StridedMemRefType<int64_t, 1> *memref) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < memref->sizes[0]; ++i)
    values.push_back(memref->data[memref->offset + i * memref->strides[0]]);
  return values;
}

/// The host's handler of fatal errors (null: none).
void (*errorHandler)(const char *message) = nullptr;

[[noreturn]] void die() {
  if (errorHandler)
    errorHandler(distrt_last_error());
  std::fprintf(stderr, "%s\n", distrt_last_error());
  distrt_abort(1);
}

void check(int status) {
  if (status != 0)
    die();
}

/// A request as the i64 handle compiled code keeps until its wait.
int64_t handle(distrt_request *request) {
  if (!request)
    die();
  return reinterpret_cast<int64_t>(request);
}

/// A bucket of buffers: their addresses (`index` values: the aligned
/// pointers of fresh, contiguous buffers) and element counts.
struct Bucket {
  std::vector<void *> buffers;
  std::vector<int64_t> counts;
};

Bucket getBucket(StridedMemRefType<intptr_t, 1> *addresses,
                 StridedMemRefType<int64_t, 1> *counts) {
  Bucket bucket;
  for (int64_t i = 0; i < addresses->sizes[0]; ++i)
    bucket.buffers.push_back(reinterpret_cast<void *>(
        addresses->data[addresses->offset + i * addresses->strides[0]]));
  bucket.counts = toVector(counts);
  return bucket;
}

distrt_group *getGroup(StridedMemRefType<int64_t, 1> *shape,
                       StridedMemRefType<int64_t, 1> *axes) {
  std::vector<int64_t> meshShape = toVector(shape), groupAxes = toVector(axes);
  distrt_group *group = distrt_get_group(meshShape.data(), meshShape.size(),
                                         groupAxes.data(), groupAxes.size());
  if (!group)
    die();
  return group;
}
} // namespace

extern "C" {

void distrt_mlir_set_error_handler(void (*handler)(const char *message)) {
  errorHandler = handler;
}

void distrt_mlir_init_backend(const char *backend) {
  if (std::strcmp(backend, "auto") == 0) {
    backend = std::getenv("DISTRT_BACKEND");
    if (!backend)
      backend = std::getenv("PMI_RANK") || std::getenv("OMPI_COMM_WORLD_RANK")
                    ? "mpi"
                    : "local";
  }
  check(distrt_init(backend));
}

/// Starts the runtime with the automatic choice of backend.
void distrt_mlir_init() { distrt_mlir_init_backend("auto"); }

void distrt_mlir_finalize() { check(distrt_finalize()); }

int64_t distrt_mlir_rank() { return distrt_rank(); }

/// Completes a request of a `*_start` entry point (its handle: the
/// request's address). `send` is the address of the buffer the collective
/// (or the point-to-point transfer) reads or writes; compiled code passes it
/// so that the buffer stays allocated until here.
void _mlir_ciface_distrt_mlir_wait(int64_t handle, intptr_t send) {
  (void)send;
  check(distrt_wait(reinterpret_cast<distrt_request *>(handle)));
}

int64_t _mlir_ciface_distrt_mlir_world_rank() { return distrt_rank(); }

/// `dist.serve`: the index of the peer whose request arrived (see
/// distrt_probe_any), looking from `start`.
int64_t
_mlir_ciface_distrt_mlir_probe_any(StridedMemRefType<int64_t, 1> *sources,
                                   StridedMemRefType<int64_t, 1> *tags,
                                   int64_t start) {
  std::vector<int64_t> from = toVector(sources), tag = toVector(tags);
  int64_t found = 0;
  check(distrt_probe_any(
      from.data(), tag.data(),
      static_cast<int64_t>(std::min(from.size(), tag.size())), start, &found));
  return found;
}

void _mlir_ciface_distrt_mlir_unit_begin(int64_t kind, int64_t stage,
                                         int64_t microbatch) {
  distrt_trace_unit_begin(static_cast<int32_t>(kind), stage, microbatch);
}

void _mlir_ciface_distrt_mlir_unit_end() { distrt_trace_unit_end(); }

int64_t
_mlir_ciface_distrt_mlir_group_rank(StridedMemRefType<int64_t, 1> *shape,
                                    StridedMemRefType<int64_t, 1> *axes) {
  return distrt_group_rank(getGroup(shape, axes));
}

/// The collectives that only move elements: every element type.
#define DISTRT_MLIR_MOVES(SUFFIX, T, DTYPE)                                    \
  void _mlir_ciface_distrt_mlir_all_gather_##SUFFIX(                           \
      UnrankedMemRefType<T> *send, UnrankedMemRefType<T> *recv,                \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes) {                                   \
    Buffer in = getBuffer(send), out = getBuffer(recv);                        \
    check(distrt_all_gather(getGroup(shape, axes), in.data, out.data,          \
                            in.count, DTYPE));                                 \
  }                                                                            \
  void _mlir_ciface_distrt_mlir_all_to_all_##SUFFIX(                           \
      UnrankedMemRefType<T> *send, UnrankedMemRefType<T> *recv,                \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes) {                                   \
    distrt_group *group = getGroup(shape, axes);                               \
    Buffer in = getBuffer(send), out = getBuffer(recv);                        \
    check(distrt_all_to_all(group, in.data, out.data,                          \
                            in.count / distrt_group_size(group), DTYPE));      \
  }                                                                            \
  void _mlir_ciface_distrt_mlir_broadcast_##SUFFIX(                            \
      UnrankedMemRefType<T> *buffer, StridedMemRefType<int64_t, 1> *shape,     \
      StridedMemRefType<int64_t, 1> *axes, int64_t root) {                     \
    Buffer b = getBuffer(buffer);                                              \
    check(distrt_broadcast(getGroup(shape, axes), b.data, b.count, DTYPE,      \
                           root));                                             \
  }                                                                            \
  int64_t _mlir_ciface_distrt_mlir_all_gather_start_##SUFFIX(                  \
      UnrankedMemRefType<T> *send, UnrankedMemRefType<T> *recv,                \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes) {                                   \
    Buffer in = getBuffer(send), out = getBuffer(recv);                        \
    return handle(distrt_all_gather_start(getGroup(shape, axes), in.data,      \
                                          out.data, in.count, DTYPE));         \
  }                                                                            \
  int64_t _mlir_ciface_distrt_mlir_send_start_##SUFFIX(                        \
      UnrankedMemRefType<T> *buffer, int64_t dest, int64_t tag) {              \
    Buffer b = getBuffer(buffer);                                              \
    return handle(distrt_send_start(b.data, b.count, DTYPE, dest, tag));       \
  }                                                                            \
  int64_t _mlir_ciface_distrt_mlir_recv_start_##SUFFIX(                        \
      UnrankedMemRefType<T> *buffer, int64_t source, int64_t tag) {            \
    Buffer b = getBuffer(buffer);                                              \
    return handle(distrt_recv_start(b.data, b.count, DTYPE, source, tag));     \
  }

/// The collectives that also reduce: the types the backends add.
#define DISTRT_MLIR_COLLECTIVES(SUFFIX, T, DTYPE)                              \
  DISTRT_MLIR_MOVES(SUFFIX, T, DTYPE)                                          \
  void _mlir_ciface_distrt_mlir_all_reduce_##SUFFIX(                           \
      StridedMemRefType<intptr_t, 1> *addresses,                               \
      StridedMemRefType<int64_t, 1> *counts,                                   \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes, int32_t reduction) {                \
    Bucket b = getBucket(addresses, counts);                                   \
    check(distrt_all_reduce(getGroup(shape, axes), b.buffers.data(),           \
                            b.counts.data(), b.buffers.size(), DTYPE,          \
                            distrt_reduction(reduction)));                     \
  }                                                                            \
  void _mlir_ciface_distrt_mlir_reduce_scatter_##SUFFIX(                       \
      UnrankedMemRefType<T> *send, UnrankedMemRefType<T> *recv,                \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes, int32_t reduction) {                \
    Buffer in = getBuffer(send), out = getBuffer(recv);                        \
    check(distrt_reduce_scatter(getGroup(shape, axes), in.data, out.data,      \
                                out.count, DTYPE,                              \
                                distrt_reduction(reduction)));                 \
  }                                                                            \
  int64_t _mlir_ciface_distrt_mlir_all_reduce_start_##SUFFIX(                  \
      StridedMemRefType<intptr_t, 1> *addresses,                               \
      StridedMemRefType<int64_t, 1> *counts,                                   \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes, int32_t reduction) {                \
    Bucket b = getBucket(addresses, counts);                                   \
    return handle(distrt_all_reduce_start(                                     \
        getGroup(shape, axes), b.buffers.data(), b.counts.data(),              \
        b.buffers.size(), DTYPE, distrt_reduction(reduction)));                \
  }                                                                            \
  int64_t _mlir_ciface_distrt_mlir_reduce_scatter_start_##SUFFIX(              \
      UnrankedMemRefType<T> *send, UnrankedMemRefType<T> *recv,                \
      StridedMemRefType<int64_t, 1> *shape,                                    \
      StridedMemRefType<int64_t, 1> *axes, int32_t reduction) {                \
    Buffer in = getBuffer(send), out = getBuffer(recv);                        \
    return handle(distrt_reduce_scatter_start(getGroup(shape, axes), in.data,  \
                                              out.data, out.count, DTYPE,      \
                                              distrt_reduction(reduction)));   \
  }

DISTRT_MLIR_COLLECTIVES(f32, float, DISTRT_F32)
DISTRT_MLIR_COLLECTIVES(f64, double, DISTRT_F64)
DISTRT_MLIR_COLLECTIVES(i32, int32_t, DISTRT_I32)
DISTRT_MLIR_COLLECTIVES(i64, int64_t, DISTRT_I64)
// f16 and bf16 move as 16-bit words; the backends reduce them (MPI through
// its own operations, NCCL natively): compressed gradients.
DISTRT_MLIR_COLLECTIVES(f16, uint16_t, DISTRT_F16)
DISTRT_MLIR_COLLECTIVES(bf16, uint16_t, DISTRT_BF16)
// An i1 memref stores a byte per element.
DISTRT_MLIR_MOVES(i1, int8_t, DISTRT_I8)
DISTRT_MLIR_MOVES(i8, int8_t, DISTRT_I8)

#undef DISTRT_MLIR_COLLECTIVES
#undef DISTRT_MLIR_MOVES

} // extern "C"
