//===- CostOpInterface.h - FLOPs and bytes of an op -------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_COSTOPINTERFACE_H
#define DISTOPT_INTERFACES_COSTOPINTERFACE_H

#include "distopt/Interfaces/OpCost.h"
#include "mlir/IR/OpDefinition.h"

#include "distopt/Interfaces/CostOpInterface.h.inc"

#endif // DISTOPT_INTERFACES_COSTOPINTERFACE_H
