//===- ModuleToBinary.cpp - gpu.modules to gpu.binary ops in parallel -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Upstream gpu-module-to-binary serializes a module's gpu.modules one after
// the other; for a CUDA step almost all of dist-lower-cuda's time is there
// (LLVM's NVPTX back end and ptxas). Serializing a gpu.module reads and
// rewrites only that module, so this pass serializes them on the context's
// threads, then creates the objects and replaces the modules in order.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTGPUMODULETOBINARYPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// One gpu.module's serialization: an object per target, in its order.
struct Serialized {
  gpu::GPUModuleOp kernels;
  SmallVector<gpu::TargetAttrInterface> targets;
  SmallVector<std::optional<SmallVector<char, 0>>> objects;
};

struct DistGPUModuleToBinaryPass
    : public mlir::train::impl::DistGPUModuleToBinaryPassBase<
          DistGPUModuleToBinaryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<gpu::CompilationTarget> target =
        llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(format)
            .Cases({"offloading", "offload", "llvm"},
                   gpu::CompilationTarget::Offload)
            .Cases({"assembly", "isa"}, gpu::CompilationTarget::Assembly)
            .Cases({"binary", "bin"}, gpu::CompilationTarget::Binary)
            .Cases({"fatbinary", "fatbin"}, gpu::CompilationTarget::Fatbin)
            .Default(std::nullopt);
    if (!target) {
      module.emitError() << "dist-gpu-module-to-binary: unknown format '"
                         << format
                         << "' (expected fatbin, bin, isa or offload)";
      return signalPassFailure();
    }

    SmallVector<Serialized> work;
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      ArrayAttr targets = kernels.getTargetsAttr();
      if (!targets || targets.empty()) {
        kernels.emitError("the module has no target attributes");
        return signalPassFailure();
      }
      Serialized &one = work.emplace_back();
      one.kernels = kernels;
      for (Attribute attr : targets) {
        auto targetAttr = dyn_cast<gpu::TargetAttrInterface>(attr);
        if (!targetAttr) {
          kernels.emitError()
              << "target " << attr << " does not implement TargetAttrInterface";
          return signalPassFailure();
        }
        one.targets.push_back(targetAttr);
      }
      one.objects.resize(one.targets.size());
    }
    if (work.empty())
      return;

    // The symbol table a target may ask for, built before the threads
    // start and only read by them.
    SymbolTable symbols(module);
    auto getSymbols = [&]() -> SymbolTable * { return &symbols; };
    auto makeOptions = [&]() {
      return gpu::TargetOptions(toolkit, /*librariesToLink=*/{},
                                /*cmdOptions=*/"", /*elfSection=*/"", *target,
                                getSymbols);
    };

    // Diagnostics in the modules' order, whatever thread emits them.
    MLIRContext *context = &getContext();
    ParallelDiagnosticHandler diagnostics(context);
    LogicalResult serialized = failableParallelForEach(
        context, llvm::seq<size_t>(0, work.size()), [&](size_t i) {
          diagnostics.setOrderIDForThread(i);
          Serialized &one = work[i];
          // Each thread its own options: a target may consume parts of them.
          gpu::TargetOptions options = makeOptions();
          LogicalResult result = success();
          for (auto [targetAttr, object] :
               llvm::zip_equal(one.targets, one.objects)) {
            object = targetAttr.serializeToObject(one.kernels, options);
            if (!object) {
              one.kernels.emitError(
                  "an error happened while serializing the module for ")
                  << targetAttr;
              result = failure();
              break;
            }
          }
          diagnostics.eraseOrderIDForThread();
          return result;
        });
    if (failed(serialized))
      return signalPassFailure();

    gpu::TargetOptions options = makeOptions();
    OpBuilder builder(context);
    for (Serialized &one : work) {
      SmallVector<Attribute> objects;
      for (auto [targetAttr, object] :
           llvm::zip_equal(one.targets, one.objects)) {
        Attribute created =
            targetAttr.createObject(one.kernels, *object, options);
        if (!created) {
          one.kernels.emitError(
              "an error happened while creating the object for ")
              << targetAttr;
          return signalPassFailure();
        }
        objects.push_back(created);
      }
      builder.setInsertionPointAfter(one.kernels);
      gpu::BinaryOp::create(
          builder, one.kernels.getLoc(), one.kernels.getName(),
          dyn_cast_or_null<gpu::OffloadingLLVMTranslationAttrInterface>(
              one.kernels.getOffloadingHandlerAttr()),
          builder.getArrayAttr(objects));
      one.kernels->erase();
    }
  }
};
} // namespace
