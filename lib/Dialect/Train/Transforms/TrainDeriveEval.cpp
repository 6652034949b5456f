//===- TrainDeriveEval.cpp - forward-only evaluation of a step ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Clones a training step, keeps the ops its loss depends on (plus an
// accuracy count over the cross-entropy's logits), switches dropout to
// evaluation mode and drops every argument the result no longer reads.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

namespace mlir::train {
#define GEN_PASS_DEF_TRAINDERIVEEVALPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

/// The number of rows of `logits` ([batch..., classes]) whose largest logit
/// is the label's, as a scalar of the logits' element type.
static Value buildCorrectCount(OpBuilder &builder, Location loc, Value logits,
                               Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  auto labelType = cast<RankedTensorType>(labels.getType());
  Type element = type.getElementType();
  int64_t classDim = type.getRank() - 1;
  SmallVector<int64_t> column(labelType.getShape());
  column.push_back(1);
  Value labelColumn =
      ReshapeOp::create(builder, loc, labelType.clone(column), labels);
  Value classes =
      IotaOp::create(builder, loc,
                     RankedTensorType::get({type.getDimSize(classDim)},
                                           labelType.getElementType()),
                     /*dim=*/0);
  Value target = CompareOp::create(builder, loc, classes, labelColumn,
                                   CompareDirection::eq);
  auto scalarType = RankedTensorType::get({}, element);
  Value lowest = ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(
          scalarType, builder.getFloatAttr(
                          element, -std::numeric_limits<double>::infinity())));
  Value picked = SelectOp::create(builder, loc, target, logits, lowest);
  Value labelLogit =
      ReduceOp::create(builder, loc, picked, ReduceKind::max,
                       ArrayRef<int64_t>{classDim}, /*keepdims=*/true);
  Value largest =
      ReduceOp::create(builder, loc, logits, ReduceKind::max,
                       ArrayRef<int64_t>{classDim}, /*keepdims=*/true);
  Value hit = CompareOp::create(builder, loc, labelLogit, largest,
                                CompareDirection::ge);
  auto hitType = cast<RankedTensorType>(hit.getType());
  Value hits = ConvertOp::create(builder, loc, hitType.clone(element), hit);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, hitType.getRank()));
  return ReduceOp::create(builder, loc, hits, ReduceKind::sum, all);
}

/// Builds `step`'s evaluation function next to it; fails with a diagnostic
/// when the step has no loss.
static LogicalResult deriveEval(func::FuncOp step, StringRef suffix) {
  TrainingStep signature = TrainingStep::get(step);
  std::optional<unsigned> lossIndex;
  for (const StepValue &result : signature.results)
    if (result.role == Role::loss)
      lossIndex = result.index;
  if (!lossIndex)
    return step.emitError()
           << "the step returns no loss: there is nothing to evaluate";

  OpBuilder builder(step->getContext());
  builder.setInsertionPointAfter(step);
  auto eval = cast<func::FuncOp>(builder.clone(*step.getOperation()));
  eval.setSymName((step.getSymName() + suffix).str());
  eval->setAttr(TrainDialect::kEvalOfAttrName,
                FlatSymbolRefAttr::get(step.getSymNameAttr()));
  Block &body = eval.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(*lossIndex);

  // Evaluation mode.
  eval.walk([&](DropoutOp dropout) {
    dropout.getResult().replaceAllUsesWith(dropout.getOperand());
  });

  // The cross-entropy the loss reads gives the accuracy.
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  (void)getBackwardSlice(loss, &slice, options);
  if (Operation *producer = loss.getDefiningOp())
    slice.insert(producer);
  SmallVector<CrossEntropyOp> losses;
  for (Operation *op : slice)
    if (auto crossEntropy = dyn_cast<CrossEntropyOp>(op))
      losses.push_back(crossEntropy);
  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs = {
      eval.getResultAttrDict(*lossIndex)};
  if (losses.size() == 1) {
    builder.setInsertionPoint(ret);
    results.push_back(buildCorrectCount(builder, losses[0].getLoc(),
                                        losses[0].getLogits(),
                                        losses[0].getLabels()));
    resultAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(
             TrainDialect::kRoleAttrName,
             RoleAttr::get(builder.getContext(), Role::metric)),
         builder.getNamedAttr(TrainDialect::kNameAttrName,
                              builder.getStringAttr("correct"))}));
  }
  builder.setInsertionPoint(ret);
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  eval.setFunctionType(
      builder.getFunctionType(eval.getArgumentTypes(), resultTypes));
  eval.setAllResultAttrs(resultAttrs);

  // Everything the results do not read goes: the backward pass, the
  // updates, and then the arguments only they read.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty())
      op.erase();
  llvm::BitVector unused(eval.getNumArguments());
  for (BlockArgument arg : body.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  if (failed(eval.eraseArguments(unused)))
    return eval.emitError() << "cannot drop the unread arguments";

  eval.walk([&](BatchNormOp norm) {
    norm.emitWarning()
        << "the evaluation normalizes with the batch's statistics: "
           "train.batch_norm has no running-statistics form";
  });
  // An evaluation never updates: a loss reading an updated value (a
  // penalty on the new weights) has no forward-only form.
  WalkResult updates = eval.walk([&](OptimizerOpInterface update) {
    update->emitError() << "the loss of '" << step.getSymName()
                        << "' reads this optimizer update: an evaluation "
                           "cannot run it";
    return WalkResult::interrupt();
  });
  if (updates.wasInterrupted()) {
    eval.erase();
    return failure();
  }
  return success();
}

namespace {
struct TrainDeriveEvalPass
    : public mlir::train::impl::TrainDeriveEvalPassBase<TrainDeriveEvalPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    llvm::StringSet<> evaluated;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto of = func->getAttrOfType<FlatSymbolRefAttr>(
              TrainDialect::kEvalOfAttrName))
        evaluated.insert(of.getValue());
    for (auto func : module.getOps<func::FuncOp>())
      if (TrainingStep::isTrainingStep(func) &&
          !TrainingStep::isEvalFunction(func) && !func.isExternal() &&
          !evaluated.contains(func.getSymName()))
        steps.push_back(func);
    for (func::FuncOp step : steps) {
      std::string name = (step.getSymName() + suffix).str();
      if (module.lookupSymbol(name)) {
        step.emitError() << "cannot name the step's evaluation function '"
                         << name << "': the symbol exists";
        return signalPassFailure();
      }
      if (failed(deriveEval(step, suffix)))
        return signalPassFailure();
    }
  }
};
} // namespace
