//===- OverlapCollectives.cpp - start collectives early, wait late --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTOVERLAPCOLLECTIVESPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-overlap-collectives"

using namespace mlir;
using namespace mlir::dist;

/// The futures of each of `types`.
static SmallVector<Type> futuresOf(TypeRange types) {
  SmallVector<Type> futures;
  for (Type type : types)
    futures.push_back(FutureType::get(cast<RankedTensorType>(type)));
  return futures;
}

/// Creates the start form of `op` at its place; null for other ops.
static Operation *createStart(OpBuilder &builder, Operation *op) {
  return llvm::TypeSwitch<Operation *, Operation *>(op)
      .Case([&](AllReduceOp op) {
        return AllReduceStartOp::create(builder, op.getLoc(),
                                        futuresOf(op.getResultTypes()),
                                        op.getInputs(), op.getReductionAttr(),
                                        op.getMeshAttr(), op.getAxes());
      })
      .Case([&](ReduceScatterOp op) {
        return ReduceScatterStartOp::create(
            builder, op.getLoc(), futuresOf(op.getResultTypes()),
            op.getInputs(), op.getScatterDimsAttr(), op.getReductionAttr(),
            op.getMeshAttr(), op.getAxes());
      })
      .Case([&](AllGatherOp op) {
        return AllGatherStartOp::create(
            builder, op.getLoc(), futuresOf(op.getResult().getType()).front(),
            op.getInput(), op.getGatherDimAttr(), op.getMeshAttr(),
            op.getAxes());
      })
      .Default([](Operation *) { return nullptr; });
}

/// Replaces `op` by its start form and a wait before its first user.
static void overlap(Operation *op) {
  OpBuilder builder(op);
  Operation *start = createStart(builder, op);
  if (!start)
    return;
  // The first op of the block that uses a result (the terminator at the
  // latest).
  Block *block = op->getBlock();
  Operation *firstUser = nullptr;
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && (!firstUser || inBlock->isBeforeInBlock(firstUser)))
        firstUser = inBlock;
    }
  builder.setInsertionPoint(firstUser ? firstUser : block->getTerminator());
  auto wait = WaitOp::create(builder, op->getLoc(), start->getResults());
  op->replaceAllUsesWith(wait.getResults());
  op->erase();
}

namespace {
struct DistOverlapCollectivesPass
    : public mlir::dist::impl::DistOverlapCollectivesPassBase<
          DistOverlapCollectivesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
        collectives.push_back(op);
    });
    auto countStarts = [&] {
      int64_t starts = 0;
      getOperation().walk([&](Operation *op) {
        starts +=
            isa<AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp>(op);
      });
      return starts;
    };
    int64_t before = countStarts();
    for (Operation *op : collectives)
      overlap(op);
    [[maybe_unused]] int64_t started = countStarts() - before;
    LLVM_DEBUG(llvm::dbgs()
               << DEBUG_TYPE << ": " << started << " of " << collectives.size()
               << " collectives started early\n");
  }
};
} // namespace
