//===- TrainingStep.h - roles and names of a training step ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A training step is a function whose arguments and results carry
// `train.role` and `train.name`. This view reads them once for passes.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAININGSTEP_H
#define DISTOPT_DIALECT_TRAIN_IR_TRAININGSTEP_H

#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::train {

/// One argument or result of a training step.
struct StepValue {
  unsigned index;
  /// Absent when the value has no (valid) `train.role`.
  std::optional<Role> role;
  /// Null when the value has no `train.name`.
  StringAttr name;
  Type type;
  /// The part of the named array the value holds: a placed program's
  /// `dist.block` (a parameter server's shard); null for the whole array.
  /// Two values may share a name when they hold different parts.
  Attribute part = nullptr;

  /// The name and part: unique among a step's arguments (and results).
  std::string getKey() const;
};

/// The arguments and results of a training step with their roles and names.
struct TrainingStep {
  FunctionOpInterface func;
  SmallVector<StepValue> arguments;
  SmallVector<StepValue> results;

  /// True when any argument or result of `func` carries a `train.role`.
  static bool isTrainingStep(FunctionOpInterface func);
  /// True for a step's evaluation function (`train.eval_of`, made by
  /// train-derive-eval): a training step by its roles, run apart.
  static bool isEvalFunction(FunctionOpInterface func);
  static TrainingStep get(FunctionOpInterface func);

  /// Checks the step contract of the train dialect: every argument and
  /// result has a role and a unique name, one float scalar loss, and each
  /// updated param / opt_state result replaces the argument of its name,
  /// role and type. Reports the first violation. Without `requireLoss`
  /// the loss may be absent (one device's program of a pipeline, where
  /// another device computes the loss).
  LogicalResult verify(bool requireLoss = true) const;

  /// The first param or opt_state result whose update the step skips on a
  /// condition (see `getUnskipped`: a mixed-precision step with dynamic loss
  /// scaling), or null.
  const StepValue *getSkippedUpdate() const;

  /// The argument or result `index` of the step as messages name it:
  /// `argument #1 'fc1.bias' (param)`.
  static std::string describe(StringRef what, const StepValue &value);

  /// Reports an error about argument `value` at its own location (or the
  /// result's: the returned value's), naming it, without printing the whole
  /// function as an error on the function would.
  InFlightDiagnostic emitArgumentError(const StepValue &value) const;
  InFlightDiagnostic emitResultError(const StepValue &value) const;
  InFlightDiagnostic emitArgumentRemark(const StepValue &value) const;
};

/// The value a step result replacing argument `arg` takes when the step is
/// not skipped: `%update` of `train.select %c, %update, %arg` with a scalar
/// `i1` condition (a mixed-precision step keeps every parameter and its
/// state when a gradient is not finite), else `returned` itself.
Value getUnskipped(Value returned, Value arg);

/// The argument `op` keeps when a gradient is not finite: `op` is a
/// `train.select` the step returns, on a scalar flag between the
/// argument's update and the argument (see `getUnskipped`; not a select
/// inside the loss scale's own update, which the step does not return).
/// Null when `op` is no such select.
BlockArgument getKeptArgument(Operation *op);

/// The optimizer op that updates argument `arg` into the step's result
/// `returned`, directly or behind a skip select (see `getUnskipped`): the op
/// defines the unskipped value and reads `arg` (as its parameter when the
/// value is its new parameter). Null otherwise. Strategies find "the update
/// of a parameter" through this one function.
OptimizerOpInterface getUpdateOf(Value returned, Value arg);

/// The numbered module (a layer) a parameter named `name` belongs to, as
/// PyTorch's ModuleList names it: `blocks.3` for `blocks.3.attn.q.weight`
/// (the name up to its first all-digit component); none without one.
std::optional<StringRef> getNumberedModule(StringRef name);

/// True when some parameter of `step` belongs to a numbered module.
bool hasLayers(const TrainingStep &step);

} // namespace mlir::train

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAININGSTEP_H
