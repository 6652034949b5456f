//===- StepInputs.h - initializing and checking step inputs -----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The ranges that the step's ops give its integer arguments (labels in
// [0, classes) of the cross-entropy reading them, token ids in [0, rows) of
// the table a gather reads), used both to write random inputs
// (--init-state/--init-data) and to check loaded ones before any step.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_STEPINPUTS_H
#define DISTOPT_RUNNER_STEPINPUTS_H

#include "distopt/Runner/Bindings.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <random>

#include "llvm/Support/Error.h"

namespace distopt::runner {

/// The range [0, bound) an integer argument of the step must hold, and
/// what sets it (for messages).
struct IndexRange {
  int64_t bound;
  std::string origin;
};

/// The range of argument `value` (global shapes in `bindings`, by argument
/// index): for a label, the class dim of the logits of the cross-entropy
/// (or its backward) reading it in `entry` (the function whose argument
/// it is), else the record's `classes` when the module kept one; for an
/// integer input, the rows of the table that a train.gather in `entry`
/// indexes with it. None when nothing tells (a lowered module: its ops are
/// gone).
std::optional<IndexRange> getIndexRange(mlir::func::FuncOp entry,
                                        const Binding &binding,
                                        llvm::ArrayRef<Binding> bindings);

/// Fails, naming the array, the index and the value, when `global` (the
/// array bound to `binding`) holds a value outside `range`.
llvm::Error checkIndexRange(const Binding &binding, const Array &global,
                            const IndexRange &range);
/// checkIndexRange for an array of `dtype` and `shape` at `data` (a
/// dataset file, `where` naming it in the message: " in 'DIR/y.npy'").
llvm::Error checkIndexRange(const Binding &binding, llvm::StringRef dtype,
                            llvm::ArrayRef<int64_t> shape, const char *data,
                            const IndexRange &range, llvm::StringRef where);

/// A deterministic global array for `binding` (`bindings`: every
/// argument's, by index): parameters as PyTorch initializes linear layers
/// (uniform in +-1/sqrt(fan_in); vectors zero, normalization scales one),
/// optimizer state zero, hyper-parameters 0.01 (integers 0), float inputs
/// standard normal, integer labels and token ids uniform in their range
/// (fails for labels nothing gives a range), float labels standard normal.
llvm::Expected<Array> initialize(mlir::func::FuncOp entry,
                                 mlir::ModuleOp module, const Binding &binding,
                                 llvm::ArrayRef<Binding> bindings,
                                 std::mt19937_64 &random);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_STEPINPUTS_H
