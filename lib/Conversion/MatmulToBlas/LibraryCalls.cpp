//===- LibraryCalls.cpp - linalg ops on buffers to libdistopt_cpu calls ---===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

Value train::getRootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

void train::forEachBufferUse(Value value,
                             function_ref<void(OpOperand &)> visit) {
  SmallVector<Value> aliases = {train::getRootBuffer(value)};
  while (!aliases.empty()) {
    Value alias = aliases.pop_back_val();
    for (OpOperand &use : alias.getUses()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner());
          view && view.getViewSource() == alias)
        llvm::append_range(aliases, view->getResults());
      visit(use);
    }
  }
}

linalg::FillOp train::findZeroFill(linalg::GenericOp op, Value out) {
  Value root = train::getRootBuffer(out);
  if (!root.getDefiningOp<memref::AllocOp>() &&
      !root.getDefiningOp<memref::AllocaOp>())
    return nullptr;
  // The last op of `op`'s block before it that uses the buffer (directly,
  // through a view, or in a nested region).
  Block *block = op->getBlock();
  Operation *last = nullptr;
  forEachBufferUse(root, [&](OpOperand &use) {
    Operation *inBlock = block->findAncestorOpInBlock(*use.getOwner());
    if (!inBlock || inBlock == op || !inBlock->isBeforeInBlock(op))
      return;
    if (!last || last->isBeforeInBlock(inBlock))
      last = inBlock;
  });
  auto fill = dyn_cast_or_null<linalg::FillOp>(last);
  if (!fill || fill.getOutputs()[0] != out ||
      !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return nullptr;
  return fill;
}

func::FuncOp train::getLibraryFunction(ModuleOp module, StringRef name,
                                       TypeRange arguments) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  MLIRContext *context = module.getContext();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto callee = func::FuncOp::create(builder, module.getLoc(), name,
                                     FunctionType::get(context, arguments, {}));
  callee.setPrivate();
  callee->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  // Its buffers may be freed once it returns (dist-buffer-deallocation).
  callee->setAttr("distopt.sync_buffers", UnitAttr::get(context));
  return callee;
}

void train::replaceByLibraryCall(
    linalg::GenericOp op, linalg::FillOp fill, StringRef name,
    function_ref<void(OpBuilder &, Location, SmallVectorImpl<Value> &)>
        buildScalars) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  SmallVector<Value> args;
  for (Value operand : op->getOperands())
    args.push_back(memref::CastOp::create(
        builder, loc,
        UnrankedMemRefType::get(getElementTypeOrSelf(operand.getType()), 0),
        operand));
  buildScalars(builder, loc, args);
  func::CallOp::create(
      builder, loc,
      train::getLibraryFunction(op->getParentOfType<ModuleOp>(), name,
                                ValueRange(args).getTypes()),
      args);
  fill->erase();
  op->erase();
}
