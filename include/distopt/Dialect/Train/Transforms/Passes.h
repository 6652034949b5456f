//===- Passes.h - train dialect passes --------------------------*- C++ -*-===//

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
