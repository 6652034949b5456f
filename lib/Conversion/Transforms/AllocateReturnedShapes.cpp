//===- AllocateReturnedShapes.cpp - returned reshapes as allocations -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A function that returns a reshape of its own allocation hands its caller
// a view. Results-to-out-params copies a view into the caller's buffer and
// leaves the allocation under it unfreed; this pass allocates the buffer
// in the returned shape instead, so the function returns the allocation.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTALLOCATERETURNEDSHAPESPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// A static buffer of identity layout in the default memory space.
static bool isPlainStatic(MemRefType type) {
  return type.hasStaticShape() && type.getLayout().isIdentity() &&
         !type.getMemorySpace();
}

/// The allocation `returned` reshapes, when it may be allocated in the
/// returned shape instead: made in `block`, of a plain static type, never
/// freed.
static memref::AllocOp getReshapedAllocation(Value returned, Block *block) {
  Operation *reshape = returned.getDefiningOp();
  if (!isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
          reshape) ||
      !isPlainStatic(cast<MemRefType>(returned.getType())))
    return nullptr;
  auto alloc = reshape->getOperand(0).getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != block || !isPlainStatic(alloc.getType()) ||
      !alloc.getDynamicSizes().empty() || !alloc.getSymbolOperands().empty())
    return nullptr;
  if (llvm::any_of(alloc->getUsers(), llvm::IsaPred<memref::DeallocOp>))
    return nullptr;
  return alloc;
}

namespace {
struct DistAllocateReturnedShapesPass
    : public mlir::train::impl::DistAllocateReturnedShapesPassBase<
          DistAllocateReturnedShapesPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      for (OpOperand &returned : ret->getOpOperands()) {
        memref::AllocOp alloc =
            getReshapedAllocation(returned.get(), ret->getBlock());
        if (!alloc)
          continue;
        Operation *reshape = returned.get().getDefiningOp();
        auto shape = cast<MemRefType>(returned.get().getType());
        OpBuilder builder(alloc);
        auto whole = memref::AllocOp::create(builder, alloc.getLoc(), shape,
                                             alloc.getAlignmentAttr());
        Value old;
        if (auto expand = dyn_cast<memref::ExpandShapeOp>(reshape))
          old = memref::CollapseShapeOp::create(
              builder, alloc.getLoc(), alloc.getType(), whole,
              expand.getReassociationIndices());
        else
          old = memref::ExpandShapeOp::create(
              builder, alloc.getLoc(), alloc.getType(), whole,
              cast<memref::CollapseShapeOp>(reshape).getReassociationIndices());
        alloc.replaceAllUsesWith(old);
        alloc.erase();
        returned.set(whole);
      }
    });
  }
};
} // namespace
