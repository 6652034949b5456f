// RUN: dist-opt %s --dist-parameter-server="ps=2 workers=2 partitioner=fixed" -split-input-file -o %t.out 2>&1 | FileCheck %s

// A table also read by a product (a tied output layer) is pulled and
// pushed whole, and a remark says why.
// CHECK: remark: dist-parameter-server: embedding table "emb" is pulled and pushed whole: its rows are looked up sparsely only when every use gathers rows of it by one batch argument and its gradient is a scatter-add of those rows into zeros
func.func @train_step(
    %emb: tensor<8x4xf32> {train.role = #train.role<param>, train.name = "emb"},
    %ids: tensor<4xi32> {train.role = #train.role<input>, train.name = "ids"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x4xf32> {train.role = #train.role<param>, train.name = "emb"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.gather %emb, %ids : (tensor<8x4xf32>, tensor<4xi32>) -> tensor<4x4xf32>
  %logits = train.matmul %h, %emb {transpose_rhs} : (tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<4x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  %dout = train.matmul %dl, %h {transpose_lhs} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %dh = train.matmul %dl, %emb : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %zeros = train.constant dense<0.000000e+00> : tensor<8x4xf32>
  %din = train.scatter_add %zeros, %ids, %dh : (tensor<8x4xf32>, tensor<4xi32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %demb = train.add %dout, %din : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %emb_n = train.sgd %emb, %demb, %lr : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  return %emb_n, %loss : tensor<8x4xf32>, tensor<f32>
}

// -----

// A bias whose gradient is summed as [1, 4] and reshaped stays whole.
// CHECK: remark: dist-parameter-server: "b" stays whole on one server (the partitioner would split it into 2): its gradient is summed in another shape or changed by an op that is not elementwise
func.func @train_step(
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.add %x, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %ones = train.constant dense<1.000000e+00> : tensor<1x8xf32>
  %g = train.matmul %ones, %dl : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %db = train.reshape %g : (tensor<1x4xf32>) -> tensor<4xf32>
  %b_n = train.sgd %b, %db, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %b_n, %loss : tensor<4xf32>, tensor<f32>
}
