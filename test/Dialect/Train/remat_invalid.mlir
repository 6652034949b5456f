// RUN: dist-opt %s -split-input-file --train-remat=policy=full -verify-diagnostics

// Two constants 1.0 of which every gradient is a linear image: the
// backward region cannot be told.
// expected-error @+1 {{train-remat: cannot tell the backward pass's seed (d loss / d loss) for activation recomputation: 2 constant 1.0 of type 'tensor<f32>' has every gradient as a linear image; mark the seed with 'train.loss_seed'}}
func.func @ambiguous(
    %w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<2xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %p = train.mul %w, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %loss = train.reduce %p {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf32>) -> tensor<f32>
  // expected-note @+1 {{candidate seed}}
  %a = train.constant dense<1.000000e+00> : tensor<f32>
  // expected-note @+1 {{candidate seed}}
  %b = train.constant dense<1.000000e+00> : tensor<f32>
  %ab = train.mul %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g = train.mul %x, %ab : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %w2 = train.sgd %w, %g, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %w2, %loss : tensor<2xf32>, tensor<f32>
}

// -----

// A step without a loss result.
// expected-error @+1 {{train-remat: 'no_loss' returns no loss: it cannot tell its backward pass}}
func.func @no_loss(
    %w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"}) {
  return %w : tensor<2xf32>
}
