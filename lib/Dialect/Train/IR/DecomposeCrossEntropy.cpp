//===- DecomposeCrossEntropy.cpp - cross-entropy as reductions ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/DecomposeCrossEntropy.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::train;

namespace {
/// The values the loss and its gradient share, built once before the first
/// op rewritten.
struct SharedValues {
  /// `logits - max`, its exponentials and their per-token sum.
  Value shifted, exps, sums;
  /// `iota(classes) == labels`, [batch..., classes].
  Value target;
};
} // namespace

/// A splat constant of `type`'s element type, a scalar.
static Value scalar(OpBuilder &builder, Location loc, Type element,
                    double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute attr =
      isa<FloatType>(element)
          ? Attribute(builder.getFloatAttr(element, value))
          : Attribute(builder.getIntegerAttr(element, int64_t(value)));
  return ConstantOp::create(builder, loc, DenseElementsAttr::get(type, attr));
}

static SharedValues buildShared(OpBuilder &builder, Location loc, Value logits,
                                Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t classDim = type.getRank() - 1;
  auto labelType = cast<RankedTensorType>(labels.getType());
  SharedValues shared;
  Value max = ReduceOp::create(builder, loc, logits, ReduceKind::max,
                               ArrayRef<int64_t>{classDim}, /*keepdims=*/true);
  shared.shifted = SubOp::create(builder, loc, logits, max);
  shared.exps = ExpOp::create(builder, loc, shared.shifted);
  shared.sums = ReduceOp::create(builder, loc, shared.exps, ReduceKind::sum,
                                 ArrayRef<int64_t>{classDim},
                                 /*keepdims=*/true);
  // One class index per class, compared with each token's label.
  SmallVector<int64_t> column(labelType.getShape());
  column.push_back(1);
  Value labelColumn =
      ReshapeOp::create(builder, loc, labelType.clone(column), labels);
  Value classes =
      IotaOp::create(builder, loc,
                     RankedTensorType::get({type.getDimSize(classDim)},
                                           labelType.getElementType()),
                     /*dim=*/0);
  shared.target = CompareOp::create(builder, loc, classes, labelColumn,
                                    CompareDirection::eq);
  return shared;
}

/// The loss: mean over the tokens of log(sum) - (target logit - max).
static Value buildLoss(OpBuilder &builder, Location loc,
                       const SharedValues &shared, Type element) {
  auto type = cast<RankedTensorType>(shared.shifted.getType());
  int64_t classDim = type.getRank() - 1;
  Value zero = scalar(builder, loc, element, 0.0);
  Value picked =
      SelectOp::create(builder, loc, shared.target, shared.shifted, zero);
  Value targets = ReduceOp::create(builder, loc, picked, ReduceKind::sum,
                                   ArrayRef<int64_t>{classDim},
                                   /*keepdims=*/true);
  Value logSums = LogOp::create(builder, loc, shared.sums);
  Value perToken = SubOp::create(builder, loc, logSums, targets);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return ReduceOp::create(builder, loc, perToken, ReduceKind::mean, all);
}

/// The gradient: grad_loss / count * (softmax - one_hot).
static Value buildGradient(OpBuilder &builder, Location loc,
                           const SharedValues &shared, Value gradLoss,
                           Type element) {
  auto type = cast<RankedTensorType>(shared.shifted.getType());
  int64_t count = 1;
  for (int64_t size : type.getShape().drop_back())
    count *= size;
  Value softmax = DivOp::create(builder, loc, shared.exps, shared.sums);
  Value one = scalar(builder, loc, element, 1.0);
  Value minusOne = SubOp::create(builder, loc, softmax, one);
  Value diff = SelectOp::create(builder, loc, shared.target, minusOne, softmax);
  Value scale = MulOp::create(builder, loc, gradLoss,
                              scalar(builder, loc, element, 1.0 / count));
  return MulOp::create(builder, loc, diff, scale);
}

unsigned mlir::train::decomposeCrossEntropy(Value logits, Value labels) {
  SmallVector<Operation *> ops;
  for (Operation *user : logits.getUsers()) {
    if (llvm::is_contained(ops, user))
      continue;
    if (auto loss = dyn_cast<CrossEntropyOp>(user);
        loss && loss.getLogits() == logits && loss.getLabels() == labels)
      ops.push_back(user);
    if (auto grad = dyn_cast<CrossEntropyBackwardOp>(user);
        grad && grad.getLogits() == logits && grad.getLabels() == labels)
      ops.push_back(user);
  }
  if (ops.empty())
    return 0;
  // Users of one value in one block: the first in the block dominates the
  // others, and the operands dominate it.
  Block *block = ops.front()->getBlock();
  if (!llvm::all_of(ops,
                    [&](Operation *op) { return op->getBlock() == block; })) {
    auto loss = llvm::find_if(ops, llvm::IsaPred<CrossEntropyOp>);
    (loss != ops.end() ? *loss : ops.front())
        ->emitRemark("cross-entropy left whole: the ops of these logits and "
                     "labels are in different blocks");
    return 0;
  }
  Operation *first = ops.front();
  for (Operation *op : ops)
    if (op->isBeforeInBlock(first))
      first = op;

  OpBuilder builder(first);
  Location loc = first->getLoc();
  // 16-bit logits are computed on in f32 (as the fused lowering does).
  auto logitsType = cast<RankedTensorType>(logits.getType());
  Type element = logitsType.getElementType();
  if (element.getIntOrFloatBitWidth() < 32)
    element = builder.getF32Type();
  Value wide = logits;
  if (logitsType.getElementType() != element)
    wide = ConvertOp::create(builder, loc, logitsType.clone(element), logits);
  SharedValues shared = buildShared(builder, loc, wide, labels);

  for (Operation *op : ops) {
    builder.setInsertionPoint(op);
    Location at = op->getLoc();
    Value replacement;
    if (auto loss = dyn_cast<CrossEntropyOp>(op)) {
      replacement = buildLoss(builder, at, shared, element);
      if (replacement.getType() != loss.getLoss().getType())
        replacement = ConvertOp::create(builder, at, loss.getLoss().getType(),
                                        replacement);
    } else {
      auto grad = cast<CrossEntropyBackwardOp>(op);
      Value gradLoss = grad.getGradLoss();
      auto gradLossType = cast<RankedTensorType>(gradLoss.getType());
      if (gradLossType.getElementType() != element)
        gradLoss = ConvertOp::create(builder, at, gradLossType.clone(element),
                                     gradLoss);
      replacement = buildGradient(builder, at, shared, gradLoss, element);
      if (replacement.getType() != grad.getGradLogits().getType())
        replacement = ConvertOp::create(
            builder, at, grad.getGradLogits().getType(), replacement);
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }

  // The labels keep their range check in runners.
  if (auto arg = dyn_cast<BlockArgument>(labels))
    if (auto func =
            dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      func.setArgAttr(arg.getArgNumber(), TrainDialect::kClassesAttrName,
                      builder.getI64IntegerAttr(logitsType.getShape().back()));
  return ops.size();
}
