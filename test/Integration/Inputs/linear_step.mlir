// One linear layer and a cross-entropy, SGD without momentum:
//   logits = x @ fc.weight^T + fc.bias, x [4, 8], 4 classes.
// Nothing in it is tensor-parallel, so dp x tp = 2 x 1 with ZeRO leaves
// every parameter to the data axis.
func.func @train_step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
    %x: tensor<4x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xw = train.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %logits = train.add %xw, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x4xf32>, tensor<4xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<4x4xf32>, tensor<4xi32>) -> tensor<4x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %db = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4x4xf32>) -> tensor<4xf32>
  %wn = train.sgd %w, %dw, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %bn = train.sgd %b, %db, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %wn, %bn, %loss : tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
