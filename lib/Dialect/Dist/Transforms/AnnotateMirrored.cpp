//===- AnnotateMirrored.cpp - data-parallel strategies (annotate) --===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTANNOTATEMIRROREDPASS
#define GEN_PASS_DEF_DISTANNOTATEMULTIWORKERMIRROREDPASS
#define GEN_PASS_DEF_DISTANNOTATEZEROPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
struct DistAnnotateMirroredPass
    : public mlir::dist::impl::DistAnnotateMirroredPassBase<
          DistAnnotateMirroredPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (replicas < 1) {
      emitOptionError(module, "dist-annotate-mirrored")
          << "needs replicas >= 1, got " << static_cast<int64_t>(replicas);
      return signalPassFailure();
    }
    if (failed(checkDeviceCounts(getOptionLocation(module),
                                 "dist-annotate-mirrored",
                                 {{"replicas", replicas}})) ||
        failed(checkSingleDevice(module)) ||
        failed(checkBatchBound(module, "dist-annotate-mirrored", "replicas",
                               replicas, "replica")))
      return signalPassFailure();
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", {"data"}, {replicas}, {});
    if (failed(mesh) ||
        failed(annotateDataParallel(module, *mesh, {0}, replicas,
                                    /*replicateState=*/true)))
      return signalPassFailure();
  }
};

struct DistAnnotateMultiWorkerMirroredPass
    : public mlir::dist::impl::DistAnnotateMultiWorkerMirroredPassBase<
          DistAnnotateMultiWorkerMirroredPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (hosts < 1 || devices < 1) {
      emitOptionError(module, "dist-annotate-multi-worker-mirrored")
          << "needs hosts >= 1 and devices >= 1, got "
          << static_cast<int64_t>(hosts) << " and "
          << static_cast<int64_t>(devices);
      return signalPassFailure();
    }
    StringRef pass = "dist-annotate-multi-worker-mirrored";
    if (failed(checkDeviceCounts(getOptionLocation(module), pass,
                                 {{"hosts", hosts}, {"devices", devices}})) ||
        failed(checkSingleDevice(module)) ||
        failed(checkBatchBound(module, pass, "hosts x devices", hosts * devices,
                               "replica")))
      return signalPassFailure();
    FailureOr<MeshOp> mesh = getOrCreateMesh(
        module, "mesh", {"hosts", "devices"}, {hosts, devices}, {"hosts"});
    if (failed(mesh) ||
        failed(annotateDataParallel(module, *mesh, {0, 1}, hosts * devices,
                                    /*replicateState=*/true)))
      return signalPassFailure();
  }
};

struct DistAnnotateZeroPass
    : public mlir::dist::impl::DistAnnotateZeroPassBase<DistAnnotateZeroPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (replicas < 1 || stage < 1 || stage > 3) {
      emitOptionError(module, "dist-annotate-zero")
          << "needs stage=1, 2 or 3 and replicas >= 1, got stage "
          << static_cast<int64_t>(stage) << " and replicas "
          << static_cast<int64_t>(replicas);
      return signalPassFailure();
    }
    if (failed(checkDeviceCounts(getOptionLocation(module),
                                 "dist-annotate-zero",
                                 {{"replicas", replicas}})) ||
        failed(checkSingleDevice(module)) ||
        failed(checkBatchBound(module, "dist-annotate-zero", "replicas",
                               replicas, "replica")))
      return signalPassFailure();
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", {"data"}, {replicas}, {});
    if (failed(mesh) ||
        failed(annotateDataParallel(module, *mesh, {0}, replicas,
                                    /*replicateState=*/true)))
      return signalPassFailure();
    applyZero(module, *mesh, stage, /*dataAxes=*/{0}, replicas);
  }
};
} // namespace
