//===- TrainOps.td - train dialect ops ---------------------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_IR_TRAINOPS
#define DISTOPT_DIALECT_TRAIN_IR_TRAINOPS

include "distopt/Dialect/Train/IR/ElementwiseOpInterface.td"
include "distopt/Dialect/Train/IR/OptimizerOpInterface.td"
include "distopt/Dialect/Train/IR/TrainBase.td"
include "distopt/Interfaces/CostOpInterface.td"
include "distopt/Interfaces/ShardingRuleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// Rejects discardable attributes without a dialect prefix, so a misspelled
// attribute (`stride` for `strides`) is an error instead of being ignored.
def Train_StrictAttributes : NativeOpTrait<"StrictAttributes"> {
  let cppNamespace = "::mlir::OpTrait::train";
}

// Every train op is pure, states a sharding rule and a cost, and accepts only
// its own attributes (plus dialect-prefixed ones such as `train.cost`). Ops
// print as `train.op %operands {attrs} : (operand types) -> result types`.
class Train_Op<string mnemonic, list<Trait> traits = [],
               list<string> ruleMethods = []>
    : Op<Train_Dialect, mnemonic, !listconcat([Pure, Train_StrictAttributes,
          DeclareOpInterfaceMethods<ShardingRuleOpInterface, ruleMethods>,
          DeclareOpInterfaceMethods<CostOpInterface>], traits)> {
  let assemblyFormat =
      "operands attr-dict `:` functional-type(operands, results)";
}

// An op whose sharding rule is pointwise over the shape of its first result
// (operands aligned at their trailing dims; size-1 broadcast dims and scalar
// operands are not mapped) and whose cost is `flopsPerElement` operations per
// element of the first result.
// `scaled`: the operands the op is linear in when the others are scalars
// (ShardingRule::getScaledOperands).
class Train_PointwiseOp<string mnemonic, int flopsPerElement,
                        list<Trait> traits = [], bit linear = 0,
                        list<string> ruleMethods = [], list<int> scaled = []>
    : Train_Op<mnemonic, traits, ruleMethods> {
  code pointwiseDefinitions = [{
    ::mlir::dist::ShardingRule $cppClass::getShardingRule() {
      return ::mlir::train::getPointwiseRule(getOperation(), }]
      # !if(linear, "true", "false") # [{, }]
      # !if(!eq(mnemonic, "dropout"), "true", "false") # [{, {}]
      # !interleave(scaled, ", ") # [{});
    }
    ::mlir::dist::OpCost $cppClass::getCost() {
      return ::mlir::train::getPointwiseCost(getOperation(), }]
      # flopsPerElement # [{);
    }
  }];
  let extraClassDefinition = pointwiseDefinitions;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Train_BinaryOp<string mnemonic, int flopsPerElement,
                     Type operandType, string semantics, bit linear = 0,
                     list<int> scaled = []>
    : Train_PointwiseOp<mnemonic, flopsPerElement,
                        [InferTypeOpAdaptor, Train_ElementwiseOpInterface],
                        linear, [], scaled> {
  let summary = "elementwise " # semantics # " with broadcasting";
  let description = [{
    Computes `}] # semantics # [{` elementwise. The operands broadcast by
    NumPy's rule (see the dialect description) and must have the same element
    type, which the result has.

    ```mlir
    %r = train.}] # mnemonic # [{ %a, %b
        : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let extraClassDefinition = pointwiseDefinitions # [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::train::inferBroadcastTypes(
          ::mlir::train::ShapeDiagnostics(loc, getOperationName()),
          adaptor.getOperands().getTypes(), /*elementType=*/nullptr, types);
    }
  }];
}

def Train_AddOp : Train_BinaryOp<"add", 1, Train_Tensor, "lhs + rhs",
                                 /*linear=*/1>;
def Train_SubOp : Train_BinaryOp<"sub", 1, Train_Tensor, "lhs - rhs",
                                 /*linear=*/1>;
def Train_MulOp : Train_BinaryOp<"mul", 1, Train_Tensor, "lhs * rhs",
                                 /*linear=*/0, /*scaled=*/[0, 1]>;
def Train_DivOp : Train_BinaryOp<"div", 1, Train_Tensor, "lhs / rhs",
                                 /*linear=*/0, /*scaled=*/[0]>;
def Train_MaxOp : Train_BinaryOp<"max", 1, Train_Tensor, "max(lhs, rhs)">;
def Train_MinOp : Train_BinaryOp<"min", 1, Train_Tensor, "min(lhs, rhs)">;
def Train_PowOp : Train_BinaryOp<"pow", 1, Train_FloatTensor, "lhs ^ rhs">;

class Train_UnaryOp<string mnemonic, int flopsPerElement, Type operandType,
                    string semantics, bit linear = 0>
    : Train_PointwiseOp<mnemonic, flopsPerElement,
                        [SameOperandsAndResultType, InferTypeOpInterface,
                         Train_ElementwiseOpInterface],
                        linear> {
  let summary = "elementwise " # semantics;
  let description = [{
    Computes `}] # semantics # [{` elementwise; the result has the operand's
    type. The cost model counts }] # flopsPerElement # [{ operation(s) per
    element.
  }];
  let arguments = (ins operandType:$operand);
  let results = (outs operandType:$result);
}

def Train_NegOp : Train_UnaryOp<"neg", 1, Train_Tensor, "-x", /*linear=*/1>;
def Train_AbsOp : Train_UnaryOp<"abs", 1, Train_Tensor, "|x|">;
def Train_ExpOp : Train_UnaryOp<"exp", 1, Train_FloatTensor, "e^x">;
def Train_LogOp : Train_UnaryOp<"log", 1, Train_FloatTensor, "ln(x)">;
def Train_SqrtOp : Train_UnaryOp<"sqrt", 1, Train_FloatTensor, "sqrt(x)">;
def Train_RsqrtOp : Train_UnaryOp<"rsqrt", 2, Train_FloatTensor,
                                  "1 / sqrt(x)">;
def Train_TanhOp : Train_UnaryOp<"tanh", 1, Train_FloatTensor, "tanh(x)">;
def Train_SigmoidOp : Train_UnaryOp<"sigmoid", 3, Train_FloatTensor,
                                    "1 / (1 + e^-x)">;
def Train_ReluOp : Train_UnaryOp<"relu", 1, Train_Tensor, "max(x, 0)">;
def Train_GeluOp : Train_UnaryOp<"gelu", 8, Train_FloatTensor,
                                 "x * 0.5 * (1 + tanh(0.79788456 * (x + 0.044715 * x^3)))">;
def Train_ErfOp : Train_UnaryOp<"erf", 8, Train_FloatTensor,
                                "erf(x) = 2 / sqrt(pi) * integral of e^-t^2 from 0 to x">;
def Train_Log1pOp : Train_UnaryOp<"log1p", 2, Train_FloatTensor,
                                  "ln(1 + x), exact near 0">;
def Train_Expm1Op : Train_UnaryOp<"expm1", 2, Train_FloatTensor,
                                  "e^x - 1, exact near 0">;

def Train_CompareOp : Train_PointwiseOp<"compare", 1,
    [InferTypeOpAdaptor, Train_ElementwiseOpInterface]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares `lhs` and `rhs` elementwise with `direction` (eq, ne, lt, le, gt,
    ge) and returns an i1 tensor. Operands broadcast by NumPy's rule and must
    have the same element type.

    ```mlir
    %m = train.compare %a, %b {direction = #train.compare_direction<gt>}
        : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xi1>
    ```
  }];
  let arguments = (ins Train_Tensor:$lhs, Train_Tensor:$rhs,
                       Train_CompareDirectionAttr:$direction);
  let results = (outs Train_BoolTensor:$result);
}

def Train_SelectOp : Train_PointwiseOp<"select", 1,
    [InferTypeOpAdaptor, Train_ElementwiseOpInterface]> {
  let summary = "elementwise choice between two tensors";
  let description = [{
    Returns `on_true` where `condition` is true and `on_false` elsewhere. The
    three operands broadcast by NumPy's rule; `on_true` and `on_false` must
    have the same element type, which the result has.
  }];
  let arguments = (ins Train_BoolTensor:$condition, Train_Tensor:$on_true,
                       Train_Tensor:$on_false);
  let results = (outs Train_Tensor:$result);
}

def Train_ConvertOp : Train_PointwiseOp<"convert", 1,
    [Train_ElementwiseOpInterface]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts every element to the result's element type (float <-> float
    rounds to nearest even; float -> integer truncates toward zero; integer
    -> float rounds; i1 converts as 0/1). The result type is the op's
    specification: it must have the operand's shape. Sharding rule:
    pointwise; a float conversion that widens (bf16 or f16 to f32, f32 to
    f64) is exact, so it is linear: a partial sum passes through it and is
    reduced in the wider type (a 16-bit gradient converted for a float32
    update is all-reduced in float32, as PyTorch DDP reduces autocast's
    gradients).

    ```mlir
    %h = train.convert %x : (tensor<8x4xf32>) -> tensor<8x4xbf16>
    ```
  }];
  let arguments = (ins Train_Tensor:$operand);
  let results = (outs Train_Tensor:$result);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True for a float-to-float conversion to at least as many mantissa
    /// and exponent bits (exact for every value).
    bool isExactWidening();
  }];
  let extraClassDefinition = [{
    ::mlir::dist::ShardingRule $cppClass::getShardingRule() {
      return ::mlir::train::getPointwiseRule(getOperation(),
                                             /*linear=*/isExactWidening());
    }
    ::mlir::dist::OpCost $cppClass::getCost() {
      return ::mlir::train::getPointwiseCost(getOperation(), 1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions
//===----------------------------------------------------------------------===//

def Train_MatmulOp : Train_Op<"matmul", [InferTypeOpAdaptor]> {
  let summary = "matrix product with optional batch dims and transposes";
  let description = [{
    Multiplies the two innermost dims of `lhs` (`[..., m, k]`, or `[..., k,
    m]` with `transpose_lhs`) and `rhs` (`[..., k, n]`, or `[..., n, k]`
    with `transpose_rhs`) into `[..., m, n]`. Leading dims are batch dims:
    both operands have the same batch dims, or one of them has none and is
    shared by every batch (a linear layer's weight). Covers linear layers,
    `bmm` and attention.

    Sharding rule: batch dims and `m`, `n` are pass factors, `k` is a
    reduction factor. Cost: `2 * batch * m * n * k` FLOPs.

    ```mlir
    %y = train.matmul %x, %w {transpose_rhs}
        : (tensor<8x128x512xf32>, tensor<2048x512xf32>) -> tensor<8x128x2048xf32>
    ```
  }];
  let arguments = (ins Train_Tensor:$lhs, Train_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Train_Tensor:$result);
}

defvar convAttrs = (ins
    DefaultValuedAttr<Train_PositivePair, "{1, 1}">:$strides,
    DefaultValuedAttr<Train_NonNegativeQuad, "{0, 0, 0, 0}">:$padding,
    DefaultValuedAttr<Train_PositivePair, "{1, 1}">:$dilations,
    DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$groups);

defvar convDocs = [{
    Layout is NCHW for activations and FCHW (`[out_channels, in_channels /
    groups, kh, kw]`) for filters. `strides` and `dilations` are `[h, w]`,
    `padding` is `[top, bottom, left, right]`; output size per spatial dim is
    `(in + pad_lo + pad_hi - dilation * (kernel - 1) - 1) / stride + 1`
    (floor). `groups` splits the channels into independent groups (both
    channel counts must divide by it).

    Sharding rule: one factor each for the batch `n`, the output channels per
    group `f` and the input channels per group `c`; the one summed over is a
    reduction factor (`c` for `conv2d`, `f` for `conv2d_backward_input`, `n`
    for `conv2d_backward_filter`), the others pass. With `groups > 1` the
    channel dims are compound (group x channels per group). Spatial and
    kernel dims need replication, with separate factors for the input, filter
    and output. Cost: `2 * n * f * oh * ow * (c / groups) * kh * kw` FLOPs
    for each of the three ops.
}];

def Train_Conv2dOp : Train_Op<"conv2d", [InferTypeOpAdaptor]> {
  let summary = "2-D convolution (NCHW)";
  let description = [{
    Convolves `input` `[n, c, h, w]` with `filter` `[f, c / groups, kh, kw]`
    into `[n, f, oh, ow]` (cross-correlation, as in every framework).
  }] # convDocs;
  let arguments = !con((ins Train_FloatTensor:$input,
                            Train_FloatTensor:$filter), convAttrs);
  let results = (outs Train_FloatTensor:$result);
}

def Train_Conv2dBackwardInputOp
    : Train_Op<"conv2d_backward_input", [InferTypeOpAdaptor]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    Given `grad_output` `[n, f, oh, ow]` and `filter` `[f, c / groups, kh,
    kw]` of a `conv2d` with the same attributes, returns the gradient of its
    input `[n, c, h, w]`. `input_size` gives `[h, w]` (strides make it
    ambiguous); it must produce `[oh, ow]` under the forward formula.
  }] # convDocs;
  let arguments = !con((ins Train_FloatTensor:$grad_output,
                            Train_FloatTensor:$filter,
                            Train_PositivePair:$input_size), convAttrs);
  let results = (outs Train_FloatTensor:$result);
}

def Train_Conv2dBackwardFilterOp
    : Train_Op<"conv2d_backward_filter", [InferTypeOpAdaptor]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    Given the forward `input` `[n, c, h, w]` and `grad_output` `[n, f, oh,
    ow]` of a `conv2d` with the same attributes, returns the gradient of its
    filter `[f, c / groups, kh, kw]`. `kernel_size` gives `[kh, kw]`; it must
    produce `[oh, ow]` under the forward formula. The batch dim is a
    reduction factor (data-parallel weight gradients are partial sums).
  }] # convDocs;
  let arguments = !con((ins Train_FloatTensor:$input,
                            Train_FloatTensor:$grad_output,
                            Train_PositivePair:$kernel_size), convAttrs);
  let results = (outs Train_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

def Train_ReduceOp : Train_Op<"reduce", [InferTypeOpAdaptor]> {
  let summary = "sum, mean, max or min over a list of dims";
  let description = [{
    Reduces `operand` over `dims` (unique, in range, any order) with `kind`.
    The result drops the reduced dims, or keeps them with size 1 when
    `keepdims` is set. Reducing over no dims is the identity.

    Sharding rule: for `sum` and `mean` the reduced dims are reduction
    factors (a sharded reduction leaves a partial sum; `mean` marks them as
    mean factors, so each shard's partial mean is scaled by its share); for
    `max` and `min` they need replication (shardings express pending sums
    only). The other dims pass. Cost: one operation
    per input element.

    ```mlir
    %s = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 0>}
        : (tensor<64x128xf32>) -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_Tensor:$operand, Train_ReduceKindAttr:$kind,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdims);
  let results = (outs Train_Tensor:$result);
}

class Train_SoftmaxBase<string mnemonic, string summaryText,
                        int flopsPerElement, dag operands>
    : Train_Op<mnemonic, [InferTypeOpAdaptor]> {
  let summary = summaryText;
  let arguments = !con(operands, (ins I64Attr:$dim));
  let results = (outs Train_FloatTensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::mlir::train::inferSoftmaxTypes(
          ::mlir::train::ShapeDiagnostics(loc, getOperationName()),
          adaptor.getOperands().getTypes(), adaptor.getDim(), types);
    }
    ::mlir::dist::ShardingRule $cppClass::getShardingRule() {
      return ::mlir::train::getSoftmaxRule(getOperation(), getDim());
    }
    ::mlir::dist::OpCost $cppClass::getCost() {
      return ::mlir::train::getPointwiseCost(getOperation(), }]
      # flopsPerElement # [{);
    }
  }];
}

def Train_SoftmaxOp : Train_SoftmaxBase<"softmax",
    "softmax along one dim", 5, (ins Train_FloatTensor:$operand)> {
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `dim` (negative counts
    from the back). The result has the operand's type. Sharding rule: `dim`
    needs replication, the other dims pass.
  }];
}

def Train_LogSoftmaxOp : Train_SoftmaxBase<"log_softmax",
    "log-softmax along one dim", 5, (ins Train_FloatTensor:$operand)> {
  let description = [{
    `x - max(x) - log(sum(exp(x - max(x))))` along `dim` (negative counts
    from the back). The result has the operand's type. Sharding rule: `dim`
    needs replication, the other dims pass.
  }];
}

def Train_SoftmaxBackwardOp : Train_SoftmaxBase<"softmax_backward",
    "gradient of softmax", 4,
    (ins Train_FloatTensor:$grad_output, Train_FloatTensor:$output)> {
  let description = [{
    Given the gradient of a `softmax` result and the result `y` itself,
    returns `y * (grad - sum(grad * y, dim))`. Both operands and the result
    have one type.
  }];
}

def Train_LogSoftmaxBackwardOp : Train_SoftmaxBase<"log_softmax_backward",
    "gradient of log_softmax", 4,
    (ins Train_FloatTensor:$grad_output, Train_FloatTensor:$output)> {
  let description = [{
    Given the gradient of a `log_softmax` result and the result `y` itself,
    returns `grad - exp(y) * sum(grad, dim)`. Both operands and the result
    have one type.
  }];
}

def Train_LayerNormOp : Train_Op<"layer_norm", [InferTypeOpAdaptor]> {
  let summary = "layer normalization over the trailing dims";
  let description = [{
    Normalizes `input` over dims `[axis, rank)`: `y = (x - mean) * rstd *
    weight + bias` with `rstd = 1 / sqrt(var + epsilon)` (biased variance).
    `weight` and `bias` have shape `input.shape[axis:]`. Also returns `mean`
    and `rstd`, of shape `input.shape[:axis]`, for the backward op.

    Sharding rule: the leading dims pass, the normalized dims need
    replication. Cost: 8 operations per element.

    ```mlir
    %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64}
        : (tensor<8x128x512xf32>, tensor<512xf32>, tensor<512xf32>)
        -> (tensor<8x128x512xf32>, tensor<8x128xf32>, tensor<8x128xf32>)
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$weight,
                       Train_FloatTensor:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$output, Train_FloatTensor:$mean,
                      Train_FloatTensor:$rstd);
}

def Train_LayerNormBackwardOp
    : Train_Op<"layer_norm_backward", [InferTypeOpAdaptor]> {
  let summary = "gradient of layer_norm";
  let description = [{
    Given `grad_output`, the forward `input`, the `mean` and `rstd` that
    `layer_norm` returned and its `weight`, returns the gradients of input,
    weight and bias. Sharding rule: the leading dims are reduction factors:
    they shard `grad_input` and leave the weight and bias gradients partial
    sums (as under data parallelism); the normalized dims need replication.
    Cost: 12 operations per input element.
  }];
  let arguments = (ins Train_FloatTensor:$grad_output,
                       Train_FloatTensor:$input, Train_FloatTensor:$mean,
                       Train_FloatTensor:$rstd, Train_FloatTensor:$weight,
                       I64Attr:$axis);
  let results = (outs Train_FloatTensor:$grad_input,
                      Train_FloatTensor:$grad_weight,
                      Train_FloatTensor:$grad_bias);
}

def Train_BatchNormOp : Train_Op<"batch_norm", [InferTypeOpAdaptor]> {
  let summary = "batch normalization in training mode";
  let description = [{
    Normalizes `input` (`[n, c, ...]`, rank >= 2) per channel with the
    statistics of this batch: `y = (x - mean) / sqrt(var + epsilon) * weight
    + bias`, where `mean` and `var` (biased) are taken over every dim but the
    channel dim 1. Returns `y` and the batch statistics `mean` and `var`
    (shape `[c]`), from which callers update running statistics.

    Sharding rule: the channel dim passes; the others need replication (the
    statistics are over the whole batch, so a data-parallel batch norm is a
    synchronized one). Cost: 8 operations per element.
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$weight,
                       Train_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$output, Train_FloatTensor:$mean,
                      Train_FloatTensor:$var);
}

def Train_BatchNormBackwardOp
    : Train_Op<"batch_norm_backward", [InferTypeOpAdaptor]> {
  let summary = "gradient of batch_norm in training mode";
  let description = [{
    Given `grad_output`, the forward `input`, the batch `mean` and `var` that
    `batch_norm` returned and its `weight`, returns the gradients of input,
    weight and bias (`[c]`). `epsilon` must be the forward op's. Sharding
    rule: as `batch_norm`. Cost: 12 operations per input element.
  }];
  let arguments = (ins Train_FloatTensor:$grad_output,
                       Train_FloatTensor:$input, Train_FloatTensor:$mean,
                       Train_FloatTensor:$var, Train_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$grad_input,
                      Train_FloatTensor:$grad_weight,
                      Train_FloatTensor:$grad_bias);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

defvar poolDocs = [{
    Layout is NCHW. `kernel_size` and `strides` are `[h, w]`, `padding` is
    `[top, bottom, left, right]` (each at most half the kernel); output size
    per spatial dim is `(in + pad_lo + pad_hi - kernel) / stride + 1`
    (floor). Sharding rule: batch and channels pass, spatial dims need
    replication (tensors with the same spatial shape share those factors).
    Cost: one operation per window element per pooled element.
}];

defvar poolAttrs = (ins Train_PositivePair:$kernel_size,
                        Train_PositivePair:$strides,
                        DefaultValuedAttr<Train_NonNegativeQuad,
                                          "{0, 0, 0, 0}">:$padding);

class Train_PoolOp<string mnemonic, string summaryText, string docs,
                   dag extraAttrs>
    : Train_Op<mnemonic, [InferTypeOpAdaptor]> {
  let summary = summaryText;
  let description = docs # poolDocs;
  let arguments = !con((ins Train_FloatTensor:$input), poolAttrs, extraAttrs);
  let results = (outs Train_FloatTensor:$result);
}

class Train_PoolBackwardOp<string mnemonic, string summaryText, string docs,
                           dag extraAttrs>
    : Train_Op<mnemonic, [InferTypeOpAdaptor]> {
  let summary = summaryText;
  let description = docs # poolDocs;
  let arguments = !con((ins Train_FloatTensor:$grad_output,
                            Train_FloatTensor:$input), poolAttrs, extraAttrs);
  let results = (outs Train_FloatTensor:$result);
}

def Train_MaxPool2dOp : Train_PoolOp<"max_pool2d", "2-D max pooling (NCHW)",
    [{ Takes the maximum of every window; padding never wins. }], (ins)>;

def Train_MaxPool2dBackwardOp : Train_PoolBackwardOp<"max_pool2d_backward",
    "gradient of max_pool2d", [{
    Routes every element of `grad_output` to the position of its window's
    maximum in the forward `input` (the first one on ties) and returns the
    gradient of `input`.
    }], (ins)>;

def Train_AvgPool2dOp : Train_PoolOp<"avg_pool2d", "2-D average pooling (NCHW)",
    [{
    Averages every window. With `count_include_pad` (the default, as in
    PyTorch) padded positions count in the divisor.
    }], (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)>;

def Train_AvgPool2dBackwardOp : Train_PoolBackwardOp<"avg_pool2d_backward",
    "gradient of avg_pool2d", [{
    Spreads every element of `grad_output` evenly over its window and returns
    the gradient of the forward `input` (whose values are not read; it gives
    the shape).
    }], (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)>;

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Train_CrossEntropyOp : Train_Op<"cross_entropy", [InferTypeOpAdaptor],
                                    ["isDecomposableOver", "decompose"]> {
  let summary = "softmax cross-entropy from logits, mean over the batch";
  let description = [{
    `logits` is `[batch..., classes]` with at least one batch dim and
    `labels` (i32 or i64) has the batch dims of `logits`; returns the scalar mean over every label of
    `-log_softmax(logits)[label]`. Labels must be in `[0, classes)`.

    Sharding rule: the batch dims are reduction factors and mean factors
    (the loss of a shard, scaled by its share of the labels, is a partial
    sum), the class dim needs replication; the op decomposes into
    reductions over the classes (with its gradients on the same logits and
    labels), which lets the class dim be split. Cost: 6 operations
    per logit.

    ```mlir
    %loss = train.cross_entropy %logits, %labels
        : (tensor<64x10xf32>, tensor<64xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels);
  let results = (outs Train_FloatScalar:$loss);
}

def Train_CrossEntropyBackwardOp
    : Train_Op<"cross_entropy_backward", [InferTypeOpAdaptor]> {
  let summary = "gradient of cross_entropy with respect to the logits";
  let description = [{
    Given the scalar gradient of the loss, the `logits` and the `labels`,
    returns `grad_loss * (softmax(logits) - one_hot(labels)) / count`, where
    `count` is the number of labels. The result has the type of `logits`.
    Sharding rule: the batch dims pass and are mean factors (a shard's
    gradient is scaled by its share of the labels), the class dim needs
    replication. Cost: 5 operations per logit.
  }];
  let arguments = (ins Train_FloatScalar:$grad_loss,
                       Train_FloatTensor:$logits, Train_IndexTensor:$labels);
  let results = (outs Train_FloatTensor:$grad_logits);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Train_ReshapeOp : Train_Op<"reshape"> {
  let summary = "reshape to the result type (row-major)";
  let description = [{
    Reinterprets the operand in row-major order with the result's shape,
    which is the op's specification: element counts and element types must
    match. Sharding rule: compound factors relate split and merged dims
    (`[6, 4] -> [24]` is `([i, j])->([ij])`); where sizes cannot be factored
    together the factors need replication.
  }];
  let arguments = (ins Train_Tensor:$operand);
  let results = (outs Train_Tensor:$result);
  let hasVerifier = 1;
}

def Train_TransposeOp : Train_Op<"transpose", [InferTypeOpAdaptor]> {
  let summary = "permute dims";
  let description = [{
    Result dim `i` is operand dim `permutation[i]`. Sharding rule: one pass
    factor per dim, permuted.
  }];
  let arguments = (ins Train_Tensor:$operand,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs Train_Tensor:$result);
}

def Train_BroadcastOp : Train_Op<"broadcast"> {
  let summary = "broadcast to the result type";
  let description = [{
    Operand dim `i` becomes result dim `dims[i]` (`dims` strictly
    increasing), where it must have the result's size or size 1; the other
    result dims are new. The result type is the op's specification; element
    types must match. Sharding rule: one pass factor per result dim, mapped
    by the operand dims of the same size.

    ```mlir
    %b = train.broadcast %bias {dims = array<i64: 1>}
        : (tensor<128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Train_Tensor:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs Train_Tensor:$result);
  let hasVerifier = 1;
}

def Train_SliceOp : Train_Op<"slice", [InferTypeOpAdaptor],
                             ["adaptToLocalShapes"]> {
  let summary = "static strided slice";
  let description = [{
    Takes elements `start[d], start[d] + stride[d], ...` below `limit[d]` of
    every dim (`strides` default to 1). Requires `0 <= start <= limit <=
    size` and positive strides. Sharding rule: untouched dims pass (on a
    shard, their limit becomes the shard's size); sliced dims need
    replication.
  }];
  let arguments = (ins Train_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Train_Tensor:$result);
}

def Train_ConcatOp : Train_Op<"concat", [InferTypeOpAdaptor]> {
  let summary = "concatenate along one dim";
  let description = [{
    Concatenates one or more operands of one rank and element type along
    `dim`; the other dims must match. Sharding rule: the other dims pass;
    `dim` needs replication (unless every operand has the result's size in
    it: a one-operand concat is the identity).
  }];
  let arguments = (ins Variadic<Train_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Train_Tensor:$result);
}

def Train_PadOp : Train_Op<"pad", [InferTypeOpAdaptor]> {
  let summary = "pad with a constant";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after every dim (both
    non-negative), filled with `value` (which must be representable in an
    integer element type). Sharding rule: unpadded dims pass;
    padded dims need replication.
  }];
  let arguments = (ins Train_Tensor:$operand, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Train_Tensor:$result);
}

def Train_GatherOp : Train_Op<"gather", [InferTypeOpAdaptor],
                              ["setShardOffsets"]> {
  let summary = "embedding lookup: gather rows of a table";
  let description = [{
    For `table` `[v, d...]` and `indices` (i32/i64) of any shape, returns
    `[indices..., d...]` with `result[i..., :] = table[indices[i...], :]`.
    Indices must be in `[0, v)`.

    With `row_offset`, the table holds rows `[row_offset, row_offset + v)`
    of a larger table and the indices are global: an index outside that
    range reads zeros.

    Sharding rule: index dims and `d` dims pass; the row dim `v` is a
    positional reduction factor (a vocabulary-sharded table gives each rank
    the rows it owns and zeros elsewhere: a partial sum, as in Megatron; the
    partitioner supplies `row_offset`).
  }];
  let arguments = (ins Train_Tensor:$table, Train_IndexTensor:$indices,
                       Optional<Index>:$row_offset);
  let results = (outs Train_Tensor:$result);
}

def Train_ScatterAddOp : Train_Op<"scatter_add", [InferTypeOpAdaptor],
                                  ["setShardOffsets"]> {
  let summary = "embedding gradient: add rows into a table";
  let description = [{
    For `init` `[v, d...]`, `indices` (i32/i64) of any shape and `updates`
    `[indices..., d...]`, returns `init` with `updates[i..., :]` added to
    row `indices[i...]` (repeated indices accumulate).

    With `row_offset`, `init` holds rows `[row_offset, row_offset + v)` of a
    larger table and the indices are global: updates of rows outside that
    range are dropped.

    Sharding rule: `v` (positional: the partitioner supplies `row_offset`)
    and `d` pass; index dims are reduction factors (each shard of the
    updates adds a partial sum). Cost: one add per update element.
  }];
  let arguments = (ins Train_Tensor:$init, Train_IndexTensor:$indices,
                       Train_Tensor:$updates, Optional<Index>:$row_offset);
  let results = (outs Train_Tensor:$result);
}

def Train_IotaOp : Train_Op<"iota"> {
  let summary = "0, 1, 2, ... along one dim";
  let description = [{
    Fills the result (its type is the specification; integer or float, not
    i1) with the index along `dim`. Sharding rule: the other dims pass; `dim` needs replication.
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Train_Tensor:$result);
  let hasVerifier = 1;
}

def Train_ConstantOp : Train_Op<"constant",
    [ConstantLike, InferTypeOpAdaptor]> {
  let summary = "constant tensor";
  let description = [{
    A tensor given by an elements attribute (dense, splat or a dense
    resource); the result has its type.

    Sharding rule: every dim needs replication, since the op materializes
    its whole value; a shard of it is a local slice (no communication).

    ```mlir
    %c = train.constant dense<0.5> : tensor<128xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Train_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

def Train_DropoutOp : Train_PointwiseOp<"dropout", 4, [InferTypeOpAdaptor],
    /*linear=*/0, ["setShardOffsets"]> {
  let summary = "dropout with a counter-based RNG";
  let description = [{
    Zeroes each element with probability `rate` and scales the others by
    `1 / (1 - rate)`. The mask is a pure function of the scalar `seed` and of
    the element's *global* row-major index: `keep = philox4x32_10(key =
    seed, counter = index)[0] >= rate * 2^32`. A shard of a tensor passes
    `offsets` (one index per dim: where the shard starts) and the
    `global_shape`, so any sharding draws the same mask as the single-device
    program. Without them the operand is the whole tensor. The gradient is
    `dropout` of the output gradient with the same seed.

    Sharding rule: every dim passes and is positional (the partitioner
    supplies the offsets and the global shape).

    ```mlir
    %y = train.dropout %x, %seed {rate = 1.000000e-01 : f64}
        : (tensor<64x128xf32>, tensor<i64>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$operand, Train_SeedScalar:$seed,
                       Variadic<Index>:$offsets,
                       F64Attr:$rate,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape);
  let results = (outs Train_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def Train_SgdOp : Train_PointwiseOp<"sgd", 5, [InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Train_OptimizerOpInterface,
                              ["getParamShapedState"]>]> {
  let summary = "SGD update with momentum, Nesterov and weight decay";
  let description = [{
    PyTorch's `torch.optim.SGD` step (dampening 0):

    ```
    g = grad + weight_decay * param
    buf = momentum * buf + g                    (with momentum > 0)
    g = nesterov ? g + momentum * buf : buf     (with momentum > 0)
    param = param - lr * g
    ```

    `lr` is a scalar tensor (a `hyper` argument, so schedules need no
    recompilation). `momentum_buffer` is present exactly when `momentum > 0`;
    the op then also returns the new buffer. `nesterov` requires momentum.
    `param`, `grad` and the buffer have one type. Sharding rule: pointwise
    over the parameter.
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatScalar:$lr,
                       Optional<Train_FloatTensor>:$momentum_buffer,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       UnitAttr:$nesterov,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param,
                      Optional<Train_FloatTensor>:$new_momentum_buffer);
}

class Train_AdamBase<string mnemonic, string summaryText, string decay,
                     string defaultDecay>
    : Train_PointwiseOp<mnemonic, 12, [InferTypeOpAdaptor,
        DeclareOpInterfaceMethods<Train_OptimizerOpInterface,
                                  ["getParamShapedState"]>]> {
  let summary = summaryText;
  let description = [{
    One step of PyTorch's `torch.optim.}] # !if(!eq(mnemonic, "adam"),
    "Adam", "AdamW") # [{` with bias correction:

    ```
    t = step + 1
    }] # decay # [{
    exp_avg = beta1 * exp_avg + (1 - beta1) * g
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
    param = param - lr * (exp_avg / (1 - beta1^t))
                       / (sqrt(exp_avg_sq / (1 - beta2^t)) + epsilon)
    ```

    Returns the new param, moments and step. The step count `step` is a
    scalar tensor (float or integer) of optimizer state; `lr` is a scalar
    tensor. `param`, `grad` and the moments have one type. Sharding rule:
    pointwise over the parameter.
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$exp_avg,
                       Train_FloatTensor:$exp_avg_sq,
                       Train_StepScalar:$step, Train_FloatScalar:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, defaultDecay>:$weight_decay);
  let results = (outs Train_FloatTensor:$new_param,
                      Train_FloatTensor:$new_exp_avg,
                      Train_FloatTensor:$new_exp_avg_sq,
                      Train_StepScalar:$new_step);
}

def Train_AdamOp : Train_AdamBase<"adam", "Adam update (L2 weight decay)",
    "g = grad + weight_decay * param", "0.0">;
def Train_AdamWOp : Train_AdamBase<"adamw",
    "AdamW update (decoupled weight decay)",
    "g = grad; param = param * (1 - lr * weight_decay)", "0.01">;

#endif // DISTOPT_DIALECT_TRAIN_IR_TRAINOPS
