//===- StepContract.h - the step contract of distributed steps --*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What every strategy promises of the training steps it rewrites: the
// train dialect's contract (roles, names, state results replacing their
// arguments) plus, for shardings, that each state result keeps its
// argument's sharding and that nothing the contract says is whole comes
// back split. `dist-verify` and `dist-partition` check it.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_STEPCONTRACT_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_STEPCONTRACT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::dist {

/// Checks the step contract of training step `func`; reports the first
/// violation at the value's location.
LogicalResult verifyStepContract(FunctionOpInterface func);

/// Checks the MPMD programs of `module` (functions with `dist.place`): only
/// fragments, sends, receives and serves at their top level; every send has one
/// receive in the program of its peer with its channel and type (and the
/// reverse); the programs, run together with buffered sends, cannot
/// deadlock (the diagnostic shows the cycle of programs waiting on each
/// other); training-step programs of one module have one loss in all.
LogicalResult verifyPrograms(ModuleOp module);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_STEPCONTRACT_H
