// RUN: dist-opt %s -split-input-file -verify-diagnostics

// A rank-3 (CHW) input: pooling is NCHW.
func.func @max_pool2d_rank3(%x: tensor<3x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op input must have rank 4, got 3}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<3x8x8xf32>) -> tensor<3x4x4xf32>
  return
}

// -----

// Padding larger than half an odd kernel (2 > 3 / 2).
func.func @max_pool2d_padding_too_large(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op padding 2 exceeds half the kernel size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 1, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x10x8xf32>
  return
}

// -----

// Only the right padding exceeds half its (width) kernel.
func.func @max_pool2d_padding_right(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op padding 2 exceeds half the kernel size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 4, 2>, strides = array<i64: 1, 1>, padding = array<i64: 2, 2, 1, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x9x10xf32>
  return
}

// -----

// A kernel larger than the input.
func.func @max_pool2d_kernel_too_large(%x: tensor<1x1x8x6xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op spatial dim w: kernel 7 does not fit input 6 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 7, 7>, strides = array<i64: 1, 1>} : (tensor<1x1x8x6xf32>) -> tensor<1x1x2x0xf32>
  return
}

// -----

// kernel_size with one entry.
func.func @max_pool2d_kernel_length(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'kernel_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A zero kernel_size.
func.func @max_pool2d_kernel_zero(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'kernel_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 0, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// strides with three entries.
func.func @max_pool2d_strides_length(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A negative stride.
func.func @max_pool2d_strides_negative(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, -2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Pooling strides are required (they do not default to the kernel size).
func.func @max_pool2d_strides_missing(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op requires attribute 'strides'}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// kernel_size is required.
func.func @max_pool2d_kernel_missing(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op requires attribute 'kernel_size'}}
  %r = train.max_pool2d %x {strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// padding given per dim instead of per side.
func.func @max_pool2d_padding_length(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'padding' failed to satisfy constraint: i64 dense array attribute with exactly 4 elements whose value is non-negative}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  return
}

// -----

// Negative padding.
func.func @max_pool2d_padding_negative(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.max_pool2d' op attribute 'padding' failed to satisfy constraint: i64 dense array attribute with exactly 4 elements whose value is non-negative}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, -1, 0>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x6x5xf32>
  return
}

// -----

// Pooling is float-only.
func.func @max_pool2d_integer(%x: tensor<1x1x8x8xi32>) {
  // expected-error @+1 {{'train.max_pool2d' op operand #0 must be statically shaped tensor of float values, but got 'tensor<1x1x8x8xi32>'}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xi32>) -> tensor<1x1x4x4xi32>
  return
}

// -----

// A declared result that rounds the output size up (ceil mode).
func.func @max_pool2d_result_ceil(%x: tensor<1x1x7x7xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op inferred type(s) 'tensor<1x1x3x3xf32>' are incompatible with return type(s) of operation 'tensor<1x1x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A rank-3 avg_pool2d input.
func.func @avg_pool2d_rank3(%x: tensor<3x8x8xf32>) {
  // expected-error @+2 {{'train.avg_pool2d' op input must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<3x8x8xf32>) -> tensor<3x4x4xf32>
  return
}

// -----

// avg_pool2d padding larger than half its kernel (1 > 1 / 2).
func.func @avg_pool2d_padding_too_large(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'train.avg_pool2d' op padding 1 exceeds half the kernel size 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d %x {kernel_size = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x8x9xf32>
  return
}

// -----

// An avg_pool2d kernel larger than the padded input.
func.func @avg_pool2d_kernel_too_large(%x: tensor<1x1x2x8xf32>) {
  // expected-error @+2 {{'train.avg_pool2d' op spatial dim h: kernel 4 does not fit input 2 padded by 0+1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d %x {kernel_size = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 0>} : (tensor<1x1x2x8xf32>) -> tensor<1x1x1x5xf32>
  return
}

// -----

// count_include_pad must be a bool.
func.func @avg_pool2d_count_include_pad(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'train.avg_pool2d' op attribute 'count_include_pad' failed to satisfy constraint: bool attribute}}
  %r = train.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A declared avg_pool2d result of another element type than the input.
func.func @avg_pool2d_result_element_type(%x: tensor<1x3x8x8xf16>) {
  // expected-error @+2 {{'train.avg_pool2d' op inferred type(s) 'tensor<1x3x4x4xf16>' are incompatible with return type(s) of operation 'tensor<1x3x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x4x4xf32>
  return
}

// -----

// A max_pool2d_backward grad_output that is not the pooled shape.
func.func @max_pool2d_backward_grad_shape(%g: tensor<2x16x3x3xf32>, %x: tensor<2x16x7x7xf32>) {
  // expected-error @+2 {{'train.max_pool2d_backward' op grad_output type 'tensor<2x16x3x3xf32>' does not match the pooled type 'tensor<2x16x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x16x3x3xf32>, tensor<2x16x7x7xf32>) -> tensor<2x16x7x7xf32>
  return
}

// -----

// A max_pool2d_backward grad_output of another element type.
func.func @max_pool2d_backward_grad_element_type(%g: tensor<1x3x4x4xbf16>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d_backward' op grad_output type 'tensor<1x3x4x4xbf16>' does not match the pooled type 'tensor<1x3x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xbf16>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

// A rank-3 forward input for max_pool2d_backward.
func.func @max_pool2d_backward_input_rank(%g: tensor<3x4x4xf32>, %x: tensor<3x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d_backward' op input must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<3x4x4xf32>, tensor<3x8x8xf32>) -> tensor<3x8x8xf32>
  return
}

// -----

// max_pool2d_backward checks the forward padding.
func.func @max_pool2d_backward_padding(%g: tensor<1x1x5x5xf32>, %x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{'train.max_pool2d_backward' op padding 1 exceeds half the kernel size 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 1, 0, 1, 0>} : (tensor<1x1x5x5xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A declared max_pool2d_backward result of the pooled shape instead of the input's.
func.func @max_pool2d_backward_result(%g: tensor<1x3x4x4xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d_backward' op inferred type(s) 'tensor<1x3x8x8xf32>' are incompatible with return type(s) of operation 'tensor<1x3x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

// An avg_pool2d_backward grad_output with another channel count.
func.func @avg_pool2d_backward_grad_shape(%g: tensor<1x4x4x4xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'train.avg_pool2d_backward' op grad_output type 'tensor<1x4x4x4xf32>' does not match the pooled type 'tensor<1x3x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

// An avg_pool2d_backward kernel larger than the forward input.
func.func @avg_pool2d_backward_kernel_too_large(%g: tensor<1x3x1x1xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'train.avg_pool2d_backward' op spatial dim h: kernel 9 does not fit input 8 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 9, 8>, strides = array<i64: 1, 1>} : (tensor<1x3x1x1xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

// avg_pool2d_backward strides are required.
func.func @avg_pool2d_backward_strides_missing(%g: tensor<1x3x4x4xf32>, %x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{'train.avg_pool2d_backward' op requires attribute 'strides'}}
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

// A declared avg_pool2d_backward result of another element type.
func.func @avg_pool2d_backward_result(%g: tensor<1x3x4x4xbf16>, %x: tensor<1x3x8x8xbf16>) {
  // expected-error @+2 {{'train.avg_pool2d_backward' op inferred type(s) 'tensor<1x3x8x8xbf16>' are incompatible with return type(s) of operation 'tensor<1x3x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xbf16>, tensor<1x3x8x8xbf16>) -> tensor<1x3x8x8xf32>
  return
}

// -----

// Padding far above half the kernel is rejected without overflowing.
func.func @max_pool2d_padding_overflow(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{'train.max_pool2d' op padding 9223372036854775807 exceeds half the kernel size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 9223372036854775807, 9223372036854775807, 0, 0>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x6xf32>
  return
}
