//===- ShardingRuleOpInterface.cpp - factor rules for sharding ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::dist;

static SmallVector<ArrayRef<int64_t>> getShapes(TypeRange types) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Type type : types) {
    if (auto shaped = dyn_cast<ShapedType>(type))
      shapes.push_back(shaped.getShape());
    else
      shapes.push_back({});
  }
  return shapes;
}

LogicalResult mlir::dist::verifyShardingRule(Operation *op,
                                             const ShardingRule &rule) {
  return rule.verify(getShapes(op->getOperandTypes()),
                     getShapes(op->getResultTypes()),
                     [&] { return op->emitOpError(); });
}

#include "distopt/Interfaces/ShardingRuleOpInterface.cpp.inc"
