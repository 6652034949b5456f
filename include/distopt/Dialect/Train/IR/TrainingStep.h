//===- TrainingStep.h - roles and names of a training step ------*- C++ -*-===//
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
};

/// The arguments and results of a training step with their roles and names.
struct TrainingStep {
  FunctionOpInterface func;
  SmallVector<StepValue> arguments;
  SmallVector<StepValue> results;

  /// True when any argument or result of `func` carries a `train.role`.
  static bool isTrainingStep(FunctionOpInterface func);
  static TrainingStep get(FunctionOpInterface func);
};

} // namespace mlir::train

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAININGSTEP_H
