//===- LocalBackend.cpp - one process, groups of one ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <cstring>

using namespace distrt;

namespace {
class CompletedRequest : public Request {
public:
  Status wait() override { return {}; }
};

/// Every group has exactly this process: reductions are identities and
/// gathers copies.
class LocalBackend : public Backend {
public:
  const char *getName() const override { return "local"; }
  int64_t getRank() const override { return 0; }
  int64_t getSize() const override { return 1; }

  Status createGroup(const std::vector<int64_t> &members, int64_t index,
                     int64_t, std::unique_ptr<Group> &group) override {
    group = std::make_unique<Group>(members.size(), index);
    return {};
  }
  Status allReduce(Group &, void *, int64_t, distrt_dtype,
                   distrt_reduction) override {
    return {};
  }
  Status allReduceStart(Group &, void *, int64_t, distrt_dtype,
                        distrt_reduction, std::function<void()> done,
                        std::unique_ptr<Request> &request) override {
    if (done)
      done();
    request = std::make_unique<CompletedRequest>();
    return {};
  }
  Status reduceScatter(Group &, const void *send, void *recv, int64_t count,
                       distrt_dtype dtype, distrt_reduction) override {
    return copy(send, recv, count, dtype);
  }
  Status allGather(Group &, const void *send, void *recv, int64_t count,
                   distrt_dtype dtype) override {
    return copy(send, recv, count, dtype);
  }
  Status reduceScatterStart(Group &group, const void *send, void *recv,
                            int64_t count, distrt_dtype dtype,
                            distrt_reduction reduction,
                            std::unique_ptr<Request> &request) override {
    request = std::make_unique<CompletedRequest>();
    return reduceScatter(group, send, recv, count, dtype, reduction);
  }
  Status allGatherStart(Group &group, const void *send, void *recv,
                        int64_t count, distrt_dtype dtype,
                        std::unique_ptr<Request> &request) override {
    request = std::make_unique<CompletedRequest>();
    return allGather(group, send, recv, count, dtype);
  }
  Status allToAll(Group &, const void *send, void *recv, int64_t count,
                  distrt_dtype dtype) override {
    return copy(send, recv, count, dtype);
  }
  Status broadcast(Group &, void *, int64_t, distrt_dtype,
                   int64_t root) override {
    if (root != 0)
      return "broadcast root " + std::to_string(root) +
             " is not in a group of 1 process";
    return {};
  }
  Status send(const void *, int64_t, distrt_dtype, int64_t dest,
              int64_t) override {
    return "the local backend runs one process: no rank " +
           std::to_string(dest) + " to send to";
  }
  Status recv(void *, int64_t, distrt_dtype, int64_t source, int64_t) override {
    return "the local backend runs one process: no rank " +
           std::to_string(source) + " to receive from";
  }
  Status sendStart(const void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t dest, int64_t tag,
                   std::unique_ptr<Request> &) override {
    return send(buffer, count, dtype, dest, tag);
  }
  Status recvStart(void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t source, int64_t tag,
                   std::unique_ptr<Request> &) override {
    return recv(buffer, count, dtype, source, tag);
  }
  Status probeAny(const int64_t *sources, const int64_t *, int64_t count,
                  int64_t, int64_t &) override {
    return "the local backend runs one process: no rank " +
           std::to_string(count ? sources[0] : 0) + " to wait for";
  }
  Status barrier() override { return {}; }
  Status finalize() override { return {}; }

private:
  static Status copy(const void *from, void *to, int64_t count,
                     distrt_dtype dtype) {
    if (from != to)
      std::memmove(to, from, count * getElementSize(dtype));
    return {};
  }
};
} // namespace

std::unique_ptr<Backend> distrt::createLocalBackend() {
  return std::make_unique<LocalBackend>();
}
