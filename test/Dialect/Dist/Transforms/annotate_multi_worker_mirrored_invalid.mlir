// RUN: dist-opt %s -split-input-file --dist-annotate-multi-worker-mirrored="hosts=2 devices=3" -verify-diagnostics
// RUN: not dist-opt %s -split-input-file --dist-annotate-multi-worker-mirrored="hosts=2" 2>&1 | FileCheck %s --check-prefix=NO-DEVICES

// A missing devices count is rejected before anything is annotated.
// NO-DEVICES: error: dist-annotate-multi-worker-mirrored: needs hosts >= 1 and devices >= 1, got

// A batch of 16 does not split over 2 x 3 = 6 replicas.
func.func @step(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                // expected-error @+1 {{argument #2 'x' (input) has batch 16, which does not divide over 6 replicas}}
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

// A mesh named like the strategy's with another shape.
// expected-error @+1 {{'dist.mesh' op exists with another shape than the strategy's ["hosts", "devices"] x array<i64: 2, 3>}}
dist.mesh @mesh {axes = ["data"], shape = array<i64: 6>}
func.func @batch12(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<12x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<12xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<12x8xf32>, tensor<4x8xf32>) -> tensor<12x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<12x4xf32>, tensor<12xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<12x4xf32>, tensor<12xi32>) -> tensor<12x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<12x4xf32>, tensor<12x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
