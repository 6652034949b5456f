//===- Backend.h - the backends behind distrt.h -----------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A backend moves contiguous buffers between the processes of the world;
// Runtime.cpp turns mesh groups, buckets and errors into calls of it.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_BACKEND_H
#define DISTOPT_LIB_RUNTIME_BACKEND_H

#include "distopt/Runtime/distrt.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distrt {

/// Bytes of one element of `dtype`; 0 for an unknown value.
std::size_t getElementSize(distrt_dtype dtype);
/// `f32`, `bf16`, ... for messages.
const char *getDTypeName(distrt_dtype dtype);

/// The result of a backend call: empty, or what failed.
using Status = std::string;

/// One group of processes, as the backend represents it.
class Group {
public:
  Group(int64_t size, int64_t rank) : size(size), rank(rank) {}
  virtual ~Group();
  const int64_t size;
  const int64_t rank;
};

/// A collective in flight.
class Request {
public:
  virtual ~Request();
  /// Completes the collective.
  virtual Status wait() = 0;
};

class Backend {
public:
  virtual ~Backend();
  virtual const char *getName() const = 0;
  virtual int64_t getRank() const = 0;
  virtual int64_t getSize() const = 0;

  /// The group of world ranks `members` (in group order), of which this
  /// process is member `index`; `color` is the same for every member and
  /// different for every other group of the same axes. Only the members
  /// call it, in the same order of groups: in a step of placed programs
  /// the other processes run other programs.
  virtual Status createGroup(const std::vector<int64_t> &members, int64_t index,
                             int64_t color, std::unique_ptr<Group> &group) = 0;

  virtual Status allReduce(Group &group, void *buffer, int64_t count,
                           distrt_dtype dtype, distrt_reduction reduction) = 0;
  /// Starts an in-place all-reduce; `done` (may be empty) runs once it
  /// completed.
  virtual Status allReduceStart(Group &group, void *buffer, int64_t count,
                                distrt_dtype dtype, distrt_reduction reduction,
                                std::function<void()> done,
                                std::unique_ptr<Request> &request) = 0;
  /// Reduces each of the `n` buffers (`counts[i]` elements) in place: a
  /// gradient bucket. By default one allReduce of the buffers packed into
  /// host memory (for host buffers; n = 1 reduces the buffer itself); a
  /// backend of device buffers overrides it.
  virtual Status allReduceMany(Group &group, void *const *buffers,
                               const int64_t *counts, int64_t n,
                               distrt_dtype dtype, distrt_reduction reduction);
  /// Starts allReduceMany; the buffers stay untouched until the request
  /// completes. By default allReduceStart of the packed buffers, unpacked
  /// when it completed.
  virtual Status allReduceManyStart(Group &group, void *const *buffers,
                                    const int64_t *counts, int64_t n,
                                    distrt_dtype dtype,
                                    distrt_reduction reduction,
                                    std::unique_ptr<Request> &request);
  virtual Status reduceScatter(Group &group, const void *send, void *recv,
                               int64_t recvCount, distrt_dtype dtype,
                               distrt_reduction reduction) = 0;
  /// Starts a reduce-scatter; `send` and `recv` stay untouched until the
  /// request completes.
  virtual Status reduceScatterStart(Group &group, const void *send, void *recv,
                                    int64_t recvCount, distrt_dtype dtype,
                                    distrt_reduction reduction,
                                    std::unique_ptr<Request> &request) = 0;
  virtual Status allGather(Group &group, const void *send, void *recv,
                           int64_t sendCount, distrt_dtype dtype) = 0;
  /// Starts an all-gather, as reduceScatterStart.
  virtual Status allGatherStart(Group &group, const void *send, void *recv,
                                int64_t sendCount, distrt_dtype dtype,
                                std::unique_ptr<Request> &request) = 0;
  virtual Status allToAll(Group &group, const void *send, void *recv,
                          int64_t blockCount, distrt_dtype dtype) = 0;
  virtual Status broadcast(Group &group, void *buffer, int64_t count,
                           distrt_dtype dtype, int64_t root) = 0;
  virtual Status send(const void *buffer, int64_t count, distrt_dtype dtype,
                      int64_t dest, int64_t tag) = 0;
  virtual Status recv(void *buffer, int64_t count, distrt_dtype dtype,
                      int64_t source, int64_t tag) = 0;
  /// Starts a send (`buffer` stays untouched until the request completes)
  /// or a receive (`buffer` is written by then).
  virtual Status sendStart(const void *buffer, int64_t count,
                           distrt_dtype dtype, int64_t dest, int64_t tag,
                           std::unique_ptr<Request> &request) = 0;
  virtual Status recvStart(void *buffer, int64_t count, distrt_dtype dtype,
                           int64_t source, int64_t tag,
                           std::unique_ptr<Request> &request) = 0;
  /// Waits until the message of tag `tags[k]` from world rank `sources[k]`
  /// has arrived for some `k` (without receiving it), looking from `start`
  /// round robin, and sets `found` to that `k`.
  virtual Status probeAny(const int64_t *sources, const int64_t *tags,
                          int64_t count, int64_t start, int64_t &found) = 0;
  virtual Status barrier() = 0;
  /// The node (a shared-memory domain) of every world rank: `nodes[r]`
  /// numbers the nodes in the order of their lowest rank, `names[n]` is
  /// node n's host name.
  virtual Status getNodes(std::vector<int64_t> &nodes,
                          std::vector<std::string> &names);
  /// Stops the backend.
  virtual Status finalize() = 0;
  /// Ends every process of the job with exit status `code`.
  [[noreturn]] virtual void abort(int code);

  /// Seconds a blocking call may take before it fails (0: no limit).
  double timeout = 0;

private:
  /// allReduceMany's packed bucket, kept from call to call (a step reduces
  /// the same buckets every time).
  std::vector<char> packed;
};

/// "<call> did not complete within <timeout> s (a rank stopped answering?)".
Status getTimeoutMessage(const char *call, double timeout);

/// Calls `test` until it sets `done` or fails, for at most `timeout`
/// seconds (0: no limit): "" when done, the failure or the timeout message
/// of `call` else.
Status pollWithin(const char *call, double timeout,
                  const std::function<Status(bool &done)> &test);

/// The single-process backend: every group has one member.
std::unique_ptr<Backend> createLocalBackend();
/// The MPI backend (initializes MPI unless the program did); null with
/// `error` set when the runtime was built without MPI.
std::unique_ptr<Backend> createMPIBackend(Status &error);

/// The factory of the nccl backend, `distrt_create_nccl_backend` in
/// libdistrt_nccl.so (which libdistrt loads with dlopen: only that library
/// needs CUDA and NCCL): a new backend whose start (MPI, the device, the
/// world's communicator) completes within `timeout` seconds (0: no limit),
/// or null with `error` set.
using NCCLBackendFactory = Backend *(*)(double timeout, Status *error);

} // namespace distrt

#endif // DISTOPT_LIB_RUNTIME_BACKEND_H
