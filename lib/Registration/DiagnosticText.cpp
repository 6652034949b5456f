//===- DiagnosticText.cpp - diagnostics as text for API callers -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Support/DiagnosticText.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// `file:line:col` of the first file location in `loc`, else `loc` printed.
static void printLocation(Location loc, raw_ostream &os) {
  FileLineColLoc file;
  loc->walk([&](Location inner) {
    file = dyn_cast<FileLineColLoc>(inner);
    return file ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (file)
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    os << loc;
}

static void print(Diagnostic &diagnostic, raw_ostream &os) {
  if (!isa<UnknownLoc>(diagnostic.getLocation())) {
    printLocation(diagnostic.getLocation(), os);
    os << ": ";
  }
  switch (diagnostic.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  os << diagnostic;
}

std::string mlir::dist::getDiagnosticText(Diagnostic &diagnostic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(diagnostic, os);
  for (Diagnostic &note : diagnostic.getNotes()) {
    os << "\n";
    print(note, os);
  }
  return text;
}

mlir::dist::DiagnosticTextHandler::DiagnosticTextHandler(
    MLIRContext *context, std::function<void(const std::string &)> consume)
    : handler(context, [consume = std::move(consume)](Diagnostic &diagnostic) {
        consume(getDiagnosticText(diagnostic));
        return success();
      }) {}
