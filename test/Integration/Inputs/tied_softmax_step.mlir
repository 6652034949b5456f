// A table tied to a head whose split ends at a softmax (annotate_tensor_parallel.mlir).
func.func @train_step(
    %table: tensor<8x4xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
    %ids: tensor<2x3xi32> {train.role = #train.role<input>, train.name = "ids"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x4xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.gather %table, %ids : (tensor<8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %logits = train.matmul %h, %table {transpose_rhs} : (tensor<2x3x4xf32>, tensor<8x4xf32>) -> tensor<2x3x8xf32>
  %p = train.softmax %logits {dim = -1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %loss = train.reduce %p {dims = array<i64: 0, 1, 2>, kind = #train.reduce_kind<mean>} : (tensor<2x3x8xf32>) -> tensor<f32>
  %g = train.constant dense<0.0> : tensor<8x4xf32>
  %new = train.sgd %table, %g, %lr : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  return %new, %loss : tensor<8x4xf32>, tensor<f32>
}
