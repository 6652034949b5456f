//===- TestInterfaces.cpp - write sharding rules and costs onto ops -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Test passes that make every op's ShardingRuleOpInterface rule and
// CostOpInterface cost visible to FileCheck as discardable attributes.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Interfaces/CostOpInterface.h"
#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct TestShardingRulePass
    : public PassWrapper<TestShardingRulePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShardingRulePass)

  StringRef getArgument() const final { return "train-test-sharding-rule"; }
  StringRef getDescription() const final {
    return "Write every op's sharding rule as a 'train.sharding_rule' "
           "attribute (after checking it against the op's shapes)";
  }

  void runOnOperation() override {
    Builder builder(&getContext());
    WalkResult result =
        getOperation().walk([&](dist::ShardingRuleOpInterface op) {
          dist::ShardingRule rule = op.getShardingRule();
          if (failed(dist::verifyShardingRule(op, rule)))
            return WalkResult::interrupt();
          op->setAttr(train::TrainDialect::kShardingRuleAttrName,
                      builder.getStringAttr(rule.str()));
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

struct TestCostPass
    : public PassWrapper<TestCostPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCostPass)

  StringRef getArgument() const final { return "train-test-cost"; }
  StringRef getDescription() const final {
    return "Write every op's cost as a 'train.cost' attribute";
  }

  void runOnOperation() override {
    Builder builder(&getContext());
    getOperation().walk([&](dist::CostOpInterface op) {
      dist::OpCost cost = op.getCost();
      op->setAttr(train::TrainDialect::kCostAttrName,
                  builder.getDictionaryAttr({
                      builder.getNamedAttr(
                          "flops", builder.getI64IntegerAttr(cost.flops)),
                      builder.getNamedAttr(
                          "read", builder.getI64IntegerAttr(cost.bytesRead)),
                      builder.getNamedAttr("written", builder.getI64IntegerAttr(
                                                          cost.bytesWritten)),
                  }));
    });
  }
};
} // namespace

namespace mlir::train::test {
void registerTestInterfacePasses() {
  PassRegistration<TestShardingRulePass>();
  PassRegistration<TestCostPass>();
}
} // namespace mlir::train::test
