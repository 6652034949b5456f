//===- CostModelTest.cpp - ring bus bytes and liveness peaks --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/CostModel.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

// Ring all-reduce: each rank sends 2(n-1)/n of the tensor.
TEST(CostModelTest, RingAllReduceBusBytes) {
  EXPECT_DOUBLE_EQ(getRingBusBytes(CollectiveKind::AllReduce, 4, 1000), 1500);
  EXPECT_DOUBLE_EQ(getRingBusBytes(CollectiveKind::AllReduce, 2, 1000), 1000);
  EXPECT_DOUBLE_EQ(getRingBusBytes(CollectiveKind::AllReduce, 8, 800), 1400);
}

// Reduce-scatter + all-gather move exactly what one all-reduce moves.
TEST(CostModelTest, ReduceScatterPlusAllGatherIsAllReduce) {
  for (int64_t n : {2, 3, 4, 8, 64}) {
    double split = getRingBusBytes(CollectiveKind::ReduceScatter, n, 4096) +
                   getRingBusBytes(CollectiveKind::AllGather, n, 4096);
    EXPECT_DOUBLE_EQ(split,
                     getRingBusBytes(CollectiveKind::AllReduce, n, 4096));
  }
  EXPECT_DOUBLE_EQ(getRingBusBytes(CollectiveKind::AllToAll, 4, 400), 300);
  EXPECT_DOUBLE_EQ(getRingBusBytes(CollectiveKind::Broadcast, 4, 400), 400);
}

// A group of one moves nothing.
TEST(CostModelTest, GroupOfOneMovesNothing) {
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather, CollectiveKind::AllToAll,
        CollectiveKind::Broadcast})
    EXPECT_EQ(getRingBusBytes(kind, 1, 1 << 20), 0) << int(kind);
}

// Time = bus bytes / bandwidth + one latency per ring step.
TEST(CostModelTest, RingSeconds) {
  // 2(n-1) = 6 steps of 1 us plus 1.5e9 bytes at 100 GB/s.
  EXPECT_DOUBLE_EQ(getRingSeconds(CollectiveKind::AllReduce, 4, 1.5e9, 100, 1),
                   0.015006);
  // n-1 = 3 steps for the others.
  EXPECT_DOUBLE_EQ(getRingSeconds(CollectiveKind::AllGather, 4, 1e9, 100, 2),
                   0.010006);
  EXPECT_EQ(getRingSeconds(CollectiveKind::AllReduce, 1, 0, 100, 5), 0);
}

TEST(CostModelTest, KindNames) {
  EXPECT_EQ(stringifyCollectiveKind(CollectiveKind::ReduceScatter),
            "reduce_scatter");
  EXPECT_EQ(stringifyCollectiveKind(CollectiveKind::AllToAll), "all_to_all");
}

// Intervals are inclusive: a value dying at point 2 and one born at point 2
// are live together.
TEST(CostModelTest, PeakLiveBytesCountsTouchingIntervals) {
  EXPECT_EQ(getPeakLiveBytes({{0, 2, 10}, {2, 3, 5}}), 15);
  EXPECT_EQ(getPeakLiveBytes({{0, 1, 10}, {2, 3, 5}}), 10);
}

TEST(CostModelTest, PeakLiveBytesOfAChain) {
  // a = f(); b = g(a); c = h(b); d = k(a, c): a, b and c meet at point 2.
  EXPECT_EQ(getPeakLiveBytes({{0, 3, 100}, {1, 2, 10}, {2, 3, 1}, {3, 3, 7}}),
            111);
  EXPECT_EQ(getPeakLiveBytes({}), 0);
}

} // namespace
