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
// Precision
//===----------------------------------------------------------------------===//

def TrainMixedPrecisionPass : Pass<"train-mixed-precision", "ModuleOp"> {
  let summary = "Compute a float32 training step in bfloat16 or float16 "
                "with float32 master weights and loss scaling";
  let description = [{
    Rewrites every float32 single-device training step (and its evaluation
    function) so that its work runs in the 16-bit type `compute` while the
    parameters, the optimizer state and the update stay float32 master
    copies, as PyTorch's `torch.autocast` + `GradScaler` and Keras's
    `mixed_bfloat16` / `mixed_float16` policies do. Each op is put in one of
    four classes:

    - **16-bit**: `matmul`, `conv2d`, `conv2d_backward_input`,
      `conv2d_backward_filter`: float32 operands are converted to `compute`
      and the result is `compute`;
    - **float32** (they accumulate or lose range in 16 bits): `reduce`,
      `softmax`, `log_softmax`, `layer_norm`, `batch_norm`,
      `cross_entropy`, their backward ops, `exp`, `log`, `log1p`,
      `expm1`, `pow`, `sqrt`, `rsqrt` and `scatter_add`: 16-bit operands
      are converted back to float32;
    - **master**: optimizer updates (`sgd`, `adam`, `adamw`) read the
      float32 parameter and state and a gradient converted to float32;
    - **follow** (every other elementwise and data-movement op): runs in
      16 bits when one of its float operands is 16-bit (a float32 bias or
      residual is converted down), else in float32.

    A float32 value is converted to a type once per step, next to its
    definition (a parameter once, at the top), whatever number of ops read
    it. Step results keep their types; float64 and integer values are left
    alone.

    `loss-scale=static` multiplies the backward's seed (the constant 1.0 of
    the loss's type of which every gradient is a linear image, or the
    constant marked `train.loss_seed`) by `init-scale` and multiplies each
    gradient by `1 / init-scale` before the update. `loss-scale=dynamic`
    does what `torch.amp.GradScaler` does: the scale and its growth tracker
    become optimizer state (`loss_scale`, initialized to `init-scale`
    through `train.init`, and `loss_scale.growth_tracker`); when any
    gradient element is infinite or NaN, every parameter and optimizer
    state result keeps its old value, the scale is multiplied by
    `backoff-factor` and the tracker reset; otherwise the tracker counts
    the step and after `growth-interval` clean steps the scale is
    multiplied by `growth-factor` (when the product is finite).

    The function gets `train.mixed_precision`, the canonical option string;
    a step that has it is refused.

    The pass runs before a strategy or after an SPMD one (dist-mirrored,
    dist-zero, dist-tensor-parallel, dist-hybrid) with the same result:
    on a partitioned step each collective carries its operand in the
    operand's precision, a sum that only float32 work reads sums float32
    values, a gradient summed across devices is unscaled before the sum,
    and the finiteness of gradients split over mesh axes is all-reduced
    over those axes. After a placing strategy (dist-pipeline,
    dist-parameter-server) the pass rewrites the single-device module the
    strategy kept with its programs (`dist.placement`) and runs the
    recorded strategy on it again, which gives the programs the other order
    gives; it is refused when a later pass changed the programs (the
    recorded fingerprint differs). Collectives a later pass split or
    overlapped are refused too: run this pass before them.

    ```mlir
    %w16 = train.convert %w : (tensor<128x784xf32>) -> tensor<128x784xbf16>
    %x16 = train.convert %x : (tensor<64x784xf32>) -> tensor<64x784xbf16>
    %h = train.matmul %x16, %w16 {transpose_rhs}
        : (tensor<64x784xbf16>, tensor<128x784xbf16>) -> tensor<64x128xbf16>
    ```
  }];
  let options = [
    Option<"compute", "compute", "std::string", /*default=*/"\"bf16\"",
           "The 16-bit type the step computes in: bf16 or f16">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"none\"",
           "Loss scaling: none, static (a fixed init-scale) or dynamic (as "
           "torch.amp.GradScaler)">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "The (initial) loss scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Dynamic scaling: what the scale is multiplied by after "
           "growth-interval clean steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Dynamic scaling: what the scale is multiplied by after a step "
           "with a non-finite gradient (in (0, 1))">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"2000",
           "Dynamic scaling: the clean steps after which the scale grows">,
  ];
  // A placing pass it runs again (dist-pipeline, dist-parameter-server)
  // creates arith, dist and train ops.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::train::TrainDialect",
                           "::mlir::dist::DistDialect"];
}

def TrainRematPass : Pass<"train-remat", "ModuleOp"> {
  let summary = "Recompute activations in the backward pass instead of "
                "keeping them";
  let description = [{
    Activation recomputation (gradient checkpointing): the forward values
    the backward pass reads are recomputed right before their first
    backward use, from values the policy keeps, instead of living from the
    forward to the backward. The backward is what depends on the loss's
    seed (the constant marked `train.loss_seed`, or the one constant 1.0 of
    which every gradient is a linear image); the recomputation clones the
    same pure ops on the same operands, so the step computes bitwise what
    it computed. The cost model (`dist-cost-report`) counts the extra work
    and the smaller activation peak, since they are in the IR.

    - `selective` (Megatron's selective recomputation, Korthikanti et al.
      2022): what is costly to recompute is kept, the cheap, large rest
      recomputed from it. Costly is an arithmetic intensity
      (`CostOpInterface`) of at least 4 FLOPs per byte read and written:
      products (`matmul`, `conv2d`) are kept; elementwise work, softmax,
      norms and dropout (its mask is a function of its seed) are
      recomputed;
    - `full` (Chen et al. 2016's sqrt(n) checkpointing, as Megatron's full
      recomputation keeps each layer's input): the forward is cut into
      `ceil(sqrt(n))` segments of even estimated work; the values that
      cross a segment boundary are kept, everything else recomputed,
      segment by segment;
    - `none`: nothing changes.

    Per layer. A layer is a numbered module of the parameters' names, as
    PyTorch's `ModuleList` names them (`blocks.3` for
    `blocks.3.attn.q.weight`); the forward runs a module from the first op
    that reads one of its parameters.

    - `checkpoints=layer` (with `full`, Megatron's full recomputation): each
      module's input is kept and each layer recomputed from it; the modules
      that are not layers (embeddings, the head) keep their values;
    - `layers=N`: only the first N layers recompute (Megatron's block
      method, over the whole model rather than per pipeline stage);
    - `budget=BYTES`: the fewest first layers whose recomputation brings the
      step's activation peak, as the cost model counts it, within BYTES;
      a remark says how many and the peak, and a budget that recomputing
      every layer does not reach is an error.

    Constants and ops with regions or side effects are never recomputed.
    The function gets `train.remat` (the policy, with `checkpoints=layer`
    and `layers=N` when given or chosen); a step that has it is refused. Run it before a strategy: the recomputation is then
    distributed with the backward it feeds.

    ```
    dist-opt step.mlir --train-remat=policy=selective --dist-mirrored=replicas=2
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"selective\"",
           "What to recompute: none, full or selective">,
    Option<"checkpoints", "checkpoints", "std::string",
           /*default=*/"\"sqrt\"",
           "Where full keeps values: sqrt (ceil(sqrt(n)) segments of even "
           "work) or layer (each layer's input)">,
    Option<"layers", "layers", "int64_t", /*default=*/"-1",
           "Recompute in the first N layers only (-1: everywhere)">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "Recompute in the fewest first layers that bring the activation "
           "peak within this many bytes (0: no budget)">,
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
