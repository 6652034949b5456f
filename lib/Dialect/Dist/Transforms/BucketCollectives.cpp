//===- BucketCollectives.cpp - fuse gradient reductions into buckets ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Interfaces/OpCost.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Debug.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTBUCKETCOLLECTIVESPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-bucket-collectives"

using namespace mlir;
using namespace mlir::dist;

// The pass buckets all-reduces (data parallelism) and reduce-scatters
// (ZeRO stages 2 and 3) alike: both are variadic reductions over a group.

/// True when `a` and `b` may share one collective.
template <typename OpT> static bool sameGroup(OpT a, OpT b) {
  return a.getMeshAttr() == b.getMeshAttr() && a.getAxes() == b.getAxes() &&
         a.getReduction() == b.getReduction();
}

template <typename OpT> static int64_t bytesOf(OpT op) {
  int64_t bytes = 0;
  for (Type type : op.getInputs().getTypes())
    bytes += getTensorBytes(type);
  return bytes;
}

/// One variadic op with the inputs of all `members`.
static Operation *createFused(OpBuilder &builder, ArrayRef<AllReduceOp> members,
                              TypeRange types, ValueRange inputs) {
  AllReduceOp last = members.back();
  return AllReduceOp::create(builder, last.getLoc(), types, inputs,
                             last.getReductionAttr(), last.getMeshAttr(),
                             last.getAxes());
}

static Operation *createFused(OpBuilder &builder,
                              ArrayRef<ReduceScatterOp> members,
                              TypeRange types, ValueRange inputs) {
  ReduceScatterOp last = members.back();
  SmallVector<int64_t> dims;
  for (ReduceScatterOp member : members)
    llvm::append_range(dims, member.getScatterDims());
  return ReduceScatterOp::create(
      builder, last.getLoc(), types, inputs, builder.getDenseI64ArrayAttr(dims),
      last.getReductionAttr(), last.getMeshAttr(), last.getAxes());
}

/// Replaces `members` (in program order, one block) by one variadic op at
/// the last member's place; ops between that use the earlier members'
/// results (transitively) move after it.
template <typename OpT> static void fuse(ArrayRef<OpT> members) {
  if (members.size() < 2)
    return;
  OpT last = members.back();
  llvm::DenseSet<Value> tainted;
  for (OpT member : members.drop_back())
    for (Value result : member.getResults())
      tainted.insert(result);
  SmallVector<Operation *> toMove;
  for (Operation *op = members.front()->getNextNode(); op != last;
       op = op->getNextNode()) {
    if (!llvm::any_of(op->getOperands(),
                      [&](Value v) { return tainted.contains(v); }))
      continue;
    toMove.push_back(op);
    for (Value result : op->getResults())
      tainted.insert(result);
  }
  SmallVector<Value> inputs;
  SmallVector<Type> types;
  for (OpT member : members) {
    llvm::append_range(inputs, member.getInputs());
    llvm::append_range(types, member.getResultTypes());
  }
  OpBuilder builder(last);
  builder.setInsertionPointAfter(last);
  Operation *fused = createFused(builder, members, types, inputs);
  Operation *insertAfter = fused;
  for (Operation *op : toMove) {
    op->moveAfter(insertAfter);
    insertAfter = op;
  }
  unsigned next = 0;
  for (OpT member : members) {
    for (Value result : member.getResults())
      result.replaceAllUsesWith(fused->getResult(next++));
    member.erase();
  }
}

namespace {
struct DistBucketCollectivesPass
    : public mlir::dist::impl::DistBucketCollectivesPassBase<
          DistBucketCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (!(bucketMb > 0) || !(firstBucketMb > 0)) {
      getOperation().emitError("dist-bucket-collectives needs positive "
                               "bucket-mb and first-bucket-mb, got ")
          << bucketMb << " and " << firstBucketMb;
      return signalPassFailure();
    }
    [[maybe_unused]] int64_t before =
        tallyCommunication(getOperation()).collectives;
    getOperation().walk([&](Block *block) {
      bucketBlock<AllReduceOp>(*block);
      bucketBlock<ReduceScatterOp>(*block);
    });
    [[maybe_unused]] int64_t after =
        tallyCommunication(getOperation()).collectives;
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE << ": " << before
                            << " collectives into " << after << "\n");
  }

  /// Moves `op` right after the last definition of its inputs in `block`
  /// (after the all-reduces already moved there, so their order is kept):
  /// the all-reduce then sits where its gradient becomes ready, so program
  /// order is backward order. `placed` maps each anchor (null: the block's
  /// start) to the last all-reduce moved after it.
  template <typename OpT>
  static void hoist(OpT op, Block &block,
                    llvm::DenseMap<Operation *, Operation *> &placed) {
    Operation *after = nullptr;
    for (Value input : op.getInputs()) {
      Operation *def = input.getDefiningOp();
      if (!def || def->getBlock() != &block)
        continue;
      if (!after || after->isBeforeInBlock(def))
        after = def;
    }
    Operation *&last = placed[after];
    if (last)
      op->moveAfter(last);
    else if (after)
      op->moveAfter(after);
    else
      op->moveBefore(&block.front());
    last = op;
  }

  template <typename OpT> void bucketBlock(Block &block) {
    SmallVector<OpT> candidates;
    for (Operation &op : block)
      if (auto collective = dyn_cast<OpT>(op))
        candidates.push_back(collective);
    llvm::DenseMap<Operation *, Operation *> placed;
    for (OpT op : candidates)
      hoist(op, block, placed);
    candidates.clear();
    for (Operation &op : block)
      if (auto collective = dyn_cast<OpT>(op))
        candidates.push_back(collective);
    if (candidates.size() < 2)
      return;
    SmallVector<SmallVector<OpT>> buckets;
    SmallVector<OpT> bucket;
    int64_t bucketBytes = 0;
    bool first = true;
    llvm::DenseSet<Value> tainted;
    Operation *scanned = nullptr;
    auto close = [&]() {
      if (!bucket.empty()) {
        buckets.push_back(bucket);
        first = false;
      }
      bucket.clear();
      bucketBytes = 0;
      tainted.clear();
      scanned = nullptr;
    };
    for (OpT op : candidates) {
      double capacity = (first ? firstBucketMb : bucketMb) * 1024 * 1024;
      // Track what depends on the bucket's results up to this op.
      if (!bucket.empty()) {
        for (Operation *it = scanned->getNextNode(); it != op;
             it = it->getNextNode()) {
          if (llvm::any_of(it->getOperands(),
                           [&](Value v) { return tainted.contains(v); }))
            for (Value result : it->getResults())
              tainted.insert(result);
        }
        bool dependent = llvm::any_of(
            op.getInputs(), [&](Value v) { return tainted.contains(v); });
        if (dependent || !sameGroup(bucket.front(), op) ||
            bucketBytes + bytesOf(op) > capacity)
          close();
      }
      bucket.push_back(op);
      bucketBytes += bytesOf(op);
      for (Value result : op.getResults())
        tainted.insert(result);
      scanned = op;
    }
    close();
    for (ArrayRef<OpT> members : buckets)
      fuse(members);
  }
};
} // namespace
