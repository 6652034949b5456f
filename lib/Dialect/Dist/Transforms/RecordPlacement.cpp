//===- RecordPlacement.cpp - the strategy that placed the programs --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTRECORDPLACEMENTPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
struct DistRecordPlacementPass
    : public dist::impl::DistRecordPlacementPassBase<DistRecordPlacementPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ModuleOp source = getPlacementSource(module);
    if (!source) {
      module.emitError() << "dist-record-placement: the module keeps no '"
                         << DistDialect::kPlacementAttrName
                         << "' module: run it after a placing pass "
                            "(dist-pipeline, dist-parameter-server)";
      return signalPassFailure();
    }
    if (StringRef(pipeline).trim().empty()) {
      module.emitError()
          << "dist-record-placement: needs pipeline=<the strategy as a "
             "textual pipeline on builtin.module>";
      return signalPassFailure();
    }
    recordPlacement(module, source, pipeline);
    markAllAnalysesPreserved();
  }
};
} // namespace
