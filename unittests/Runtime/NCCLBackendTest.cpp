//===- NCCLBackendTest.cpp - the nccl backend, or why it cannot start -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// distrt_init("nccl") either starts (a machine with a CUDA device: the
// collectives then run on device buffers and are checked as in
// RuntimeTest.cpp, for one process or any number under mpirun) or fails
// with one message naming the backend and the reason (no CUDA driver, no
// device), without a crash or a hang. The test links no CUDA library: it
// reaches libdistopt_cuda through the copy the backend loaded.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/distrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

/// The outcome of distrt_init("nccl"), tried once per test program.
struct Start {
  bool started = false;
  std::string error;
};

Start &getStart() {
  static Start start;
  return start;
}

class NCCLEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    Start &start = getStart();
    start.started = distrt_init("nccl") == 0;
    if (!start.started)
      start.error = distrt_last_error();
  }
  void TearDown() override {
    if (getStart().started) {
      EXPECT_EQ(distrt_finalize(), 0) << distrt_last_error();
    }
  }
};

const auto *environment =
    ::testing::AddGlobalTestEnvironment(new NCCLEnvironment);

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The backend starts, or the one message says which backend and why.
TEST(NCCLStartTest, StartsOrSaysWhyNot) {
  const Start &start = getStart();
  if (start.started) {
    EXPECT_GE(distrt_size(), 1);
    return;
  }
  EXPECT_TRUE(contains(start.error, "distrt: rank ?: distrt_init: the nccl "
                                    "backend is not available: ") ||
              contains(start.error,
                       "distrt: rank ?: distrt_init: the nccl backend did not "
                       "start: "))
      << start.error;
  // A reason follows.
  EXPECT_NE(start.error.back(), ' ') << start.error;
  // Nothing is left half started.
  EXPECT_EQ(distrt_size(), 1);
  ASSERT_EQ(distrt_init("local"), 0) << distrt_last_error();
  EXPECT_EQ(distrt_finalize(), 0) << distrt_last_error();
}

// The list of backends of the unknown-backend message names nccl.
TEST(NCCLStartTest, UnknownBackendsListNCCL) {
  EXPECT_EQ(distrt_init("gloo"), -1);
  std::string error = distrt_last_error();
  if (getStart().started) {
    EXPECT_TRUE(contains(error, "already started with backend 'nccl'"))
        << error;
  } else {
    EXPECT_TRUE(contains(error, "unknown backend 'gloo' (expected 'local', "
                                "'mpi' or 'nccl')"))
        << error;
  }
}

/// libdistopt_cuda's calls, from the copy the backend loaded.
struct Cuda {
  void *(*alloc)(size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
};

template <typename T>
void lookUp(void *library, const char *name, T &function) {
  function = reinterpret_cast<T>(dlsym(library, name));
}

/// A device buffer holding `host`'s elements.
template <typename T> class DeviceBuffer {
public:
  DeviceBuffer(const Cuda &cuda, const std::vector<T> &host)
      : cuda(cuda), count(host.size()) {
    pointer = cuda.alloc(count * sizeof(T));
    EXPECT_NE(pointer, nullptr);
    EXPECT_EQ(cuda.toDevice(pointer, host.data(), count * sizeof(T)), 0);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cuda.free(pointer); }
  std::vector<T> read() const {
    std::vector<T> host(count);
    EXPECT_EQ(cuda.toHost(host.data(), pointer, count * sizeof(T)), 0);
    return host;
  }
  void *get() const { return pointer; }

private:
  const Cuda &cuda;
  size_t count;
  void *pointer = nullptr;
};

class NCCLTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!getStart().started)
      GTEST_SKIP() << "no nccl backend here: " << getStart().error;
    void *library = dlopen("libdistopt_cuda.so", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(library, nullptr) << dlerror();
    lookUp(library, "distopt_cuda_alloc", cuda.alloc);
    lookUp(library, "distopt_cuda_free", cuda.free);
    lookUp(library, "distopt_cuda_copy_to_device", cuda.toDevice);
    lookUp(library, "distopt_cuda_copy_to_host", cuda.toHost);
    ASSERT_TRUE(cuda.alloc && cuda.free && cuda.toDevice && cuda.toHost);
  }

  static int64_t rank() { return distrt_rank(); }
  static int64_t size() { return distrt_size(); }
  static distrt_group *worldGroup() {
    int64_t shape[] = {size()};
    int64_t axes[] = {0};
    return distrt_get_group(shape, 1, axes, 1);
  }

  Cuda cuda;
};

// A bucket is one grouped call of an all-reduce per buffer.
TEST_F(NCCLTest, AllReduceSumsABucket) {
  distrt_group *group = worldGroup();
  ASSERT_NE(group, nullptr) << distrt_last_error();
  DeviceBuffer<float> a(cuda, {float(rank()), 1, 2});
  DeviceBuffer<float> b(cuda, {10.0f * float(rank() + 1)});
  void *buffers[] = {a.get(), b.get()};
  int64_t counts[] = {3, 1};
  ASSERT_EQ(
      distrt_all_reduce(group, buffers, counts, 2, DISTRT_F32, DISTRT_SUM), 0)
      << distrt_last_error();
  float n = size();
  EXPECT_EQ(a.read(), (std::vector<float>{n * (n - 1) / 2, n, 2 * n}));
  EXPECT_EQ(b.read()[0], 10 * n * (n + 1) / 2);
}

TEST_F(NCCLTest, AsyncAllReduceOfABucketWithMax) {
  distrt_group *group = worldGroup();
  DeviceBuffer<int64_t> a(cuda, {rank(), -rank()}), b(cuda, {7});
  void *buffers[] = {a.get(), b.get()};
  int64_t counts[] = {2, 1};
  distrt_request *request = distrt_all_reduce_start(group, buffers, counts, 2,
                                                    DISTRT_I64, DISTRT_MAX);
  ASSERT_NE(request, nullptr) << distrt_last_error();
  ASSERT_EQ(distrt_wait(request), 0) << distrt_last_error();
  EXPECT_EQ(a.read(), (std::vector<int64_t>{size() - 1, 0}));
  EXPECT_EQ(b.read()[0], 7);
}

// Every rank sends 0, 1, ..., 2n-1; block i is elements 2i, 2i+1.
TEST_F(NCCLTest, ReduceScatterThenAllGather) {
  distrt_group *group = worldGroup();
  int64_t n = size();
  std::vector<float> values(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i)
    values[i] = i;
  DeviceBuffer<float> send(cuda, values), block(cuda, {-1, -1});
  DeviceBuffer<float> gathered(cuda, std::vector<float>(2 * n, -1));
  ASSERT_EQ(distrt_reduce_scatter(group, send.get(), block.get(), 2, DISTRT_F32,
                                  DISTRT_SUM),
            0)
      << distrt_last_error();
  distrt_request *request = distrt_all_gather_start(
      group, block.get(), gathered.get(), 2, DISTRT_F32);
  ASSERT_NE(request, nullptr) << distrt_last_error();
  ASSERT_EQ(distrt_wait(request), 0) << distrt_last_error();
  EXPECT_EQ(block.read(), (std::vector<float>{float(2 * rank() * n),
                                              float((2 * rank() + 1) * n)}));
  std::vector<float> all = gathered.read();
  for (int64_t i = 0; i < 2 * n; ++i)
    EXPECT_EQ(all[i], float(i * n)) << "element " << i;
}

TEST_F(NCCLTest, AllToAllTransposesBlocks) {
  distrt_group *group = worldGroup();
  std::vector<int32_t> values(size());
  for (int64_t j = 0; j < size(); ++j)
    values[j] = int32_t(rank() * 100 + j);
  DeviceBuffer<int32_t> send(cuda, values);
  DeviceBuffer<int32_t> recv(cuda, std::vector<int32_t>(size(), -1));
  ASSERT_EQ(distrt_all_to_all(group, send.get(), recv.get(), 1, DISTRT_I32), 0)
      << distrt_last_error();
  std::vector<int32_t> got = recv.read();
  for (int64_t j = 0; j < size(); ++j)
    EXPECT_EQ(got[j], int32_t(j * 100 + rank())) << "block " << j;
}

TEST_F(NCCLTest, BroadcastFromLastMember) {
  distrt_group *group = worldGroup();
  DeviceBuffer<double> buffer(cuda, {double(rank()), 0.5});
  ASSERT_EQ(distrt_broadcast(group, buffer.get(), 2, DISTRT_F64, size() - 1), 0)
      << distrt_last_error();
  EXPECT_EQ(buffer.read(), (std::vector<double>{double(size() - 1), 0.5}));
}

// Both sides start their send before their receive: the transfers go out
// together at the first wait, so nobody waits in its send (one process
// sends to itself).
TEST_F(NCCLTest, StartedTransfersAroundARing) {
  int64_t next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
  DeviceBuffer<float> out(cuda, {float(rank())}), in(cuda, {-1});
  distrt_request *send = distrt_send_start(out.get(), 1, DISTRT_F32, next, 7);
  ASSERT_NE(send, nullptr) << distrt_last_error();
  distrt_request *recv = distrt_recv_start(in.get(), 1, DISTRT_F32, prev, 7);
  ASSERT_NE(recv, nullptr) << distrt_last_error();
  ASSERT_EQ(distrt_wait(recv), 0) << distrt_last_error();
  ASSERT_EQ(distrt_wait(send), 0) << distrt_last_error();
  EXPECT_EQ(in.read()[0], float(prev));
  EXPECT_EQ(distrt_barrier(), 0) << distrt_last_error();
}

// 16-bit floats reduce on the device (the mpi backend refuses them).
TEST_F(NCCLTest, HalfPrecisionSums) {
  if (size() > 4 || (size() & (size() - 1)))
    GTEST_SKIP() << "the expected bits are written for 1, 2 or 4 processes";
  distrt_group *group = worldGroup();
  // 1.0 in f16; the sum of n ones is 2^log2(n): exponent + log2(n).
  DeviceBuffer<uint16_t> half(cuda, {0x3C00, 0x3C00});
  void *buffers[] = {half.get()};
  int64_t counts[] = {2};
  ASSERT_EQ(
      distrt_all_reduce(group, buffers, counts, 1, DISTRT_F16, DISTRT_SUM), 0)
      << distrt_last_error();
  uint16_t bits = 0x3C00 + (size() == 1 ? 0 : size() == 2 ? 0x400 : 0x800);
  EXPECT_EQ(half.read(), (std::vector<uint16_t>{bits, bits}));
}

TEST_F(NCCLTest, CollectivesCompleteWithinATimeout) {
  ASSERT_EQ(distrt_set_timeout(60), 0) << distrt_last_error();
  distrt_group *group = worldGroup();
  DeviceBuffer<int64_t> a(cuda, {rank() + 1});
  void *buffers[] = {a.get()};
  int64_t counts[] = {1};
  EXPECT_EQ(
      distrt_all_reduce(group, buffers, counts, 1, DISTRT_I64, DISTRT_SUM), 0)
      << distrt_last_error();
  EXPECT_EQ(distrt_barrier(), 0) << distrt_last_error();
  EXPECT_EQ(a.read()[0], size() * (size() + 1) / 2);
  EXPECT_EQ(distrt_set_timeout(0), 0);
}

TEST_F(NCCLTest, ErrorsNameTheCall) {
  int64_t sources[] = {0}, tags[] = {0}, found = -1;
  EXPECT_EQ(distrt_probe_any(sources, tags, 1, 0, &found), -1);
  EXPECT_TRUE(contains(distrt_last_error(),
                       "distrt_probe_any: the nccl backend has no probe "
                       "(parameter servers need the mpi backend)"))
      << distrt_last_error();
  float value = 0;
  EXPECT_EQ(distrt_send(&value, 1, DISTRT_F32, size(), 0), -1);
  EXPECT_TRUE(contains(distrt_last_error(), "distrt_send: rank " +
                                                std::to_string(size()) +
                                                " is not in a world of"))
      << distrt_last_error();
}

} // namespace
