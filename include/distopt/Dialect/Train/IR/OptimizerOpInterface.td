//===- OptimizerOpInterface.td - optimizer updates ----------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_OPTIMIZEROPINTERFACE
#define DISTOPT_DIALECT_TRAIN_IR_OPTIMIZEROPINTERFACE

include "mlir/IR/OpBase.td"

def Train_OptimizerOpInterface : OpInterface<"OptimizerOpInterface"> {
  let cppNamespace = "::mlir::train";
  let description = [{
    An optimizer update: it reads one parameter, its gradient and its
    optimizer state and returns the new parameter (result 0) and the new
    state. Strategies (ZeRO, data parallelism) and the cost report find the
    gradient and the state of a parameter through this interface, never by
    op name.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"Returns the parameter the op updates.",
      /*retTy=*/"::mlir::Value", /*methodName=*/"getParam", /*args=*/(ins),
      /*methodBody=*/"", /*defaultImplementation=*/"return $_op.getParam();">,
    InterfaceMethod<
      /*desc=*/"Returns the gradient of the parameter.",
      /*retTy=*/"::mlir::Value", /*methodName=*/"getGrad", /*args=*/(ins),
      /*methodBody=*/"", /*defaultImplementation=*/"return $_op.getGrad();">,
    InterfaceMethod<
      /*desc=*/"Returns the updated parameter.",
      /*retTy=*/"::mlir::Value", /*methodName=*/"getNewParam",
      /*args=*/(ins), /*methodBody=*/"",
      /*defaultImplementation=*/"return $_op->getResult(0);">,
    InterfaceMethod<
      /*desc=*/[{
        Returns the optimizer-state operands shaped like the parameter
        (momentum buffer, moments), which ZeRO shards with it. Scalar state
        (a step count) is not included.
      }],
      /*retTy=*/"::mlir::SmallVector<::mlir::Value>",
      /*methodName=*/"getParamShapedState", /*args=*/(ins)>,
  ];
}

#endif // DISTOPT_DIALECT_TRAIN_IR_OPTIMIZEROPINTERFACE
