// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2 schedule=interleaved virtual-stages=2" -split-input-file 2>%t.err | FileCheck %s --check-prefix=TIED
// RUN: not dist-opt %s --dist-pipeline="stages=3 microbatches=12 schedule=interleaved virtual-stages=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=BUBBLE
// RUN: not dist-opt %s --dist-pipeline="stages=2 microbatches=3 schedule=interleaved virtual-stages=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=REFUSED

// Interleaved schedules: a tied table on two stages of one device, chunks
// whose bubble is worse than 1F1B's, a microbatch count that does not fit.

// A tied embedding and LM head on stages 0 and 2, both on device 0: the
// head's input gradient (which reads the table) runs on stage 2 with it; it
// used to take stage 1 (device 1), and the step was refused as "used on
// pipeline devices 0 (stage 0) and 1 (stage 1)".
// TIED-LABEL: func.func @train_step_pipe0(
// TIED-SAME: train.name = "emb.weight"
// TIED: unit #dist.unit<B, stage = 2, microbatch = 0>
// TIED: train.matmul %{{.*}}, %{{.*}} : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
// TIED-LABEL: func.func @train_step_pipe1(
// TIED-NOT: emb.weight
// TIED: return
// REFUSED: pipeline_interleaved.mlir:[[# @LINE + 2]]:1: error: dist-pipeline: interleaved schedule needs microbatches to be a multiple of the 2 pipeline ranks (got 3): use 2 or 4 microbatches (they divide the batch of 8), or schedule=1f1b
// BUBBLE: error: argument #3 'y' (label) has batch 8: dist-pipeline's microbatches=12 is more than 8, one sample per microbatch
func.func @train_step(
    %table: tensor<16x4xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
    %w1: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w1"},
    %ids: tensor<8xi32> {train.role = #train.role<input>, train.name = "ids"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<16x4xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w1"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h0 = train.gather %table, %ids {train.stage = 0} : (tensor<16x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %h1 = train.matmul %h0, %w1 {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %logits = train.matmul %h1, %table {transpose_rhs, train.stage = 2} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  %loss = train.cross_entropy %logits, %y {train.stage = 3} : (tensor<8x16xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x16xf32>, tensor<8xi32>) -> tensor<8x16xf32>
  %dhead = train.matmul %dlogits, %h1 {transpose_lhs} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %dh1 = train.matmul %dlogits, %table : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %dw1 = train.matmul %h0, %dh1 {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %dh0 = train.matmul %dh1, %w1 {transpose_rhs} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %zeros = train.constant dense<0.000000e+00> : tensor<16x4xf32>
  %demb = train.scatter_add %zeros, %ids, %dh0 : (tensor<16x4xf32>, tensor<8xi32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %dtable = train.add %dhead, %demb : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %tn = train.sgd %table, %dtable, %lr : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xf32>
  %w1n = train.sgd %w1, %dw1, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %tn, %w1n, %loss : tensor<16x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

// Nine layers on three devices with two chunks each: six uneven chunks idle
// more than 1F1B's three stages (the estimated bubbles of both plans), which
// a warning says; the plan used to be chosen without a word.
// BUBBLE: pipeline_interleaved.mlir:[[# @LINE + 2]]:1: warning: dist-pipeline: the interleaved schedule's 6 chunks on 3 devices are uneven: simulated bubble 33.4% against 25.8% for 1f1b with one stage per device; use schedule=1f1b, or a virtual-stages count that cuts the step into even chunks
// REFUSED: pipeline_interleaved.mlir:[[# @LINE + 1]]:1: error: dist-pipeline: interleaved schedule needs microbatches to be a multiple of the 2 pipeline ranks (got 3): use 2 or 4 microbatches (they divide the batch of 24), or schedule=1f1b
func.func @train_step(
    %w1: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l1"},
    %w2: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l2"},
    %w3: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l3"},
    %w4: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l4"},
    %w5: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l5"},
    %w6: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l6"},
    %w7: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l7"},
    %w8: tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l8"},
    %w9: tensor<16x4xf32> {train.role = #train.role<param>, train.name = "l9"},
    %x: tensor<24x16xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<24xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l1"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l2"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l3"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l4"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l5"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l6"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l7"},
        tensor<16x16xf32> {train.role = #train.role<param>, train.name = "l8"},
        tensor<16x4xf32> {train.role = #train.role<param>, train.name = "l9"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h1 = train.matmul %x, %w1 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h2 = train.matmul %h1, %w2 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h3 = train.matmul %h2, %w3 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h4 = train.matmul %h3, %w4 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h5 = train.matmul %h4, %w5 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h6 = train.matmul %h5, %w6 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h7 = train.matmul %h6, %w7 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h8 = train.matmul %h7, %w8 : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %h9 = train.matmul %h8, %w9 : (tensor<24x16xf32>, tensor<16x4xf32>) -> tensor<24x4xf32>
  %loss = train.cross_entropy %h9, %y : (tensor<24x4xf32>, tensor<24xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %d9 = train.cross_entropy_backward %one, %h9, %y : (tensor<f32>, tensor<24x4xf32>, tensor<24xi32>) -> tensor<24x4xf32>
  %g9 = train.matmul %h8, %d9 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x4xf32>) -> tensor<16x4xf32>
  %d8 = train.matmul %d9, %w9 {transpose_rhs} : (tensor<24x4xf32>, tensor<16x4xf32>) -> tensor<24x16xf32>
  %g8 = train.matmul %h7, %d8 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d7 = train.matmul %d8, %w8 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g7 = train.matmul %h6, %d7 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d6 = train.matmul %d7, %w7 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g6 = train.matmul %h5, %d6 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d5 = train.matmul %d6, %w6 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g5 = train.matmul %h4, %d5 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d4 = train.matmul %d5, %w5 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g4 = train.matmul %h3, %d4 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d3 = train.matmul %d4, %w4 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g3 = train.matmul %h2, %d3 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d2 = train.matmul %d3, %w3 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g2 = train.matmul %h1, %d2 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %d1 = train.matmul %d2, %w2 {transpose_rhs} : (tensor<24x16xf32>, tensor<16x16xf32>) -> tensor<24x16xf32>
  %g1 = train.matmul %x, %d1 {transpose_lhs} : (tensor<24x16xf32>, tensor<24x16xf32>) -> tensor<16x16xf32>
  %n1 = train.sgd %w1, %g1, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n2 = train.sgd %w2, %g2, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n3 = train.sgd %w3, %g3, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n4 = train.sgd %w4, %g4, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n5 = train.sgd %w5, %g5, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n6 = train.sgd %w6, %g6, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n7 = train.sgd %w7, %g7, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n8 = train.sgd %w8, %g8, %lr : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %n9 = train.sgd %w9, %g9, %lr : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xf32>
  return %n1, %n2, %n3, %n4, %n5, %n6, %n7, %n8, %n9, %loss
      : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x4xf32>, tensor<f32>
}
