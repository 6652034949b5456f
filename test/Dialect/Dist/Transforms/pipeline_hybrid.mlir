// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2 dp=2" 2>&1 | FileCheck %s --check-prefix=DP
// RUN: dist-opt %s --dist-hybrid="pp=2 tp=2 microbatches=2" 2>&1 | FileCheck %s --check-prefix=TP
// RUN: dist-opt %s --dist-hybrid="pp=2 dp=2 zero=1 microbatches=2" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not dist-opt %s --dist-pipeline="stages=2 microbatches=3 dp=2" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not dist-opt %s --dist-pipeline="stages=2 zero=1" 2>&1 | FileCheck %s --check-prefix=NODATA
// RUN: not dist-opt %s --dist-hybrid="pp=2 hosts=2 dp=2" 2>&1 | FileCheck %s --check-prefix=HOSTS

// Pipelines whose stages are themselves data or tensor parallel, on the
// MLP of pipeline.mlir (batch 8, 16 -> 8 -> 4; fc1 on stage 0, fc2 on 1).

// pp x dp: a [pipe, data] mesh; each program runs on the 2 devices of its
// pipe coordinate with local types: its data replica's 4 samples, split
// into 2 microbatches of 2. Gradients are accumulated over the
// microbatches (no collective in F or B) and all-reduced over data once,
// in the update.
// DP: dist.mesh @pipe {axes = ["pipe", "data"], shape = array<i64: 2, 2>}
// DP-LABEL: func.func @train_step_pipe0(
// DP-SAME: tensor<8x16xf32> {train.name = "fc1.weight"
// DP-SAME: tensor<4x16xf32> {dist.sharding = #dist.sharding<@pipe, {{\[\[data\], \[\]\]}}>, train.name = "x"
// DP-SAME: dist.partitioned, dist.place = #dist.place<@pipe, pipe = 0>
// DP: unit #dist.unit<F, stage = 0, microbatch = 0>
// DP: train.slice %{{.*}} {limit = array<i64: 2, 16>, start = array<i64: 0, 0>} : (tensor<4x16xf32>) -> tensor<2x16xf32>
// DP: dist.send {{.*}} to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2x8xf32>
// DP: unit #dist.unit<F, stage = 0, microbatch = 1>
// DP: train.slice %{{.*}} {limit = array<i64: 4, 16>, start = array<i64: 2, 0>}
// DP-NOT: dist.all_reduce
// DP: unit #dist.unit<U, stage = 0, microbatch = 0>
// DP: dist.all_reduce %{{.*}} on @pipe axes = ["data"] : tensor<8x16xf32>
// DP: dist.all_reduce %{{.*}} on @pipe axes = ["data"] : tensor<8xf32>
// DP-LABEL: func.func @train_step_pipe1(
// DP-SAME: tensor<4xi32> {dist.sharding = #dist.sharding<@pipe, {{\[\[data\]\]}}>, train.name = "y"
// DP-NOT: dist.all_reduce
// DP: unit #dist.unit<U, stage = 1, microbatch = 0>
// DP: dist.all_reduce %{{.*}} on @pipe axes = ["data"] : tensor<4x8xf32>
// DP: dist.all_reduce %{{.*}} on @pipe axes = ["data"] : tensor<4xf32>
// The loss, summed over the microbatches, then over the replicas.
// DP: dist.all_reduce %{{.*}} on @pipe axes = ["data"] : tensor<f32>

// pp x tp (dist-hybrid): fc1 column-parallel, fc2 row-parallel over
// "model"; the activation sent between the stages is each device's half
// of the hidden units, and the row-parallel product is all-reduced in
// stage 1's forward.
// TP: dist.mesh @pipe {axes = ["pipe", "model"], shape = array<i64: 2, 2>}
// TP-LABEL: func.func @train_step_pipe0(
// TP-SAME: tensor<4x16xf32> {dist.sharding = #dist.sharding<@pipe, {{\[\[model\], \[\]\]}}>, train.name = "fc1.weight"
// TP-SAME: tensor<8x16xf32> {train.name = "x"
// TP: dist.send {{.*}} to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<4x4xf32>
// TP-LABEL: func.func @train_step_pipe1(
// TP-SAME: tensor<4x4xf32> {dist.sharding = #dist.sharding<@pipe, {{\[\[\], \[model\]\]}}>, train.name = "fc2.weight"
// TP: unit #dist.unit<F, stage = 1, microbatch = 0>
// TP: train.matmul {{.*}} -> tensor<4x4xf32>
// TP-NEXT: dist.all_reduce %{{.*}} on @pipe axes = ["model"] : tensor<4x4xf32>

// pp x dp with ZeRO-1: each stage reduce-scatters its own accumulated
// gradients once per step (one bucket), updates its shard and all-gathers
// the parameters; only activations and their gradients cross stages.
// ZERO-LABEL: func.func @train_step_pipe0(
// ZERO-SAME: tensor<4x16xf32> {dist.sharding = #dist.sharding<@pipe, {{\[\[data\], \[\]\]}}>, train.name = "fc1.weight.momentum_buffer"
// ZERO-NOT: dist.reduce_scatter
// ZERO: unit #dist.unit<U, stage = 0, microbatch = 0>
// ZERO: dist.reduce_scatter %{{.*}}, %{{.*}} on @pipe axes = ["data"] scatter_dims = [0, 0] : tensor<8x16xf32>, tensor<8xf32>
// ZERO: dist.all_gather
// ZERO-LABEL: func.func @train_step_pipe1(
// ZERO-NOT: dist.send {{.*}} : tensor<4x8xf32>
// ZERO-NOT: dist.reduce_scatter
// ZERO: unit #dist.unit<U, stage = 1, microbatch = 0>
// ZERO: dist.reduce_scatter %{{.*}}, %{{.*}} on @pipe axes = ["data"] scatter_dims = [0, 0] : tensor<4x8xf32>, tensor<4xf32>

// SPLIT: error: argument #8 'x' (input) has batch 8, which does not split into 2 data-parallel replicas x 3 microbatches: use a microbatch count that divides its share
// NODATA: error: dist-pipeline: zero=1 shards over the data axis of each stage: it needs dp > 1
// HOSTS: error: dist-hybrid: pp > 1 runs on one mesh of pp x dp x tp devices; hosts=2 (a hierarchical data axis inside each stage) is not supported with a pipeline: fold the hosts into dp

func.func @train_step(
    %w1: tensor<8x16xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
    %b1: tensor<8xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
    %w2: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
    %b2: tensor<4xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
    %m_w1: tensor<8x16xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
    %m_b1: tensor<8xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.momentum_buffer"},
    %m_w2: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.momentum_buffer"},
    %m_b2: tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.momentum_buffer"},
    %x: tensor<8x16xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x16xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
        tensor<8xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
        tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
        tensor<8x16xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
        tensor<8xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.momentum_buffer"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.momentum_buffer"},
        tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // Forward.
  %xw1 = train.matmul %x, %w1 {transpose_rhs, train.stage = 0} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  %z1 = train.add %xw1, %b1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %h = train.relu %z1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %hw2 = train.matmul %h, %w2 {transpose_rhs, train.stage = 1} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %logits = train.add %hw2, %b2 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>

  // Backward.
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %dw2 = train.matmul %dlogits, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %db2 = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %dh = train.matmul %dlogits, %w2 : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %active = train.compare %z1, %zero {direction = #train.compare_direction<gt>} : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xi1>
  %dz1 = train.select %active, %dh, %zero : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %dw1 = train.matmul %dz1, %x {transpose_lhs} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %db1 = train.reduce %dz1 {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x8xf32>) -> tensor<8xf32>

  // SGD with momentum 0.9.
  %w1n, %m_w1n = train.sgd %w1, %dw1, %lr, %m_w1 {momentum = 9.000000e-01 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
  %b1n, %m_b1n = train.sgd %b1, %db1, %lr, %m_b1 {momentum = 9.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %w2n, %m_w2n = train.sgd %w2, %dw2, %lr, %m_w2 {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %b2n, %m_b2n = train.sgd %b2, %db2, %lr, %m_b2 {momentum = 9.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

  return %w1n, %b1n, %w2n, %b2n, %m_w1n, %m_b1n, %m_w2n, %m_b2n, %loss
      : tensor<8x16xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4xf32>,
        tensor<8x16xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4xf32>,
        tensor<f32>
}
