//===- TrainDialect.h - train dialect ---------------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/IR/Dialect.h"

#include "distopt/Dialect/Train/IR/TrainOpsDialect.h.inc"

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAINDIALECT_H
