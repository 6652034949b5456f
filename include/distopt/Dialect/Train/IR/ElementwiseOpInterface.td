//===- ElementwiseOpInterface.td - ops that map elements ---*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_ELEMENTWISEOPINTERFACE
#define DISTOPT_DIALECT_TRAIN_IR_ELEMENTWISEOPINTERFACE

include "mlir/IR/OpBase.td"

def Train_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::mlir::train";
  let description = [{
    An op that computes each element of its result from the elements at the
    same position of its operands, with nothing else read (no state, no
    randomness, no neighbours): `train.add`, `train.exp`, `train.select`,
    `train.convert`, ... Such an op gives the same rows whether it runs on a
    whole tensor or on a block of its rows, so a transform that splits
    values by rows may run it on each block. dist-parameter-server asks it
    which ops between a gradient's sum over the batch and its optimizer (a
    scaling, a weight decay term) each server may apply to its own shards
    of the variable; the transform names no train op.

    Whether a particular instance maps elements also depends on its operand
    shapes (NumPy broadcasting may stretch an operand over the result's
    rows): `isElementwiseOnShapes` answers for the op as it stands.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        Returns whether this op maps elements as its operands are shaped:
        one ranked tensor result, and every operand a ranked tensor of rank
        0 (broadcast to every element) or of the result's shape.
      }],
      /*retTy=*/"bool", /*methodName=*/"isElementwiseOnShapes",
      /*args=*/(ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::train::hasElementwiseShapes($_op.getOperation());
      }]>,
  ];
}

#endif // DISTOPT_DIALECT_TRAIN_IR_ELEMENTWISEOPINTERFACE
