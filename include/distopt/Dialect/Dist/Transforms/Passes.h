//===- Passes.h - dist dialect passes ---------------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {

#define GEN_PASS_DECL
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"

/// Registers the strategy pipelines (`dist-mirrored`, ...).
void registerStrategyPipelines();

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES_H
