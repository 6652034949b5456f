// RUN: dist-opt %s -split-input-file --dist-annotate-zero="stage=2 replicas=4" -verify-diagnostics
// RUN: not dist-opt %s -split-input-file --dist-annotate-zero="stage=4 replicas=4" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not dist-opt %s -split-input-file --dist-annotate-zero="stage=0 replicas=4" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not dist-opt %s -split-input-file --dist-annotate-zero="stage=1 replicas=0" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not dist-opt %s -split-input-file --dist-annotate-zero=stage=1 2>&1 | FileCheck %s --check-prefix=OPTIONS
// The stage is required: a missing one is not taken as stage 1.
// RUN: not dist-opt %s -split-input-file --dist-zero=replicas=4 2>&1 | FileCheck %s --check-prefix=OPTIONS

// A stage outside 1-3, or no replicas, is rejected before anything is
// annotated.
// OPTIONS: error: dist-annotate-zero: needs stage=1, 2 or 3 and replicas >= 1, got stage

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

// A mesh named like the strategy's with another shape.
// expected-error @+1 {{'dist.mesh' op exists with another shape than the strategy's ["data"] x array<i64: 4>}}
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
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
