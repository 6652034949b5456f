// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2 schedule=1f1b" -split-input-file 2>&1 | FileCheck %s
// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2 schedule=gpipe" -split-input-file 2>&1 | FileCheck %s --check-prefix=GPIPE
// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=1 schedule=zb-h1" -split-input-file 2>&1 | FileCheck %s --check-prefix=ZB

// A two-layer MLP (batch 8, 16 -> 8 -> 4) whose second layer the user puts
// on stage 1. Stage 0 keeps fc1.weight and fc1.bias (and their momentum)
// and the input; stage 1 the rest, the labels and the loss.

// CHECK: remark: dist-pipeline: 1f1b, 2 stages on 2 devices, 2 microbatches
// CHECK: dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// CHECK-NOT: pipeline_microbatches
// CHECK-LABEL: func.func @train_step_pipe0(
// CHECK-SAME: train.name = "fc1.weight"
// CHECK-SAME: train.name = "fc1.bias"
// CHECK-SAME: train.name = "x"
// CHECK-SAME: train.name = "lr"
// CHECK-NOT: train.name = "y"
// CHECK-SAME: dist.place = #dist.place<@pipe, pipe = 0>
// CHECK-SAME: dist.schedule = {microbatches = 2 : i64, schedule = "1f1b", stages = 2 : i64, strategy = "pipeline", virtual_stages = 1 : i64}
// The forward of microbatch 0 takes rows 0-3 of the batch.
// CHECK: %[[F0:.*]]:2 = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<F, stage = 0, microbatch = 0>
// CHECK: train.slice %{{.*}} {limit = array<i64: 4, 16>, start = array<i64: 0, 0>}
// CHECK: dist.send %[[F0]]#1 to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<4x8xf32>
// CHECK: dist.fragment {{.*}} unit #dist.unit<F, stage = 0, microbatch = 1>
// CHECK: train.slice %{{.*}} {limit = array<i64: 8, 16>, start = array<i64: 4, 0>}
// CHECK: dist.send {{.*}} channel = 1 : tensor<4x8xf32>
// CHECK: %[[G0:.*]] = dist.recv from #dist.place<@pipe, pipe = 1> channel = 2 : tensor<4x8xf32>
// CHECK: %[[B0:.*]]:2 = dist.fragment {{.*}} unit #dist.unit<B, stage = 0, microbatch = 0> origin ["train_step/stage0"] (%[[F0]]#0, %[[G0]],
// CHECK: dist.recv from #dist.place<@pipe, pipe = 1> channel = 3
// Microbatch 1's weight gradients are added to microbatch 0's.
// CHECK: dist.fragment {{.*}} unit #dist.unit<B, stage = 0, microbatch = 1> {{.*}}%[[B0]]#0, %[[B0]]#1)
// CHECK-COUNT-2: train.add
// CHECK: dist.fragment {{.*}} unit #dist.unit<U, stage = 0, microbatch = 0>
// CHECK-COUNT-2: train.sgd
// CHECK: return
// CHECK-LABEL: func.func @train_step_pipe1(
// CHECK-SAME: train.name = "y"
// CHECK-SAME: train.name = "loss"
// 1F1B on the last stage: F0 B0 F1 B1, the gradient sent back after each B.
// CHECK: dist.recv from #dist.place<@pipe, pipe = 0> channel = 0
// CHECK: dist.fragment {{.*}} unit #dist.unit<F, stage = 1, microbatch = 0>
// CHECK: train.cross_entropy
// CHECK: dist.fragment {{.*}} unit #dist.unit<B, stage = 1, microbatch = 0>
// CHECK: dist.send {{.*}} to #dist.place<@pipe, pipe = 0> channel = 2
// CHECK: dist.recv from #dist.place<@pipe, pipe = 0> channel = 1
// CHECK: %[[F1:.*]]:2 = dist.fragment {{.*}} unit #dist.unit<F, stage = 1, microbatch = 1>
// CHECK: dist.fragment {{.*}} unit #dist.unit<B, stage = 1, microbatch = 1>
// CHECK: dist.send {{.*}} channel = 3
// CHECK: dist.fragment {{.*}} unit #dist.unit<U, stage = 1, microbatch = 0>
// CHECK: return {{.*}}, %[[F1]]#1 :

// GPipe: every forward, then every backward.
// GPIPE-LABEL: func.func @train_step_pipe1(
// GPIPE: unit #dist.unit<F, stage = 1, microbatch = 0>
// GPIPE: unit #dist.unit<F, stage = 1, microbatch = 1>
// GPIPE: unit #dist.unit<B, stage = 1, microbatch = 0>
// GPIPE: unit #dist.unit<B, stage = 1, microbatch = 1>
// GPIPE: unit #dist.unit<U, stage = 1, microbatch = 0>

// ZB-H1 with one microbatch: the last stage's input gradient (B) is sent
// before its weight gradients (W) run; no slices for a single microbatch.
// ZB-LABEL: func.func @train_step_pipe1(
// ZB-NOT: train.slice
// ZB: unit #dist.unit<F, stage = 1, microbatch = 0>
// ZB: unit #dist.unit<B, stage = 1, microbatch = 0>
// ZB: dist.send
// ZB: unit #dist.unit<W, stage = 1, microbatch = 0>
// ZB: train.matmul {{.*}} {transpose_lhs}
// ZB: unit #dist.unit<U, stage = 1, microbatch = 0>
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
