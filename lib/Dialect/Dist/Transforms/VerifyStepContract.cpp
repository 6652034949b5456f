//===- VerifyStepContract.cpp - check the step contract (dist-verify) -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTVERIFYPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
using train::Role;
using train::StepValue;
using train::TrainingStep;

/// True when `sharding` (null: none) splits nothing and sums nothing.
static bool isWhole(ShardingAttr sharding) {
  return !sharding || sharding.isReplicated();
}

/// True when `a` and `b` lay a value out alike (no sharding is whole).
static bool isSameLayout(ShardingAttr a, ShardingAttr b) {
  if (isWhole(a) || isWhole(b))
    return isWhole(a) && isWhole(b);
  return a == b;
}

/// Prints `sharding` for messages; `whole` when there is none.
static std::string print(ShardingAttr sharding) {
  if (!sharding)
    return "whole (no dist.sharding)";
  std::string text;
  llvm::raw_string_ostream(text) << sharding;
  return text;
}

LogicalResult mlir::dist::verifyStepContract(FunctionOpInterface func) {
  TrainingStep step = TrainingStep::get(func);
  // A pipeline's loss is on one device's program (checked for the module
  // in verifyPrograms).
  if (failed(step.verify(!func->hasAttr(DistDialect::kPlaceAttrName))))
    return failure();
  auto argSharding = [&](const StepValue &value) {
    return func.getArgAttrOfType<ShardingAttr>(value.index,
                                               DistDialect::kShardingAttrName);
  };
  auto resultSharding = [&](const StepValue &value) {
    return func.getResultAttrOfType<ShardingAttr>(
        value.index, DistDialect::kShardingAttrName);
  };
  llvm::StringMap<const StepValue *> arguments;
  for (const StepValue &arg : step.arguments) {
    arguments[arg.name.getValue()] = &arg;
    ShardingAttr sharding = argSharding(arg);
    if (sharding && sharding.isPartial())
      return step.emitArgumentError(arg)
             << "is a pending partial sum " << sharding
             << ": a step's arguments are whole values or their slices";
    if (*arg.role == Role::hyper && !isWhole(sharding))
      return step.emitArgumentError(arg)
             << "is split as " << sharding
             << ": a hyper-parameter is the same on every device";
  }
  for (const StepValue &result : step.results) {
    ShardingAttr sharding = resultSharding(result);
    if (sharding && sharding.isPartial())
      return step.emitResultError(result)
             << "comes back as a pending partial sum " << sharding
             << ": a step's results are whole values or their slices";
    if (*result.role == Role::loss || *result.role == Role::metric) {
      if (!isWhole(sharding))
        return step.emitResultError(result)
               << "comes back split as " << sharding << ": a "
               << train::stringifyRole(*result.role)
               << " is whole on every device";
      continue;
    }
    if (*result.role != Role::param && *result.role != Role::opt_state)
      continue;
    const StepValue *arg = arguments.lookup(result.name.getValue());
    ShardingAttr expected = argSharding(*arg);
    if (!isSameLayout(sharding, expected))
      return step.emitResultError(result)
             << "comes back as " << print(sharding) << " but "
             << TrainingStep::describe("argument", *arg) << " is "
             << print(expected)
             << ": a state result must keep its argument's sharding (the "
                "step contract; the runner feeds it back as the argument)";
  }
  return success();
}

namespace {
struct DistVerifyPass
    : public mlir::dist::impl::DistVerifyPassBase<DistVerifyPass> {
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](FunctionOpInterface func) {
      if (TrainingStep::isTrainingStep(func) &&
          failed(verifyStepContract(func)))
        failedAny = true;
    });
    if (failedAny || failed(verifyPrograms(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
