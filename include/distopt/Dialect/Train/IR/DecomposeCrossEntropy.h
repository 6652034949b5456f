//===- DecomposeCrossEntropy.h - cross-entropy as reductions ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Rewrites train.cross_entropy and train.cross_entropy_backward into the
// reductions and elementwise ops they are made of, so that the class dim
// can be split: the per-token maximum and the sums of exponentials and of
// the target logits are reductions over the classes, which a split turns
// into one all-reduce each (Megatron-LM's vocabulary-parallel
// cross-entropy) while the [batch..., classes] logits and their gradient
// stay split.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_DECOMPOSECROSSENTROPY_H
#define DISTOPT_DIALECT_TRAIN_IR_DECOMPOSECROSSENTROPY_H

#include "mlir/IR/Value.h"

namespace mlir::train {

/// Rewrites every cross_entropy and cross_entropy_backward op that reads
/// `logits` and `labels` into one decomposition sharing the maximum, the
/// exponentials and their sum between the loss and its gradient:
///
///   m = max(logits, classes)                  (keepdims)
///   e = exp(logits - m),  s = sum(e, classes)
///   t = sum(select(iota(classes) == labels, logits - m, 0), classes)
///   loss = mean(log(s) - t)
///   grad = grad_loss / count * (e / s - one_hot(labels))
///
/// When `labels` is an argument of the function, it gets the number of
/// classes as `train.classes` (a runner checks labels against it). Returns
/// the number of ops rewritten.
unsigned decomposeCrossEntropy(Value logits, Value labels);

} // namespace mlir::train

#endif // DISTOPT_DIALECT_TRAIN_IR_DECOMPOSECROSSENTROPY_H
