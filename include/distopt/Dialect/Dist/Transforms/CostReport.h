//===- CostReport.h - the cost report of a module ---------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `--dist-cost-report` prints, for callers that want it as a string
// (the C API, embedding compilers).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_COSTREPORT_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_COSTREPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::dist {

/// The cost report of every function of `module` (and of its pipeline or
/// parameter-server programs) as `format` "text" (the tables) or "json"
/// (`{"functions": [...], "pipeline": {...}}`); failure with a diagnostic
/// on an unknown format or a function it cannot analyze.
FailureOr<std::string> renderCostReport(ModuleOp module, StringRef format);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_COSTREPORT_H
