//===- DiagnosticText.h - diagnostics as text for API callers ---*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// How the C API and the Python package hand diagnostics to their callers:
// "file:line:col: error: message", each note on its own line after it,
// as dist-opt prints them (without the source line).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_SUPPORT_DIAGNOSTICTEXT_H
#define DISTOPT_SUPPORT_DIAGNOSTICTEXT_H

#include "mlir/IR/Diagnostics.h"

#include <functional>
#include <string>

namespace mlir::dist {

/// `diagnostic` and its notes as text, one per line (no final newline).
std::string getDiagnosticText(Diagnostic &diagnostic);

/// Hands every diagnostic raised in `context` while it lives to `consume`
/// as text (getDiagnosticText), and stops it there.
class DiagnosticTextHandler {
public:
  DiagnosticTextHandler(MLIRContext *context,
                        std::function<void(const std::string &)> consume);

private:
  ScopedDiagnosticHandler handler;
};

} // namespace mlir::dist

#endif // DISTOPT_SUPPORT_DIAGNOSTICTEXT_H
