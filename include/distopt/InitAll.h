//===- InitAll.h - what DistOpt's tools load --------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The entry points a tool or a compiler embedding DistOpt calls: every
// dialect (and the external models the lowering needs) into a registry,
// and every pass and pass pipeline into the global registry (so that
// `parsePassPipeline("dist-mirrored{replicas=2}")` finds them). Library
// DistOptRegistration (CMake: DistOpt::DistOptRegistration).
//

#ifndef DISTOPT_INITALL_H
#define DISTOPT_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::dist {

/// The project's dialects, the upstream ones training steps are combined
/// with, what the CPU lowering produces, and the bufferization models.
void registerAllDialects(DialectRegistry &registry);

/// The translations to LLVM IR of what dist-lower-cpu produces: the
/// builtin, LLVM and OpenMP (the parallel loops) dialects. A JIT or an
/// ahead-of-time compiler of a lowered step needs them.
void registerAllTranslations(DialectRegistry &registry);

/// Registers every DistOpt pass and strategy pipeline (train, dist,
/// conversions, the CPU lowering) and the upstream passes users run
/// between them (canonicalize, cse, inline, symbol-dce,
/// one-shot-bufferize). Safe to call more than once.
void registerAllPasses();

} // namespace mlir::dist

#endif // DISTOPT_INITALL_H
