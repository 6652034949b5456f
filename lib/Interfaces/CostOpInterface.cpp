//===- CostOpInterface.cpp - FLOPs and bytes of an op ---------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Interfaces/CostOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::dist;

int64_t mlir::dist::getNumElements(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.getNumElements();
  return 1;
}

int64_t mlir::dist::getElementByteWidth(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isIntOrIndexOrFloat() && !element.isIndex())
    return std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
  return 8; // index and anything else: a pointer-sized word
}

int64_t mlir::dist::getTensorBytes(Type type) {
  return getNumElements(type) * getElementByteWidth(type);
}

OpCost mlir::dist::getStreamingCost(Operation *op, int64_t flops) {
  OpCost cost;
  cost.flops = flops;
  for (Type type : op->getOperandTypes())
    cost.bytesRead += getTensorBytes(type);
  for (Type type : op->getResultTypes())
    cost.bytesWritten += getTensorBytes(type);
  return cost;
}

#include "distopt/Interfaces/CostOpInterface.cpp.inc"
