// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2" -split-input-file -verify-diagnostics
// RUN: not dist-opt %s --dist-pipeline="stages=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not dist-opt %s --dist-pipeline="stages=2 schedule=pipedream" -split-input-file 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not dist-opt %s --dist-pipeline="stages=2 microbatches=3 schedule=interleaved virtual-stages=2" -split-input-file 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not dist-opt %s --dist-pipeline="stages=2 virtual-stages=2 schedule=1f1b" -split-input-file 2>&1 | FileCheck %s --check-prefix=VIRTUAL

// OPTIONS: error: dist-pipeline: needs stages >= 1, microbatches >= 1, virtual-stages >= 1, dp >= 1, tp >= 1, zero 0-3 and schedule=gpipe|1f1b|interleaved|zb-h1, got stages=0 microbatches=1 virtual-stages=1 dp=1 tp=1 zero=0 schedule=1f1b
// KIND: error: dist-pipeline: needs {{.*}} schedule=pipedream
// INTERLEAVED: pipeline_invalid.mlir:{{[1-9][0-9]*}}:1: error: dist-pipeline: interleaved schedule needs microbatches to be a multiple of the 2 pipeline ranks (got 3): use 2 or 4 microbatches (they divide the batch of 8), or schedule=1f1b
// VIRTUAL: error: dist-pipeline: schedule=1f1b runs one stage per rank (got 2 virtual stages): use 1 virtual stage, or schedule=interleaved

// Stages decrease along the forward computation.
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
  %xw1 = train.matmul %x, %w1 {transpose_rhs, train.stage = 1} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  %z1 = train.add %xw1, %b1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %h = train.relu %z1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-error @+1 {{is annotated stage 0 but reads a value computed on stage 1: stages must not decrease along the forward computation}}
  %hw2 = train.matmul %h, %w2 {transpose_rhs, train.stage = 0} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
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

// -----

// A stage the pipeline does not have.
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
  // expected-error @+1 {{'train.stage' 2 is not a stage of this pipeline (stages 0 to 1)}}
  %hw2 = train.matmul %h, %w2 {transpose_rhs, train.stage = 2} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
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

// -----

// Annotations that leave a stage empty.
// expected-error @+1 {{pipeline stage 1 of 2 gets no forward op from the 'train.stage' annotations: annotate an op of every stage}}
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
  %hw2 = train.matmul %h, %w2 {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
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

// -----

// A batch that does not split into the microbatches.
func.func @odd_batch(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    // expected-error @+1 {{argument #1 'x' (input) has batch 3, which does not split into 2 microbatches: use a microbatch count that divides it}}
    %x: tensor<3x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %l = train.reduce %h {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<3x4xf32>) -> tensor<f32>
  %g = train.matmul %x, %h {transpose_lhs} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %g, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %l : tensor<4x4xf32>, tensor<f32>
}
