//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES
#define DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Strategies: annotate a training step
//===----------------------------------------------------------------------===//

def DistAnnotateMirroredPass : Pass<"dist-annotate-mirrored", "ModuleOp"> {
  let summary = "MirroredStrategy: split the batch, replicate the state";
  let description = [{
    Declares a 1-D mesh `@mesh` with axis `data` of `replicas` devices (or
    reuses one with that name and shape) and annotates every training step:
    `input` and `label` arguments are split along dim 0 over `data`;
    parameters, optimizer state, hyper-parameters and every result are
    replicated. Propagation then shards the activations by batch and leaves
    the gradients partial sums, which partitioning all-reduces before the
    optimizer update; the loss is the mean over the global batch.

    Before:
    ```mlir
    func.func @step(%w: tensor<128x784xf32> {train.role = #train.role<param>, ...},
                    %x: tensor<64x784xf32> {train.role = #train.role<input>, ...}, ...)
    ```
    After (`replicas=4`):
    ```mlir
    dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
    func.func @step(%w: tensor<128x784xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, ...},
                    %x: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>, ...}, ...)
    ```
    A batch that does not divide by `replicas` is an error naming the
    argument.
  }];
  let options = [
    Option<"replicas", "replicas", "int64_t", /*default=*/"0",
           "Number of data-parallel replicas (devices)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistAnnotateMultiWorkerMirroredPass
    : Pass<"dist-annotate-multi-worker-mirrored", "ModuleOp"> {
  let summary = "MultiWorkerMirroredStrategy: hosts x devices data parallelism";
  let description = [{
    Declares a 2-D mesh `@mesh` with axes `hosts` (`hosts` devices, marked as
    crossing hosts) and `devices` (`devices` per host) and annotates every
    training step like `dist-annotate-mirrored`, with the batch split along
    dim 0 over both axes. After propagation and partitioning the gradients
    are all-reduced over `["hosts", "devices"]`, which
    `dist-hierarchical-all-reduce` decomposes.

    After (`hosts=2 devices=4`):
    ```mlir
    dist.mesh @mesh {axes = ["hosts", "devices"], host_axes = ["hosts"], shape = array<i64: 2, 4>}
    func.func @step(%x: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, [[hosts, devices], []]>, ...}, ...)
    ```
  }];
  let options = [
    Option<"hosts", "hosts", "int64_t", /*default=*/"0", "Number of hosts">,
    Option<"devices", "devices", "int64_t", /*default=*/"0",
           "Number of devices per host">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistAnnotateZeroPass : Pass<"dist-annotate-zero", "ModuleOp"> {
  let summary = "ZeRO stages 1-3: shard optimizer state, gradients, params";
  let description = [{
    Data parallelism over a 1-D mesh `@mesh` (axis `data`, `replicas`
    devices), as `dist-annotate-mirrored`, plus ZeRO sharding of every
    parameter `P` that has a dim divisible by `replicas` (the first such dim
    `d`; a parameter without one stays replicated and a remark names it).
    The update op of `P` (the op defining the result named like `P`) runs on
    the `1/replicas` shard along `d`:

    - stage 1: the optimizer state of `P` (the update op's operands of `P`'s
      type that are `opt_state` arguments) is sharded along `d` at the
      function boundary; the gradient is reduce-scattered and the updated
      shard all-gathered into the returned parameter, which stays whole at
      the boundary: a reduce-scatter and an all-gather move what one
      all-reduce moves, so ZeRO costs no more traffic than data
      parallelism (DeepSpeed's stage 1);
    - stage 2: also the gradient: only its shard outlives the update. A
      step compiled here holds no gradient across steps (no accumulation
      buffer), so stages 1 and 2 give the same program;
    - stage 3: also the parameter itself: it is sharded at the boundary and
      all-gathered before each use in forward and backward; the updated
      shard is returned as is.

    ```mlir
    // stage 2, replicas 4: the update of fc1.weight becomes
    %g = dist.reduce_scatter %dw on @mesh axes = ["data"] scatter_dims = [0] : tensor<128x784xf32> -> tensor<32x784xf32>
    %p = dist.local_slice %w on @mesh axes = ["data"] dim = 0 : tensor<128x784xf32> -> tensor<32x784xf32>
    %new, %m = train.sgd %p, %g, %lr, %buf {momentum = 9.000000e-01 : f64} : ...
    %full = dist.all_gather %new on @mesh axes = ["data"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
    ```
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "ZeRO stage (required): 1 (optimizer state), 2 (+ gradients), 3 "
           "(+ params)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"0",
           "Number of data-parallel replicas (devices)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistAnnotateTensorParallelPass
    : Pass<"dist-annotate-tensor-parallel", "ModuleOp"> {
  let summary = "Megatron tensor parallelism: column-then-row weight pairs";
  let description = [{
    Declares a 1-D mesh `@mesh` with axis `model` of `size` devices and
    finds, in every training step, Megatron's pairs of contraction weights
    through the ops' sharding rules (no op names): walking the forward pass
    (the ops the loss depends on) in program order, a parameter that is the
    weight of a contraction (it maps the contraction's reduction factor and
    an output factor only the result maps) becomes *column-parallel* (its
    output dim split over `model`) when the split of the result can be
    followed through the rules of the following ops to contractions that
    reduce over it with another weight, which become *row-parallel* (their
    input dim split). Each row-parallel result is a partial sum that
    partitioning all-reduces once; the backward pass inherits the
    shardings, so a block costs one all-reduce in forward and one in
    backward. Parameters the split reaches (a column-parallel bias) are
    split with it; optimizer state follows its parameter by propagation.

    A contraction weight whose split cannot be followed (it meets an op that
    needs the dim whole, a reduction without a weight, a dim that does not
    divide, or no row-parallel partner) stays replicated and a remark says
    why. A parameter that an op reduces over by itself (an embedding
    table's rows: Megatron's vocabulary-parallel embedding) is split along
    that dim; the lookup, told where its shard of rows starts, reads zeros
    for the others, and its partial result is all-reduced once. Every other
    parameter of rank >= 2 used in the forward pass stays replicated with a
    remark.

    With `sequence-parallel` (Megatron-LM's sequence parallelism), the ops
    between blocks (residual adds, layer norms, dropout) run on `1/size` of
    the tokens: each row-parallel result is annotated split along its token
    dim (the dim before the hidden dim), so partitioning reduce-scatters it
    instead of all-reducing it, and each column-parallel input is annotated
    whole, so it is all-gathered. In the backward pass the gradient reaching
    a row-parallel layer is annotated whole once for all its uses, and the
    input gradients of the column-parallel layers, summed while they are
    partial, are annotated split along their tokens (one reduce-scatter for
    q, k and v together). A partial sum without a token dim that divides
    keeps its all-reduce, with a remark.

    A head whose split meets no row-parallel partner, only a cross-entropy
    over its classes (Megatron's vocabulary-parallel head), is split only
    where the cost model says it pays (getVocabularySplitCost: the FLOPs
    and state it saves against the all-reduces it adds, the head's input
    gradient among them); a small classification head stays replicated
    with a remark. `force-vocab-parallel` splits it anyway.

    ```mlir
    // fc1: [ffn, hidden] used with transpose_rhs, fc2: [hidden, ffn], size=2:
    func.func @step(%w1: tensor<1024x256xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>, ...},
                    %b1: tensor<1024xf32> {dist.sharding = #dist.sharding<@mesh, [[model]]>, ...},
                    %w2: tensor<256x1024xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>, ...}, ...)
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"0",
           "Number of tensor-parallel devices">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Megatron sequence parallelism: reduce-scatter / all-gather along "
           "the token dim around the ops between blocks instead of "
           "all-reduces">,
    Option<"forceVocabParallel", "force-vocab-parallel", "bool",
           /*default=*/"false",
           "Split every head over its classes (vocabulary-parallel "
           "cross-entropy), also where the cost model keeps it replicated">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistAnnotateHybridPass : Pass<"dist-annotate-hybrid", "ModuleOp"> {
  let summary = "Data x tensor parallelism (+ ZeRO) on a 2-D or 3-D mesh";
  let description = [{
    Declares a 2-D mesh `@mesh` with axes `data` (`dp` devices) and `model`
    (`tp` devices), applies `dist-annotate-tensor-parallel`'s Megatron plan
    over `model`, splits the `input` and `label` arguments along dim 0 over
    `data`, and, with `zero` = 1, 2 or 3, applies that ZeRO stage over
    `data` on top of the tensor-parallel shardings (a Megatron weight's
    optimizer state is then split over both axes). Everything else is left
    to propagation, so gradients are all-reduced (or reduce-scattered) over
    `data` and activations over `model`.

    With `hosts` > 1 the mesh is 3-D, `hosts` x `data` x `model` with
    `hosts` crossing hosts: the batch and ZeRO split over `hosts` and
    `data` together, and `dist-hybrid` decomposes the gradient all-reduces
    hierarchically as the multi-worker strategy does.

    ```mlir
    // dp=2 tp=2 on the MLP block: x split by batch, fc1 by rows, fc2 by columns
    dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
    func.func @step(%w1: tensor<1024x256xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>, ...},
                    %x: tensor<8x128x256xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [], []]>, ...}, ...)
    ```
  }];
  let options = [
    Option<"hosts", "hosts", "int64_t", /*default=*/"1",
           "Number of hosts (a 3-D mesh when > 1)">,
    Option<"dp", "dp", "int64_t", /*default=*/"0",
           "Number of data-parallel replicas per host (required)">,
    Option<"tp", "tp", "int64_t", /*default=*/"0",
           "Number of tensor-parallel devices (required)">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage over the data axis (0: none)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

//===----------------------------------------------------------------------===//
// Core engines
//===----------------------------------------------------------------------===//

def DistPipelinePass : Pass<"dist-pipeline", "ModuleOp"> {
  let summary = "Pipeline parallelism: stages, microbatches and a schedule";
  let description = [{
    Splits the single-device training step into `stages * virtual-stages`
    pipeline stages placed on the `pipe` axis of a new mesh `@pipe` (stage
    `s` on device `s % stages`) and writes one program per device (a
    function `<step>_pipe<r>` with `dist.place`), made of `dist.fragment`s
    in the order of the schedule, with `dist.send` / `dist.recv` between
    them:

    - the batch (inputs and labels) is split into `microbatches` along its
      leading dim; each stage runs its forward (F) and backward (B, and W
      for the weight gradients with `zb-h1`) on every microbatch;
      activations go forward, their gradients backward;
    - what the step sums over the batch (the weight gradients, the loss) is
      accumulated over the microbatches and the update (U: the optimizer)
      runs once per step on the stage that holds each parameter, so the
      step computes what the single-device step computes. Which values
      those are is decided by partitioning the step over the microbatches
      as data parallelism would: a microbatch is a shard of the batch in
      time. An op that needs the whole batch before the step ends (batch
      statistics) cannot be microbatched: an error names it;
    - stage boundaries come from `train.stage` annotations on ops (an op
      runs on its annotated stage; unannotated forward ops run on the
      latest stage of their operands); without annotations the forward ops
      are cut, in program order, into stages of the most even estimated
      time (forward + backward, from `CostOpInterface`), and a remark
      reports each stage's estimated time;
    - a backward op runs on the stage of the forward values it uses (the
      weight gradient of a parameter on the parameter's stage), never on a
      later stage than the gradients it reads; a parameter lives on the
      one device whose stages use it (a parameter used on two devices, as a
      tied embedding across the pipeline, is an error).

    With `dp` and `tp`, each stage is itself data and/or tensor parallel
    (the composition `dist-hybrid` builds with `pp`): the mesh is `[pipe,
    data, model]` (axes of size 1 left out), each program is placed on its
    `pipe` coordinate, i.e. on the sub-mesh of its `dp * tp` devices, and
    is an SPMD program there: local shapes, the batch split over `data`
    (each data replica's block is split into the microbatches), Megatron's
    column/row pairs over `model`, and the collectives of those strategies
    inside the fragments. The weight gradients are accumulated over the
    microbatches first and all-reduced over `data` once, in the update.
    `zero` shards the optimizer state (1), gradients (2) and parameters (3)
    of each stage over its `data` axis as `dist-zero` does; from stage 2
    each microbatch's gradients are reduce-scattered in its backward (the
    gradient memory stays sharded, at one reduce-scatter per microbatch)
    and with stage 3 each forward and backward all-gathers the parameters
    it reads.
    Transfers go to the device of the next stage with the same `data` and
    `model` coordinates.

    Schedules: `gpipe` (all forwards, then all backwards), `1f1b`
    (PipeDream-flush: at most `stages - r` microbatches in flight on device
    `r`), `interleaved` (Megatron's, `virtual-stages` chunks per device;
    the microbatches must be a multiple of `stages`), `zb-h1` (Qi et al.
    2024: the backward split into input and weight gradients, the weight
    gradients filling the bubbles). Every schedule is simulated (its
    deadlock check, its bubble) before the programs are written.

    The module the pass placed is kept at the end of the result (`module
    @placement_source` with `dist.placement`: this pass as a pipeline and
    the fingerprint of what it wrote), so that a pass that rewrites the
    step (`train-mixed-precision`) can rewrite it and place it again;
    lowering drops it.

    ```
    dist-opt step.mlir --dist-pipeline="stages=4 microbatches=8 schedule=1f1b"
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::dist::DistDialect",
                           "::mlir::train::TrainDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Number of pipeline devices (the size of the `pipe` axis)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Number of microbatches the batch is split into">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved or zb-h1">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per device (interleaved schedule)">,
    Option<"dp", "dp", "int64_t", /*default=*/"1",
           "Data-parallel replicas inside each stage (the `data` axis)">,
    Option<"tp", "tp", "int64_t", /*default=*/"1",
           "Tensor-parallel devices inside each stage (the `model` axis)">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage over each stage's `data` axis (0: none)">,
  ];
}

def DistParameterServerPass : Pass<"dist-parameter-server", "ModuleOp"> {
  let summary = "tf.distribute's ParameterServerStrategy: servers and workers";
  let description = [{
    Splits the single-device training step into programs for `ps` parameter
    servers and `workers` workers, placed on the `task` axis of a new mesh
    `@cluster` (servers at tasks `0..ps-1`, workers after them):

    - every parameter and its optimizer state live on the servers; a
      variable is split by rows into shards (`#dist.block` on the programs'
      arguments and results) as TF's partitioners split it: `min-size`
      (`MinSizePartitioner`: as many shards as keep each at least
      `min-shard-bytes`, at most `shards`) or `fixed` (`FixedShardsPartitioner`:
      `shards` shards, fewer when the variable has fewer rows); shards are
      placed round robin over the servers, a parameter's optimizer state
      with it;
    - each worker takes its block of the batch (the batch split into
      `workers` blocks along dim 0; it must divide), pulls every variable it
      reads from the servers (`dist.recv` of each shard), runs the forward
      (F) and backward (B) on its block and pushes each gradient shard to
      the server that holds it, and its part of the loss to server 0;
    - each server sends its shards to every worker, sums the workers' parts
      in worker order and applies the optimizer to its shards (U). With
      `mode=sync` the step computes what the single-device step computes.

    With `mode=async` (TF2's asynchronous training) each server serves the
    workers' requests in the order they arrive (`dist.serve`): a request's
    gradients, scaled by `workers` to stand for the batch's, are applied at
    once to the values the previous request left (one optimizer step per
    request), and the new values of the server's shards go back to that
    worker, which keeps them as its copy (`dist.cache` arguments and
    results) for its next step instead of pulling. The step's loss is the
    sum of the parts of the requests a server served in the step. The run
    is not deterministic; with one worker it equals `mode=sync`. A value
    read after the update (other than the state returned) is an error: the
    variables change once per request.

    Which values are sums over the batch is decided as `dist-pipeline`
    decides it (the step partitioned over the workers' blocks); an op that
    needs the whole batch mid-step (batch statistics), a gradient changed
    after its sum (clipping by the global norm) and a result computed per
    sample are errors naming the op. `dist-verify` runs at the end.

    As `dist-pipeline` does, the pass keeps the module it placed at the end
    of the result (`module @placement_source` with `dist.placement`).

    ```
    dist-opt step.mlir --dist-parameter-server="ps=2 workers=2 partitioner=fixed shards=2"
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::dist::DistDialect",
                           "::mlir::train::TrainDialect"];
  let options = [
    Option<"ps", "ps", "int64_t", /*default=*/"1",
           "Number of parameter servers">,
    Option<"workers", "workers", "int64_t", /*default=*/"1",
           "Number of workers (the batch is split into this many blocks)">,
    Option<"partitioner", "partitioner", "std::string",
           /*default=*/"\"min-size\"",
           "How variables are split into shards: min-size or fixed">,
    Option<"shards", "shards", "int64_t", /*default=*/"0",
           "At most this many shards per variable (fixed: this many); 0: ps">,
    Option<"minShardBytes", "min-shard-bytes", "int64_t",
           /*default=*/"262144",
           "min-size: the smallest shard in bytes (TF's default, 256 KiB)">,
    Option<"mode", "mode", "std::string", /*default=*/"\"sync\"",
           "sync (the gradients of all workers summed, then applied) or "
           "async (each worker's gradient applied as it arrives)">,
  ];
}

def DistAutoPass : Pass<"dist-auto", "ModuleOp"> {
  let summary = "Choose and apply the fastest predicted strategy for a "
                "cluster";
  let description = [{
    Plans the distribution of the single-device training step for the
    cluster `cluster` (a JSON description or a preset: `cpu`, this machine,
    `dgx-a100`, `dgx-h100`; `nodes` scales it) and applies the plan.

    Every plan uses all the cluster's devices: `dp x tp x pp` of them, the
    tensor-parallel devices within a node (as Megatron places them). The
    search covers the factorizations, the ZeRO stage (0-3, with dp > 1),
    sequence parallelism (tensor parallelism alone), the microbatches
    (`pp`, `2 pp`, `4 pp`, that divide the batch), the schedule (`1f1b`,
    `zb-h1`) and activation recomputation (none, then `train-remat`'s
    `selective` and `full` before the strategy). Each plan is built with
    the hand strategy (`train-remat`, `dist-hybrid`,
    `dist-tensor-parallel`) on a copy of the module, and predicted from
    the programs it writes:

    - each op takes the roofline of the device: its FLOPs over the peak of
      its element type (`f32`, `bf16`, `f16`), or its bytes over the memory
      bandwidth, whichever is longer;
    - each collective takes a ring's time over the link of its axes (within
      a node, or across nodes when its group spans them);
    - a pipeline's units are simulated with its schedule (the bubble), its
      transfers over the link between stages, and its updates added;
    - memory per device is the cost model's peak (arguments and live
      values); a plan over the device's memory is infeasible.

    Building every plan costs about the step's ops per plan. With
    `mode=analytic` (and with `mode=auto`, the default, once the plans times
    the step's ops pass 2 million) plans are predicted from the
    single-device step annotated once per tensor-parallel degree and
    recomputation policy, without building them: per-sample work is divided
    over the replicas and microbatches, work split over the model axis over
    the tensor-parallel group; values partial over the model axis are
    all-reduced, gradients reduced once per step; pipeline stages are cut
    as `dist-pipeline` cuts them and their schedule simulated; memory is
    each stage's state (ZeRO's shares), its kept activations times the
    microbatches in flight, and its largest op. The analytic search also
    tries more microbatches (doubling while the batch splits, and one
    sample per microbatch).

    The fastest feasible plan is applied (unless `apply=false`): the output
    is the program the hand strategy writes. A remark names it; `report` (`-`: stderr) gets a
    table of the `top` plans, and `explain` a JSON file of every plan
    considered (the chosen one first) with its predicted `step_time_s`,
    `memory_bytes_per_device`, `bubble_fraction` and
    `comm_bytes_per_device`, the plans that could not be built with their
    reason, the cluster, and the search time. Deterministic: ties go to the
    plan listed first.

    ```
    dist-opt step.mlir --dist-auto="cluster=dgx-a100 nodes=2 explain=plans.json"
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "A cluster description (JSON file) or preset: cpu, dgx-a100, "
           "dgx-h100">,
    Option<"nodes", "nodes", "int64_t", /*default=*/"0",
           "Nodes of the cluster (0: as described)">,
    Option<"explain", "explain", "std::string", /*default=*/"\"\"",
           "Where to write every plan considered as JSON (none when empty)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Where to write the table of the top plans ('-': stderr; none "
           "when empty)">,
    Option<"top", "top", "int64_t", /*default=*/"5",
           "Plans in the table">,
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "How plans are predicted: build (each plan built), analytic (from "
           "the annotated step), auto (analytic past 2 million op builds)">,
    Option<"apply", "apply", "bool", /*default=*/"true",
           "Apply the chosen plan (false: only plan and report)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::dist::DistDialect",
                           "::mlir::train::TrainDialect"];
}

def DistRecordPlacementPass : Pass<"dist-record-placement", "ModuleOp"> {
  let summary = "Record the strategy that placed a module's programs";
  let description = [{
    A placing pass (`dist-pipeline`, `dist-parameter-server`) keeps the
    module it placed (`module @placement_source`) with itself as the
    pipeline that placed it and a fingerprint of what it wrote. A strategy
    pipeline that runs passes after it (`dist-hybrid` with `pp` > 1:
    gradient compression, bucketing, `dist-verify`) ends with this pass,
    which records `pipeline`, the whole strategy, instead, and the programs
    as they are now. A pass that rewrites the step
    (`train-mixed-precision`) then places its rewrite again with the whole
    strategy. A module without a kept source is an error.

    ```
    dist-opt step.mlir --dist-pipeline="stages=2" --dist-bucket-collectives \
      --dist-record-placement="pipeline=builtin.module(my-strategy)"
    ```
  }];
  let options = [
    Option<"pipeline", "pipeline", "std::string", /*default=*/"",
           "The strategy that placed the programs, as a textual pass "
           "pipeline on builtin.module">,
  ];
}

def DistScheduleTracePass : Pass<"dist-schedule-trace", "ModuleOp"> {
  let summary = "Write the simulated timeline of MPMD programs";
  let description = [{
    Reads the schedule of the module's programs (functions with
    `dist.place`: the order of their `dist.fragment` units), simulates it
    with each unit's estimated time (`CostOpInterface`) and writes the
    timeline: `format=chrome` a Chrome-trace JSON (opens in Perfetto and
    chrome://tracing; one row per device, one slice per unit, an arrow per
    transfer), `format=svg` a picture (a row per device, a box per unit
    labelled with its microbatch and F/B/W, arrows for transfers, the
    bubble blank and its fraction in the caption). The module is left
    unchanged. `dist-run --trace=FILE` writes the same Chrome format with
    measured times.

    ```
    dist-opt step.mlir --dist-pipeline="stages=4 microbatches=8" \
        --dist-schedule-trace="output=1f1b.svg format=svg"
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the timeline ('-': stdout)">,
    Option<"format", "format", "std::string", /*default=*/"\"chrome\"",
           "chrome (Chrome-trace JSON) or svg">,
  ];
}

def DistPropagateShardingPass : Pass<"dist-propagate-sharding", "ModuleOp"> {
  let summary = "Infer a sharding for every value from the annotations";
  let description = [{
    Starting from the user's shardings (function arguments with
    `dist.sharding`, `dist.annotate` ops), propagates shardings along the
    def-use graph through each op's `ShardingRuleOpInterface` rule: the
    shardings of an op's tensors give each factor its mesh axes, which are
    projected onto the op's other tensors (a result that does not map a
    sharded reduction factor becomes partial over its axes). A worklist
    visits each op again only when one of its values gained a sharding, so
    the pass is linear in the graph; it is deterministic.

    User annotations are never changed and win over inferred shardings.
    Annotations that assign different axes to one factor of an op are an
    error at the op. Values left without information are replicated.

    The result is recorded as `dist.shardings` (one `#dist.sharding` per
    result) on every op and `dist.sharding` on every function argument and
    result.

    ```mlir
    // Before: only %x is annotated.
    %h = train.matmul %x, %w {transpose_rhs} : ...
    // After:
    %h = train.matmul %x, %w {dist.shardings = [#dist.sharding<@mesh, [[data], []]>], transpose_rhs} : ...
    ```
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
}

def DistPartitionPass : Pass<"dist-partition", "ModuleOp"> {
  let summary = "Rewrite a sharded program into the per-device SPMD program";
  let description = [{
    Rewrites every function whose values carry shardings (see
    `dist-propagate-sharding`) into the program each device runs: tensors
    get their local shapes, and wherever an op needs its operands sharded
    differently from how they are, the resharding planner inserts the
    cheapest collectives (`partial -> replicated`: all_reduce, `partial ->
    sharded`: reduce_scatter, `sharded -> replicated`: all_gather, between
    dims: all_to_all, `replicated -> sharded`: local_slice) on N-D meshes.
    Partial sums stay partial until an op needs them whole: through ops
    linear in their operands jointly (add, sub, a widening convert), and
    through a product or quotient by a whole scalar (`scale-partials`; a
    gradient unscaled by a loss scale is reduce-scattered after it). When an op
    averages over a sharded factor (a mean factor of its rule), its local
    result is scaled by the shard's share. The function gets the unit
    attribute `dist.partitioned` (its `dist.sharding` attributes then
    describe how the global arrays were split).

    A dimension that does not divide by its axes is an error naming the
    value, the dim, its size and the axes.

    ```mlir
    // Before (mirrored, 2 replicas): %dw is partial over "data".
    %new = train.sgd %w, %dw, %lr : ...
    // After:
    %r = dist.all_reduce %dw on @mesh axes = ["data"] : tensor<128x784xf32>
    %new = train.sgd %w, %r, %lr : ...
    ```
  }];
  let options = [
    Option<"scalePartials", "scale-partials", "bool", /*default=*/"true",
           "Keep a partial sum pending through a product or quotient by a "
           "whole scalar (false: reduce it before; the microbatch split of "
           "pipelines and parameter servers reads where reductions land)">,
  ];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// Communication optimization
//===----------------------------------------------------------------------===//

def DistVerifyPass : Pass<"dist-verify", "ModuleOp"> {
  let summary = "Check the step contract of distributed training steps";
  let description = [{
    Checks what every strategy promises of the training steps it rewrites
    (every strategy pipeline ends with this pass, and `dist-partition` runs
    the same check on what it writes):

    - the train dialect's contract (`train-verify`): roles and unique names,
      one float scalar loss, each updated `param` / `opt_state` result
      replaces the argument of its name, role and (local) type;
    - each state result has its argument's `dist.sharding`: the runner
      feeds it back as the next step's argument, so a result split
      otherwise would be a different array;
    - nothing the contract says is whole comes back split: the loss,
      metrics and hyper-parameters are replicated, and no argument or
      result is a pending partial sum.

    A violation is an error at the value's location naming it and both
    shardings; nothing is written.

    ```mlir
    // error: result #0 'fc.weight' (param) comes back as
    // #dist.sharding<@mesh, [[data], []]> but argument #0 'fc.weight'
    // (param) is #dist.sharding<@mesh, [[], []]>: a state result must keep
    // its argument's sharding (the step contract)
    ```
  }];
}

def DistBucketCollectivesPass : Pass<"dist-bucket-collectives", "ModuleOp"> {
  let summary = "Fuse gradient all-reduces and reduce-scatters into buckets";
  let description = [{
    Fuses consecutive `dist.all_reduce` ops (data parallelism), and
    separately consecutive `dist.reduce_scatter` ops (ZeRO stages 2 and 3),
    with the same mesh, axes and reduction into variadic ops of at most
    `bucket-mb` MiB each (the
    first bucket at most `first-bucket-mb`, so that communication starts
    early), in program order, which for a training step is the order the
    backward pass produces gradients: PyTorch DDP's and tf.distribute's
    packing. Each all-reduce first moves up to where its input is ready (so
    program order is the order gradients are produced); a fused op sits
    where its last member was; the users of earlier members move after it. An all-reduce whose input depends on an earlier
    member's result starts a new bucket. A single tensor larger than a
    bucket gets a bucket of its own.

    ```mlir
    // Before:
    %a = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<128xf32>
    %b = dist.all_reduce %gb on @mesh axes = ["data"] : tensor<10xf32>
    // After:
    %a, %b = dist.all_reduce %ga, %gb on @mesh axes = ["data"] : tensor<128xf32>, tensor<10xf32>
    ```
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Capacity of a bucket in MiB">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "Capacity of the first bucket in MiB">,
  ];
}

def DistCompressGradientsPass
    : Pass<"dist-compress-gradients", "ModuleOp"> {
  let summary = "Reduce gradients in 16 bits (DDP's fp16/bf16 compress hooks)";
  let description = [{
    Runs on a partitioned program (after `dist-partition` or `dist-pipeline`,
    before `dist-bucket-collectives`). Every sum `dist.all_reduce` and
    `dist.reduce_scatter` input that is a float32 gradient -- its result
    reaches the gradient operand of an optimizer op, directly or through
    elementwise single-result ops of the same shape (a `train.convert`, an
    unscaling multiply, a select) -- is converted to `dtype` before the collective
    and its result back to float32 after it, so the collective moves half
    the bytes. Other inputs of the same collective (the loss, metrics) keep
    their type.

    The division by the number of replicas happens before the collective,
    as in PyTorch's `fp16_compress_hook` / `bf16_compress_hook`: the
    partitioned step scales the backward's seed (the loss is a mean over
    the global batch), so each rank's gradient is already divided when it
    is rounded, and the sum cannot overflow f16 where the f32 sum would
    not. Each rank's gradient is rounded once to `dtype`; the reduction
    adds pairs in float32 and rounds each partial sum to `dtype` (the MPI
    backend's user-defined reduction; NCCL's bf16/f16 sums); the result is
    widened exactly.

    ```mlir
    // Before:
    %g = dist.all_reduce %dw on @mesh axes = ["data"] : tensor<10x128xf32>
    %p, %m = train.sgd %w, %g, %lr, %mom ...
    // After (dtype=bf16):
    %h = train.convert %dw : (tensor<10x128xf32>) -> tensor<10x128xbf16>
    %r = dist.all_reduce %h on @mesh axes = ["data"] : tensor<10x128xbf16>
    %g = train.convert %r : (tensor<10x128xbf16>) -> tensor<10x128xf32>
    %p, %m = train.sgd %w, %g, %lr, %mom ...
    ```
    A `dtype` other than `bf16` or `f16` is an error; a module with no
    gradient reduction to compress gets a warning. The asynchronous forms
    (`dist-overlap-collectives`) come after this pass and keep its types.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "Element type gradients are reduced in: bf16 or f16">,
  ];
  let dependentDialects = ["::mlir::train::TrainDialect"];
}

def DistPowerSGDPass : Pass<"dist-powersgd", "ModuleOp"> {
  let summary = "All-reduce gradient matrices as PowerSGD's low-rank factors";
  let description = [{
    Runs on a partitioned data-parallel step (after `dist-partition`,
    before `dist-bucket-collectives`), following PyTorch's `powerSGD_hook`
    with error feedback and warm start. Each float gradient of rank >= 2
    that a sum `dist.all_reduce` reduces for an optimizer op, viewed as an
    `n x m` matrix (dim 0 by the rest), is compressed when its factors are
    small enough: `(n + m) * rank * min-compression-rate < n * m` (PyTorch's
    rule, rate 2 by default); other gradients (biases, small matrices) stay
    in the all-reduce, whole. For each compressed gradient `G`:

    ```
    M  = G + E                      (E: this device's error of the last step)
    P  = all_reduce(M Q)            (n x rank)
    P  = orthonormal columns of P   (modified Gram-Schmidt, unrolled)
    Q' = all_reduce(M^T P)          (m x rank; kept for the next step)
    G' = P Q'^T                     (the reduced gradient)
    E' = M - G' / world
    ```

    The gradients arrive divided by the `world` devices of the reduction
    (the partitioned backward divides the seed), so `G'` is already the
    mean PyTorch divides by the world size last, and `E'` is PyTorch's
    error in the same units. Each compressed gradient moves `(n + m) *
    rank` elements instead of `n * m`. The columns are divided by their
    norm plus 1e-8 (PyTorch's `orthogonalization_epsilon`, 0 there), so a
    zero gradient stays zero. `Q` is not orthogonalized: `G'` depends only
    on the column space of `M Q`. A 16-bit gradient (a mixed-precision
    step's, reduced where the 16-bit product made it) is widened to float32
    first, and `G'` rounded back to its type.

    `Q` and `E` become optimizer state of the step: arguments and results
    `<param>.powersgd.q` (`m x rank`, replicated, `train.init = "normal"`:
    standard normal draws of the run's seed, PyTorch's initial `Q`) and
    `<param>.powersgd.error` (the gradient's local shape, split along dim
    0 over the reduction's axes: each device keeps its own error, and a
    checkpoint saves every device's), so they are checkpointed and
    restored with the rest of the state. Compression starts at the first
    step (PyTorch's `start_powerSGD_iter` runs plain all-reduces first).

    A `rank` below 1 is an error; so is a gradient that is reduce-scattered
    (ZeRO stage 2 or 3). A module with nothing to compress gets a warning.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"1",
           "Rank of the approximation (PyTorch's matrix_approximation_rank)">,
    Option<"minCompressionRate", "min-compression-rate", "double",
           /*default=*/"2.0",
           "Compress a matrix only when its factors are at most 1/rate of it">,
  ];
  let dependentDialects = ["::mlir::train::TrainDialect"];
}

def DistOverlapCollectivesPass
    : Pass<"dist-overlap-collectives", "ModuleOp"> {
  let summary = "Start collectives early and wait for them late";
  let description = [{
    Rewrites every `dist.all_reduce`, `dist.reduce_scatter` and
    `dist.all_gather` into its asynchronous form: the `*_start` op where the
    collective was (after bucketing, where its inputs became ready) and a
    `dist.wait` right before the first op that uses one of its results, so
    the computation in between overlaps the communication (the backward
    pass keeps computing while earlier gradient buckets are reduced). The
    order in which collectives start is unchanged, so every rank still
    issues them in the same order.

    ```mlir
    // Before:
    %g:2 = dist.all_reduce %dw2, %db2 on @mesh axes = ["data"] : ...
    %dh = train.matmul %dy, %w2 : ...          // does not use %g
    %new = train.sgd %w2, %g#0, %lr : ...
    // After:
    %f:2 = dist.all_reduce_start %dw2, %db2 on @mesh axes = ["data"] : ... -> !dist.future<...>, !dist.future<...>
    %dh = train.matmul %dy, %w2 : ...
    %g:2 = dist.wait %f#0, %f#1 : !dist.future<...>, !dist.future<...>
    %new = train.sgd %w2, %g#0, %lr : ...
    ```
  }];
}

def DistHierarchicalAllReducePass
    : Pass<"dist-hierarchical-all-reduce", "ModuleOp"> {
  let summary = "Split all-reduces across hosts into intra/inter-host steps";
  let description = [{
    Rewrites every sum `dist.all_reduce` whose axes include both axes that
    cross hosts (the mesh's `host_axes`) and axes within a host into the
    hierarchical form multi-worker training uses: for each tensor a
    reduce-scatter over the intra-host axes (along its first dim that
    divides), one (variadic) all-reduce of the slices over the host axes, and
    an all-gather over the intra-host axes. Only 1/D of each tensor crosses
    hosts (D devices per host). A tensor with no dim divisible by D is
    all-reduced within the host and then across hosts (a remark says so).

    ```mlir
    // Before (mesh hosts x devices = 2 x 4):
    %g = dist.all_reduce %dw on @mesh axes = ["hosts", "devices"] : tensor<128x784xf32>
    // After:
    %s = dist.reduce_scatter %dw on @mesh axes = ["devices"] scatter_dims = [0] : tensor<128x784xf32> -> tensor<32x784xf32>
    %r = dist.all_reduce %s on @mesh axes = ["hosts"] : tensor<32x784xf32>
    %g = dist.all_gather %r on @mesh axes = ["devices"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

def DistCostReportPass : Pass<"dist-cost-report", "ModuleOp"> {
  let summary = "Report per-rank FLOPs, communication and memory";
  let description = [{
    For every function (normally after `dist-partition`, when shapes are per
    rank) reports:

    - `flops_per_rank`: the sum of the ops' `CostOpInterface` FLOPs;
    - every collective: kind, mesh axes, group size `n`, payload bytes `S`
      (the whole tensor: the input of all_reduce, reduce_scatter and
      all_to_all, the output of all_gather) and bus bytes per rank under a
      ring: all_reduce `2(n-1)/n * S`, reduce_scatter, all_gather and
      all_to_all `(n-1)/n * S`, broadcast `S`; `local_slice` moves nothing;
    - `comm_bytes_per_rank` (the sum of bus bytes) and `collective_count`
      (a variadic all-reduce counts once);
    - when the mesh gives `bandwidths` (and `latencies`), each collective's
      estimated time (bus bytes over the slowest of its axes' bandwidths
      plus one latency, the largest of its axes', per ring step: 2(n-1) for
      an all-reduce, n-1 for the others) and their sum
      `comm_seconds_per_rank`;
    - memory per rank: `param_bytes`, `opt_state_bytes` and `input_bytes`
      (arguments by `train.role`), `gradient_bytes` (each update op's
      gradient as the data-parallel reduction delivers it: the result of the
      last communicating collective on its path, else the operand itself),
      `model_state_bytes_per_rank` (params + gradients + optimizer state, the
      quantity of the ZeRO paper), `activation_peak_bytes` (the largest sum
      of live intermediate values, in program order) and
      `peak_memory_bytes_per_rank` (arguments + activation peak).

    In placed programs (a pipeline) ops nested in fragments count, each
    program's point-to-point `sends` / `recvs` and their bytes are
    reported, and a `pipeline` section gives per stage the estimated
    forward, backward and weight-gradient time per microbatch and the stash
    (what a microbatch's backward reads that its forward made or received),
    per device the simulated busy time, the most microbatches alive at once
    and their activation bytes, and the bytes sent per step, and the
    simulated step time and bubble fraction ((P-1)/M for GPipe and 1F1B on
    balanced stages, (P-1)/(V*M) interleaved).

    `format=text` prints a readable table, `format=json` one JSON object per
    function (`{"functions": [...]}`, plus `pipeline`); `output` names the
    file (`-`: stdout). The IR is unchanged.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Report format: text or json">,
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the report ('-' for stdout)">,
  ];
}

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_PASSES
