/*===- distrt.h - DistOpt's collective runtime, C ABI --------------*- C -*-===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * The calls that lowered distributed programs make: collectives over the
 * groups of a device mesh, point-to-point messages, barriers. Backends:
 * "local" (one process: every group has one member), "mpi" (one process
 * per device; MPICH or Open MPI; host buffers) and "nccl" (one process per
 * CUDA device, started by an MPI launcher; buffers in device memory, work
 * enqueued on libdistopt_cuda's stream and so ordered with the steps'
 * kernels; loaded from libdistrt_nccl.so, next to this library, on demand).
 *
 * Devices are numbered row-major on the mesh, device = world rank. A group is
 * the set of devices that differ from the calling one only in the
 * coordinates of some mesh axes (the `axes` of a dist collective); its
 * members are ordered row-major over those axes, in the order given.
 *
 * Buffers are contiguous. reduce_scatter and all_gather work on equal blocks
 * of the buffer (block i belongs to group member i); a lowering that splits
 * another dim than the outermost one packs first. Every call returns 0, or
 * -1 with a message in distrt_last_error() that names the rank and the call.
 *
 * Failures are whole: a process that cannot go on ends every process of the
 * job with distrt_abort (a rank that finalizes and exits alone can leave the
 * others waiting in their next collective). With a timeout
 *(distrt_set_timeout), a blocking call that does not complete in time fails
 *with "... did not complete within S s (a rank stopped answering?)" instead of
 *waiting forever; the call is then still in flight, so the only way on is
 * distrt_abort.
 *
 *===----------------------------------------------------------------------===*/

#ifndef DISTOPT_RUNTIME_DISTRT_H
#define DISTOPT_RUNTIME_DISTRT_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define DISTRT_NORETURN __attribute__((noreturn))
#else
#define DISTRT_NORETURN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of buffers. */
typedef enum distrt_dtype {
  DISTRT_F32 = 0,
  DISTRT_F64 = 1,
  DISTRT_F16 = 2,
  DISTRT_BF16 = 3,
  DISTRT_I32 = 4,
  DISTRT_I64 = 5,
  DISTRT_I8 = 6,
} distrt_dtype;

/* Reductions; the values match the dist dialect's ReductionKind. */
typedef enum distrt_reduction {
  DISTRT_SUM = 0,
  DISTRT_MAX = 1,
  DISTRT_MIN = 2,
} distrt_reduction;

/* The devices of the mesh that differ only along some axes (opaque). */
typedef struct distrt_group distrt_group;
/* An asynchronous collective in flight (opaque). */
typedef struct distrt_request distrt_request;

/* Starts the runtime with `backend` ("local", "mpi" or "nccl"). */
int distrt_init(const char *backend);
/* Stops it; groups and requests become invalid. */
int distrt_finalize(void);
/* This process's rank and the number of processes (1 for "local"). */
int64_t distrt_rank(void);
int64_t distrt_size(void);
/* Ends every process of the job with exit status `code`, after flushing
 * stdout and stderr: MPI_Abort(MPI_COMM_WORLD, code) under "mpi", _exit in
 * one process (or before distrt_init). Does not return. */
DISTRT_NORETURN void distrt_abort(int code);
/* The time, in seconds, that each blocking call (collectives, send, recv,
 * barrier, distrt_wait, group creation, finalize) may take before it fails;
 * 0 (the default) waits forever. May be set before distrt_init. -1 for a
 * negative or not-a-number value. */
int distrt_set_timeout(double seconds);

/* The group along `axes` (num_axes indices into `shape`) of a mesh of shape
 * `shape` (rank `mesh_rank`) containing this device; created once, by its
 * members only (the other processes need not call it: placed programs
 * create their groups independently), then cached. The members must ask for
 * their groups in the same order. Null on error (the world size is not the
 * mesh's device count, an axis is out of range or repeated). */
distrt_group *distrt_get_group(const int64_t *shape, int64_t mesh_rank,
                               const int64_t *axes, int64_t num_axes);
int64_t distrt_group_size(const distrt_group *group);
/* This device's index in the group. */
int64_t distrt_group_rank(const distrt_group *group);

/* Reduces each of the `n` buffers (counts[i] elements) across the group, in
 * place; one gradient bucket is one call. */
int distrt_all_reduce(distrt_group *group, void *const *buffers,
                      const int64_t *counts, int64_t n, distrt_dtype dtype,
                      distrt_reduction reduction);
/* Reduces `send` (group_size * recv_count elements) and keeps block
 * group_rank in `recv`. */
int distrt_reduce_scatter(distrt_group *group, const void *send, void *recv,
                          int64_t recv_count, distrt_dtype dtype,
                          distrt_reduction reduction);
/* Concatenates every member's `send` (send_count elements) into `recv`. */
int distrt_all_gather(distrt_group *group, const void *send, void *recv,
                      int64_t send_count, distrt_dtype dtype);
/* Sends block j of `send` (block_count elements each) to member j and
 * receives member j's block i into block j of `recv`. */
int distrt_all_to_all(distrt_group *group, const void *send, void *recv,
                      int64_t block_count, distrt_dtype dtype);
/* Copies member `root`'s buffer to every member. */
int distrt_broadcast(distrt_group *group, void *buffer, int64_t count,
                     distrt_dtype dtype, int64_t root);

/* Asynchronous all-reduce of the buffers (which must stay valid and
 * untouched until distrt_wait); null on error. */
distrt_request *distrt_all_reduce_start(distrt_group *group,
                                        void *const *buffers,
                                        const int64_t *counts, int64_t n,
                                        distrt_dtype dtype,
                                        distrt_reduction reduction);
/* Asynchronous distrt_reduce_scatter and distrt_all_gather (`send` and
 * `recv` stay valid and untouched until distrt_wait); null on error. */
distrt_request *distrt_reduce_scatter_start(distrt_group *group,
                                            const void *send, void *recv,
                                            int64_t recv_count,
                                            distrt_dtype dtype,
                                            distrt_reduction reduction);
distrt_request *distrt_all_gather_start(distrt_group *group, const void *send,
                                        void *recv, int64_t send_count,
                                        distrt_dtype dtype);
/* Completes a request and frees it. */
int distrt_wait(distrt_request *request);

/* Point to point, by world rank; `tag` matches a send with its recv. */
int distrt_send(const void *buffer, int64_t count, distrt_dtype dtype,
                int64_t dest, int64_t tag);
int distrt_recv(void *buffer, int64_t count, distrt_dtype dtype, int64_t source,
                int64_t tag);
/* Nonblocking distrt_send and distrt_recv, completed by distrt_wait: the
 * send's buffer stays untouched and the receive's is written by then. A
 * program that posts its sends before it waits on its receives cannot
 * deadlock on message sizes (an eager send and a rendezvous one behave
 * alike). Null on error. */
distrt_request *distrt_send_start(const void *buffer, int64_t count,
                                  distrt_dtype dtype, int64_t dest,
                                  int64_t tag);
distrt_request *distrt_recv_start(void *buffer, int64_t count,
                                  distrt_dtype dtype, int64_t source,
                                  int64_t tag);
/* Waits until the message of `tags[k]` from world rank `sources[k]` has
 * arrived for some k < count (it stays to be received), looking from k =
 * `start` round robin, and stores that k in `found`: a server answers its
 * peers in the order their requests arrive. Not under "nccl" (an error). */
int distrt_probe_any(const int64_t *sources, const int64_t *tags, int64_t count,
                     int64_t start, int64_t *found);
int distrt_barrier(void);

/* Timelines (dist-run --trace). With tracing on, the runtime records the
 * units of a placed program (compiled code marks them) and the
 * point-to-point transfers: a send from its start to its post, a receive
 * for the time its wait blocked. Times are seconds of the host's monotonic
 * clock (CLOCK_MONOTONIC: one origin for every process of a host). */
typedef enum distrt_event_kind {
  DISTRT_EVENT_FORWARD = 0, /* the values of the dist dialect's UnitKind */
  DISTRT_EVENT_BACKWARD = 1,
  DISTRT_EVENT_WEIGHT = 2,
  DISTRT_EVENT_UPDATE = 3,
  DISTRT_EVENT_SEND = 4,
  DISTRT_EVENT_RECV = 5,
} distrt_event_kind;

typedef struct distrt_event {
  int32_t kind;
  /* Units: the pipeline stage and microbatch; transfers: -1. */
  int64_t stage, microbatch;
  /* Transfers: the peer's world rank, the tag and the bytes; units: -1. */
  int64_t peer, tag, bytes;
  double begin, end;
} distrt_event;

/* Turns recording on (nonzero) or off; off by default. */
void distrt_trace_enable(int on);
/* The events recorded so far, in the order they began, and their count. */
const distrt_event *distrt_trace_events(int64_t *count);
void distrt_trace_clear(void);
/* Marks the beginning and the end of a unit (kind: a distrt_event_kind of
 * a unit); units do not nest. */
void distrt_trace_unit_begin(int32_t kind, int64_t stage, int64_t microbatch);
void distrt_trace_unit_end(void);

/* Op profiles (dist-run --profile). Code lowered with
 * dist-lower-cpu{profile=true} brackets each op that works on buffers (a
 * loop nest, a BLAS or runtime call, a copy) with these calls, naming its
 * site: the op's index in the module's `distopt.profile` table. Sites do
 * not nest; the runtime keeps, per site, the calls and the time between
 * begin and end (the host's monotonic clock). */
void distrt_profile_begin(int64_t site);
void distrt_profile_end(int64_t site);
/* The calls and seconds of sites 0 to count - 1 since the last reset
 * (zero for a site never reached). */
void distrt_profile_read(int64_t count, int64_t *calls, double *seconds);
void distrt_profile_reset(void);

/* The node (a host: ranks sharing memory, MPI_Comm_split_type) of every
 * world rank: fills `nodes` (distrt_size() entries; null to skip) with
 * node indices numbered in the order of their lowest rank and returns the
 * number of nodes (-1 on error). Every rank calls it (a collective). For
 * tests, the environment variable DISTRT_TEST_NODES ("a,a,b,b": a name
 * per rank) stands for the real layout. */
int64_t distrt_get_nodes(int64_t *nodes);
/* The host name of node `node` of distrt_get_nodes ("" when out of range). */
const char *distrt_node_name(int64_t node);

/* Counters since the start or the last reset (dist-run --metrics): the
 * seconds spent inside the runtime's communication calls (collectives,
 * their starts and waits, sends, receives, probes, barriers), the bytes of
 * the collectives' buffers this process contributed (an all-reduce's whole
 * buffer, a reduce-scatter's input, an all-gather's own block), the bytes
 * of the messages it sent, and the number of calls. */
typedef struct distrt_stats {
  double comm_seconds;
  int64_t collective_bytes, sent_bytes, calls;
} distrt_stats;
void distrt_get_stats(distrt_stats *stats);
void distrt_reset_stats(void);

/* The message of the last failed call on this thread ("" if none). */
const char *distrt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTOPT_RUNTIME_DISTRT_H */
