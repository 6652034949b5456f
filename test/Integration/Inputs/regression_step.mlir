// A linear regression step: pred = x @ w^T + b, loss = mean((pred - y)^2)
// with float targets y (no cross-entropy reads them), SGD.
//   x [8, 4], y [8, 2]: d loss / d pred = 2 (pred - y) / 16.
func.func @train_step(
    %w: tensor<2x4xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %b: tensor<2xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8x2xf32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2x4xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<2xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xw = train.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<8x2xf32>
  %pred = train.add %xw, %b : (tensor<8x2xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  %diff = train.sub %pred, %y : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %sq = train.mul %diff, %diff : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %loss = train.reduce %sq {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x2xf32>) -> tensor<f32>
  %scale = train.constant dense<1.250000e-01> : tensor<8x2xf32>
  %dpred = train.mul %diff, %scale : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %dw = train.matmul %dpred, %x {transpose_lhs} : (tensor<8x2xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %db = train.reduce %dpred {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x2xf32>) -> tensor<2xf32>
  %wn = train.sgd %w, %dw, %lr : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %bn = train.sgd %b, %db, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %wn, %bn, %loss : tensor<2x4xf32>, tensor<2xf32>, tensor<f32>
}
