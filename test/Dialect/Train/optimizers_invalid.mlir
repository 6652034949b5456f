// RUN: dist-opt %s -split-input-file -verify-diagnostics

// momentum > 0 without a momentum buffer.
func.func @sgd_momentum_without_buffer(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op momentum > 0 needs a momentum_buffer operand}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {momentum = 0.9} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// A momentum buffer without momentum.
func.func @sgd_buffer_without_momentum(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %m: tensor<4xf32>) {
  // expected-error @+2 {{'train.sgd' op a momentum_buffer operand needs momentum > 0}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r:2 = train.sgd %w, %g, %lr, %m : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Nesterov without momentum.
func.func @sgd_nesterov_without_momentum(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op nesterov needs momentum > 0}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {nesterov} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Negative momentum.
func.func @sgd_negative_momentum(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op momentum must be non-negative, got -9.000000e-01}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {momentum = -0.9} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Negative weight decay.
func.func @sgd_negative_weight_decay(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op weight_decay must be non-negative, got -1.000000e-01}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {weight_decay = -0.1} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// A NaN momentum is not a valid momentum (without a buffer it must not pass as 0).
func.func @sgd_nan_momentum(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op momentum}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {momentum = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// A NaN weight decay is not non-negative.
func.func @sgd_nan_weight_decay(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op weight_decay must be non-negative, got nan}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr {weight_decay = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// grad must have the param's element type.
func.func @sgd_grad_element_type(%w: tensor<4xf32>, %g: tensor<4xbf16>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op grad type 'tensor<4xbf16>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xbf16>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// grad must have the param's shape (no broadcasting).
func.func @sgd_grad_shape(%w: tensor<4xf32>, %g: tensor<1xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op grad type 'tensor<1xf32>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<1xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// The momentum buffer must have the param's type.
func.func @sgd_buffer_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %m: tensor<4xbf16>) {
  // expected-error @+2 {{'train.sgd' op momentum_buffer type 'tensor<4xbf16>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r:2 = train.sgd %w, %g, %lr, %m {momentum = 0.9} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xbf16>)
  return
}

// -----

// With momentum, the new buffer must be returned too.
func.func @sgd_momentum_one_result(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %m: tensor<4xf32>) {
  // expected-error @+2 {{'train.sgd' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr, %m {momentum = 0.9} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Without momentum there is no buffer to return.
func.func @sgd_plain_two_results(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r:2 = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The new param has the param's type.
func.func @sgd_wrong_result_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.sgd' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'train.sgd' op failed to infer returned types}}
  %r = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return
}

// -----

// The learning rate is a scalar tensor.
func.func @sgd_lr_not_scalar(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<4xf32>) {
  // expected-error @+1 {{'train.sgd' op operand #2 must be 0D tensor of float values, but got 'tensor<4xf32>'}}
  %r = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The learning rate is a float.
func.func @sgd_lr_integer(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<i32>) {
  // expected-error @+1 {{'train.sgd' op operand #2 must be 0D tensor of float values, but got 'tensor<i32>'}}
  %r = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

// Integer params are not trainable.
func.func @sgd_integer_param(%w: tensor<4xi32>, %g: tensor<4xi32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'train.sgd' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xi32>'}}
  %r = train.sgd %w, %g, %lr : (tensor<4xi32>, tensor<4xi32>, tensor<f32>) -> tensor<4xi32>
  return
}

// -----

// At most one momentum buffer.
func.func @sgd_two_buffers(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{'train.sgd' op operand group starting at #3 requires 0 or 1 element, but found 2}}
  %r = train.sgd %w, %g, %lr, %m, %m {momentum = 0.9} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// momentum is an f64 attribute.
func.func @sgd_momentum_f32(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'momentum' failed to satisfy constraint: 64-bit float attribute}}
  %r:2 = train.sgd %w, %g, %lr, %m {momentum = 0.9 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// beta1 = 1 never forgets and divides by zero in the bias correction.
func.func @adam_beta1_one(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op beta1 must be in [0, 1), got 1.000000e+00}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr {beta1 = 1.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// A negative beta2.
func.func @adamw_negative_beta2(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adamw' op beta2 must be in [0, 1), got -5.000000e-01}}
  // expected-error @+1 {{'train.adamw' op failed to infer returned types}}
  %r:4 = train.adamw %w, %g, %m, %m, %st, %lr {beta2 = -0.5} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// A NaN beta1 is not in [0, 1).
func.func @adam_nan_beta1(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op beta1 must be in [0, 1), got nan}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr {beta1 = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// epsilon must be positive.
func.func @adam_zero_epsilon(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op epsilon must be positive and finite, got 0.000000e+00}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr {epsilon = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// A NaN epsilon is not positive.
func.func @adamw_nan_epsilon(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adamw' op epsilon must be positive and finite, got nan}}
  // expected-error @+1 {{'train.adamw' op failed to infer returned types}}
  %r:4 = train.adamw %w, %g, %m, %m, %st, %lr {epsilon = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Negative weight decay.
func.func @adamw_negative_weight_decay(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adamw' op weight_decay must be non-negative, got -1.000000e-02}}
  // expected-error @+1 {{'train.adamw' op failed to infer returned types}}
  %r:4 = train.adamw %w, %g, %m, %m, %st, %lr {weight_decay = -0.01} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// grad must have the param's type.
func.func @adam_grad_type(%w: tensor<4xf32>, %g: tensor<4xf16>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op grad type 'tensor<4xf16>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// exp_avg must have the param's shape.
func.func @adam_exp_avg_shape(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<8xf32>, %v: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op exp_avg type 'tensor<8xf32>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %v, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// exp_avg_sq must have the param's element type.
func.func @adamw_exp_avg_sq_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xbf16>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adamw' op exp_avg_sq type 'tensor<4xbf16>' does not match param type 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.adamw' op failed to infer returned types}}
  %r:4 = train.adamw %w, %g, %m, %v, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<i64>)
  return
}

// -----

// The step is f16/bf16/f32/f64, i32 or i64, not i16.
func.func @adam_step_i16(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i16>, %lr: tensor<f32>) {
  // expected-error @+1 {{'train.adam' op operand #4 must be 0D tensor of float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<i16>'}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i16>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i16>)
  return
}

// -----

// The step is a scalar tensor.
func.func @adamw_step_rank1(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<1xi64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'train.adamw' op operand #4 must be 0D tensor of float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %r:4 = train.adamw %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xi64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xi64>)
  return
}

// -----

// The new step keeps the step's type.
func.func @adam_new_step_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adam' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<i64>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<i32>'}}
  // expected-error @+1 {{'train.adam' op failed to infer returned types}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>)
  return
}

// -----

// The new moments have the param's type.
func.func @adamw_new_exp_avg_type(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+2 {{'train.adamw' op inferred type(s) 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<4xf32>', 'tensor<i64>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<4xf16>', 'tensor<4xf32>', 'tensor<i64>'}}
  // expected-error @+1 {{'train.adamw' op failed to infer returned types}}
  %r:4 = train.adamw %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// The learning rate is a float scalar, not an integer.
func.func @adam_lr_integer(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<i64>) {
  // expected-error @+1 {{'train.adam' op operand #5 must be 0D tensor of float values, but got 'tensor<i64>'}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// adam returns four results.
func.func @adam_three_results(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'train.adam' op expected 4 results}}
  %r:3 = train.adam %w, %g, %m, %m, %st, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// beta1 is an f64 attribute.
func.func @adam_beta1_f32(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %st: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{attribute 'beta1' failed to satisfy constraint: 64-bit float attribute}}
  %r:4 = train.adam %w, %g, %m, %m, %st, %lr {beta1 = 0.9 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}
