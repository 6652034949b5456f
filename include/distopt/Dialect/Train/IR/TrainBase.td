//===- TrainBase.td - train dialect, enums, constraints ----*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAINBASE
#define DISTOPT_DIALECT_TRAIN_IR_TRAINBASE

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::mlir::train";
  let summary = "Single-device training steps: forward, backward and update";
  let description = [{
    The `train` dialect represents one single-device training step: the
    forward computation, the backward computation (as the ops that exporters
    such as PyTorch, JAX and TensorFlow emit, e.g. `conv2d_backward_input`)
    and the optimizer update. DistOpt's strategies rewrite it into a
    distributed program.

    A training step is a `func.func` whose arguments and results carry a
    `train.role` (`#train.role<param>` ...) and a `train.name` (a stable name
    such as `"fc1.weight"` that binds state and data across steps). Updated
    parameters and optimizer state are results with the name of the argument
    they replace. `train-verify` checks this structure. Once lowering has
    removed these attributes, the module attribute `train.step` (written by
    `dist-record-step`, `dist-to-runtime` and `dist-lower-cpu`) records the
    step's interface for runners such as `dist-run`. A `label` argument may
    also carry `train.classes`, the number of classes its values index (set
    where the cross-entropy reading it is rewritten into reductions, so
    runners still range-check the labels).

    All ops work on ranked, statically shaped tensors of floats (f16, bf16,
    f32, f64), signless integers or i1. Every op infers its result type from
    its operands and attributes where these determine it (ops whose result
    type is their specification, such as `reshape`, check it instead), has a
    verifier with precise messages, and implements `ShardingRuleOpInterface`
    and `CostOpInterface`.

    **Broadcasting.** Elementwise ops with several operands (`add`, `sub`,
    `mul`, `div`, `max`, `min`, `pow`, `compare`, `select`) follow NumPy's
    rule: shapes are aligned at their trailing dims; aligned dims must be
    equal or one of them must be 1; missing leading dims count as 1; the
    result has the larger size in every dim. Element types must match
    exactly (no implicit promotion: use `train.convert`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Attribute names on function arguments and results.
    static constexpr ::llvm::StringLiteral kRoleAttrName = "train.role";
    static constexpr ::llvm::StringLiteral kNameAttrName = "train.name";
    static constexpr ::llvm::StringLiteral kClassesAttrName = "train.classes";
    /// On a param or opt_state argument: its initial value for a runner's
    /// --init-state, a float (every element) or "normal" (standard normal
    /// draws from the run's seed); without it a runner's own scheme.
    static constexpr ::llvm::StringLiteral kInitAttrName = "train.init";
    /// Discardable attributes the test passes write on ops.
    static constexpr ::llvm::StringLiteral kShardingRuleAttrName =
        "train.sharding_rule";
    static constexpr ::llvm::StringLiteral kCostAttrName = "train.cost";
    /// On a module: the recorded interface of its training step, which
    /// runners read once lowering removed the function's attributes
    /// (distopt/Conversion/StepSignature.h).
    static constexpr ::llvm::StringLiteral kStepAttrName = "train.step";
    /// On an op of a training step: the pipeline stage the user puts it on
    /// (a non-negative integer); `dist-pipeline` places the ops after it
    /// on that stage or a later one.
    static constexpr ::llvm::StringLiteral kStageAttrName = "train.stage";
    /// On a function `train-derive-eval` made: the training step (a symbol)
    /// whose forward-only evaluation it is.
    static constexpr ::llvm::StringLiteral kEvalOfAttrName = "train.eval_of";
    /// On a function train-mixed-precision rewrote: its options (a string).
    static constexpr ::llvm::StringLiteral kMixedPrecisionAttrName =
        "train.mixed_precision";
    /// On a function train-remat rewrote: its policy (a string).
    static constexpr ::llvm::StringLiteral kRematAttrName = "train.remat";
    /// A unit attribute on the `train.constant` that seeds the backward
    /// pass (d loss / d loss), which a front end knows; loss scaling
    /// multiplies it.
    static constexpr ::llvm::StringLiteral kLossSeedAttrName =
        "train.loss_seed";
    /// The optimizer state dynamic loss scaling adds: the scale and the
    /// count of clean steps since it last changed.
    static constexpr ::llvm::StringLiteral kLossScaleStateName = "loss_scale";
    static constexpr ::llvm::StringLiteral kGrowthTrackerStateName =
        "loss_scale.growth_tracker";
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Train_Role : I32EnumAttr<"Role",
    "role of a training-step argument or result", [
  I32EnumAttrCase<"param", 0>,
  I32EnumAttrCase<"opt_state", 1>,
  I32EnumAttrCase<"input", 2>,
  I32EnumAttrCase<"label", 3>,
  I32EnumAttrCase<"hyper", 4>,
  I32EnumAttrCase<"loss", 5>,
  I32EnumAttrCase<"metric", 6>
]> {
  let cppNamespace = "::mlir::train";
  let genSpecializedAttr = 0;
}

def Train_RoleAttr : EnumAttr<Train_Dialect, Train_Role, "role"> {
  let summary = "role of a training-step argument or result";
  let description = [{
    Arguments: `param` (a trainable parameter), `opt_state` (optimizer state:
    momentum buffers, Adam moments, the step count), `input`, `label` (one
    batch of data) and `hyper` (hyper-parameters such as the learning rate).
    Results: `param` and `opt_state` (the updated values, named after the
    argument they replace), `loss` (exactly one) and `metric`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Train_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"max", 2>,
  I32EnumAttrCase<"min", 3>
]> {
  let cppNamespace = "::mlir::train";
  let genSpecializedAttr = 0;
}

def Train_ReduceKindAttr : EnumAttr<Train_Dialect, Train_ReduceKind,
                                    "reduce_kind"> {
  let summary = "reduction combiner: sum, mean, max or min";
  let assemblyFormat = "`<` $value `>`";
}

def Train_CompareDirection : I32EnumAttr<"CompareDirection",
    "elementwise comparison", [
  I32EnumAttrCase<"eq", 0>,
  I32EnumAttrCase<"ne", 1>,
  I32EnumAttrCase<"lt", 2>,
  I32EnumAttrCase<"le", 3>,
  I32EnumAttrCase<"gt", 4>,
  I32EnumAttrCase<"ge", 5>
]> {
  let cppNamespace = "::mlir::train";
  let genSpecializedAttr = 0;
}

def Train_CompareDirectionAttr : EnumAttr<Train_Dialect,
    Train_CompareDirection, "compare_direction"> {
  let summary = "comparison: eq, ne, lt, le, gt or ge";
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Train_Float : AnyTypeOf<[F16, BF16, F32, F64], "float">;
def Train_Element : AnyTypeOf<[Train_Float, AnySignlessInteger],
                              "float or signless integer">;

def Train_Tensor : StaticShapeTensorOf<[Train_Element]>;
def Train_FloatTensor : StaticShapeTensorOf<[Train_Float]>;
def Train_IntTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
def Train_BoolTensor : StaticShapeTensorOf<[I1]>;
def Train_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Train_FloatScalar : 0DTensorOf<[Train_Float]>;
def Train_StepScalar : 0DTensorOf<[Train_Float, I32, I64]>;
def Train_SeedScalar : 0DTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Attribute constraints
//===----------------------------------------------------------------------===//

def Train_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;
def Train_Quad : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<4>]>;
def Train_PositivePair : ConfinedAttr<DenseI64ArrayAttr,
    [DenseArrayCount<2>, DenseArrayStrictlyPositive<DenseI64ArrayAttr>]>;
def Train_NonNegativeQuad : ConfinedAttr<DenseI64ArrayAttr,
    [DenseArrayCount<4>, DenseArrayNonNegative<DenseI64ArrayAttr>]>;

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAINBASE
