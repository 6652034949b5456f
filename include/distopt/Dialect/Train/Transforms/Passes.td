//===- Passes.td - train dialect passes --------------------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES
#define DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

def TrainVerifyPass : Pass<"train-verify", "ModuleOp"> {
  let summary = "Check that training steps are well formed";
  let description = [{
    A training step is a `func.func` with at least one `train.role` on an
    argument or result. For each step this pass checks that:

    - every argument and result has a `train.role` and a `train.name`;
    - argument names are unique, and result names are unique;
    - every `param` / `opt_state` result names an argument of the same role
      and the same type (the value it replaces);
    - there is exactly one `loss` result, a float scalar (`tensor<f32>`);
      in a program placed on part of a mesh (`dist.place`: one stage of a
      pipeline, a parameter server) at most one, as only one program of the
      step returns the loss (`dist-verify` checks the programs together).

    Roles valid on arguments (param, opt_state, input, label, hyper) and on
    results (param, opt_state, loss, metric) are checked by the dialect's
    attribute verifier. The pass changes nothing; it fails with a diagnostic
    at the offending function.

    ```mlir
    // error: result #1 'fc1.weight' (param) has type tensor<4x8xf32> but
    //        argument #0 'fc1.weight' has tensor<8x4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Rewrites
//===----------------------------------------------------------------------===//

def TrainDecomposeCrossEntropyPass
    : Pass<"train-decompose-cross-entropy", "ModuleOp"> {
  let summary = "Rewrite cross-entropy and its gradient into reductions";
  let description = [{
    Rewrites each `train.cross_entropy` and `train.cross_entropy_backward`
    (those reading the same logits and labels share one decomposition) into
    the ops they are made of:

    ```
    m = reduce max (logits, classes, keepdims)
    e = exp(logits - m),  s = reduce sum (e, classes, keepdims)
    t = reduce sum (select(iota(classes) == labels, logits - m, 0), classes)
    loss = reduce mean (log(s) - t)
    grad = grad_loss / count * select(iota == labels, e / s - 1, e / s)
    ```

    Every op of it has a sharding rule that lets the class dim be split:
    the maximum then becomes an all-reduce max and the sums partial sums,
    so a step whose logits are split over the vocabulary all-reduces only
    per-token values (Megatron-LM's vocabulary-parallel cross-entropy).
    Tensor parallelism applies it to the losses an LM head's split reaches;
    this pass exposes it on its own. Narrow logits are converted to the
    loss's type first. A label argument gets `train.classes`.
  }];
  let dependentDialects = ["::mlir::train::TrainDialect"];
}

def TrainDeriveEvalPass : Pass<"train-derive-eval", "ModuleOp"> {
  let summary = "Derive the forward-only evaluation function of each step";
  let description = [{
    For each training step `@f` (a function with `train.role`s), adds
    `@f_eval` (attribute `train.eval_of = @f`): the ops the loss depends on
    and nothing else (no backward pass, no optimizer update), taking only
    the arguments those ops read and returning the loss and, where the loss
    reads one `train.cross_entropy` over `[batch..., classes]` logits, the
    metric `correct`: the number of labels whose logit is the largest of its
    row (a tie counts as correct).

    Evaluation mode: `train.dropout` passes its input through (as PyTorch's
    `model.eval()`). `train.batch_norm` has no running-statistics form, so
    the evaluation normalizes with the batch's statistics, which the pass
    reports with a warning at the op.

    SPMD strategies distribute `@f_eval` with `@f` (same mesh, same
    shardings of the parameters); `dist-pipeline` and
    `dist-parameter-server` leave it single-device beside their placed
    programs, and `dist-run` evaluates it on rank 0 with the parameters
    gathered there. `dist-run --eval-dataset` runs it. Steps that already
    have an evaluation function are left alone.

    ```mlir
    func.func @train_step_eval(%w: tensor<10x784xf32> {train.role = #train.role<param>, ...},
        %x: ..., %y: ...) -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
                              tensor<f32> {train.role = #train.role<metric>, train.name = "correct"})
        attributes {train.eval_of = @train_step}
    ```
  }];
  let options = [
    Option<"suffix", "suffix", "std::string", /*default=*/"\"_eval\"",
           "Appended to the step's name to name its evaluation function">,
  ];
  let dependentDialects = ["::mlir::train::TrainDialect"];
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

def TrainSummaryPass : Pass<"train-summary", "ModuleOp"> {
  let summary = "Print a summary of every training step";
  let description = [{
    Prints, for each training step: its arguments by role (count, elements,
    bytes), its results, the number of ops of each kind, and the step's total
    FLOPs and bytes read/written from `CostOpInterface`. The IR is unchanged.

    ```
    training step @train_step
      param      4 tensors     101770 elements     407080 bytes
      ...
      flops      39403520
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for stdout)">,
  ];
}

#endif // DISTOPT_DIALECT_TRAIN_TRANSFORMS_PASSES
