//===- OpCost.h - FLOPs and bytes of one op ---------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The cost of one op for the shapes it has (local shapes after partitioning).
// The cost model combines it with link bandwidths and kernel efficiencies.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_OPCOST_H
#define DISTOPT_INTERFACES_OPCOST_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

#include <cstdint>

namespace mlir::dist {

/// FLOPs and bytes moved by one execution of an op.
struct OpCost {
  /// Floating-point (or integer arithmetic) operations; a fused multiply-add
  /// counts as two.
  int64_t flops = 0;
  /// Bytes of all operands read once.
  int64_t bytesRead = 0;
  /// Bytes of all results written once.
  int64_t bytesWritten = 0;

  OpCost &operator+=(const OpCost &other) {
    flops += other.flops;
    bytesRead += other.bytesRead;
    bytesWritten += other.bytesWritten;
    return *this;
  }
};

/// Number of elements of a statically shaped tensor (1 for a scalar type).
int64_t getNumElements(Type type);
/// Storage bytes of one element (i1 counts as one byte).
int64_t getElementByteWidth(Type type);
/// Storage bytes of a statically shaped tensor.
int64_t getTensorBytes(Type type);

/// The cost of an op that performs `flops` operations and reads every operand
/// and writes every result exactly once.
OpCost getStreamingCost(Operation *op, int64_t flops);

} // namespace mlir::dist

#endif // DISTOPT_INTERFACES_OPCOST_H
