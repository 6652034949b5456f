//===- LossSeed.h - the backward's seed of a training step ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What train-mixed-precision reads before it rewrites a step: the constant
// whose linear images are the gradients (the backward's seed, which loss
// scaling multiplies), through the collectives of a step a strategy
// partitioned.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_TRAIN_TRANSFORMS_LOSSSEED_H
#define DISTOPT_LIB_DIALECT_TRAIN_TRANSFORMS_LOSSSEED_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::train::mixed_precision {

/// A collective of a partitioned step that carries each operand to the
/// result of the same index across devices: a sum (all_reduce,
/// reduce_scatter), a max or min, or a movement (all_gather, all_to_all,
/// local_slice, broadcast).
bool isCarry(Operation *op);

/// A carry whose result is a sum of its operand's values across devices.
bool isSumCarry(Operation *op);

/// A carry linear in its operand: all but a max or min.
bool isLinearCarry(Operation *op);

/// True when `value` is a constant whose elements are all `x` (through
/// conversions, and a strategy's slices and gathers of it).
bool isSplatConstant(Value value, double x);

/// Which values of a step's backward pass are linear images of a candidate
/// seed `c` (`linear`), and which depend on it at all (`dependent`). A
/// gradient is linear in the seed. The forward pass (what the loss depends
/// on) reads no seed. A constant 1.0 may serve more than the seed (one
/// constant after CSE): a use of `c` through which its user would not be
/// linear (1 - t^2 in tanh's derivative) reads it as a plain constant.
struct Linearity {
  Value seed;
  llvm::DenseSet<Value> linear, dependent;
  /// The uses of the seed that carry it (and get the scaled seed).
  SmallVector<OpOperand *> seedUses;

  bool isLinear(Value v, bool seedIsConstant) const {
    return v == seed ? !seedIsConstant : linear.contains(v);
  }
  bool isIndependent(Value v, bool seedIsConstant) const {
    return v == seed ? seedIsConstant : !dependent.contains(v);
  }

  /// True when every result of `op` is linear in the seed.
  bool resultsLinear(Operation *op, bool seedIsConstant) const;

  /// The linear images of `seed` in `func` and the values that depend on
  /// it; the ops of `forward` (what the loss depends on) read no seed.
  static Linearity of(func::FuncOp func, Value seed,
                      const llvm::DenseSet<Operation *> &forward);
};

/// The seed of `func`'s backward pass and its uses: the constant marked
/// `train.loss_seed`, else the only constant 1.0 of the loss's type of
/// which every gradient (`grads`) is a linear image. Fails, with an error
/// when `report` naming `pass` and what it needs the seed for (`purpose`),
/// when there is none or more than one.
FailureOr<Linearity> findSeed(func::FuncOp func, Value loss,
                              ArrayRef<Value> grads, bool report,
                              StringRef pass = "train-mixed-precision",
                              StringRef purpose = "loss scaling");

/// The value `func` returns as its loss (`train.role = loss`), or null.
Value getStepLoss(func::FuncOp func);

/// The gradients `func`'s optimizer updates read, in program order.
SmallVector<Value> getUpdateGradients(func::FuncOp func);

} // namespace mlir::train::mixed_precision

#endif // DISTOPT_LIB_DIALECT_TRAIN_TRANSFORMS_LOSSSEED_H
