//===- ShardingTest.cpp - factor algebra and the resharding planner -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/Sharding.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

using Kind = ReshardStep::Kind;

TensorSharding sharding(SmallVector<AxisIndices> dims,
                        AxisIndices partial = {}) {
  return {std::move(dims), std::move(partial)};
}

std::string plan(const TensorSharding &from, const TensorSharding &to) {
  std::string reason;
  FailureOr<SmallVector<ReshardStep>> steps = planResharding(from, to, &reason);
  if (failed(steps))
    return "error: " + reason;
  std::string text;
  for (const ReshardStep &step : *steps) {
    if (!text.empty())
      text += "; ";
    text += step.str();
  }
  return text;
}

ShardingRule matmulRule(int64_t m, int64_t k, int64_t n) {
  ShardingRuleBuilder builder({2, 2}, {2});
  int64_t i = builder.addFactor(m), j = builder.addFactor(n);
  int64_t r = builder.addFactor(k, FactorKind::Reduction);
  builder.mapOperand(0, 0, i).mapOperand(0, 1, r);
  builder.mapOperand(1, 0, r).mapOperand(1, 1, j);
  builder.mapResult(0, 0, i).mapResult(0, 1, j);
  return builder.build();
}

TEST(ReshardingPlannerTest, NothingToDo) {
  EXPECT_EQ(plan(sharding({{0}, {}}), sharding({{0}, {}})), "");
}

TEST(ReshardingPlannerTest, PartialToReplicatedIsAllReduce) {
  EXPECT_EQ(plan(sharding({{}, {}}, {0}), sharding({{}, {}})),
            "all_reduce axes [0]");
  // Several partial axes reduce in one collective.
  EXPECT_EQ(plan(sharding({{}}, {1, 0}), sharding({{}})),
            "all_reduce axes [1, 0]");
}

TEST(ReshardingPlannerTest, PartialToShardedIsReduceScatter) {
  EXPECT_EQ(plan(sharding({{}, {}}, {0}), sharding({{0}, {}})),
            "reduce_scatter dim 0 axes [0]");
  // Only the axes the target splits are scattered; the others all-reduce.
  EXPECT_EQ(plan(sharding({{}, {}}, {0, 1}), sharding({{}, {1}})),
            "reduce_scatter dim 1 axes [1]; all_reduce axes [0]");
}

TEST(ReshardingPlannerTest, ShardedToReplicatedIsAllGather) {
  EXPECT_EQ(plan(sharding({{0}, {}}), sharding({{}, {}})),
            "all_gather dim 0 axes [0]");
  // Gathers only the minor-most axes the target does not keep.
  EXPECT_EQ(plan(sharding({{0, 1}}), sharding({{0}})),
            "all_gather dim 0 axes [1]");
}

TEST(ReshardingPlannerTest, MovingAnAxisBetweenDimsIsAllToAll) {
  EXPECT_EQ(plan(sharding({{0}, {}}), sharding({{}, {0}})),
            "all_to_all dim 0 -> 1 axes [0]");
}

TEST(ReshardingPlannerTest, ReplicatedToShardedIsLocalSlice) {
  EXPECT_EQ(plan(sharding({{}, {}}), sharding({{}, {0, 1}})),
            "local_slice dim 1 axes [0, 1]");
}

TEST(ReshardingPlannerTest, ReorderedAxesGatherThenSlice) {
  EXPECT_EQ(plan(sharding({{1, 0}}), sharding({{0, 1}})),
            "all_gather dim 0 axes [1, 0]; local_slice dim 0 axes [0, 1]");
}

TEST(ReshardingPlannerTest, CannotCreatePartialSums) {
  EXPECT_EQ(plan(sharding({{}}), sharding({{}}, {0})),
            "error: cannot make a value partial over axis 0");
}

TEST(ShardingAlgebraTest, FactorAxesOfMatmulOperands) {
  ShardingRule rule = matmulRule(8, 4, 16);
  SmallVector<int64_t> mesh = {2, 4};
  auto axes = getFactorAxesOf(rule, rule.getOperandMappings()[0],
                              sharding({{0}, {1}}), mesh);
  ASSERT_TRUE(axes[0] && axes[2]);
  EXPECT_EQ(*axes[0], AxisIndices({0}));
  EXPECT_EQ(*axes[2], AxisIndices({1}));
  EXPECT_FALSE(axes[1].has_value()); // lhs does not map n
}

TEST(ShardingAlgebraTest, ResultOfSplitContractionIsPartial) {
  ShardingRule rule = matmulRule(8, 4, 16);
  FactorAxes factors = {{0}, {}, {1}};
  EXPECT_EQ(projectResult(rule, factors, 0), sharding({{0}, {}}, {1}));
  EXPECT_EQ(projectOperand(rule, factors, 1), sharding({{1}, {}}));
}

TEST(ShardingAlgebraTest, CompoundDimsSplitMajorFactorFirst) {
  // reshape [6, 4] -> [24]: the merged dim is (i, j).
  ShardingRuleBuilder builder({2}, {1});
  int64_t i = builder.addFactor(6), j = builder.addFactor(4);
  builder.mapOperand(0, 0, i).mapOperand(0, 1, j);
  builder.mapResult(0, 0, i).mapResult(0, 0, j);
  ShardingRule rule = builder.build();
  // Mesh [2, 3, 2]: axes 0 and 1 split i (6) completely, axis 2 then j.
  SmallVector<int64_t> mesh = {2, 3, 2};
  auto axes = getFactorAxesOf(rule, rule.getResultMappings()[0],
                              sharding({{0, 1, 2}}), mesh);
  ASSERT_TRUE(axes[i] && axes[j]);
  EXPECT_EQ(*axes[i], AxisIndices({0, 1}));
  EXPECT_EQ(*axes[j], AxisIndices({2}));
  // Splitting only part of the major factor and then the minor one is not
  // a factor sharding: no opinion.
  auto none = getFactorAxesOf(rule, rule.getResultMappings()[0],
                              sharding({{0, 2}}), mesh);
  EXPECT_FALSE(none[i].has_value());
}

// reshape [8, 128, 256] -> [1024, 256] merges (b, s): splitting s alone
// would interleave the merged dim, so normalization drops it; splitting b
// alone, or b completely and then s, is representable.
TEST(ShardingAlgebraTest, NormalizeDropsInterleavingSplits) {
  ShardingRuleBuilder builder({3}, {2});
  int64_t b = builder.addFactor(8), s = builder.addFactor(128),
          h = builder.addFactor(256);
  builder.mapOperand(0, 0, b).mapOperand(0, 1, s).mapOperand(0, 2, h);
  builder.mapResult(0, 0, b).mapResult(0, 0, s).mapResult(0, 1, h);
  ShardingRule rule = builder.build();

  SmallVector<int64_t> mesh = {2, 8};
  FactorAxes minorOnly = {{}, {0}, {}};
  normalizeFactorAxes(rule, minorOnly, mesh);
  EXPECT_EQ(minorOnly, FactorAxes({{}, {}, {}}));

  FactorAxes majorOnly = {{0}, {}, {}};
  normalizeFactorAxes(rule, majorOnly, mesh);
  EXPECT_EQ(majorOnly, FactorAxes({{0}, {}, {}}));
  EXPECT_EQ(projectResult(rule, majorOnly, 0), sharding({{0}, {}}));

  // b (8) split over axis 1 (8 devices) holds one index per shard: s may
  // follow on axis 0.
  FactorAxes both = {{1}, {0}, {}};
  normalizeFactorAxes(rule, both, mesh);
  EXPECT_EQ(both, FactorAxes({{1}, {0}, {}}));
  EXPECT_EQ(projectResult(rule, both, 0), sharding({{1, 0}, {}}));
  // And reading that back gives the same factors.
  auto axes = getFactorAxesOf(rule, rule.getResultMappings()[0],
                              sharding({{1, 0}, {}}), mesh);
  ASSERT_TRUE(axes[b] && axes[s]);
  EXPECT_EQ(*axes[b], AxisIndices({1}));
  EXPECT_EQ(*axes[s], AxisIndices({0}));
  // Dims that are not compound are untouched.
  FactorAxes hidden = {{}, {}, {0}};
  normalizeFactorAxes(rule, hidden, mesh);
  EXPECT_EQ(hidden, FactorAxes({{}, {}, {0}}));
}

TEST(ShardingAlgebraTest, LocalShape) {
  SmallVector<int64_t> mesh = {2, 4};
  EXPECT_EQ(getLocalShape({64, 128}, sharding({{0}, {1}}), mesh),
            SmallVector<int64_t>({32, 32}));
  EXPECT_EQ(getLocalShape({64, 128}, sharding({{0, 1}, {}}), mesh),
            SmallVector<int64_t>({8, 128}));
}

} // namespace
