//===- MapToGPU.cpp - linalg ops on buffers to mapped parallel loops ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The scheduler of dist-map-to-gpu: each stretch of a block rescheduled by
// levels of independent ops (buffer classes tell what may alias), a
// level's ops and row groups one launch (GPULaunch.cpp builds it), its
// products one grouped call; scalar ops (step counts, bias corrections)
// first recomputed by the ops that read them and pointwise chains fused
// (GPURewrites.cpp), so those wait for no launch of their own. The nests are
// plain scf.parallel loops with GPU mapping attributes, so the same IR
// becomes kernels (dist-lower-cuda) or CPU loops (the tests).
//
//===----------------------------------------------------------------------===//

#include "GPULaunch.h"
#include "GPURewrites.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTMAPTOGPUPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
/// Levels of a block's device work: each node one after every earlier
/// node it conflicts with (one writes a buffer the other reads or writes),
/// so nodes of one level are independent.
class Levels {
public:
  int64_t add(const Footprint &footprint) {
    int64_t level = 0;
    auto after = [&](int64_t earlier) { level = std::max(level, earlier + 1); };
    for (const void *key : footprint.reads) {
      after(lookup(lastWrite, key));
      after(lookup(lastWrite, nullptr));
      if (!key)
        after(anyWrite);
    }
    for (const void *key : footprint.writes) {
      after(lookup(lastAccess, key));
      after(lookup(lastAccess, nullptr));
      if (!key)
        after(anyAccess);
    }
    for (const void *key : footprint.reads) {
      raise(lastAccess[key], level);
      raise(anyAccess, level);
    }
    for (const void *key : footprint.writes) {
      raise(lastWrite[key], level);
      raise(anyWrite, level);
    }
    return level;
  }

private:
  static int64_t lookup(const DenseMap<const void *, int64_t> &map,
                        const void *key) {
    auto it = map.find(key);
    return it == map.end() ? -1 : it->second;
  }
  static void raise(int64_t &slot, int64_t level) {
    slot = std::max(slot, level);
  }
  DenseMap<const void *, int64_t> lastWrite, lastAccess;
  int64_t anyWrite = -1, anyAccess = -1;
};

} // namespace

bool mlir::train::isLibraryCall(Operation &op) {
  // (Not a grouped call, whose buffers are in its table: the scheduler
  // cannot see what it reads and writes, so it stays in place.)
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with("distopt_matmul_") &&
         !call.getCallee().starts_with("distopt_matmul_group_");
}

/// Reductions by a block and the ops around them on the same rows.
struct RowGroup {
  SmallVector<linalg::GenericOp> stages;
  SmallVector<int64_t> rows;
};

/// The row groups among `nodes` (a stretch's generics and calls, in order):
/// runs of consecutive generics on the same rows, row local, each with a
/// reduction (over all loops after the rows); a full reduction (no rows)
/// alone. The other generics stay one point per thread.
static SmallVector<RowGroup>
formRowGroups(ArrayRef<Operation *> nodes,
              const DenseMap<Operation *, Mappable> &mappable) {
  SmallVector<RowGroup> groups;
  SmallVector<linalg::GenericOp> run;
  std::optional<SmallVector<int64_t>> rows;
  auto finalize = [&] {
    if (rows && !run.empty())
      groups.push_back({run, *rows});
    run.clear();
    rows.reset();
  };
  for (Operation *node : nodes) {
    auto it = mappable.find(node);
    if (it == mappable.end()) {
      finalize();
      continue;
    }
    linalg::GenericOp op = it->second.op;
    if (std::optional<SmallVector<int64_t>> own = getReductionRows(op)) {
      if (rows && *own == *rows) {
        run.push_back(op);
        if (isRowLocal(run, rows->size()))
          continue;
        run.pop_back();
      }
      if (rows)
        finalize();
      if (own->empty()) {
        run = {op};
        rows = *own;
        finalize();
        continue;
      }
      // The ops before it that work on its rows join it.
      run.push_back(op);
      while (run.size() > 1 && (llvm::any_of(ArrayRef(run).drop_back(),
                                             [&](linalg::GenericOp before) {
                                               return getStageKind(before,
                                                                   *own) !=
                                                      StageKind::elementwise;
                                             }) ||
                                !isRowLocal(run, own->size())))
        run.erase(run.begin());
      if (!isRowLocal(run, own->size())) {
        run.clear();
        continue;
      }
      rows = *own;
      continue;
    }
    if (rows) {
      run.push_back(op);
      if (getStageKind(op, *rows) == StageKind::elementwise &&
          isRowLocal(run, rows->size()))
        continue;
      run.pop_back();
      finalize();
    }
    run.push_back(op);
  }
  finalize();
  return groups;
}

/// Maps the generics of `block` (`mappable`). Each stretch of the block
/// between ops the scheduler cannot move (anything with effects but the
/// generics, library calls, allocations and frees) is rescheduled by
/// levels: every generic and library call one level after the latest it
/// conflicts with; each level's generics are one nest (one launch; several
/// when their kernel arguments pass `maxArgumentBytes`) after its library
/// calls. The stretch's other ops move just before their first user (pure
/// ops, allocations) or just after the last user of their buffer (frees),
/// so buffers live no longer than before. Without `horizontal`, every
/// generic is its own nest, in place.
static void mapBlock(Block &block,
                     const DenseMap<Operation *, Mappable> &mappable,
                     int64_t blockSize, bool horizontal, bool rowReductions,
                     bool columnReductions, bool groupProducts,
                     int64_t maxArgumentBytes, BufferAliasing &aliasing) {
  if (!horizontal) {
    for (Operation &op : llvm::make_early_inc_range(block))
      if (auto it = mappable.find(&op); it != mappable.end())
        mapGroup({it->second}, blockSize);
    return;
  }
  auto isNode = [&](Operation &op) {
    return mappable.count(&op) || isLibraryCall(op);
  };
  auto isMovable = [&](Operation &op) {
    return isNode(op) || isa<memref::AllocOp, memref::DeallocOp>(op) ||
           (isPure(&op) && op.getNumRegions() == 0 &&
            !op.hasTrait<OpTrait::IsTerminator>());
  };
  SmallVector<Operation *> stretch;
  auto schedule = [&](Operation *anchor) {
    SmallVector<Operation *> nodes;
    for (Operation *op : stretch)
      if (isNode(*op))
        nodes.push_back(op);
    if (nodes.empty()) {
      stretch.clear();
      return;
    }
    // Row groups are one node each: their last stage stands for them.
    SmallVector<RowGroup> groups = rowReductions
                                       ? formRowGroups(nodes, mappable)
                                       : SmallVector<RowGroup>();
    DenseMap<Operation *, const RowGroup *> groupOf;
    DenseSet<Operation *> grouped;
    for (const RowGroup &group : groups) {
      groupOf[group.stages.back()] = &group;
      for (linalg::GenericOp stage : group.stages)
        grouped.insert(stage);
    }
    llvm::erase_if(nodes, [&](Operation *node) {
      return grouped.contains(node) && !groupOf.count(node);
    });
    DenseSet<Operation *> calls;
    for (Operation *node : nodes)
      if (isLibraryCall(*node))
        calls.insert(node);
    // Column reductions: a block per tile of their output elements.
    auto isColumns = [&](Operation *node) {
      auto it = mappable.find(node);
      return columnReductions && it != mappable.end() &&
             isColumnReduction(it->second.op);
    };
    // Levels, in the stretch's order.
    Levels levels;
    DenseMap<Operation *, Footprint> footprints;
    SmallVector<int64_t> nodeLevels;
    for (Operation *node : nodes) {
      Footprint &footprint = footprints[node];
      if (const RowGroup *group = groupOf.lookup(node))
        for (linalg::GenericOp stage : group->stages)
          footprint.add(stage, aliasing);
      else if (auto it = mappable.find(node); it != mappable.end())
        footprint.add(it->second.op, aliasing);
      else
        footprint.add(cast<func::CallOp>(node), aliasing);
      nodeLevels.push_back(levels.add(footprint));
    }
    // What no later node depends on (the optimizer's updates, the loss's
    // last write) waits for the last level: the updates of all parameters
    // then share a launch, as apex's multi_tensor_apply does.
    int64_t lastLevel = 0;
    for (int64_t level : nodeLevels)
      lastLevel = std::max(lastLevel, level);
    DenseSet<const void *> readLater, writtenLater;
    bool anyLater = false, unknownLater = false;
    for (size_t i = nodes.size(); i-- > 0;) {
      const Footprint &footprint = footprints[nodes[i]];
      bool unknown = footprint.reads.contains(nullptr);
      bool sink = !unknownLater && !(unknown && anyLater) &&
                  llvm::none_of(footprint.writes,
                                [&](const void *key) {
                                  return readLater.contains(key) ||
                                         writtenLater.contains(key);
                                }) &&
                  llvm::none_of(footprint.reads, [&](const void *key) {
                    return writtenLater.contains(key);
                  });
      if (sink && !calls.contains(nodes[i]))
        nodeLevels[i] = lastLevel;
      readLater.insert(footprint.reads.begin(), footprint.reads.end());
      writtenLater.insert(footprint.writes.begin(), footprint.writes.end());
      anyLater = true;
      unknownLater |= unknown;
    }
    std::map<int64_t, SmallVector<Operation *>> byLevel;
    for (auto [node, level] : llvm::zip_equal(nodes, nodeLevels))
      byLevel[level].push_back(node);
    // The frees, by the buffer class they free.
    DenseSet<Operation *> inStretch(stretch.begin(), stretch.end());
    DenseMap<const void *, SmallVector<Operation *>> freesOf;
    DenseMap<const void *, int64_t> usersLeft;
    for (Operation *op : stretch)
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        freesOf[aliasing.getClass(dealloc.getMemref())].push_back(op);
    for (Operation *node : nodes)
      for (const void *key : footprints[node].reads)
        ++usersLeft[key];
    // Emit before `anchor` in the new order: a node's operands' producers
    // from the stretch first (depth first), then the node, then the frees
    // whose buffer it used last.
    DenseSet<Operation *> placed;
    std::function<void(Operation *)> place = [&](Operation *op) {
      if (!inStretch.count(op) || !placed.insert(op).second)
        return;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          place(def);
      // (Nested uses: a generic's body may capture values.)
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && def->getBlock() == &block && def != op)
            place(def);
      });
      op->moveBefore(anchor);
    };
    auto release = [&](Operation *node) {
      for (const void *key : footprints[node].reads) {
        if (--usersLeft[key] != 0 || !key)
          continue;
        for (Operation *free : freesOf.lookup(key))
          place(free);
      }
    };
    for (auto &[level, members] : byLevel) {
      // The level's generics and row groups, in order, one launch until
      // their kernel arguments would pass maxArgumentBytes.
      SmallVector<Operation *> group;
      int64_t bytes = 0;
      SetVector<Value> values;
      auto flush = [&] {
        if (group.empty())
          return;
        SmallVector<Mappable> points;
        int64_t threads = 1;
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node))
            threads = std::max(
                threads, getRowThreads(rows->stages, rows->rows, blockSize));
          else if (isColumns(node))
            threads = std::max(
                threads, getColumnThreads(mappable.lookup(node), blockSize));
          else
            points.push_back(mappable.lookup(node));
        }
        if (!points.empty())
          threads = std::max(threads, getPointThreads(points, blockSize));
        // Built before the last member's last op, which is just before the
        // anchor.
        Operation *last = group.back();
        OpBuilder builder(last);
        Value zero = arith::ConstantIndexOp::create(builder, last->getLoc(), 0),
              one = arith::ConstantIndexOp::create(builder, last->getLoc(), 1);
        SmallVector<LaunchMember> launch;
        SmallVector<Value> scratches;
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node))
            launch.push_back(getRowGroupMember(
                builder, rows->stages, rows->rows,
                getRowThreads(rows->stages, rows->rows, blockSize), zero,
                scratches));
          else if (isColumns(node))
            launch.push_back(getColumnMember(builder, mappable.lookup(node),
                                             blockSize, zero, scratches));
          else
            launch.push_back(getPointMember(builder, mappable.lookup(node),
                                            threads, zero, one));
        }
        scf::ParallelOp grid =
            emitLaunch(builder, last->getLoc(), launch, threads, zero, one);
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node)) {
            for (linalg::GenericOp stage : rows->stages)
              stage.erase();
          } else {
            node->erase();
          }
        }
        grid->moveBefore(anchor);
        OpBuilder after(anchor);
        for (Value buffer : scratches)
          memref::DeallocOp::create(after, grid.getLoc(), buffer);
        group.clear();
        values.clear();
        bytes = 0;
      };
      // The level's library calls first, its products of each element
      // type as one call (their frees after it).
      SmallVector<Operation *> levelCalls;
      for (Operation *node : members)
        if (calls.contains(node)) {
          place(node);
          levelCalls.push_back(node);
        }
      if (groupProducts)
        for (SmallVector<func::CallOp> &products :
             getGroupableProducts(levelCalls))
          if (products.size() >= 2) {
            OpBuilder builder(anchor);
            train::groupProducts(builder, products);
          }
      for (Operation *node : levelCalls)
        release(node);
      for (Operation *node : members) {
        if (calls.contains(node))
          continue;
        // The member's producers first; the launch is built before the
        // last member, which is then just before the anchor.
        for (Value v : footprints[node].values)
          if (Operation *def = v.getDefiningOp())
            place(def);
        const RowGroup *rows = groupOf.lookup(node);
        // (A row group's or column reduction's scratch buffers: one of
        // rank 2 per reduction output.)
        int64_t scratchBytes = 0;
        constexpr int64_t kScratchBytes = 8 * (3 + 2 * 2);
        if (rows)
          for (linalg::GenericOp stage : rows->stages)
            if (getStageKind(stage, rows->rows) == StageKind::reduction)
              scratchBytes += stage.getNumDpsInits() * kScratchBytes;
        if (isColumns(node))
          scratchBytes +=
              mappable.lookup(node).op.getNumDpsInits() * kScratchBytes;
        int64_t more = scratchBytes;
        for (Value v : footprints[node].values)
          if (!values.count(v))
            more += Footprint::getArgumentBytes(v);
        if (!group.empty() && bytes + more > maxArgumentBytes)
          flush();
        for (Value v : footprints[node].values)
          if (values.insert(v))
            bytes += Footprint::getArgumentBytes(v);
        bytes += scratchBytes;
        if (rows) {
          for (linalg::GenericOp stage : rows->stages) {
            placed.insert(stage);
            stage->moveBefore(anchor);
          }
        } else {
          placed.insert(node);
          node->moveBefore(anchor);
        }
        group.push_back(node);
      }
      // (The frees after the whole level's launches.)
      flush();
      // (The generics are erased: only their footprints are left.)
      for (Operation *node : members)
        if (!calls.contains(node))
          release(node);
    }
    // What no node needed, in its order.
    for (Operation *op : stretch)
      if (!placed.count(op))
        op->moveBefore(anchor);
    stretch.clear();
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isMovable(op)) {
      stretch.push_back(&op);
      continue;
    }
    schedule(&op);
  }
  // (A block's terminator is never movable: the last stretch ends there.)
}

namespace {
struct DistMapToGPUPass
    : public mlir::train::impl::DistMapToGPUPassBase<DistMapToGPUPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (blockSize >= 1 && blockSize <= 1024)
      return success();
    return emitError(UnknownLoc::get(context))
           << "dist-map-to-gpu: block-size must be 1 to 1024, got "
           << blockSize.getValue();
  }

  void runOnOperation() override {
    // Copies and named ops as generics first.
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<memref::CopyOp, linalg::LinalgOp>(op) &&
          !op->getParentOfType<linalg::LinalgOp>())
        ops.push_back(op);
    });
    SmallVector<linalg::GenericOp> generics;
    for (Operation *op : ops) {
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        rewriter.setInsertionPoint(copy);
        op = linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                                    copy.getTarget());
        rewriter.eraseOp(copy);
      }
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        generics.push_back(generic);
        continue;
      }
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, linalgOp);
      if (failed(generic)) {
        op->emitOpError("cannot be generalized to be mapped to a GPU grid");
        return signalPassFailure();
      }
      generics.push_back(*generic);
    }
    BufferAliasing aliasing(getOperation());
    if (inlineScalars || fusePointwise) {
      SetVector<Block *> withGenerics;
      for (linalg::GenericOp generic : generics)
        withGenerics.insert(generic->getBlock());
      for (Block *block : withGenerics) {
        if (inlineScalars)
          train::inlineScalars(*block, aliasing);
        if (fusePointwise)
          train::fusePointwise(*block, aliasing);
      }
      generics.clear();
      for (Block *block : withGenerics)
        for (auto generic : block->getOps<linalg::GenericOp>())
          generics.push_back(generic);
    }
    // Each block's generics, in order; an op without points does nothing.
    DenseMap<Operation *, Mappable> mappable;
    SetVector<Block *> blocks;
    for (linalg::GenericOp generic : generics) {
      FailureOr<Mappable> mapped = getMappable(generic);
      if (failed(mapped))
        return signalPassFailure();
      if (mapped->points == 0) {
        generic.erase();
        continue;
      }
      if (vectorAccess)
        mapped->width = getVectorWidth(generic);
      mappable[generic] = *mapped;
      blocks.insert(generic->getBlock());
    }
    // (A block of products alone is scheduled too: its products grouped.)
    getOperation()->walk([&](func::CallOp call) {
      if (isLibraryCall(*call))
        blocks.insert(call->getBlock());
    });
    for (Block *block : blocks)
      mapBlock(*block, mappable, blockSize, horizontal, rowReductions,
               columnReductions, groupProducts, maxArgumentBytes, aliasing);
  }
};
} // namespace
