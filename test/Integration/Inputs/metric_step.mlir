// linear_step.mlir whose reported loss also adds the largest logit of each
// class and the smallest logit (max / min reductions over the split batch
// dim; the gradient is the cross-entropy's alone).
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
  %max = train.reduce %logits {dims = array<i64: 0>, kind = #train.reduce_kind<max>} : (tensor<4x4xf32>) -> tensor<4xf32>
  %min = train.reduce %logits {dims = array<i64: 0, 1>, kind = #train.reduce_kind<min>} : (tensor<4x4xf32>) -> tensor<f32>
  %maxsum = train.reduce %max {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %extremes = train.add %maxsum, %min : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %reported = train.add %loss, %extremes : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %wn, %bn, %reported : tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
