//===- RuntimeTest.cpp - distrt collectives, local and under MPI ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The same tests run in one process (local backend: groups of one) and,
// as DistRtMPITests, under `mpirun -np 2|4` (DISTRT_BACKEND=mpi): every
// rank checks the result of every collective against what the single-device
// program computes.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/distrt.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

/// The runtime, started once per test program with DISTRT_BACKEND (default
/// local).
class RuntimeEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    const char *backend = std::getenv("DISTRT_BACKEND");
    ASSERT_EQ(distrt_init(backend ? backend : "local"), 0)
        << distrt_last_error();
  }
  void TearDown() override {
    ASSERT_EQ(distrt_finalize(), 0) << distrt_last_error();
  }
};

const auto *environment =
    ::testing::AddGlobalTestEnvironment(new RuntimeEnvironment);

int64_t rank() { return distrt_rank(); }
int64_t size() { return distrt_size(); }

/// A 1-D mesh of every process.
distrt_group *worldGroup() {
  int64_t shape[] = {size()};
  int64_t axes[] = {0};
  return distrt_get_group(shape, 1, axes, 1);
}

TEST(RuntimeTest, AllReduceSumsABucket) {
  distrt_group *group = worldGroup();
  ASSERT_NE(group, nullptr) << distrt_last_error();
  std::vector<float> a = {float(rank()), 1, 2};
  std::vector<double> unused;
  std::vector<float> b = {10.0f * float(rank() + 1)};
  void *buffers[] = {a.data(), b.data()};
  int64_t counts[] = {3, 1};
  ASSERT_EQ(
      distrt_all_reduce(group, buffers, counts, 2, DISTRT_F32, DISTRT_SUM), 0)
      << distrt_last_error();
  float n = size();
  EXPECT_EQ(a[0], n * (n - 1) / 2);
  EXPECT_EQ(a[1], n);
  EXPECT_EQ(a[2], 2 * n);
  EXPECT_EQ(b[0], 10 * n * (n + 1) / 2);
}

TEST(RuntimeTest, AllReduceMax) {
  distrt_group *group = worldGroup();
  std::vector<int64_t> a = {rank(), -rank()};
  void *buffers[] = {a.data()};
  int64_t counts[] = {2};
  ASSERT_EQ(
      distrt_all_reduce(group, buffers, counts, 1, DISTRT_I64, DISTRT_MAX), 0)
      << distrt_last_error();
  EXPECT_EQ(a[0], size() - 1);
  EXPECT_EQ(a[1], 0);
}

TEST(RuntimeTest, AsyncAllReduceOfABucket) {
  distrt_group *group = worldGroup();
  std::vector<float> a(4, 1.0f), b(2, float(rank()));
  void *buffers[] = {a.data(), b.data()};
  int64_t counts[] = {4, 2};
  distrt_request *request = distrt_all_reduce_start(group, buffers, counts, 2,
                                                    DISTRT_F32, DISTRT_SUM);
  ASSERT_NE(request, nullptr) << distrt_last_error();
  ASSERT_EQ(distrt_wait(request), 0) << distrt_last_error();
  float n = size();
  EXPECT_EQ(a[3], n);
  EXPECT_EQ(b[1], n * (n - 1) / 2);
}

TEST(RuntimeTest, ReduceScatterKeepsOwnBlock) {
  distrt_group *group = worldGroup();
  int64_t n = size();
  // Every rank sends 0, 1, ..., 2n-1; block i is elements 2i, 2i+1.
  std::vector<float> send(2 * n);
  std::iota(send.begin(), send.end(), 0.0f);
  std::vector<float> recv(2);
  ASSERT_EQ(distrt_reduce_scatter(group, send.data(), recv.data(), 2,
                                  DISTRT_F32, DISTRT_SUM),
            0)
      << distrt_last_error();
  EXPECT_EQ(recv[0], float(n * 2 * rank()));
  EXPECT_EQ(recv[1], float(n * (2 * rank() + 1)));
}

TEST(RuntimeTest, AllGatherConcatenatesInGroupOrder) {
  distrt_group *group = worldGroup();
  std::vector<int32_t> send = {int32_t(rank()), int32_t(100 + rank())};
  std::vector<int32_t> recv(2 * size());
  ASSERT_EQ(distrt_all_gather(group, send.data(), recv.data(), 2, DISTRT_I32),
            0)
      << distrt_last_error();
  for (int64_t r = 0; r < size(); ++r) {
    EXPECT_EQ(recv[2 * r], r);
    EXPECT_EQ(recv[2 * r + 1], 100 + r);
  }
}

TEST(RuntimeTest, AsyncReduceScatterAndAllGatherInFlightTogether) {
  distrt_group *group = worldGroup();
  int64_t n = size();
  std::vector<float> send(2 * n), recv(2);
  std::iota(send.begin(), send.end(), 0.0f);
  std::vector<int32_t> local = {int32_t(rank())}, gathered(n, -1);
  distrt_request *scatter = distrt_reduce_scatter_start(
      group, send.data(), recv.data(), 2, DISTRT_F32, DISTRT_SUM);
  ASSERT_NE(scatter, nullptr) << distrt_last_error();
  distrt_request *gather = distrt_all_gather_start(
      group, local.data(), gathered.data(), 1, DISTRT_I32);
  ASSERT_NE(gather, nullptr) << distrt_last_error();
  // Completed in the other order than started.
  ASSERT_EQ(distrt_wait(gather), 0) << distrt_last_error();
  ASSERT_EQ(distrt_wait(scatter), 0) << distrt_last_error();
  EXPECT_EQ(recv[0], float(n * 2 * rank()));
  EXPECT_EQ(recv[1], float(n * (2 * rank() + 1)));
  for (int64_t r = 0; r < n; ++r)
    EXPECT_EQ(gathered[r], r);
}

TEST(RuntimeTest, AsyncStartsCheckTheirArguments) {
  EXPECT_EQ(distrt_reduce_scatter_start(nullptr, nullptr, nullptr, 1,
                                        DISTRT_F32, DISTRT_SUM),
            nullptr);
  EXPECT_NE(std::string(distrt_last_error())
                .find("distrt_reduce_scatter_start: needs a group"),
            std::string::npos)
      << distrt_last_error();
  EXPECT_EQ(distrt_all_gather_start(nullptr, nullptr, nullptr, 1, DISTRT_F32),
            nullptr);
  EXPECT_NE(std::string(distrt_last_error())
                .find("distrt_all_gather_start: needs a group"),
            std::string::npos)
      << distrt_last_error();
}

TEST(RuntimeTest, AllToAllTransposesBlocks) {
  distrt_group *group = worldGroup();
  int64_t n = size();
  std::vector<int64_t> send(n), recv(n);
  for (int64_t j = 0; j < n; ++j)
    send[j] = 10 * rank() + j; // block j goes to rank j
  ASSERT_EQ(distrt_all_to_all(group, send.data(), recv.data(), 1, DISTRT_I64),
            0)
      << distrt_last_error();
  for (int64_t j = 0; j < n; ++j)
    EXPECT_EQ(recv[j], 10 * j + rank()); // from rank j, its block for us
}

TEST(RuntimeTest, BroadcastFromLastMember) {
  distrt_group *group = worldGroup();
  std::vector<uint16_t> buffer = {uint16_t(rank()), 7}; // bf16 bits
  ASSERT_EQ(distrt_broadcast(group, buffer.data(), 2, DISTRT_BF16, size() - 1),
            0)
      << distrt_last_error();
  EXPECT_EQ(buffer[0], size() - 1);
}

// On a 2-D mesh (size/2 x 2 when there are 4 processes), groups along one
// axis reduce only within their row or column.
TEST(RuntimeTest, GroupsOfATwoDimensionalMesh) {
  if (size() % 2) {
    // One process: a 1 x 1 mesh.
    int64_t shape[] = {1, 1}, axes[] = {1};
    distrt_group *group = distrt_get_group(shape, 2, axes, 1);
    ASSERT_NE(group, nullptr) << distrt_last_error();
    EXPECT_EQ(distrt_group_size(group), 1);
    return;
  }
  int64_t shape[] = {size() / 2, 2};
  int64_t rowAxes[] = {1}, colAxes[] = {0};
  distrt_group *row = distrt_get_group(shape, 2, rowAxes, 1);
  distrt_group *col = distrt_get_group(shape, 2, colAxes, 1);
  ASSERT_NE(row, nullptr) << distrt_last_error();
  ASSERT_NE(col, nullptr) << distrt_last_error();
  EXPECT_EQ(distrt_group_size(row), 2);
  EXPECT_EQ(distrt_group_rank(row), rank() % 2);
  EXPECT_EQ(distrt_group_rank(col), rank() / 2);
  // The same group again is the cached one.
  EXPECT_EQ(distrt_get_group(shape, 2, rowAxes, 1), row);
  std::vector<int64_t> value = {rank()};
  void *buffers[] = {value.data()};
  int64_t counts[] = {1};
  ASSERT_EQ(distrt_all_reduce(row, buffers, counts, 1, DISTRT_I64, DISTRT_SUM),
            0)
      << distrt_last_error();
  int64_t first = rank() - rank() % 2;
  EXPECT_EQ(value[0], first + first + 1);
}

TEST(RuntimeTest, ErrorsNameTheRankAndTheCall) {
  int64_t shape[] = {size() + 1};
  int64_t axes[] = {0};
  EXPECT_EQ(distrt_get_group(shape, 1, axes, 1), nullptr);
  std::string error = distrt_last_error();
  EXPECT_NE(error.find("distrt: rank " + std::to_string(rank()) +
                       ": distrt_get_group: the mesh has " +
                       std::to_string(size() + 1) +
                       " devices but the "
                       "program runs on " +
                       std::to_string(size()) + " processes"),
            std::string::npos)
      << error;

  int64_t repeated[] = {0, 0};
  int64_t world[] = {size()};
  EXPECT_EQ(distrt_get_group(world, 1, repeated, 2), nullptr);
  EXPECT_NE(std::string(distrt_last_error()).find("out of range or repeated"),
            std::string::npos);

  std::vector<uint16_t> half(2);
  EXPECT_EQ(distrt_send(half.data(), 2, DISTRT_BF16, size(), 0), -1);
  EXPECT_EQ(distrt_init("nccl"), -1);
  EXPECT_NE(std::string(distrt_last_error()).find("already started"),
            std::string::npos);
}

/// The 16-bit float of `value` (bf16: the upper half of the f32; exact for
/// the values used here).
static uint16_t toBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return uint16_t(bits >> 16);
}
static uint16_t toF16(float value) {
  _Float16 half = _Float16(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

// Compressed gradients: bf16 and f16 sums, maxima and minima over every
// rank, each pair added in f32 and rounded once to the 16-bit type.
TEST(RuntimeTest, SixteenBitReductions) {
  if (size() == 1)
    GTEST_SKIP() << "the local backend reduces nothing";
  distrt_group *group = worldGroup();
  float n = float(size());
  // Element 1: 1 on rank 0, 2^-10 on the others: every partial sum of the
  // small ones is exact, and adding 1 rounds to 1 in bf16 (in f32 the sum
  // would be 1 + (n - 1) 2^-10); f16 keeps it.
  float small = rank() == 0 ? 1.0f : 0.0009765625f;
  for (auto [dtype, convert] :
       {std::pair<distrt_dtype, uint16_t (*)(float)>{DISTRT_BF16, toBF16},
        {DISTRT_F16, toF16}}) {
    std::vector<uint16_t> sum = {convert(1.0f), convert(small)};
    std::vector<uint16_t> max = {convert(float(rank())), convert(-1.0f)};
    std::vector<uint16_t> min = max;
    int64_t counts[] = {2};
    void *sums[] = {sum.data()}, *maxs[] = {max.data()}, *mins[] = {min.data()};
    ASSERT_EQ(distrt_all_reduce(group, sums, counts, 1, dtype, DISTRT_SUM), 0)
        << distrt_last_error();
    ASSERT_EQ(distrt_all_reduce(group, maxs, counts, 1, dtype, DISTRT_MAX), 0)
        << distrt_last_error();
    ASSERT_EQ(distrt_all_reduce(group, mins, counts, 1, dtype, DISTRT_MIN), 0)
        << distrt_last_error();
    EXPECT_EQ(sum[0], convert(n));
    EXPECT_EQ(sum[1], dtype == DISTRT_BF16
                          ? convert(1.0f)
                          : convert(1.0f + (n - 1) * 0.0009765625f));
    EXPECT_EQ(max[0], convert(n - 1));
    EXPECT_EQ(min[0], convert(0.0f));
    EXPECT_EQ(min[1], convert(-1.0f));
  }
}

TEST(RuntimeTest, SendRecvAroundARing) {
  if (size() == 1)
    GTEST_SKIP() << "point to point needs two processes";
  int64_t next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
  std::vector<float> out = {float(rank())}, in = {-1};
  // Even ranks send first, odd ranks receive first: no deadlock.
  if (rank() % 2 == 0) {
    ASSERT_EQ(distrt_send(out.data(), 1, DISTRT_F32, next, 7), 0);
    ASSERT_EQ(distrt_recv(in.data(), 1, DISTRT_F32, prev, 7), 0);
  } else {
    ASSERT_EQ(distrt_recv(in.data(), 1, DISTRT_F32, prev, 7), 0);
    ASSERT_EQ(distrt_send(out.data(), 1, DISTRT_F32, next, 7), 0);
  }
  EXPECT_EQ(in[0], float(prev));
  EXPECT_EQ(distrt_barrier(), 0);
}

TEST(RuntimeTest, CollectivesCompleteWithinATimeout) {
  ASSERT_EQ(distrt_set_timeout(60), 0) << distrt_last_error();
  distrt_group *group = worldGroup();
  std::vector<int64_t> a = {rank() + 1};
  void *buffers[] = {a.data()};
  int64_t counts[] = {1};
  EXPECT_EQ(
      distrt_all_reduce(group, buffers, counts, 1, DISTRT_I64, DISTRT_SUM), 0)
      << distrt_last_error();
  EXPECT_EQ(a[0], size() * (size() + 1) / 2);
  std::vector<int64_t> gathered(size());
  int64_t mine = 3 * rank();
  EXPECT_EQ(distrt_all_gather(group, &mine, gathered.data(), 1, DISTRT_I64), 0)
      << distrt_last_error();
  EXPECT_EQ(gathered.back(), 3 * (size() - 1));
  distrt_request *request = distrt_all_reduce_start(group, buffers, counts, 1,
                                                    DISTRT_I64, DISTRT_MAX);
  ASSERT_NE(request, nullptr) << distrt_last_error();
  EXPECT_EQ(distrt_wait(request), 0) << distrt_last_error();
  EXPECT_EQ(distrt_barrier(), 0) << distrt_last_error();
  EXPECT_EQ(distrt_set_timeout(0), 0);
}

TEST(RuntimeTest, TimeoutsMustBeNonNegative) {
  EXPECT_EQ(distrt_set_timeout(-1), -1);
  EXPECT_NE(std::string(distrt_last_error())
                .find("distrt_set_timeout: the timeout must be a finite "
                      "number of seconds >= 0, not -1"),
            std::string::npos)
      << distrt_last_error();
  EXPECT_EQ(distrt_set_timeout(0), 0);
}

// A receive nobody answers fails once the timeout is over, naming the call.
TEST(RuntimeTest, ReceiveTimesOut) {
  if (size() == 1)
    GTEST_SKIP() << "point to point needs two processes";
  if (rank() == 0) {
    ASSERT_EQ(distrt_set_timeout(0.5), 0);
    float value = 0;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(distrt_recv(&value, 1, DISTRT_F32, 1, 99), -1);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_GE(seconds, 0.5);
    EXPECT_LT(seconds, 5);
    EXPECT_NE(std::string(distrt_last_error())
                  .find("distrt: rank 0: distrt_recv: MPI_Recv did not "
                        "complete within 0.5 s (a rank stopped answering?)"),
              std::string::npos)
        << distrt_last_error();
    ASSERT_EQ(distrt_set_timeout(0), 0);
  }
  EXPECT_EQ(distrt_barrier(), 0) << distrt_last_error();
}

// distrt_abort ends the process with the code (one process: the local
// backend; under MPI it would end the test program's whole job).
TEST(RuntimeTest, AbortExitsWithTheCode) {
  if (size() > 1)
    GTEST_SKIP() << "MPI_Abort would end every rank";
  EXPECT_EXIT(distrt_abort(3), ::testing::ExitedWithCode(3), "");
}

} // namespace
