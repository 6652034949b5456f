// RUN: dist-opt %s -split-input-file --dist-annotate-mirrored=replicas=4 -verify-diagnostics
// RUN: not dist-opt %s -split-input-file --dist-annotate-mirrored=replicas=0 2>&1 | FileCheck %s --check-prefix=ZERO

// replicas=0 is rejected before anything is annotated.
// ZERO: error: dist-annotate-mirrored: needs replicas >= 1, got

// A batch of 6 does not split over 4 replicas.
func.func @batch6(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                // expected-error @+1 {{argument #2 'x' (input) has batch 6, which does not divide over 4 replicas}}
                %x: tensor<6x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<6xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<6x8xf32>, tensor<4x8xf32>) -> tensor<6x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<6x4xf32>, tensor<6xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<6x4xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// A label with no batch dim cannot be split.
func.func @scalar_label(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
                        // expected-error @+1 {{argument #1 't' (label) has no batch dim: labels hold one entry per sample}}
                        %t: tensor<f32> {train.role = #train.role<label>, train.name = "t"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  return %t : tensor<f32>
}

// -----

// A mesh named like the strategy's with another shape.
// expected-error @+1 {{'dist.mesh' op exists with another shape than the strategy's ["data"] x array<i64: 4>}}
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @step(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// Labels that disagree on the batch.
func.func @two_batches(%x: tensor<8x2xf32> {train.role = #train.role<input>, train.name = "x"},
                       %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
                       // expected-error @+1 {{argument #2 'z' (label) has batch 4 but argument #1 'y' (label) has 8: labels must agree on the batch}}
                       %z: tensor<4xi32> {train.role = #train.role<label>, train.name = "z"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<8x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A step a strategy already distributed is not distributed again (its batch
// is a slice: it once said "x has batch 1, which does not divide").
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// expected-error @+1 {{training step 'distributed' is already distributed (it carries 'dist.partitioned'): apply a strategy to the single-device step}}
func.func @distributed(%x: tensor<1x2xf32> {train.role = #train.role<input>, train.name = "x", dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) attributes {dist.partitioned} {
  %l = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<1x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
