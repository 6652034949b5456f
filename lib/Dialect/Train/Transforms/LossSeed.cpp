//===- LossSeed.cpp - the backward's seed of a training step -------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The linearity analysis train-mixed-precision finds the seed with.
//
//===----------------------------------------------------------------------===//

#include "LossSeed.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::mixed_precision;

bool mixed_precision::isCarry(Operation *op) {
  return isa<dist::AllReduceOp, dist::ReduceScatterOp, dist::AllGatherOp,
             dist::AllToAllOp, dist::LocalSliceOp, dist::BroadcastOp>(op);
}

bool mixed_precision::isSumCarry(Operation *op) {
  if (auto allReduce = dyn_cast<dist::AllReduceOp>(op))
    return allReduce.getReduction() == dist::ReductionKind::sum;
  return isa<dist::ReduceScatterOp>(op);
}

bool mixed_precision::isLinearCarry(Operation *op) {
  auto allReduce = dyn_cast<dist::AllReduceOp>(op);
  return isCarry(op) &&
         (!allReduce || allReduce.getReduction() == dist::ReductionKind::sum);
}

bool mixed_precision::isSplatConstant(Value value, double x) {
  // (Through conversions, and a strategy's slices and gathers of it.)
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<ConvertOp, dist::LocalSliceOp, dist::AllGatherOp,
             dist::BroadcastOp>(def))
      break;
    value = def->getOperand(0);
  }
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  return dense && dense.isSplat() &&
         dense.getSplatValue<APFloat>().convertToDouble() == x;
}

bool Linearity::resultsLinear(Operation *op, bool seedIsConstant) const {
  ValueRange in = op->getOperands();
  auto linearIn = [&](unsigned linearIndex) {
    for (auto [i, v] : llvm::enumerate(in))
      if (i == linearIndex ? !isLinear(v, seedIsConstant)
                           : !isIndependent(v, seedIsConstant))
        return false;
    return true;
  };
  auto allLinearOrZero = [&](ValueRange values) {
    return llvm::all_of(values,
                        [&](Value v) {
                          return isLinear(v, seedIsConstant) ||
                                 isSplatConstant(v, 0.0);
                        }) &&
           llvm::any_of(values,
                        [&](Value v) { return isLinear(v, seedIsConstant); });
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<MulOp, MatmulOp, Conv2dOp, Conv2dBackwardInputOp,
            Conv2dBackwardFilterOp, arith::MulFOp>(
          [&](Operation *) { return linearIn(0) || linearIn(1); })
      // (A partitioned step's mean over devices scales by a constant.)
      .Case<arith::DivFOp>([&](Operation *) { return linearIn(0); })
      .Case<AddOp, SubOp, ConcatOp>(
          [&](Operation *) { return allLinearOrZero(in); })
      .Case<SelectOp>([&](SelectOp select) {
        return isIndependent(select.getCondition(), seedIsConstant) &&
               allLinearOrZero({select.getOnTrue(), select.getOnFalse()});
      })
      .Case<ScatterAddOp>([&](ScatterAddOp scatter) {
        return isIndependent(scatter.getIndices(), seedIsConstant) &&
               allLinearOrZero({scatter.getInit(), scatter.getUpdates()});
      })
      .Case<ReduceOp>([&](ReduceOp reduce) {
        return (reduce.getKind() == ReduceKind::sum ||
                reduce.getKind() == ReduceKind::mean) &&
               linearIn(0);
      })
      .Case<PadOp>([&](PadOp pad) {
        return pad.getValue().convertToDouble() == 0.0 && linearIn(0);
      })
      // Linear in operand 0 (a data operand, or the gradient of a
      // backward op), the others held fixed.
      .Case<DivOp, NegOp, ReshapeOp, TransposeOp, BroadcastOp, SliceOp,
            ConvertOp, DropoutOp, GatherOp, SoftmaxBackwardOp,
            LogSoftmaxBackwardOp, LayerNormBackwardOp, BatchNormBackwardOp,
            MaxPool2dBackwardOp, AvgPool2dBackwardOp, CrossEntropyBackwardOp>(
          [&](Operation *) { return linearIn(0); })
      .Default([](Operation *) { return false; });
}

Linearity Linearity::of(func::FuncOp func, Value seed,
                        const llvm::DenseSet<Operation *> &forward) {
  Linearity result;
  result.seed = seed;
  for (Operation &op : func.getBody().front()) {
    if (forward.contains(&op))
      continue;
    if (isLinearCarry(&op)) {
      // Each result is its operand summed or moved: linear in it.
      for (auto [use, r] : llvm::zip(op.getOpOperands(), op.getResults())) {
        if (use.get() == seed)
          result.seedUses.push_back(&use);
        else if (!result.dependent.contains(use.get()))
          continue;
        result.dependent.insert(r);
        if (result.isLinear(use.get(), /*seedIsConstant=*/false))
          result.linear.insert(r);
      }
      continue;
    }
    bool readsSeed = llvm::is_contained(op.getOperands(), seed);
    if (!readsSeed && llvm::none_of(op.getOperands(), [&](Value v) {
          return result.dependent.contains(v);
        }))
      continue;
    bool linear = result.resultsLinear(&op, /*seedIsConstant=*/false);
    if (readsSeed && linear) {
      for (OpOperand &use : op.getOpOperands())
        if (use.get() == seed)
          result.seedUses.push_back(&use);
    }
    if (!linear && llvm::none_of(op.getOperands(), [&](Value v) {
          return result.dependent.contains(v);
        }))
      continue;
    for (Value r : op.getResults()) {
      result.dependent.insert(r);
      if (linear)
        result.linear.insert(r);
    }
  }
  return result;
}

/// The ops `value` depends on. A collective is not one of them: its
/// result depends on its operand of the same index only (a sum of the
/// loss and the gradients in one all-reduce), which is.
static llvm::DenseSet<Operation *> getDefiningSlice(Value value) {
  llvm::DenseSet<Operation *> slice;
  llvm::DenseSet<Value> seen;
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *op = v.getDefiningOp();
    if (!op || !seen.insert(v).second)
      continue;
    if (isCarry(op)) {
      worklist.push_back(op->getOperand(cast<OpResult>(v).getResultNumber()));
      continue;
    }
    if (slice.insert(op).second)
      llvm::append_range(worklist, op->getOperands());
  }
  return slice;
}

FailureOr<Linearity> mixed_precision::findSeed(func::FuncOp func, Value loss,
                                               ArrayRef<Value> grads,
                                               bool report, StringRef pass,
                                               StringRef purpose) {
  llvm::DenseSet<Operation *> forward = getDefiningSlice(loss);
  SmallVector<Value> marked, candidates;
  func.walk([&](ConstantOp constant) {
    if (constant->hasAttr(TrainDialect::kLossSeedAttrName))
      marked.push_back(constant);
    else if (constant.getType() == loss.getType() &&
             isSplatConstant(constant, 1.0))
      candidates.push_back(constant);
  });
  if (marked.size() > 1 && !report)
    return failure();
  if (marked.size() > 1)
    return emitError(func.getLoc())
           << pass << ": " << marked.size() << " constants are marked '"
           << TrainDialect::kLossSeedAttrName
           << "'; a step has one backward seed";
  if (marked.size() == 1)
    return Linearity::of(func, marked.front(), forward);
  SmallVector<Linearity> seeds;
  for (Value candidate : candidates) {
    Linearity linearity = Linearity::of(func, candidate, forward);
    // (A constant zero gradient, of a parameter the loss does not read, is
    // every seed's linear image.)
    if (llvm::all_of(grads, [&](Value g) {
          return linearity.linear.contains(g) || isSplatConstant(g, 0.0);
        }))
      seeds.push_back(std::move(linearity));
  }
  if (seeds.size() == 1)
    return std::move(seeds.front());
  if (!report)
    return failure();
  InFlightDiagnostic diag =
      emitError(func.getLoc())
      << pass << ": cannot tell the backward pass's seed (d loss / d loss) for "
      << purpose << ": "
      << (seeds.empty() ? "no" : std::to_string(seeds.size()).c_str())
      << " constant 1.0 of type " << loss.getType()
      << " has every gradient as a linear image; mark the seed with '"
      << TrainDialect::kLossSeedAttrName << "'";
  for (const Linearity &seed : seeds)
    diag.attachNote(seed.seed.getLoc()) << "candidate seed";
  return failure();
}

Value mixed_precision::getStepLoss(func::FuncOp func) {
  TrainingStep step = TrainingStep::get(func);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (const StepValue &value : step.results)
    if (value.role == Role::loss)
      return ret.getOperand(value.index);
  return nullptr;
}

SmallVector<Value> mixed_precision::getUpdateGradients(func::FuncOp func) {
  SmallVector<Value> grads;
  func.walk(
      [&](OptimizerOpInterface update) { grads.push_back(update.getGrad()); });
  return grads;
}
