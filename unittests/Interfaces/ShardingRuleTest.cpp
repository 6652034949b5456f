//===- ShardingRuleTest.cpp - ShardingRuleBuilder and ShardingRule --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Interfaces/ShardingRule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

ShardingRule buildMatmul(int64_t m, int64_t k, int64_t n) {
  ShardingRuleBuilder builder({2, 2}, {2});
  int64_t i = builder.addFactor(m);
  int64_t j = builder.addFactor(n);
  int64_t r = builder.addFactor(k, FactorKind::Reduction);
  builder.mapOperand(0, 0, i).mapOperand(0, 1, r);
  builder.mapOperand(1, 0, r).mapOperand(1, 1, j);
  builder.mapResult(0, 0, i).mapResult(0, 1, j);
  return builder.build();
}

/// Runs `rule.verify` and returns the diagnostic it reported ("" on success).
std::string verifyMessage(const ShardingRule &rule,
                          ArrayRef<ArrayRef<int64_t>> operands,
                          ArrayRef<ArrayRef<int64_t>> results) {
  MLIRContext context;
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  Location loc = UnknownLoc::get(&context);
  if (succeeded(rule.verify(operands, results, [&] { return emitError(loc); })))
    return "";
  return message;
}

TEST(ShardingRuleTest, MatmulPrintsAsEinsum) {
  ShardingRule rule = buildMatmul(8, 4, 16);
  EXPECT_EQ(rule.str(), "([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} "
                        "reduction={k}");
  EXPECT_EQ(rule.getNumFactors(), 3);
  EXPECT_EQ(rule.getFactorsMissingFromResults(), SmallVector<int64_t>({2}));
}

TEST(ShardingRuleTest, MatmulVerifiesAgainstShapes) {
  ShardingRule rule = buildMatmul(8, 4, 16);
  EXPECT_EQ(verifyMessage(rule, {{8, 4}, {4, 16}}, {{8, 16}}), "");
  EXPECT_EQ(verifyMessage(rule, {{8, 4}, {5, 16}}, {{8, 16}}),
            "sharding rule gives dim 0 of operand #1 size 4 but it has size 5");
  EXPECT_EQ(verifyMessage(rule, {{8, 4}}, {{8, 16}}),
            "sharding rule maps 2 operands but the op has 1");
  EXPECT_EQ(verifyMessage(rule, {{8, 4, 1}, {4, 16}}, {{8, 16}}),
            "sharding rule maps 2 dims of operand #0 but it has rank 3");
}

TEST(ShardingRuleTest, BroadcastPointwiseSkipsSizeOneAndMissingDims) {
  // add(tensor<4x1x8>, tensor<3x1>) -> tensor<4x3x8>
  ShardingRuleBuilder builder({3, 2}, {3});
  builder.addBroadcastPointwise({4, 3, 8}, {{4, 1, 8}, {3, 1}}, {{4, 3, 8}});
  ShardingRule rule = builder.build();
  EXPECT_EQ(rule.str(), "([i, 1, k], [j, 1])->([i, j, k]) {i=4, j=3, k=8}");
  EXPECT_EQ(verifyMessage(rule, {{4, 1, 8}, {3, 1}}, {{4, 3, 8}}), "");
}

TEST(ShardingRuleTest, CompoundDimsConcatenateFactors) {
  // reshape tensor<6x4> -> tensor<24>: ([i, j])->([ij])
  ShardingRuleBuilder builder({2}, {1});
  int64_t i = builder.addFactor(6);
  int64_t j = builder.addFactor(4);
  builder.mapOperand(0, 0, i).mapOperand(0, 1, j);
  builder.mapResult(0, 0, i).mapResult(0, 0, j);
  ShardingRule rule = builder.build();
  EXPECT_EQ(rule.str(), "([i, j])->([ij]) {i=6, j=4}");
  EXPECT_EQ(verifyMessage(rule, {{6, 4}}, {{24}}), "");
  EXPECT_EQ(
      verifyMessage(rule, {{6, 4}}, {{25}}),
      "sharding rule gives dim 0 of result #0 size 24 but it has size 25");
}

TEST(ShardingRuleTest, KindsPrintGrouped) {
  ShardingRuleBuilder builder({1}, {1});
  int64_t a = builder.addFactor(2, FactorKind::NeedReplication);
  int64_t b = builder.addFactor(3, FactorKind::Permutation);
  builder.mapOperand(0, 0, a).mapResult(0, 0, b);
  EXPECT_EQ(builder.build().str(),
            "([i])->([j]) {i=2, j=3} need_replication={i} permutation={j}");
}

TEST(ShardingRuleTest, UnusedAndRepeatedFactorsAreErrors) {
  ShardingRuleBuilder unused({1}, {1});
  int64_t i = unused.addFactor(4);
  unused.addFactor(1);
  unused.mapOperand(0, 0, i).mapResult(0, 0, i);
  EXPECT_EQ(verifyMessage(unused.build(), {{4}}, {{4}}),
            "sharding rule factor 'j' is not mapped by any tensor");

  ShardingRuleBuilder twice({2}, {0});
  int64_t k = twice.addFactor(4);
  twice.mapOperand(0, 0, k).mapOperand(0, 1, k);
  EXPECT_EQ(verifyMessage(twice.build(), {{4, 4}}, {{}}),
            "sharding rule maps factor 'i' twice in one tensor");
}

TEST(ShardingRuleTest, FactorNamesContinuePastTheAlphabet) {
  EXPECT_EQ(ShardingRule::getFactorName(0), "i");
  EXPECT_EQ(ShardingRule::getFactorName(17), "z");
  EXPECT_EQ(ShardingRule::getFactorName(18), "a");
  EXPECT_EQ(ShardingRule::getFactorName(25), "h");
  EXPECT_EQ(ShardingRule::getFactorName(26), "z_1");
  EXPECT_EQ(ShardingRule::getFactorName(30), "z_5");
}

} // namespace
