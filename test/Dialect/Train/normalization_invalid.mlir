// RUN: dist-opt %s -split-input-file -verify-diagnostics

// An axis equal to the rank normalizes over nothing.
func.func @layer_norm_axis_too_large(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{'train.layer_norm' op axis 3 is out of range for rank 3}}
  // expected-error @+1 {{'train.layer_norm' op failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 3 : i64} : (tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>)
  return
}

// -----

// axis does not count from the back.
func.func @layer_norm_axis_negative(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{'train.layer_norm' op axis -1 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = -1 : i64} : (tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8x16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

// A scalar input has no dim to normalize.
func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<f32>, %b: tensor<f32>) {
  // expected-error @+2 {{'train.layer_norm' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 0 : i64} : (tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return
}

// -----

// A weight of the wrong size.
func.func @layer_norm_weight_shape(%x: tensor<8x16x32xf32>, %g: tensor<16xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{'train.layer_norm' op weight must have shape 32, got 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<8x16x32xf32>, tensor<16xf32>, tensor<32xf32>) -> (tensor<8x16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

// A weight covering only the last dim when axis 1 normalizes over two.
func.func @layer_norm_weight_rank(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>, %b: tensor<16x32xf32>) {
  // expected-error @+2 {{'train.layer_norm' op weight must have shape 16x32, got 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x16x32xf32>, tensor<32xf32>, tensor<16x32xf32>) -> (tensor<8x16x32xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// A bias of the wrong size.
func.func @layer_norm_bias_shape(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'train.layer_norm' op bias must have shape 32, got 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<8x16x32xf32>, tensor<32xf32>, tensor<8xf32>) -> (tensor<8x16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

// A weight of another element type than the input.
func.func @layer_norm_weight_element_type(%x: tensor<8x32xbf16>, %g: tensor<32xf32>, %b: tensor<32xbf16>) {
  // expected-error @+2 {{'train.layer_norm' op weight must have element type 'bf16', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x32xbf16>, tensor<32xf32>, tensor<32xbf16>) -> (tensor<8x32xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// -----

// A bias of another element type than the input.
func.func @layer_norm_bias_element_type(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf16>) {
  // expected-error @+2 {{'train.layer_norm' op bias must have element type 'f32', got 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf16>) -> (tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Declared statistics with keepdims-style trailing 1s.
func.func @layer_norm_result_stats(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{'train.layer_norm' op inferred type(s) 'tensor<8x32xf32>', 'tensor<8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<8x32xf32>', 'tensor<8x1xf32>', 'tensor<8x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  return
}

// -----

// layer_norm is float-only.
func.func @layer_norm_integer(%x: tensor<8x32xi32>, %g: tensor<32xi32>, %b: tensor<32xi32>) {
  // expected-error @+1 {{'train.layer_norm' op operand #0 must be statically shaped tensor of float values, but got 'tensor<8x32xi32>'}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x32xi32>, tensor<32xi32>, tensor<32xi32>) -> (tensor<8x32xi32>, tensor<8xi32>, tensor<8xi32>)
  return
}

// -----

// layer_norm needs its axis.
func.func @layer_norm_axis_missing(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{'train.layer_norm' op requires attribute 'axis'}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// A grad_output of another shape than the input.
func.func @layer_norm_backward_grad(%dy: tensor<4x8xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op grad_output type 'tensor<4x8xf32>' does not match input type 'tensor<4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A grad_output of another element type than the input.
func.func @layer_norm_backward_grad_element_type(%dy: tensor<4x16xbf16>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op grad_output type 'tensor<4x16xbf16>' does not match input type 'tensor<4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// layer_norm_backward with an axis out of range.
func.func @layer_norm_backward_axis(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 2 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// layer_norm_backward with a weight that does not match axis.
func.func @layer_norm_backward_weight(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<f32>, %rstd: tensor<f32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op weight must have shape 4x16, got 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>, tensor<f32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// layer_norm_backward with a weight of another element type.
func.func @layer_norm_backward_weight_element_type(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf16>) {
  // expected-error @+2 {{'train.layer_norm_backward' op weight must have element type 'f32', got 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf16>) -> (tensor<4x16xf32>, tensor<16xf16>, tensor<16xf16>)
  return
}

// -----

// A mean of the wrong shape (the normalized dim instead of the leading one).
func.func @layer_norm_backward_mean_shape(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<16xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op mean must have shape 4, got 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A rstd with a keepdims-style trailing 1.
func.func @layer_norm_backward_rstd_shape(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4x1xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op rstd must have shape 4, got 4x1}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x1xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A rstd of another element type.
func.func @layer_norm_backward_rstd_element_type(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf64>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op rstd must have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf64>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// Declared weight gradients with the statistics' shape.
func.func @layer_norm_backward_result(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.layer_norm_backward' op inferred type(s) 'tensor<4x16xf32>', 'tensor<16xf32>', 'tensor<16xf32>' are incompatible with return type(s) of operation 'tensor<4x16xf32>', 'tensor<4xf32>', 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// batch_norm needs a channel dim.
func.func @batch_norm_rank1(%x: tensor<16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{'train.batch_norm' op input must have rank >= 2 (batch, channels, ...), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A weight sized by the last dim (NHWC thinking) instead of the channel dim 1.
func.func @batch_norm_weight_shape(%x: tensor<8x3x5x5xf32>, %g: tensor<5xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'train.batch_norm' op weight must have shape 3, got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<8x3x5x5xf32>, tensor<5xf32>, tensor<3xf32>) -> (tensor<8x3x5x5xf32>, tensor<5xf32>, tensor<5xf32>)
  return
}

// -----

// A bias with the shape of the normalized dims.
func.func @batch_norm_bias_shape(%x: tensor<32x16xf32>, %g: tensor<16xf32>, %b: tensor<32x16xf32>) {
  // expected-error @+2 {{'train.batch_norm' op bias must have shape 16, got 32x16}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A weight of another element type than the input.
func.func @batch_norm_weight_element_type(%x: tensor<8x3x5x5xbf16>, %g: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'train.batch_norm' op weight must have element type 'bf16', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<8x3x5x5xbf16>, tensor<3xf32>, tensor<3xf32>) -> (tensor<8x3x5x5xbf16>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// Declared statistics over the batch dim instead of the channel dim.
func.func @batch_norm_result(%x: tensor<32x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{'train.batch_norm' op inferred type(s) 'tensor<32x16xf32>', 'tensor<16xf32>', 'tensor<16xf32>' are incompatible with return type(s) of operation 'tensor<32x16xf32>', 'tensor<32xf32>', 'tensor<32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}

// -----

// batch_norm is float-only.
func.func @batch_norm_integer(%x: tensor<32x16xi32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'train.batch_norm' op operand #0 must be statically shaped tensor of float values, but got 'tensor<32x16xi32>'}}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<32x16xi32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xi32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A grad_output of another shape than the input.
func.func @batch_norm_backward_grad(%dy: tensor<8x3x4x4xf32>, %x: tensor<8x3x5x5xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<3xf32>) {
  // expected-error @+2 {{'train.batch_norm_backward' op grad_output type 'tensor<8x3x4x4xf32>' does not match input type 'tensor<8x3x5x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<8x3x4x4xf32>, tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm_backward needs a channel dim.
func.func @batch_norm_backward_rank1(%dy: tensor<16xf32>, %x: tensor<16xf32>, %mean: tensor<16xf32>, %var: tensor<16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.batch_norm_backward' op input must have rank >= 2 (batch, channels, ...), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A mean that is not per channel.
func.func @batch_norm_backward_mean(%dy: tensor<32x16xf32>, %x: tensor<32x16xf32>, %mean: tensor<32xf32>, %var: tensor<16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{'train.batch_norm_backward' op mean must have shape 16, got 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

// A var of another element type.
func.func @batch_norm_backward_var_element_type(%dy: tensor<8x3x5x5xf16>, %x: tensor<8x3x5x5xf16>, %mean: tensor<3xf16>, %var: tensor<3xf32>, %g: tensor<3xf16>) {
  // expected-error @+2 {{'train.batch_norm_backward' op var must have element type 'f16', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<8x3x5x5xf16>, tensor<8x3x5x5xf16>, tensor<3xf16>, tensor<3xf32>, tensor<3xf16>) -> (tensor<8x3x5x5xf16>, tensor<3xf16>, tensor<3xf16>)
  return
}

// -----

// A weight that is not per channel.
func.func @batch_norm_backward_weight(%dy: tensor<8x3x5x5xf32>, %x: tensor<8x3x5x5xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<1x3xf32>) {
  // expected-error @+2 {{'train.batch_norm_backward' op weight must have shape 3, got 1x3}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<8x3x5x5xf32>, tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1x3xf32>) -> (tensor<8x3x5x5xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return
}

// -----

// A declared input gradient of another element type.
func.func @batch_norm_backward_result(%dy: tensor<8x3x5x5xf32>, %x: tensor<8x3x5x5xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<3xf32>) {
  // expected-error @+2 {{'train.batch_norm_backward' op inferred type(s) 'tensor<8x3x5x5xf32>', 'tensor<3xf32>', 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<8x3x5x5xbf16>', 'tensor<3xf32>', 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<8x3x5x5xf32>, tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<8x3x5x5xbf16>, tensor<3xf32>, tensor<3xf32>)
  return
}
