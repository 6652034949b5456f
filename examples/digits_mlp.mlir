// The digits classifier: a two-layer MLP on scikit-learn's 8x8 digits
// (64 pixels in [0, 1], 10 classes), trained by examples/train_digits.sh:
//   logits = relu(x @ fc1.weight^T + fc1.bias) @ fc2.weight^T + fc2.bias
//   loss   = cross_entropy(logits, y), global batch 64, 64 -> 128 -> 10
// followed by its backward pass and an SGD update with momentum 0.9.
//
// Run: bash examples/train_digits.sh build
func.func @train_step(
    %w1: tensor<128x64xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
    %b1: tensor<128xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
    %w2: tensor<10x128xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
    %b2: tensor<10xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
    %m_w1: tensor<128x64xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
    %m_b1: tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.momentum_buffer"},
    %m_w2: tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.momentum_buffer"},
    %m_b2: tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.momentum_buffer"},
    %x: tensor<64x64xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<64xi64> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<128x64xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
        tensor<128xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
        tensor<10x128xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
        tensor<10xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
        tensor<128x64xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
        tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.momentum_buffer"},
        tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.momentum_buffer"},
        tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // Forward.
  %xw1 = train.matmul %x, %w1 {transpose_rhs} : (tensor<64x64xf32>, tensor<128x64xf32>) -> tensor<64x128xf32>
  %z1 = train.add %xw1, %b1 : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %h = train.relu %z1 : (tensor<64x128xf32>) -> tensor<64x128xf32>
  %hw2 = train.matmul %h, %w2 {transpose_rhs} : (tensor<64x128xf32>, tensor<10x128xf32>) -> tensor<64x10xf32>
  %logits = train.add %hw2, %b2 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>

  // Backward.
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<64x10xf32>, tensor<64xi64>) -> tensor<64x10xf32>
  %dw2 = train.matmul %dlogits, %h {transpose_lhs} : (tensor<64x10xf32>, tensor<64x128xf32>) -> tensor<10x128xf32>
  %db2 = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x10xf32>) -> tensor<10xf32>
  %dh = train.matmul %dlogits, %w2 : (tensor<64x10xf32>, tensor<10x128xf32>) -> tensor<64x128xf32>
  %active = train.compare %z1, %zero {direction = #train.compare_direction<gt>} : (tensor<64x128xf32>, tensor<f32>) -> tensor<64x128xi1>
  %dz1 = train.select %active, %dh, %zero : (tensor<64x128xi1>, tensor<64x128xf32>, tensor<f32>) -> tensor<64x128xf32>
  %dw1 = train.matmul %dz1, %x {transpose_lhs} : (tensor<64x128xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %db1 = train.reduce %dz1 {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x128xf32>) -> tensor<128xf32>

  // SGD with momentum 0.9.
  %w1n, %m_w1n = train.sgd %w1, %dw1, %lr, %m_w1 {momentum = 9.000000e-01 : f64} : (tensor<128x64xf32>, tensor<128x64xf32>, tensor<f32>, tensor<128x64xf32>) -> (tensor<128x64xf32>, tensor<128x64xf32>)
  %b1n, %m_b1n = train.sgd %b1, %db1, %lr, %m_b1 {momentum = 9.000000e-01 : f64} : (tensor<128xf32>, tensor<128xf32>, tensor<f32>, tensor<128xf32>) -> (tensor<128xf32>, tensor<128xf32>)
  %w2n, %m_w2n = train.sgd %w2, %dw2, %lr, %m_w2 {momentum = 9.000000e-01 : f64} : (tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>, tensor<10x128xf32>) -> (tensor<10x128xf32>, tensor<10x128xf32>)
  %b2n, %m_b2n = train.sgd %b2, %db2, %lr, %m_b2 {momentum = 9.000000e-01 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<10xf32>) -> (tensor<10xf32>, tensor<10xf32>)

  return %w1n, %b1n, %w2n, %b2n, %m_w1n, %m_b1n, %m_w2n, %m_b2n, %loss
      : tensor<128x64xf32>, tensor<128xf32>, tensor<10x128xf32>, tensor<10xf32>,
        tensor<128x64xf32>, tensor<128xf32>, tensor<10x128xf32>, tensor<10xf32>,
        tensor<f32>
}
