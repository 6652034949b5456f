//===- Passes.h - train dialect passes --------------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES_H
#define DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::train {

#define GEN_PASS_DECL
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"

} // namespace mlir::train

#endif // DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES_H
