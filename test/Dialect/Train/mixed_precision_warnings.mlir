// RUN: dist-opt %s --train-mixed-precision -verify-diagnostics -o %t

// No seed to tell the update by (two constants 1.0, none marked) and no
// optimizer op: the update follows the 16-bit gradient, which is said.
func.func @unfound_update(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %a = train.constant dense<1.000000e+00> : tensor<f32>
  %b = train.constant dense<1.000000e+00> : tensor<f32>
  %ab = train.mul %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %dlogits = train.cross_entropy_backward %ab, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %step = train.mul %lr, %dw : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-warning @+1 {{train-mixed-precision: the new value of 'w' is computed in 'bf16' and rounded into its float32 result: no update reading its gradient was found (mark the backward's seed with 'train.loss_seed', or update it with train.sgd, train.adam or train.adamw)}}
  %w2 = train.sub %w, %step : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %w2, %loss : tensor<4x8xf32>, tensor<f32>
}
