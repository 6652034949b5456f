//===- StateInPlace.cpp - state results into their arguments' buffers ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A state result not built as an update of its argument (a batch norm's
// running statistics) gets a tensor.empty init, hence a new buffer every
// step. This pass makes its producer compute into the argument it
// replaces, where that is safe, so bufferization writes it in place.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTSTATEINPLACEPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True for the roles of state a step returns in place of its argument.
static bool isState(const train::StepValue &value) {
  return value.role == train::Role::param ||
         value.role == train::Role::opt_state;
}

/// True when nothing reads `arg` after `producer` (an op of the entry
/// block): every user, and every user of a slice, reshape or cast of it,
/// is `producer` or an op (or inside an op) before it.
static bool isDeadAfter(BlockArgument arg, Operation *producer) {
  Block *block = producer->getBlock();
  SmallVector<Value> aliases = {arg};
  while (!aliases.empty()) {
    Value value = aliases.pop_back_val();
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor ||
          (ancestor != producer && !ancestor->isBeforeInBlock(producer)))
        return false;
      if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
              tensor::ExpandShapeOp, tensor::CastOp, tensor::ReshapeOp>(user))
        aliases.append(user->result_begin(), user->result_end());
    }
  }
  return true;
}

/// True when `producer` may write `init`'s result over `arg` while reading
/// it: it does not read it, or reads each element only where it writes it
/// (a generic of parallel loops reading `arg` through `init`'s map).
static bool readsOnlyElementwise(Operation *producer, OpOperand &init,
                                 BlockArgument arg) {
  auto reads = [&](OpOperand &operand) {
    return operand.getOwner() == producer && operand.get() == arg;
  };
  if (llvm::none_of(arg.getUses(), reads))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(producer);
  if (!generic || generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  AffineMap written = generic.getMatchingIndexingMap(&init);
  for (OpOperand &operand : generic->getOpOperands())
    if (reads(operand) && generic.getMatchingIndexingMap(&operand) != written)
      return false;
  return true;
}

namespace {
struct DistStateInPlacePass
    : public mlir::train::impl::DistStateInPlacePassBase<DistStateInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(entry.getTerminator());
    if (!ret)
      return;
    // The state arguments by name and part: a state result replaces the
    // argument of its name, part, role and type.
    train::TrainingStep step = train::TrainingStep::get(func);
    llvm::StringMap<const train::StepValue *> stateArgs;
    for (const train::StepValue &arg : step.arguments)
      if (isState(arg) && arg.name)
        stateArgs[arg.getKey()] = &arg;
    for (const train::StepValue &value : step.results) {
      const train::StepValue *arg = isState(value) && value.name
                                        ? stateArgs.lookup(value.getKey())
                                        : nullptr;
      if (!arg || arg->role != value.role || arg->type != value.type)
        continue;
      // Each argument at most once.
      stateArgs.erase(value.getKey());
      BlockArgument state = func.getArgument(arg->index);
      auto result = dyn_cast<OpResult>(ret.getOperand(value.index));
      if (!result)
        continue;
      Operation *producer = result.getOwner();
      auto dps = dyn_cast<DestinationStyleOpInterface>(producer);
      if (!dps || producer->getBlock() != &entry ||
          !dps.hasPureTensorSemantics())
        continue;
      OpOperand *init = dps.getTiedOpOperand(result);
      if (!init || !init->get().getDefiningOp<tensor::EmptyOp>())
        continue;
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(producer))
        if (linalgOp.payloadUsesValueFromOperand(init))
          continue;
      if (!isDeadAfter(state, producer) ||
          !readsOnlyElementwise(producer, *init, state))
        continue;
      init->set(state);
    }
  }
};
} // namespace
