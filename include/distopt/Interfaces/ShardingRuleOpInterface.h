//===- ShardingRuleOpInterface.h - factor rules for sharding ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE_H
#define DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE_H

#include "distopt/Interfaces/ShardingRule.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::dist {
/// Checks that `rule` matches the shapes of `op`'s operands and results
/// (non-tensor operands and results count as rank 0). Reports on `op`.
LogicalResult verifyShardingRule(Operation *op, const ShardingRule &rule);
} // namespace mlir::dist

#include "distopt/Interfaces/ShardingRuleOpInterface.h.inc"

#endif // DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE_H
