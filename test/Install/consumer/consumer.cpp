//===- consumer.cpp - a C++ compiler embedding DistOpt --------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// consumer STEP.mlir PASSES: registers DistOpt's dialects in its own
// context and its passes globally, parses the step, runs the pipeline (a
// strategy) and prints the result.
//
//===----------------------------------------------------------------------===//

#include "distopt/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: consumer STEP.mlir PASSES\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::dist::registerAllDialects(registry);
  mlir::dist::registerAllPasses();
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  // Anchored on the module: the pipeline is the passes alone.
  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  if (mlir::failed(mlir::parsePassPipeline(argv[2], pm, llvm::errs())) ||
      mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}
