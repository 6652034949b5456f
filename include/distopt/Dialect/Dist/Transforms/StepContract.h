//===- StepContract.h - the step contract of distributed steps --*- C++ -*-===//
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

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::dist {

/// Checks the step contract of training step `func`; reports the first
/// violation at the value's location.
LogicalResult verifyStepContract(FunctionOpInterface func);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_STEPCONTRACT_H
