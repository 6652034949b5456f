//===- PlacementSource.h - where placed programs came from ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A placing strategy (dist-pipeline, dist-parameter-server) replaces the
// single-device step with one program per place. It keeps the module it
// placed, nested at the end of the result with a `dist.placement`
// dictionary: the pass as a textual pipeline and the fingerprint of what
// it wrote. A pass that rewrites the step itself (train-mixed-precision)
// rewrites the kept module and runs the recorded pipeline on it again, so
// that running it before or after the strategy gives the same program; the
// fingerprint tells it when a later pass changed the programs. Lowering
// (dist-to-runtime, dist-run, dist-compile) drops the kept module.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_IR_PLACEMENTSOURCE_H
#define DISTOPT_DIALECT_DIST_IR_PLACEMENTSOURCE_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {

/// The module `module`'s placed programs were made from, or null.
ModuleOp getPlacementSource(ModuleOp module);

/// True when `op` is inside a kept placement source (walks of a placed
/// module skip it).
bool isInPlacementSource(Operation *op);

/// The fingerprint of `module`'s placed programs and of `source`, the
/// module they were placed from: a hash of their attributes and top-level
/// ops in generic form without locations (stable across printing and
/// parsing), names and records aside.
std::string fingerprintPlacedModule(ModuleOp module, ModuleOp source);

/// Appends `source` (the module as it was before `pipeline` placed it) to
/// the end of `module`, recording `pipeline` and `module`'s fingerprint.
void keepPlacementSource(ModuleOp module, OwningOpRef<ModuleOp> source,
                         StringRef pipeline);

/// Records on `source`, `module`'s placement source, that `pipeline`
/// placed `module`'s programs as they are now (its fingerprint).
void recordPlacement(ModuleOp module, ModuleOp source, StringRef pipeline);

/// Erases `module`'s placement source, if any.
void erasePlacementSource(ModuleOp module);

/// Checks the `dist.placement` attribute `attr` on `op`.
LogicalResult verifyPlacementAttr(Operation *op, Attribute attr);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_IR_PLACEMENTSOURCE_H
