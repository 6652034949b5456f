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
// or into a few (`modules`), compiled in parallel by
// dist-gpu-module-to-binary, and points every launch at its kernel.
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
    if (modules == 0) {
      module.emitError() << "dist-merge-kernel-modules: 'modules' must be at "
                            "least 1";
      return signalPassFailure();
    }
    // Each moved symbol's new reference, by its old one.
    DenseMap<Attribute, SymbolRefAttr> moved;
    for (auto &[attributes, alikeModules] : alike)
      for (ArrayRef<gpu::GPUModuleOp> group : split(alikeModules))
        if (failed(merge(group, moved)))
          return signalPassFailure();
    if (moved.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      if (SymbolRefAttr now = moved.lookup(launch.getKernel()))
        launch.setKernelAttr(now);
    });
  }

private:
  /// `all` in at most `modules` runs of consecutive modules of about equal
  /// op counts: each run takes its share of what the runs before it left
  /// (so a big kernel early does not leave the last runs empty).
  SmallVector<ArrayRef<gpu::GPUModuleOp>>
  split(ArrayRef<gpu::GPUModuleOp> all) const {
    SmallVector<uint64_t> sizes;
    uint64_t left = 0;
    for (gpu::GPUModuleOp kernels : all) {
      uint64_t size = 0;
      kernels->walk([&](Operation *) { ++size; });
      sizes.push_back(size);
      left += size;
    }
    SmallVector<ArrayRef<gpu::GPUModuleOp>> runs;
    size_t begin = 0;
    uint64_t run = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      run += sizes[i];
      uint64_t share = left / (modules - runs.size());
      bool last = runs.size() + 1 == modules;
      if ((!last && run >= share) || i + 1 == all.size()) {
        runs.push_back(all.slice(begin, i + 1 - begin));
        begin = i + 1;
        left -= run;
        run = 0;
      }
    }
    return runs;
  }

  /// Moves every kernel of `group` into its first module.
  LogicalResult merge(ArrayRef<gpu::GPUModuleOp> group,
                      DenseMap<Attribute, SymbolRefAttr> &moved) {
    if (group.size() < 2)
      return success();
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
          unique =
              StringAttr::get(&getContext(), name.getValue() + "_" + Twine(n));
        if (unique != name) {
          if (failed(SymbolTable::replaceAllSymbolUses(name, unique, &body)))
            return from.emitError() << "cannot rename " << name << " to "
                                    << unique << " inside it";
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
    return success();
  }
};
} // namespace
