//===- CostOpInterface.td - FLOPs and bytes of an op ------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_COSTOPINTERFACE
#define DISTOPT_INTERFACES_COSTOPINTERFACE

include "mlir/IR/OpBase.td"

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::dist";
  let description = [{
    An op that reports its cost for the shapes it has: FLOPs (a multiply-add
    counts as two), bytes read (every operand once) and bytes written (every
    result once). After partitioning the shapes are local, so the cost is per
    rank. The cost model adds link bandwidths per mesh axis and kernel
    efficiency factors. The `train-test-cost` pass writes every op's cost as a
    `train.cost` attribute for lit tests.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/[{Returns the FLOPs and bytes of one execution of this op.}],
      /*retTy=*/"::mlir::dist::OpCost",
      /*methodName=*/"getCost",
      /*args=*/(ins)>,
  ];
}

#endif // DISTOPT_INTERFACES_COSTOPINTERFACE
