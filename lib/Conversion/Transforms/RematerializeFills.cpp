//===- RematerializeFills.cpp - one fill per destination ------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// CSE merges identical fills of empty tensors (the zero-padded buffers of
// a step's convolutions, the zeroed accumulators of its reductions) into
// one value with many destination uses. One-shot bufferization then keeps
// that value in one buffer and gives every destination a copy of it, and
// eliminate-empty-tensors cannot let a slice's producer write into a
// padded buffer filled after it. This pass gives each destination use its
// own fill, placed where the use needs it.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTREMATERIALIZEFILLSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when `use` is written into: a destination-style op's init (a
/// tensor.insert_slice's destination among them).
static bool isDestinationUse(OpOperand &use) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
  return dps && dps.isDpsInit(&use);
}

/// Where the fill for `use` goes: before the producer of the slice an
/// insert_slice pads (in the same block, after every value the fill needs),
/// so that eliminate-empty-tensors can make the producer write into the
/// padded buffer; otherwise right before the user.
static Operation *getInsertionPoint(OpOperand &use, linalg::FillOp fill,
                                    tensor::EmptyOp empty,
                                    DominanceInfo &dominance) {
  Operation *user = use.getOwner();
  auto insert = dyn_cast<tensor::InsertSliceOp>(user);
  if (!insert)
    return user;
  Operation *producer = insert.getSource().getDefiningOp();
  if (!producer || producer->getBlock() != user->getBlock())
    return user;
  auto dominatesProducer = [&](Value value) {
    return dominance.properlyDominates(value, producer);
  };
  if (!llvm::all_of(fill.getInputs(), dominatesProducer) ||
      !llvm::all_of(empty->getOperands(), dominatesProducer))
    return user;
  return producer;
}

namespace {
struct DistRematerializeFillsPass
    : public mlir::train::impl::DistRematerializeFillsPassBase<
          DistRematerializeFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation()->walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() &&
          fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() &&
          !fill->getResult(0).hasOneUse())
        fills.push_back(fill);
    });
    // A scalar empty tensor CSE merged (the bias corrections of every
    // Adam update, each an unused-after-the-update init) bufferizes to one
    // buffer that every destination writes in turn: false dependences
    // that serialized the updates (dist-map-to-gpu could not launch them
    // as one). One empty per destination use; scalars only (a larger
    // empty's shared buffer saves memory).
    // (Uses in program order: the first keeps the original.)
    llvm::MapVector<Operation *, SmallVector<OpOperand *>> scalarUses;
    getOperation()->walk([&](Operation *op) {
      for (OpOperand &use : op->getOpOperands()) {
        auto empty = use.get().getDefiningOp<tensor::EmptyOp>();
        if (empty && empty.getType().getRank() == 0 && !empty->hasOneUse() &&
            isDestinationUse(use))
          scalarUses[empty].push_back(&use);
      }
    });
    for (auto &[empty, uses] : scalarUses)
      for (OpOperand *use : llvm::drop_begin(uses)) {
        OpBuilder builder(use->getOwner());
        use->set(builder.clone(*empty)->getResult(0));
      }
    DominanceInfo dominance(getOperation());
    for (linalg::FillOp fill : fills) {
      auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : fill->getResult(0).getUses())
        if (isDestinationUse(use))
          uses.push_back(&use);
      for (OpOperand *use : uses) {
        OpBuilder builder(getInsertionPoint(*use, fill, empty, dominance));
        IRMapping mapping;
        builder.clone(*empty, mapping);
        use->set(builder.clone(*fill, mapping)->getResult(0));
      }
      // Read-only uses keep the original.
      if (fill->use_empty())
        fill->erase();
      if (empty->use_empty())
        empty->erase();
    }
    // A padded value's later readers read it from the padded buffer: with
    // the value also read directly (through a reshape in particular),
    // one-shot bufferization's analysis saw the padding's insert_slice as
    // a write conflicting with those reads and computed the value out of
    // place, then copied it in.
    // (Paddings only: the value read through a strided view, a gradient
    // spread out by a convolution's strides, would be copied whenever a
    // reader needs it contiguous.)
    SmallVector<tensor::InsertSliceOp> pads;
    getOperation()->walk([&](tensor::InsertSliceOp insert) {
      if (insert.getDest().getDefiningOp<linalg::FillOp>() &&
          llvm::all_of(insert.getStaticStrides(),
                       [](int64_t stride) { return stride == 1; }))
        pads.push_back(insert);
    });
    for (tensor::InsertSliceOp pad : pads) {
      SmallVector<OpOperand *> later;
      for (OpOperand &use : pad.getSource().getUses())
        if (dominance.properlyDominates(pad.getOperation(), use.getOwner()))
          later.push_back(&use);
      if (later.empty())
        continue;
      OpBuilder builder(pad->getContext());
      builder.setInsertionPointAfter(pad);
      Value slice = tensor::ExtractSliceOp::create(
          builder, pad.getLoc(), pad.getSourceType(), pad.getResult(),
          pad.getMixedOffsets(), pad.getMixedSizes(), pad.getMixedStrides());
      for (OpOperand *use : later)
        use->set(slice);
    }
  }
};
} // namespace
