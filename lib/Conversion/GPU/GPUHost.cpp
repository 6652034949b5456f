//===- GPUHost.cpp - a CUDA step's host code on one stream ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// After outlining, the host functions of a CUDA step only allocate, launch
// and call libraries. Their buffers move to the device and every GPU op is
// enqueued, asynchronously, on the stream `gpu.wait async` names at the
// function's entry: the process's one stream (libdistopt_cuda), on which
// cuBLAS and NCCL calls enqueue too. Nothing here waits on the host.
//
//===----------------------------------------------------------------------===//

#include "../MatmulToBlas/LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTGPUHOSTPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when the host itself reads or writes the buffer of `alloc`.
static bool isHostBuffer(memref::AllocOp alloc, func::FuncOp function) {
  bool host = false;
  train::forEachBufferUse(alloc, [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    // (Upstream's loop-to-GPU conversion leaves the loops' detached bodies
    // holding uses: only the function's ops count.)
    host |= isa<memref::LoadOp, memref::StoreOp>(owner) &&
            function->isProperAncestor(owner);
  });
  return host;
}

/// True when every use of the global `global` reads is a collective's
/// description the runtime reads on the host: a ranked operand of a call
/// of a function marked `distopt.host_operands` (the counts, mesh shape
/// and axes of a distrt call; its data buffers are unranked). Copied to
/// the device, the host would read device memory.
static bool isHostMetadata(memref::GetGlobalOp global,
                           SymbolTableCollection &symbols) {
  bool host = true, used = false;
  train::forEachBufferUse(global.getResult(), [&](OpOperand &use) {
    if (isa<ViewLikeOpInterface>(use.getOwner()))
      return; // (its uses are visited too)
    auto call = dyn_cast<func::CallOp>(use.getOwner());
    used = true;
    auto callee = call ? symbols.lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : nullptr;
    host &= callee && callee->hasAttr(train::kHostOperandsAttrName) &&
            isa<MemRefType>(use.get().getType());
  });
  return host && used;
}

/// The runtime function that answers the device copy of a constant global
/// (libdistopt_cuda: copied by its first call, kept for the process).
static constexpr StringLiteral kConstantFunction = "distopt_constant";

/// The declaration of distopt_constant(host address, bytes) -> memref<?xi8>.
static func::FuncOp getConstantFunction(ModuleOp module) {
  if (auto func = module.lookupSymbol<func::FuncOp>(kConstantFunction))
    return func;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  Type i64 = builder.getI64Type();
  auto type = FunctionType::get(
      module.getContext(), {i64, i64},
      {MemRefType::get({ShapedType::kDynamic}, builder.getI8Type())});
  auto func =
      func::FuncOp::create(builder, module.getLoc(), kConstantFunction, type);
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  return func;
}

/// The bytes of `global`'s buffer when it is a constant the device may
/// keep a copy of across calls: a `constant` memref.global of a static,
/// identity-layout type.
static std::optional<int64_t> getConstantBytes(memref::GetGlobalOp global) {
  auto definition = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      global, global.getNameAttr());
  MemRefType type = global.getType();
  if (!definition || !definition.getConstant() || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() || type.getMemorySpace() ||
      !type.getElementType().isIntOrIndexOrFloat())
    return std::nullopt;
  DataLayout layout = DataLayout::closest(global);
  return type.getNumElements() *
         static_cast<int64_t>(
             layout.getTypeSize(type.getElementType()).getFixedValue());
}

/// Rewrites one host function; fails with an error at the first op that
/// would touch device memory on the host.
static LogicalResult rewriteFunction(func::FuncOp func,
                                     SymbolTableCollection &symbols) {
  Block &entry = func.getBody().front();
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  MLIRContext *context = func.getContext();
  Type tokenType = gpu::AsyncTokenType::get(context);
  // The stream (libdistopt_cuda's mgpuStreamCreate: the process's one).
  Value stream =
      gpu::WaitOp::create(builder, func.getLoc(), tokenType, ValueRange())
          .getAsyncToken();

  // Buffers the host reads or writes stay host memory.
  DenseSet<Value> hostBuffers;
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (isHostBuffer(alloc, func)) {
        hostBuffers.insert(alloc);
        continue;
      }
      if (!alloc.getDynamicSizes().empty() ||
          !alloc.getSymbolOperands().empty())
        return alloc.emitOpError(
            "has a dynamic size, which a CUDA step cannot allocate");
      builder.setInsertionPoint(alloc);
      auto device = gpu::AllocOp::create(
          builder, alloc.getLoc(), alloc.getType(), tokenType,
          ValueRange{stream}, ValueRange(), ValueRange());
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
      continue;
    }
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      if (hostBuffers.contains(train::getRootBuffer(dealloc.getMemref())))
        continue;
      builder.setInsertionPoint(dealloc);
      gpu::DeallocOp::create(builder, dealloc.getLoc(), tokenType,
                             ValueRange{stream}, dealloc.getMemref());
      dealloc.erase();
      continue;
    }
    if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      if (isHostMetadata(global, symbols)) {
        hostBuffers.insert(global);
        continue;
      }
      // A constant: its device copy, made once per process (no copy, no
      // allocation per call: what a captured CUDA graph can replay).
      if (std::optional<int64_t> bytes = getConstantBytes(global)) {
        builder.setInsertionPointAfter(global);
        Location loc = global.getLoc();
        Value address = memref::ExtractAlignedPointerAsIndexOp::create(
            builder, loc, global.getResult());
        Value host = arith::IndexCastOp::create(builder, loc,
                                                builder.getI64Type(), address);
        Value size = arith::ConstantIntOp::create(builder, loc, *bytes, 64);
        Value copy = func::CallOp::create(
                         builder, loc,
                         getConstantFunction(func->getParentOfType<ModuleOp>()),
                         ValueRange{host, size})
                         .getResult(0);
        Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
        Value device = memref::ViewOp::create(builder, loc, global.getType(),
                                              copy, zero, ValueRange());
        global.getResult().replaceAllUsesExcept(device,
                                                address.getDefiningOp());
        continue;
      }
      if (global->getBlock() != &entry)
        return global.emitOpError(
            "reads a global in a nested region of a CUDA step's host code "
            "(only the entry block's globals are copied to the device)");
      builder.setInsertionPointAfter(global);
      auto device = gpu::AllocOp::create(
          builder, global.getLoc(), global.getType(), tokenType,
          ValueRange{stream}, ValueRange(), ValueRange());
      global.getResult().replaceAllUsesWith(device.getMemref());
      gpu::MemcpyOp::create(builder, global.getLoc(), tokenType,
                            ValueRange{stream}, device.getMemref(), global);
      func.walk([&](func::ReturnOp ret) {
        OpBuilder before(ret);
        gpu::DeallocOp::create(before, ret.getLoc(), tokenType,
                               ValueRange{stream}, device.getMemref());
      });
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      builder.setInsertionPoint(launch);
      auto async = gpu::LaunchFuncOp::create(
          builder, launch.getLoc(), launch.getKernel(),
          launch.getGridSizeOperandValues(), launch.getBlockSizeOperandValues(),
          launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
          tokenType, ValueRange{stream},
          launch.hasClusterSize()
              ? std::optional(launch.getClusterSizeOperandValues())
              : std::nullopt);
      async->setDiscardableAttrs(launch->getDiscardableAttrDictionary());
      launch.erase();
      continue;
    }
    if (isa<linalg::LinalgOp, memref::CopyOp, gpu::LaunchOp>(op))
      return op->emitOpError("is left on the host of a CUDA step (every "
                             "linalg op and copy must be mapped to kernels "
                             "first: dist-map-to-gpu)");
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      Value buffer = isa<memref::LoadOp>(op)
                         ? cast<memref::LoadOp>(op).getMemref()
                         : cast<memref::StoreOp>(op).getMemref();
      if (!hostBuffers.contains(train::getRootBuffer(buffer)))
        return op->emitOpError("would access device memory on the host of a "
                               "CUDA step (a scalar read or write outside "
                               "the kernels)");
    }
  }
  return success();
}

/// Renames every `distopt_<f>` library declaration of `module` (and its
/// calls) to libdistopt_cuda's `distopt_cuda_<f>`. libdistopt_cpu defines
/// the same `distopt_<f>` for the CPU's buffers: loaded in the same
/// process first (the runner links it), it would take a CUDA step's calls
/// and read device pointers on the host. A call libdistopt_cuda does not
/// define then fails to link, naming it, instead.
static LogicalResult renameLibraryCalls(ModuleOp module) {
  SmallVector<func::FuncOp> declarations;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isDeclaration() && func.getSymName().starts_with("distopt_") &&
        !func.getSymName().starts_with("distopt_cuda_"))
      declarations.push_back(func);
  SymbolTable table(module);
  for (func::FuncOp func : declarations) {
    auto name = StringAttr::get(
        module.getContext(),
        "distopt_cuda_" + func.getSymName().drop_front(strlen("distopt_")));
    if (table.lookup(name))
      return func.emitOpError("cannot be renamed to libdistopt_cuda's '")
             << name.getValue() << "': the module already has that symbol";
    if (failed(table.rename(func, name)))
      return failure();
  }
  return success();
}

namespace {
struct DistGPUHostPass
    : public mlir::train::impl::DistGPUHostPassBase<DistGPUHostPass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isDeclaration() && failed(rewriteFunction(func, symbols)))
        return signalPassFailure();
    if (failed(renameLibraryCalls(getOperation())))
      return signalPassFailure();
  }
};
} // namespace
