// RUN: dist-opt %s -split-input-file -verify-diagnostics

// A rank-1 matmul operand (there is no vector-matrix form).
func.func @matmul_rank1(%lhs: tensor<16xf32>, %rhs: tensor<16x32xf32>) {
  // expected-error @+2 {{'train.matmul' op operands must have rank >= 2, got 1 and 2}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<16xf32>, tensor<16x32xf32>) -> tensor<32xf32>
  return
}

// -----

// Matmul operands of different element types (no implicit promotion).
func.func @matmul_element_types(%lhs: tensor<8x16xf32>, %rhs: tensor<16x32xf16>) {
  // expected-error @+2 {{'train.matmul' op operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<16x32xf16>) -> tensor<8x32xf32>
  return
}

// -----

// Batch dims of equal rank but different sizes.
func.func @matmul_batch_sizes(%lhs: tensor<4x8x16xf32>, %rhs: tensor<5x16x32xf32>) {
  // expected-error @+2 {{'train.matmul' op batch dims differ: lhs has 4, rhs has 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<4x8x16xf32>, tensor<5x16x32xf32>) -> tensor<4x8x32xf32>
  return
}

// -----

// Batch dims of different ranks do not broadcast (only a batchless operand is shared).
func.func @matmul_batch_ranks(%lhs: tensor<2x4x8x16xf32>, %rhs: tensor<4x16x32xf32>) {
  // expected-error @+2 {{'train.matmul' op batch dims differ: lhs has 2x4, rhs has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<2x4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<2x4x8x32xf32>
  return
}

// -----

// Contracting dims of different sizes.
func.func @matmul_contracting(%lhs: tensor<8x16xf32>, %rhs: tensor<15x32xf32>) {
  // expected-error @+2 {{'train.matmul' op contracting dims differ: lhs dim 1 has size 16, rhs dim 0 has size 15}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<15x32xf32>) -> tensor<8x32xf32>
  return
}

// -----

// Transposes move the contracting dims: lhs dim 1 and rhs dim 2 of a batched pair.
func.func @matmul_contracting_transposed(%lhs: tensor<4x16x8xf32>, %rhs: tensor<4x32x15xf32>) {
  // expected-error @+2 {{'train.matmul' op contracting dims differ: lhs dim 1 has size 16, rhs dim 2 has size 15}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs {transpose_lhs, transpose_rhs} : (tensor<4x16x8xf32>, tensor<4x32x15xf32>) -> tensor<4x8x32xf32>
  return
}

// -----

// A missing transpose_rhs on a [n, k] weight.
func.func @matmul_missing_transpose(%x: tensor<8x512xf32>, %w: tensor<2048x512xf32>) {
  // expected-error @+2 {{'train.matmul' op contracting dims differ: lhs dim 1 has size 512, rhs dim 0 has size 2048}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %x, %w : (tensor<8x512xf32>, tensor<2048x512xf32>) -> tensor<8x2048xf32>
  return
}

// -----

// A declared result shape that is not [m, n].
func.func @matmul_result_shape(%lhs: tensor<8x16xf32>, %rhs: tensor<16x32xf32>) {
  // expected-error @+2 {{'train.matmul' op inferred type(s) 'tensor<8x32xf32>' are incompatible with return type(s) of operation 'tensor<8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return
}

// -----

// A declared result that drops the batch dim of the rhs.
func.func @matmul_result_batch(%lhs: tensor<8x16xf32>, %rhs: tensor<4x16x32xf32>) {
  // expected-error @+2 {{'train.matmul' op inferred type(s) 'tensor<4x8x32xf32>' are incompatible with return type(s) of operation 'tensor<8x32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<4x16x32xf32>) -> tensor<8x32xf32>
  return
}

// -----

// A declared result element type that differs from the operands'.
func.func @matmul_result_element_type(%lhs: tensor<8x16xbf16>, %rhs: tensor<16x32xbf16>) {
  // expected-error @+2 {{'train.matmul' op inferred type(s) 'tensor<8x32xbf16>' are incompatible with return type(s) of operation 'tensor<8x32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.matmul %lhs, %rhs : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xf32>
  return
}

// -----

// Dynamic shapes are not train tensors.
func.func @matmul_dynamic(%lhs: tensor<?x16xf32>, %rhs: tensor<16x32xf32>) {
  // expected-error @+1 {{'train.matmul' op operand #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<?x16xf32>'}}
  %r = train.matmul %lhs, %rhs : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
  return
}

// -----

// A rank-3 conv2d input.
func.func @conv2d_input_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op input must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  return
}

// -----

// A rank-3 conv2d filter.
func.func @conv2d_filter_rank(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op filter must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// Input and filter of different element types.
func.func @conv2d_element_types(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xbf16>) {
  // expected-error @+2 {{'train.conv2d' op operands have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xbf16>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// conv2d is float-only.
func.func @conv2d_integer(%x: tensor<2x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) {
  // expected-error @+1 {{'train.conv2d' op operand #0 must be statically shaped tensor of float values, but got 'tensor<2x3x8x8xi32>'}}
  %r = train.conv2d %x, %w : (tensor<2x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<2x4x6x6xi32>
  return
}

// -----

// groups does not divide the input channels.
func.func @conv2d_groups_input_channels(%x: tensor<1x6x5x5xf32>, %w: tensor<4x2x1x1xf32>) {
  // expected-error @+2 {{'train.conv2d' op groups 4 must divide the input channels (6) and output channels (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {groups = 4 : i64} : (tensor<1x6x5x5xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x5x5xf32>
  return
}

// -----

// groups divides the input channels but not the output channels.
func.func @conv2d_groups_output_channels(%x: tensor<1x6x5x5xf32>, %w: tensor<4x2x1x1xf32>) {
  // expected-error @+2 {{'train.conv2d' op groups 3 must divide the input channels (6) and output channels (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {groups = 3 : i64} : (tensor<1x6x5x5xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x5x5xf32>
  return
}

// -----

// The filter's channel dim is the input channels per group, not all of them.
func.func @conv2d_filter_channels(%x: tensor<1x6x5x5xf32>, %w: tensor<4x6x1x1xf32>) {
  // expected-error @+2 {{'train.conv2d' op filter has 6 input channels per group but input has 6 channels in 2 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {groups = 2 : i64} : (tensor<1x6x5x5xf32>, tensor<4x6x1x1xf32>) -> tensor<1x4x5x5xf32>
  return
}

// -----

// A filter with the wrong channel count and no groups.
func.func @conv2d_channel_mismatch(%x: tensor<2x3x8x8xf32>, %w: tensor<4x5x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op filter has 5 input channels per group but input has 3 channels in 1 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x5x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// A kernel taller than the unpadded input.
func.func @conv2d_kernel_too_large(%x: tensor<1x3x4x8xf32>, %w: tensor<2x3x5x5xf32>) {
  // expected-error @+2 {{'train.conv2d' op spatial dim h: kernel 5 does not fit input 4 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w : (tensor<1x3x4x8xf32>, tensor<2x3x5x5xf32>) -> tensor<1x2x0x4xf32>
  return
}

// -----

// Dilation spreads a 3-wide kernel over 9 columns of an 8-wide (padded 0+0) input.
func.func @conv2d_dilated_kernel_too_large(%x: tensor<1x3x8x8xf32>, %w: tensor<2x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op spatial dim w: kernel 3 with dilation 4 does not fit input 8 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {dilations = array<i64: 1, 4>} : (tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x6x1xf32>
  return
}

// -----

// Padding that is one short of fitting a 5-wide kernel on a 3-wide input.
func.func @conv2d_kernel_too_large_padded(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x5x5xf32>) {
  // expected-error @+2 {{'train.conv2d' op spatial dim h: kernel 5 does not fit input 3 padded by 1+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {padding = array<i64: 1, 0, 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32>
  return
}

// -----

// strides with one entry.
func.func @conv2d_strides_length(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d %x, %w {strides = array<i64: 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32>
  return
}

// -----

// A zero stride.
func.func @conv2d_strides_zero(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// A negative dilation.
func.func @conv2d_dilations_negative(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'dilations' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d %x, %w {dilations = array<i64: 1, -1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// padding given as [h, w] instead of [top, bottom, left, right].
func.func @conv2d_padding_length(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'padding' failed to satisfy constraint: i64 dense array attribute with exactly 4 elements whose value is non-negative}}
  %r = train.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

// Negative padding (cropping) is not supported.
func.func @conv2d_padding_negative(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'padding' failed to satisfy constraint: i64 dense array attribute with exactly 4 elements whose value is non-negative}}
  %r = train.conv2d %x, %w {padding = array<i64: -1, 0, 0, 0>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x6xf32>
  return
}

// -----

// Zero groups.
func.func @conv2d_groups_zero(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d' op attribute 'groups' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = train.conv2d %x, %w {groups = 0 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// A declared conv2d result that ignores the padding.
func.func @conv2d_result_shape(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op inferred type(s) 'tensor<2x4x8x8xf32>' are incompatible with return type(s) of operation 'tensor<2x4x6x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// A declared conv2d result that rounds the strided size up instead of down.
func.func @conv2d_result_floor(%x: tensor<1x3x10x10xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op inferred type(s) 'tensor<1x8x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x8x5x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x5x5xf32>
  return
}

// -----

// A rank-3 grad_output for conv2d_backward_input.
func.func @conv2d_backward_input_grad_rank(%g: tensor<4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op grad_output must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8>} : (tensor<4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

// A rank-2 filter for conv2d_backward_input.
func.func @conv2d_backward_input_filter_rank(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op filter must have rank 4, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8>} : (tensor<2x4x6x6xf32>, tensor<4x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

// grad_output and filter of different element types.
func.func @conv2d_backward_input_element_types(%g: tensor<2x4x6x6xf16>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op operands have different element types 'f16' and 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8>} : (tensor<2x4x6x6xf16>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf16>
  return
}

// -----

// The filter's output channels differ from grad_output's channels.
func.func @conv2d_backward_input_channels(%g: tensor<2x5x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op filter has 4 output channels but grad_output has 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8>} : (tensor<2x5x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

// groups that does not divide the output channels.
func.func @conv2d_backward_input_groups(%g: tensor<1x4x5x5xf32>, %w: tensor<4x2x1x1xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op groups 3 must divide the input channels (6) and output channels (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 5, 5>, groups = 3 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x1x1xf32>) -> tensor<1x6x5x5xf32>
  return
}

// -----

// An input_size whose forward output (6x7) is not grad_output's 6x6.
func.func @conv2d_backward_input_size_mismatch(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op input_size 8x9 gives a forward output of 6x7 but grad_output has 6x6}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 9>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x9xf32>
  return
}

// -----

// An input_size that is right without the forward stride, wrong with it.
func.func @conv2d_backward_input_size_stride(%g: tensor<1x8x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op input_size 6x6 gives a forward output of 2x2 but grad_output has 4x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x6x6xf32>
  return
}

// -----

// An input_size the kernel does not fit.
func.func @conv2d_backward_input_size_too_small(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op spatial dim h: kernel 3 does not fit input 2 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 2, 8>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x2x8xf32>
  return
}

// -----

// input_size is required.
func.func @conv2d_backward_input_size_missing(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d_backward_input' op requires attribute 'input_size'}}
  %r = train.conv2d_backward_input %g, %w : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

// input_size with three entries.
func.func @conv2d_backward_input_size_length(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d_backward_input' op attribute 'input_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8, 1>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

// A zero input_size.
func.func @conv2d_backward_input_size_zero(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'train.conv2d_backward_input' op attribute 'input_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 0, 8>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x0x8xf32>
  return
}

// -----

// A declared input gradient that ignores groups (2 per group x 2 groups = 4 channels).
func.func @conv2d_backward_input_result_channels(%g: tensor<1x4x5x5xf32>, %w: tensor<4x2x1x1xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_input' op inferred type(s) 'tensor<1x4x5x5xf32>' are incompatible with return type(s) of operation 'tensor<1x2x5x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 5, 5>, groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x1x1xf32>) -> tensor<1x2x5x5xf32>
  return
}

// -----

// A rank-5 input for conv2d_backward_filter.
func.func @conv2d_backward_filter_input_rank(%x: tensor<1x2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op input must have rank 4, got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>} : (tensor<1x2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// A rank-3 grad_output for conv2d_backward_filter.
func.func @conv2d_backward_filter_grad_rank(%x: tensor<2x3x8x8xf32>, %g: tensor<4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op grad_output must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// input and grad_output of different element types.
func.func @conv2d_backward_filter_element_types(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xbf16>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op operands have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xbf16>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// input and grad_output of different batch sizes.
func.func @conv2d_backward_filter_batch(%x: tensor<2x3x8x8xf32>, %g: tensor<3x4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op input has batch 2 but grad_output has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<3x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// groups that does not divide the input channels.
func.func @conv2d_backward_filter_groups(%x: tensor<1x6x5x5xf32>, %g: tensor<1x4x5x5xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op groups 4 must divide the input channels (6) and output channels (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x6x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<4x1x1x1xf32>
  return
}

// -----

// A kernel_size whose forward output (6x7) is not grad_output's 6x6.
func.func @conv2d_backward_filter_kernel_mismatch(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op kernel_size 3x2 gives a forward output of 6x7 but grad_output has 6x6}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 2>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x2xf32>
  return
}

// -----

// A kernel_size that matches only without the forward padding.
func.func @conv2d_backward_filter_kernel_padding(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op kernel_size 3x3 gives a forward output of 8x8 but grad_output has 6x6}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// A kernel_size larger than the input.
func.func @conv2d_backward_filter_kernel_too_large(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op spatial dim h: kernel 9 does not fit input 8 padded by 0+0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 9, 3>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x9x3xf32>
  return
}

// -----

// kernel_size is required.
func.func @conv2d_backward_filter_kernel_missing(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+1 {{'train.conv2d_backward_filter' op requires attribute 'kernel_size'}}
  %r = train.conv2d_backward_filter %x, %g : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// A negative kernel_size.
func.func @conv2d_backward_filter_kernel_negative(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) {
  // expected-error @+1 {{'train.conv2d_backward_filter' op attribute 'kernel_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is positive}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, -3>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// A declared filter gradient with all input channels despite groups = 2.
func.func @conv2d_backward_filter_result_groups(%x: tensor<1x4x5x5xf32>, %g: tensor<1x6x5x5xf32>) {
  // expected-error @+2 {{'train.conv2d_backward_filter' op inferred type(s) 'tensor<6x2x1x1xf32>' are incompatible with return type(s) of operation 'tensor<6x4x1x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<1x6x5x5xf32>) -> tensor<6x4x1x1xf32>
  return
}

// -----

// Padding so large that the padded size overflows int64 is rejected, not
// wrapped around.
func.func @conv2d_padding_overflow(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{'train.conv2d' op spatial dim h: padding 9223372036854775807+9223372036854775807 or dilation 1 overflows the size arithmetic}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.conv2d %x, %w {padding = array<i64: 9223372036854775807, 9223372036854775807, 0, 0>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x6xf32>
  return
}
