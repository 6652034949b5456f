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

/// `arg` and every slice, reshape or cast of it (transitively).
static SmallVector<Value> getViews(BlockArgument arg) {
  SmallVector<Value> views = {arg};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
              tensor::ExpandShapeOp, tensor::CastOp, tensor::ReshapeOp>(user))
        views.append(user->result_begin(), user->result_end());
  return views;
}

/// True when nothing reads `arg` after `producer` (an op of the entry
/// block): every user of it or of a view of it is `producer` or an op (or
/// inside an op) before it.
static bool isDeadAfter(BlockArgument arg, Operation *producer) {
  Block *block = producer->getBlock();
  for (Value view : getViews(arg))
    for (Operation *user : view.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor ||
          (ancestor != producer && !ancestor->isBeforeInBlock(producer)))
        return false;
    }
  return true;
}

/// True when bufferization writes `value` over `arg`: `value` is `arg`,
/// or the result of a destination-style op (or an insert_slice, reshape
/// or cast) whose destination is, transitively, `arg` or a view of it,
/// and nothing reads `arg` after the op that writes it first (a
/// scatter_add into an embedding table that a gather then reads writes a
/// copy).
static bool isUpdateOf(Value value, BlockArgument arg) {
  Operation *writer = nullptr;
  while (value != arg) {
    auto result = dyn_cast<OpResult>(value);
    if (!result)
      return false;
    Operation *op = result.getOwner();
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::CastOp,
            tensor::ReshapeOp>(op)) {
      value = op->getOperand(0);
      continue;
    }
    writer = op;
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(writer)) {
      value = insert.getDest();
      continue;
    }
    auto dps = dyn_cast<DestinationStyleOpInterface>(writer);
    OpOperand *init = dps ? dps.getTiedOpOperand(result) : nullptr;
    if (!init)
      return false;
    value = init->get();
  }
  Block *block = arg.getOwner();
  Operation *first = writer ? block->findAncestorOpInBlock(*writer) : nullptr;
  return !writer || (first && isDeadAfter(arg, first));
}

/// Computes `value` into `state` where the producer cannot: a
/// `linalg.copy` into it just before `ret`, returned instead, when nothing
/// `ret` returns is a view of `state` (which the copy would overwrite).
static void copyBack(func::ReturnOp ret, OpOperand &returned,
                     BlockArgument state) {
  SmallVector<Value> views = getViews(state);
  for (Value operand : ret.getOperands())
    if (llvm::is_contained(views, operand))
      return;
  OpBuilder builder(ret);
  auto copy = linalg::CopyOp::create(builder, returned.get().getLoc(),
                                     returned.get(), state);
  returned.set(copy.getResult(0));
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

/// Makes the producer of `result` compute it into `state` (see the pass's
/// description); false when that is not safe.
static bool computeInto(Value result, BlockArgument state) {
  auto produced = dyn_cast<OpResult>(result);
  if (!produced)
    return false;
  Operation *producer = produced.getOwner();
  auto dps = dyn_cast<DestinationStyleOpInterface>(producer);
  if (!dps || producer->getBlock() != state.getOwner() ||
      !dps.hasPureTensorSemantics())
    return false;
  OpOperand *init = dps.getTiedOpOperand(produced);
  if (!init || !init->get().getDefiningOp<tensor::EmptyOp>())
    return false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(producer))
    if (linalgOp.payloadUsesValueFromOperand(init))
      return false;
  if (!isDeadAfter(state, producer) ||
      !readsOnlyElementwise(producer, *init, state))
    return false;
  init->set(state);
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
      OpOperand &returned = ret->getOpOperand(value.index);
      if (isUpdateOf(returned.get(), state))
        continue;
      if (!computeInto(returned.get(), state))
        copyBack(ret, returned, state);
    }
  }
};
} // namespace
