// A two-layer MLP training step (PyTorch layout: weights are [out, in]):
//   logits = relu(x @ fc1.weight^T + fc1.bias) @ fc2.weight^T + fc2.bias
//   loss   = cross_entropy(logits, y), global batch 64, 784 -> 128 -> 10
// followed by its backward pass and an AdamW update (torch.optim.AdamW:
// lr a hyper argument, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01).
// This is examples/mlp.mlir with the SGD update replaced by train.adamw.
//
// Every parameter P has three opt_state tensors, as PyTorch keeps them:
//   "P.exp_avg"     first moment, P's shape
//   "P.exp_avg_sq"  second moment, P's shape
//   "P.step"        number of steps taken so far, a tensor<f32> scalar
//                   (0 before the first step; train.adamw returns step + 1)
//
// Run: dist-opt --train-verify --train-summary examples/mlp_adam.mlir
func.func @train_step(
    %w1: tensor<128x784xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
    %b1: tensor<128xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
    %w2: tensor<10x128xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
    %b2: tensor<10xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
    %w1_exp_avg: tensor<128x784xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.exp_avg"},
    %w1_exp_avg_sq: tensor<128x784xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.exp_avg_sq"},
    %w1_step: tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.step"},
    %b1_exp_avg: tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.exp_avg"},
    %b1_exp_avg_sq: tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.exp_avg_sq"},
    %b1_step: tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.step"},
    %w2_exp_avg: tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.exp_avg"},
    %w2_exp_avg_sq: tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.exp_avg_sq"},
    %w2_step: tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.step"},
    %b2_exp_avg: tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.exp_avg"},
    %b2_exp_avg_sq: tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.exp_avg_sq"},
    %b2_step: tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.step"},
    %x: tensor<64x784xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<64xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<128x784xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
        tensor<128xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
        tensor<10x128xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
        tensor<10xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
        tensor<128x784xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.exp_avg"},
        tensor<128x784xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.exp_avg_sq"},
        tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.step"},
        tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.exp_avg"},
        tensor<128xf32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.exp_avg_sq"},
        tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc1.bias.step"},
        tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.exp_avg"},
        tensor<10x128xf32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.exp_avg_sq"},
        tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc2.weight.step"},
        tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.exp_avg"},
        tensor<10xf32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.exp_avg_sq"},
        tensor<f32> {train.role = #train.role<opt_state>, train.name = "fc2.bias.step"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // Forward.
  %xw1 = train.matmul %x, %w1 {transpose_rhs} : (tensor<64x784xf32>, tensor<128x784xf32>) -> tensor<64x128xf32>
  %z1 = train.add %xw1, %b1 : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %h = train.relu %z1 : (tensor<64x128xf32>) -> tensor<64x128xf32>
  %hw2 = train.matmul %h, %w2 {transpose_rhs} : (tensor<64x128xf32>, tensor<10x128xf32>) -> tensor<64x10xf32>
  %logits = train.add %hw2, %b2 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<64x10xf32>, tensor<64xi32>) -> tensor<f32>

  // Backward.
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<64x10xf32>, tensor<64xi32>) -> tensor<64x10xf32>
  %dw2 = train.matmul %dlogits, %h {transpose_lhs} : (tensor<64x10xf32>, tensor<64x128xf32>) -> tensor<10x128xf32>
  %db2 = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x10xf32>) -> tensor<10xf32>
  %dh = train.matmul %dlogits, %w2 : (tensor<64x10xf32>, tensor<10x128xf32>) -> tensor<64x128xf32>
  %active = train.compare %z1, %zero {direction = #train.compare_direction<gt>} : (tensor<64x128xf32>, tensor<f32>) -> tensor<64x128xi1>
  %dz1 = train.select %active, %dh, %zero : (tensor<64x128xi1>, tensor<64x128xf32>, tensor<f32>) -> tensor<64x128xf32>
  %dw1 = train.matmul %dz1, %x {transpose_lhs} : (tensor<64x128xf32>, tensor<64x784xf32>) -> tensor<128x784xf32>
  %db1 = train.reduce %dz1 {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x128xf32>) -> tensor<128xf32>

  // AdamW: lr from the hyper argument, betas (0.9, 0.999), eps 1e-8, weight decay 0.01.
  %w1_new, %w1_exp_avg_new, %w1_exp_avg_sq_new, %w1_step_new = train.adamw %w1, %dw1, %w1_exp_avg, %w1_exp_avg_sq, %w1_step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<128x784xf32>, tensor<128x784xf32>, tensor<128x784xf32>, tensor<128x784xf32>, tensor<f32>, tensor<f32>) -> (tensor<128x784xf32>, tensor<128x784xf32>, tensor<128x784xf32>, tensor<f32>)
  %b1_new, %b1_exp_avg_new, %b1_exp_avg_sq_new, %b1_step_new = train.adamw %b1, %db1, %b1_exp_avg, %b1_exp_avg_sq, %b1_step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<f32>, tensor<f32>) -> (tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<f32>)
  %w2_new, %w2_exp_avg_new, %w2_exp_avg_sq_new, %w2_step_new = train.adamw %w2, %dw2, %w2_exp_avg, %w2_exp_avg_sq, %w2_step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<10x128xf32>, tensor<10x128xf32>, tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>, tensor<f32>) -> (tensor<10x128xf32>, tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>)
  %b2_new, %b2_exp_avg_new, %b2_exp_avg_sq_new, %b2_step_new = train.adamw %b2, %db2, %b2_exp_avg, %b2_exp_avg_sq, %b2_step, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>)

  return %w1_new, %b1_new, %w2_new, %b2_new, %w1_exp_avg_new, %w1_exp_avg_sq_new, %w1_step_new,
      %b1_exp_avg_new, %b1_exp_avg_sq_new, %b1_step_new, %w2_exp_avg_new, %w2_exp_avg_sq_new,
      %w2_step_new, %b2_exp_avg_new, %b2_exp_avg_sq_new, %b2_step_new, %loss
      : tensor<128x784xf32>, tensor<128xf32>, tensor<10x128xf32>, tensor<10xf32>,
        tensor<128x784xf32>, tensor<128x784xf32>, tensor<f32>, tensor<128xf32>, tensor<128xf32>,
        tensor<f32>, tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>, tensor<10xf32>,
        tensor<10xf32>, tensor<f32>, tensor<f32>
}
