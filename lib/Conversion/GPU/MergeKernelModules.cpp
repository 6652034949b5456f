//===- MergeKernelModules.cpp - a step's kernels in one gpu.module --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// gpu-kernel-outlining puts every kernel in a gpu.module of its own, and
// gpu-module-to-binary compiles each module on its own: an LLVM module
// linked with libdevice, NVPTX code generation and a ptxas process per
// kernel. A step has hundreds of kernels (a 12-layer GPT: 395), and the
// per-module work was a quarter of its compile time. This pass moves
// every kernel of the step's modules into one gpu.module, compiled once,
// and points every launch at it.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTMERGEKERNELMODULESPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
struct DistMergeKernelModulesPass
    : public mlir::train::impl::DistMergeKernelModulesPassBase<
          DistMergeKernelModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The modules compiled alike (all their attributes but the name equal:
    // targets, offloading handler) merge into the first of them.
    llvm::MapVector<DictionaryAttr, SmallVector<gpu::GPUModuleOp>> alike;
    for (gpu::GPUModuleOp kernels : module.getOps<gpu::GPUModuleOp>()) {
      NamedAttrList attributes(kernels->getAttrDictionary());
      attributes.erase(SymbolTable::getSymbolAttrName());
      alike[attributes.getDictionary(&getContext())].push_back(kernels);
    }
    // Each moved symbol's new reference, by its old one.
    DenseMap<Attribute, SymbolRefAttr> moved;
    for (auto &[attributes, group] : alike) {
      if (group.size() < 2)
        continue;
      gpu::GPUModuleOp into = group.front();
      SymbolTable symbols(into);
      for (gpu::GPUModuleOp from : llvm::drop_begin(group)) {
        // Its symbols renamed where the merged module has the name (each
        // outlined module's kernel is named after the function), with the
        // references inside it; then moved.
        Region &body = from.getBodyRegion();
        for (Operation &op : from.getBody()->getOperations()) {
          auto name =
              op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
          if (!name)
            continue;
          StringAttr unique = name;
          for (unsigned n = 0;
               symbols.lookup(unique) ||
               (unique != name && SymbolTable::lookupSymbolIn(from, unique));
               ++n)
            unique = StringAttr::get(&getContext(),
                                     name.getValue() + "_" + Twine(n));
          if (unique != name) {
            if (failed(SymbolTable::replaceAllSymbolUses(name, unique, &body)))
              return signalPassFailure();
            SymbolTable::setSymbolName(&op, unique);
          }
          moved[SymbolRefAttr::get(from.getNameAttr(),
                                   {FlatSymbolRefAttr::get(name)})] =
              SymbolRefAttr::get(into.getNameAttr(),
                                 {FlatSymbolRefAttr::get(unique)});
        }
        for (Operation &op :
             llvm::make_early_inc_range(from.getBody()->without_terminator())) {
          op.remove();
          symbols.insert(&op);
        }
        from.erase();
      }
    }
    if (moved.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      if (SymbolRefAttr now = moved.lookup(launch.getKernel()))
        launch.setKernelAttr(now);
    });
  }
};
} // namespace
