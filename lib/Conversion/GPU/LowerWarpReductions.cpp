//===- LowerWarpReductions.cpp - gpu.subgroup_reduce as warp shuffles -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A row group's block reduction combines each warp's partial results with
// gpu.subgroup_reduce; convert-gpu-to-nvvm lowers gpu.shuffle but not a
// float subgroup_reduce. This pass applies upstream's butterfly lowering
// (vectors broken down to 32 bits, then gpu.shuffle xor per lane offset)
// for NVIDIA's 32-lane warps.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTLOWERWARPREDUCTIONSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// NVIDIA's warp: the lanes of a subgroup_reduce without a cluster size.
constexpr unsigned kWarpLanes = 32;
/// shfl.sync moves 32 bits.
constexpr unsigned kShuffleBits = 32;

struct DistLowerWarpReductionsPass
    : public mlir::train::impl::DistLowerWarpReductionsPassBase<
          DistLowerWarpReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuBreakDownSubgroupReducePatterns(patterns, kShuffleBits);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, kWarpLanes,
                                                    kShuffleBits);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, kWarpLanes, kShuffleBits);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("has no warp-shuffle lowering (a value of more than ")
          << kShuffleBits << " bits per element, or an unsupported cluster)";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
