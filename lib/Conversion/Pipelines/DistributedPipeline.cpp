//===- DistributedPipeline.cpp - a strategy, then the lowering ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

/// Adds `strategy`'s passes to `pm` (none when it is empty); on a parse
/// error `pm` keeps only what it had.
static LogicalResult addStrategy(OpPassManager &pm, StringRef strategy,
                                 raw_ostream &errorStream) {
  strategy = strategy.trim();
  if (strategy.empty())
    return success();
  // The parser may have added passes before the one it could not parse:
  // `pm` is restored from a copy then.
  OpPassManager before = pm;
  std::string error;
  llvm::raw_string_ostream errors(error);
  if (failed(parsePassPipeline(strategy, pm, errors))) {
    pm = before;
    errorStream << "invalid strategy '" << strategy << "': " << error;
    return failure();
  }
  return success();
}

LogicalResult
mlir::train::buildDistributedPipeline(OpPassManager &pm, StringRef strategy,
                                      const CPUPipelineOptions &options,
                                      raw_ostream &errorStream) {
  if (failed(addStrategy(pm, strategy, errorStream)))
    return failure();
  buildCPUPipeline(pm, options);
  return success();
}

LogicalResult
mlir::train::buildDistributedPipeline(OpPassManager &pm, StringRef strategy,
                                      const CUDAPipelineOptions &options,
                                      raw_ostream &errorStream) {
  if (failed(addStrategy(pm, strategy, errorStream)))
    return failure();
  buildCUDAPipeline(pm, options);
  return success();
}
