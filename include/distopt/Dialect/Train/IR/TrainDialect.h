//===- TrainDialect.h - train dialect ---------------------------*- C++ -*-===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/IR/Dialect.h"

#include "distopt/Dialect/Train/IR/TrainOpsDialect.h.inc"

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H
