//===- SplitBarriers.cpp - block barriers as sibling loops for the CPU ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-map-to-gpu's row groups put `gpu.barrier` between the stages of a
// thread loop: on a GPU every thread of the block finishes a stage before
// any starts the next. Run as CPU loops (dist-lower-cpu{gpu-mapped}), the
// threads of a block are iterations of one loop, so the barrier becomes the
// end of a loop: each stage its own thread loop over the same range, one
// after the other. Stages share values through memory only; the pure ops
// a stage uses from an earlier one (index arithmetic) are recomputed in it.
//
// A warp reduction (gpu.subgroup_reduce) reads the other lanes' values: on
// the CPU each lane stores its value to an exchange buffer, and after a
// barrier combines its cluster's values in the order of the GPU's butterfly
// shuffles. A barrier under an scf.if (a member's guard) splits the if into
// one per stage, on the same condition.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTSPLITBARRIERSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// The threads of a warp (NVIDIA's), a gpu.subgroup_reduce's lanes
/// without a cluster size.
static constexpr int64_t kSubgroupSize = 32;

/// The mapped loop of `loop`'s processor, or false.
static bool isMappedTo(scf::ParallelOp loop, gpu::Processor processor) {
  auto mapping = loop->getAttrOfType<ArrayAttr>(gpu::getMappingAttrName());
  if (!mapping || mapping.size() != 1)
    return false;
  auto dim = dyn_cast<gpu::ParallelLoopDimMappingAttr>(mapping[0]);
  return dim && dim.getProcessor() == processor;
}

/// `loop`'s trip count: a loop from 0 by 1 to a constant, or none.
static std::optional<int64_t> getCount(scf::ParallelOp loop) {
  if (!isConstantIntValue(loop.getLowerBound()[0], 0) ||
      !isConstantIntValue(loop.getStep()[0], 1))
    return std::nullopt;
  return getConstantIntValue(loop.getUpperBound()[0]);
}

/// Each gpu.subgroup_reduce in thread loop `loop` as a memory exchange:
/// every lane stores its value at its slot of a buffer of the block's
/// threads (a row per block of the enclosing block loop, allocated around
/// it), a barrier, then every lane combines its cluster's slots pairwise,
/// neighbours first, as the butterfly of shuffles (xor 1, 2, 4, ...) does.
static LogicalResult expandSubgroupReduces(scf::ParallelOp loop) {
  SmallVector<gpu::SubgroupReduceOp> reduces;
  loop.walk([&](gpu::SubgroupReduceOp op) { reduces.push_back(op); });
  if (reduces.empty())
    return success();
  std::optional<int64_t> threads = getCount(loop);
  if (!threads)
    return reduces.front().emitOpError(
        "is in a thread loop whose range is not a constant from 0 by 1");
  // A row of the buffer per block of the block loop around, when there
  // is one: the blocks may run at once.
  auto grid = loop->getParentOfType<scf::ParallelOp>();
  std::optional<int64_t> blocks;
  if (grid && isMappedTo(grid, gpu::Processor::BlockX)) {
    blocks = getCount(grid);
    if (!blocks)
      return reduces.front().emitOpError(
          "is in a block loop whose range is not a constant from 0 by 1");
  } else {
    grid = nullptr;
  }
  Operation *outermost = grid ? grid.getOperation() : loop.getOperation();
  Value tx = loop.getInductionVars()[0];
  for (gpu::SubgroupReduceOp op : reduces) {
    int64_t lanes = op.getClusterSize().value_or(kSubgroupSize);
    if (op.getClusterStride() != 1 || isa<VectorType>(op.getType()))
      return op.emitOpError("has no CPU form: only scalar reductions of "
                            "consecutive lanes are emulated");
    Location loc = op.getLoc();
    OpBuilder builder(outermost);
    // (Whole clusters: the threads past the last whole one, when there are
    // any, are not the ones that reduce, as a warp past the threads would
    // be missing lanes on the GPU.)
    SmallVector<int64_t> shape = {
        static_cast<int64_t>(llvm::alignTo(*threads, lanes))};
    if (grid)
      shape.insert(shape.begin(), *blocks);
    auto buffer = memref::AllocOp::create(builder, loc,
                                          MemRefType::get(shape, op.getType()));
    builder.setInsertionPointAfter(outermost);
    memref::DeallocOp::create(builder, loc, buffer);
    builder.setInsertionPoint(op);
    auto slot = [&](Value lane) -> SmallVector<Value> {
      if (grid)
        return {grid.getInductionVars()[0], lane};
      return {lane};
    };
    memref::StoreOp::create(builder, loc, op.getValue(), buffer, slot(tx));
    gpu::BarrierOp::create(builder, loc);
    AffineExpr t = builder.getAffineDimExpr(0);
    SmallVector<Value> values;
    for (int64_t j = 0; j < lanes; ++j) {
      Value lane = affine::AffineApplyOp::create(
          builder, loc, AffineMap::get(1, 0, t.floorDiv(lanes) * lanes + j),
          tx);
      values.push_back(
          memref::LoadOp::create(builder, loc, buffer, slot(lane)));
    }
    vector::CombiningKind kind = gpu::convertReductionKind(op.getOp());
    while (values.size() > 1) {
      SmallVector<Value> next;
      for (size_t j = 0; j < values.size(); j += 2)
        next.push_back(vector::makeArithReduction(builder, loc, kind, values[j],
                                                  values[j + 1]));
      values = std::move(next);
    }
    op.replaceAllUsesWith(values.front());
    op.erase();
  }
  return success();
}

/// Moves `stage` (ops of `source`, in order) to the end of `target`, in
/// `scope`: what they use of the rest of `source` is recomputed there
/// (pure ops, depth first); fails at the first value that is not pure to
/// recompute. `mapping` holds what is already mapped (a loop's index).
static LogicalResult moveStage(ArrayRef<Operation *> stage, Block *source,
                               Block *target, Operation *scope,
                               IRMapping &mapping) {
  OpBuilder inside = OpBuilder::atBlockBegin(target);
  DenseSet<Operation *> inStage(stage.begin(), stage.end());
  std::function<LogicalResult(Value)> bring =
      [&](Value value) -> LogicalResult {
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != source || inStage.contains(def) ||
        mapping.contains(value))
      return success();
    if (!isPure(def) || def->getNumRegions() != 0) {
      def->emitOpError("is used across a gpu.barrier of a thread loop and "
                       "is not pure to recompute");
      return failure();
    }
    for (Value operand : def->getOperands())
      if (failed(bring(operand)))
        return failure();
    inside.clone(*def, mapping);
    return success();
  };
  for (Operation *op : stage) {
    WalkResult walked = op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (failed(bring(operand)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return failure();
  }
  for (Operation *op : stage)
    op->moveBefore(target->getTerminator());
  for (auto [from, to] : mapping.getValueMap())
    from.replaceUsesWithIf(to, [&](OpOperand &use) {
      return scope->isProperAncestor(use.getOwner());
    });
  return success();
}

/// The ops of `block` (but its terminator) between its barriers.
static SmallVector<SmallVector<Operation *>> getStages(Block *block) {
  SmallVector<SmallVector<Operation *>> stages(1);
  for (Operation &op : block->without_terminator()) {
    if (isa<gpu::BarrierOp>(op)) {
      stages.emplace_back();
      continue;
    }
    stages.back().push_back(&op);
  }
  return stages;
}

/// Erases the barriers of `block`.
static void eraseBarriers(Block *block) {
  for (Operation &op : llvm::make_early_inc_range(block->without_terminator()))
    if (isa<gpu::BarrierOp>(op))
      op.erase();
}

/// Splits `loop` (a thread loop) at its top-level barriers; fails at the
/// first value a later stage would need that is not pure to recompute.
static LogicalResult splitAtBarriers(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  SmallVector<SmallVector<Operation *>> stages = getStages(body);
  if (stages.size() == 1)
    return success();
  // From the last stage back, each loop right after the original one: a
  // stage's ops are still in the original body while a later stage
  // recomputes what it needs of them (CSE may have merged equal index
  // arithmetic of several stages into the first).
  OpBuilder builder(loop);
  for (auto &stage : llvm::reverse(llvm::drop_begin(stages))) {
    builder.setInsertionPointAfter(loop);
    auto next =
        scf::ParallelOp::create(builder, loop.getLoc(), loop.getLowerBound(),
                                loop.getUpperBound(), loop.getStep());
    next->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    IRMapping mapping;
    mapping.map(loop.getInductionVars(), next.getInductionVars());
    if (failed(moveStage(stage, body, next.getBody(), next, mapping)))
      return failure();
  }
  eraseBarriers(body);
  return success();
}

/// Splits `op` (an scf.if with barriers at the top of its regions) into
/// one if per stage on the same condition, barriers between them: stage k
/// of the then region and stage k of the else region in the k-th.
static LogicalResult splitIf(scf::IfOp op) {
  SmallVector<SmallVector<Operation *>> thenStages = getStages(op.thenBlock());
  SmallVector<SmallVector<Operation *>> elseStages(1);
  if (op.elseBlock())
    elseStages = getStages(op.elseBlock());
  size_t count = std::max(thenStages.size(), elseStages.size());
  if (count == 1)
    return success();
  if (op.getNumResults() != 0)
    return op.emitOpError("yields values and holds a gpu.barrier of a thread "
                          "loop, so its stages cannot run one after the other");
  OpBuilder builder(op);
  for (size_t k = count - 1; k >= 1; --k) {
    builder.setInsertionPointAfter(op);
    bool withElse = k < elseStages.size() && !elseStages[k].empty();
    auto next =
        scf::IfOp::create(builder, op.getLoc(), op.getCondition(), withElse);
    IRMapping thenMapping, elseMapping;
    if (k < thenStages.size() &&
        failed(moveStage(thenStages[k], op.thenBlock(), next.thenBlock(), next,
                         thenMapping)))
      return failure();
    if (withElse && failed(moveStage(elseStages[k], op.elseBlock(),
                                     next.elseBlock(), next, elseMapping)))
      return failure();
    builder.setInsertionPointAfter(op);
    gpu::BarrierOp::create(builder, op.getLoc());
  }
  eraseBarriers(op.thenBlock());
  if (op.elseBlock())
    eraseBarriers(op.elseBlock());
  return success();
}

/// Brings every barrier under an scf.if of `block` to the top of `block`
/// (innermost ifs first); fails at a barrier in any other op.
static LogicalResult hoistBarriers(Block *block) {
  for (Operation &op : llvm::make_early_inc_range(*block)) {
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      for (Region &region : ifOp->getRegions())
        for (Block &inner : region)
          if (failed(hoistBarriers(&inner)))
            return failure();
      if (failed(splitIf(ifOp)))
        return failure();
      continue;
    }
    if (op.getNumRegions() == 0)
      continue;
    WalkResult nested = op.walk([](gpu::BarrierOp barrier) {
      barrier.emitOpError("is inside a loop or region of a thread loop other "
                          "than an scf.if, so its stages cannot run one "
                          "after the other");
      return WalkResult::interrupt();
    });
    if (nested.wasInterrupted())
      return failure();
  }
  return success();
}

namespace {
struct DistSplitBarriersPass
    : public mlir::train::impl::DistSplitBarriersPassBase<
          DistSplitBarriersPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (isMappedTo(loop, gpu::Processor::ThreadX))
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(expandSubgroupReduces(loop)) ||
          failed(hoistBarriers(loop.getBody())) ||
          failed(splitAtBarriers(loop)))
        return signalPassFailure();
    // A barrier or a warp reduction anywhere else has no CPU meaning.
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<gpu::BarrierOp>(op))
        op->emitOpError("is not in a thread loop, so its stages cannot run "
                        "one after the other");
      else if (isa<gpu::SubgroupReduceOp>(op))
        op->emitOpError("is not in a thread loop, so its lanes have no CPU "
                        "form");
      else
        return WalkResult::advance();
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
