//===- Backend.cpp - what every backend shares ----------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Element types, timeouts, and the default implementations of Backend:
// the node layout of one host and gradient buckets packed into host memory.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include <unistd.h>

using namespace distrt;

distrt::Group::~Group() = default;
distrt::Request::~Request() = default;
distrt::Backend::~Backend() = default;

void distrt::Backend::abort(int code) { ::_exit(code); }

Status distrt::Backend::getNodes(std::vector<int64_t> &nodes,
                                 std::vector<std::string> &names) {
  // One process per world rank on this host.
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  nodes.assign(getSize(), 0);
  names = {host};
  return {};
}

/// Packs the `n` buffers into `packed`.
static void pack(void *const *buffers, const int64_t *counts, int64_t n,
                 std::size_t elementSize, std::vector<char> &packed) {
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += counts[i];
  packed.resize(total * elementSize);
  char *at = packed.data();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(at, buffers[i], counts[i] * elementSize);
    at += counts[i] * elementSize;
  }
}

static void unpack(const std::vector<char> &packed, void *const *buffers,
                   const int64_t *counts, int64_t n, std::size_t elementSize) {
  const char *at = packed.data();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(buffers[i], at, counts[i] * elementSize);
    at += counts[i] * elementSize;
  }
}

Status distrt::Backend::allReduceMany(Group &group, void *const *buffers,
                                      const int64_t *counts, int64_t n,
                                      distrt_dtype dtype,
                                      distrt_reduction reduction) {
  if (n == 1)
    return allReduce(group, buffers[0], counts[0], dtype, reduction);
  // A bucket: one collective over the packed buffers.
  std::size_t elementSize = getElementSize(dtype);
  pack(buffers, counts, n, elementSize, packed);
  if (Status s = allReduce(group, packed.data(), packed.size() / elementSize,
                           dtype, reduction);
      !s.empty())
    return s;
  unpack(packed, buffers, counts, n, elementSize);
  return {};
}

Status distrt::Backend::allReduceManyStart(Group &group, void *const *buffers,
                                           const int64_t *counts, int64_t n,
                                           distrt_dtype dtype,
                                           distrt_reduction reduction,
                                           std::unique_ptr<Request> &request) {
  if (n == 1)
    return allReduceStart(group, buffers[0], counts[0], dtype, reduction, {},
                          request);
  // The packed bucket lives as long as the callback that unpacks it.
  std::size_t elementSize = getElementSize(dtype);
  auto bucket = std::make_shared<std::vector<char>>();
  pack(buffers, counts, n, elementSize, *bucket);
  std::vector<void *> targets(buffers, buffers + n);
  std::vector<int64_t> sizes(counts, counts + n);
  std::function<void()> done = [bucket, targets, sizes, elementSize] {
    unpack(*bucket, targets.data(), sizes.data(), targets.size(), elementSize);
  };
  return allReduceStart(group, bucket->data(), bucket->size() / elementSize,
                        dtype, reduction, std::move(done), request);
}

Status distrt::getTimeoutMessage(const char *call, double timeout) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeout);
  return std::string(call) + " did not complete within " + seconds +
         " s (a rank stopped answering?)";
}

Status distrt::pollWithin(const char *call, double timeout,
                          const std::function<Status(bool &done)> &test) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout));
  for (unsigned polls = 1;; ++polls) {
    bool done = false;
    if (Status s = test(done); !s.empty() || done)
      return s;
    if (timeout > 0 && polls % 64 == 0 && Clock::now() > deadline)
      return getTimeoutMessage(call, timeout);
  }
}

std::size_t distrt::getElementSize(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
  case DISTRT_I32:
    return 4;
  case DISTRT_F64:
  case DISTRT_I64:
    return 8;
  case DISTRT_F16:
  case DISTRT_BF16:
    return 2;
  case DISTRT_I8:
    return 1;
  }
  return 0;
}

const char *distrt::getDTypeName(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
    return "f32";
  case DISTRT_F64:
    return "f64";
  case DISTRT_F16:
    return "f16";
  case DISTRT_BF16:
    return "bf16";
  case DISTRT_I32:
    return "i32";
  case DISTRT_I64:
    return "i64";
  case DISTRT_I8:
    return "i8";
  }
  return "unknown";
}
