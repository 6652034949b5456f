//===- CostOpInterface.h - FLOPs and bytes of an op -------------*- C++ -*-===//

#ifndef DISTOPT_INTERFACES_COSTOPINTERFACE_H
#define DISTOPT_INTERFACES_COSTOPINTERFACE_H

#include "distopt/Interfaces/OpCost.h"
#include "mlir/IR/OpDefinition.h"

#include "distopt/Interfaces/CostOpInterface.h.inc"

#endif // DISTOPT_INTERFACES_COSTOPINTERFACE_H
