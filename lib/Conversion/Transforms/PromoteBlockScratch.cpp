//===- PromoteBlockScratch.cpp - block reductions in shared memory --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-map-to-gpu reduces a row (a row group's softmax, layer norm or
// cross-entropy) or a tile of columns with all the threads of one block:
// each thread's partial result goes to a scratch buffer of one row per
// block, halved there between barriers. Built as loops that also run on the
// CPU, that buffer is an allocation (device memory on the GPU, one global
// round trip per step of the tree). Once the loops are gpu.launch ops, each
// block only ever touches its own row of it: the row is the block's own
// shared memory, a workgroup attribution of the launch, and the buffer
// goes.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTPROMOTEBLOCKSCRATCHPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// A scratch buffer that may move into its launch's shared memory: its
/// allocation, its free, and the loads and stores (all in `launch`) that
/// index it by the block's row first.
struct Promotable {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  gpu::LaunchOp launch;
  SmallVector<Operation *> accesses;
  int64_t rowBytes = 0;
};
} // namespace

/// The scratch buffer `alloc` allocates when every use but one free is a
/// load or a store in one gpu.launch; otherwise a remark at `alloc` saying
/// why it stays in device memory, and none.
static std::optional<Promotable> getPromotable(memref::AllocOp alloc,
                                               const DataLayout &layout) {
  auto stays = [&](const Twine &why) -> std::optional<Promotable> {
    alloc.emitRemark("block scratch stays in device memory: ") << why;
    return std::nullopt;
  };
  MemRefType type = alloc.getType();
  if (type.getRank() < 2 || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() || type.getMemorySpace())
    return stays("not a static buffer of rows in the default memory space");
  Promotable promotable;
  promotable.alloc = alloc;
  for (OpOperand &use : alloc->getUses()) {
    Operation *owner = use.getOwner();
    if (auto dealloc = dyn_cast<memref::DeallocOp>(owner)) {
      if (promotable.dealloc)
        return stays("freed twice");
      promotable.dealloc = dealloc;
      continue;
    }
    bool access = (isa<memref::LoadOp>(owner) && use.getOperandNumber() == 0) ||
                  (isa<memref::StoreOp>(owner) && use.getOperandNumber() == 1);
    auto launch = owner->getParentOfType<gpu::LaunchOp>();
    if (!access)
      return stays(Twine("used by '") + owner->getName().getStringRef() +
                   "', not only loaded and stored");
    if (!launch || (promotable.launch && promotable.launch != launch))
      return stays("used outside one gpu.launch");
    promotable.launch = launch;
    promotable.accesses.push_back(owner);
  }
  if (!promotable.launch)
    return stays("used outside one gpu.launch");
  int64_t rowElements = type.getNumElements() / type.getDimSize(0);
  promotable.rowBytes =
      rowElements *
      static_cast<int64_t>(
          layout.getTypeSize(type.getElementType()).getFixedValue());
  return promotable;
}

/// Replaces the buffer of `promotable` by a workgroup attribution of its
/// launch holding one row: each load and store drops its first index.
static void promote(Promotable &promotable) {
  MemRefType type = promotable.alloc.getType();
  MLIRContext *context = type.getContext();
  auto rowType = MemRefType::get(
      type.getShape().drop_front(), type.getElementType(), AffineMap(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
  BlockArgument row = promotable.launch.addWorkgroupAttribution(
      rowType, promotable.alloc.getLoc());
  for (Operation *access : promotable.accesses) {
    OpBuilder builder(access);
    if (auto load = dyn_cast<memref::LoadOp>(access)) {
      auto replacement = memref::LoadOp::create(builder, load.getLoc(), row,
                                                load.getIndices().drop_front());
      load.replaceAllUsesWith(replacement.getResult());
    } else {
      auto store = cast<memref::StoreOp>(access);
      memref::StoreOp::create(builder, store.getLoc(), store.getValueToStore(),
                              row, store.getIndices().drop_front());
    }
    access->erase();
  }
  if (promotable.dealloc)
    promotable.dealloc.erase();
  promotable.alloc.erase();
}

namespace {
struct DistPromoteBlockScratchPass
    : public mlir::train::impl::DistPromoteBlockScratchPassBase<
          DistPromoteBlockScratchPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxSharedBytes < 0) {
      emitError(getOperation()->getLoc())
          << "dist-promote-block-scratch: max-shared-bytes="
          << maxSharedBytes.getValue() << " is negative";
      return signalPassFailure();
    }
    DataLayout layout = DataLayout::closest(getOperation());
    SmallVector<Promotable> promotables;
    getOperation()->walk([&](memref::AllocOp alloc) {
      if (!alloc->hasAttr(train::kBlockScratchAttrName))
        return;
      if (std::optional<Promotable> promotable = getPromotable(alloc, layout))
        promotables.push_back(std::move(*promotable));
    });
    // Each launch's shared memory up to the budget, in program order (a
    // buffer past it stays in device memory).
    DenseMap<Operation *, int64_t> shared;
    for (Promotable &promotable : promotables) {
      int64_t &used = shared[promotable.launch];
      if (used + promotable.rowBytes > maxSharedBytes) {
        promotable.alloc.emitRemark(
            "block scratch stays in device memory: its row of ")
            << promotable.rowBytes << " bytes would take the launch's shared "
            << "memory past max-shared-bytes=" << maxSharedBytes.getValue();
        continue;
      }
      used += promotable.rowBytes;
      promote(promotable);
    }
  }
};
} // namespace
