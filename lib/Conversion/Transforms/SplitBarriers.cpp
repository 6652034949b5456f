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
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTSPLITBARRIERSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// Splits `loop` (a thread loop) at its top-level barriers; fails at the
/// first value a later stage would need that is not pure to recompute.
static LogicalResult splitAtBarriers(scf::ParallelOp loop) {
  Block *body = loop.getBody();
  SmallVector<SmallVector<Operation *>> stages(1);
  for (Operation &op : body->without_terminator()) {
    if (isa<gpu::BarrierOp>(op)) {
      stages.emplace_back();
      continue;
    }
    stages.back().push_back(&op);
  }
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
    Block *target = next.getBody();
    IRMapping mapping;
    mapping.map(loop.getInductionVars(), next.getInductionVars());
    OpBuilder inside = OpBuilder::atBlockBegin(target);
    // What an earlier stage defined, recomputed here (depth first).
    DenseSet<Operation *> inStage(stage.begin(), stage.end());
    std::function<LogicalResult(Value)> bring =
        [&](Value value) -> LogicalResult {
      Operation *def = value.getDefiningOp();
      if (!def || def->getBlock() != body || inStage.contains(def) ||
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
        return next->isProperAncestor(use.getOwner());
      });
  }
  for (Operation &op : llvm::make_early_inc_range(body->without_terminator()))
    if (isa<gpu::BarrierOp>(op))
      op.erase();
  return success();
}

namespace {
struct DistSplitBarriersPass
    : public mlir::train::impl::DistSplitBarriersPassBase<
          DistSplitBarriersPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      auto mapping = loop->getAttrOfType<ArrayAttr>(gpu::getMappingAttrName());
      if (!mapping || mapping.size() != 1)
        return;
      auto dim = dyn_cast<gpu::ParallelLoopDimMappingAttr>(mapping[0]);
      if (dim && dim.getProcessor() == gpu::Processor::ThreadX)
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(splitAtBarriers(loop)))
        return signalPassFailure();
    // A barrier anywhere else has no CPU meaning.
    WalkResult left = getOperation()->walk([](gpu::BarrierOp barrier) {
      barrier.emitOpError("is not at the top of a thread loop's body, so "
                          "its stages cannot run one after the other");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
