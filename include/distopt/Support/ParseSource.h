//===- ParseSource.h - parse user text without crashing ---------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every tool and API that parses MLIR text a user hands it (dist-opt,
// dist-run, dist-compile, the C API, the Python package) goes through
// parseUserSource: it first scans the text for inputs that crash upstream
// MLIR 22's parser (a segfault or a stack overflow, which would take a
// Python interpreter with it) and refuses them with an error at their
// location, then parses.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_SUPPORT_PARSESOURCE_H
#define DISTOPT_SUPPORT_PARSESOURCE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::dist {

/// The deepest nesting of `[`, `{`, `(` and `<` parseUserSource accepts.
/// Upstream's parser recurses once per level; 200,000 levels of `[`
/// overflow an 8 MiB stack. Real steps nest a dozen levels.
constexpr unsigned kMaxSourceNesting = 1000;

/// A construct that would crash the parser: where it starts (a byte offset
/// into the text) and why it is refused.
struct ParserHazard {
  size_t offset;
  std::string message;
};

/// The first construct of `text` (MLIR source) that would crash upstream
/// MLIR 22's parser, or nullopt:
///  - nesting deeper than kMaxSourceNesting;
///  - `array<index ...>` (also through a type alias of `index`):
///    Parser::parseDenseArrayAttr accepts every `isIntOrIndexOrFloat()`
///    element type, then asks `getIntOrFloatBitWidth()`, undefined for
///    `index` (a segfault in FloatType::getWidth).
/// String literals and `//` comments are skipped; bytecode is not checked.
std::optional<ParserHazard> findParserHazard(StringRef text);

/// Parses the main buffer of `sourceMgr` as a module, like
/// parseSourceFile<ModuleOp>, after refusing a buffer findParserHazard
/// flags with an error at its FILE:LINE:COL (through the context's
/// diagnostics). Null on failure, with the diagnostics emitted.
OwningOpRef<ModuleOp> parseUserSource(llvm::SourceMgr &sourceMgr,
                                      const ParserConfig &config);
OwningOpRef<ModuleOp> parseUserSource(llvm::SourceMgr &sourceMgr,
                                      MLIRContext *context);

} // namespace mlir::dist

#endif // DISTOPT_SUPPORT_PARSESOURCE_H
