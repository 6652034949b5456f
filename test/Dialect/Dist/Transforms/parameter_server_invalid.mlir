// RUN: dist-opt %s --dist-parameter-server="ps=2 workers=2" -split-input-file -verify-diagnostics

// One gradient applied to two parameters.
func.func @train_step(
    %a: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "a"},
    %b: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<8x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<4x8xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xa = train.matmul %x, %a {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %xb = train.matmul %x, %b {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %logits = train.add %xa, %xb : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %da = train.matmul %dl, %x {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a_n = train.sgd %a, %da, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // expected-error @+1 {{dist-parameter-server: two parameters are updated with the same gradient}}
  %b_n = train.sgd %b, %da, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %a_n, %b_n, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// A norm over two parameters' gradients (clipping by the global norm).
func.func @train_step(
    %a: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "a"},
    %b: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<8x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<4x8xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xa = train.matmul %x, %a {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %xb = train.matmul %x, %b {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %logits = train.add %xa, %xb : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %da = train.matmul %dl, %x {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %db = train.matmul %dl, %x {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %sqa = train.mul %da, %da : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sqb = train.mul %db, %db : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %na = train.reduce %sqa {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<f32>
  %nb = train.reduce %sqb {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<f32>
  // expected-error @+1 {{dist-parameter-server: this op changes the gradients of several parameters after their sum over the batch (clipping by the global norm does, for example): each server updates its own variables alone}}
  %norm = train.add %na, %nb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %ca = train.div %da, %norm : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %cb = train.div %db, %norm : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %a_n = train.sgd %a, %ca, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %b_n = train.sgd %b, %cb, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %a_n, %b_n, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
