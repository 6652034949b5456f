// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// A plain 2-D matmul: [m, k] x [k, n] -> [m, n].
// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[LHS:.*]]: tensor<8x16xf32>, %[[RHS:.*]]: tensor<16x32xf32>)
// CHECK: %[[R:.*]] = train.matmul %[[LHS]], %[[RHS]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK: return %[[R]]
func.func @matmul_2d(%lhs: tensor<8x16xf32>, %rhs: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// transpose_lhs reads lhs as [k, m].
// CHECK-LABEL: func.func @matmul_transpose_lhs
// CHECK-SAME: (%[[LHS:.*]]: tensor<16x8xf32>, %[[RHS:.*]]: tensor<16x32xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] {transpose_lhs} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
func.func @matmul_transpose_lhs(%lhs: tensor<16x8xf32>, %rhs: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %r = train.matmul %lhs, %rhs {transpose_lhs} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// transpose_rhs reads rhs as [n, k] (a PyTorch linear weight).
// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK-SAME: (%[[LHS:.*]]: tensor<8x16xf32>, %[[RHS:.*]]: tensor<32x16xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
func.func @matmul_transpose_rhs(%lhs: tensor<8x16xf32>, %rhs: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %r = train.matmul %lhs, %rhs {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// Both transposes: [k, m] x [n, k] -> [m, n].
// CHECK-LABEL: func.func @matmul_transpose_both
// CHECK-SAME: (%[[LHS:.*]]: tensor<16x8xf32>, %[[RHS:.*]]: tensor<32x16xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
func.func @matmul_transpose_both(%lhs: tensor<16x8xf32>, %rhs: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %r = train.matmul %lhs, %rhs {transpose_lhs, transpose_rhs} : (tensor<16x8xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// A batched 3-D x 3-D matmul (bmm) keeps the shared batch dim.
// CHECK-LABEL: func.func @matmul_batched
// CHECK-SAME: (%[[LHS:.*]]: tensor<4x8x16xf32>, %[[RHS:.*]]: tensor<4x16x32xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] : (tensor<4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
func.func @matmul_batched(%lhs: tensor<4x8x16xf32>, %rhs: tensor<4x16x32xf32>) -> tensor<4x8x32xf32> {
  %r = train.matmul %lhs, %rhs : (tensor<4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
  return %r : tensor<4x8x32xf32>
}

// -----

// Two batch dims with both transposes (attention scores q^T-style layouts).
// CHECK-LABEL: func.func @matmul_batched_transposed
// CHECK-SAME: (%[[LHS:.*]]: tensor<2x3x16x8xf32>, %[[RHS:.*]]: tensor<2x3x32x16xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] {transpose_lhs, transpose_rhs} : (tensor<2x3x16x8xf32>, tensor<2x3x32x16xf32>) -> tensor<2x3x8x32xf32>
func.func @matmul_batched_transposed(%lhs: tensor<2x3x16x8xf32>, %rhs: tensor<2x3x32x16xf32>) -> tensor<2x3x8x32xf32> {
  %r = train.matmul %lhs, %rhs {transpose_lhs, transpose_rhs} : (tensor<2x3x16x8xf32>, tensor<2x3x32x16xf32>) -> tensor<2x3x8x32xf32>
  return %r : tensor<2x3x8x32xf32>
}

// -----

// A 3-D activation times a shared 2-D weight (the documented linear layer).
// CHECK-LABEL: func.func @matmul_3d_2d_weight
// CHECK-SAME: (%[[X:.*]]: tensor<8x128x512xf32>, %[[W:.*]]: tensor<2048x512xf32>)
// CHECK: train.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<8x128x512xf32>, tensor<2048x512xf32>) -> tensor<8x128x2048xf32>
func.func @matmul_3d_2d_weight(%x: tensor<8x128x512xf32>, %w: tensor<2048x512xf32>) -> tensor<8x128x2048xf32> {
  %r = train.matmul %x, %w {transpose_rhs} : (tensor<8x128x512xf32>, tensor<2048x512xf32>) -> tensor<8x128x2048xf32>
  return %r : tensor<8x128x2048xf32>
}

// -----

// A 2-D lhs shared by every batch of a 3-D rhs takes the rhs batch dims.
// CHECK-LABEL: func.func @matmul_2d_3d
// CHECK-SAME: (%[[LHS:.*]]: tensor<8x16xf32>, %[[RHS:.*]]: tensor<4x16x32xf32>)
// CHECK: train.matmul %[[LHS]], %[[RHS]] : (tensor<8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
func.func @matmul_2d_3d(%lhs: tensor<8x16xf32>, %rhs: tensor<4x16x32xf32>) -> tensor<4x8x32xf32> {
  %r = train.matmul %lhs, %rhs : (tensor<8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
  return %r : tensor<4x8x32xf32>
}

// -----

// Matmul keeps a non-f32 element type (bf16) and accepts integers.
// CHECK-LABEL: func.func @matmul_element_types
// CHECK: train.matmul %{{.*}}, %{{.*}} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// CHECK: train.matmul %{{.*}}, %{{.*}} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
func.func @matmul_element_types(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<2x3xi32>, %d: tensor<3x4xi32>) -> (tensor<2x4xbf16>, tensor<2x4xi32>) {
  %r = train.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %s = train.matmul %c, %d : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %r, %s : tensor<2x4xbf16>, tensor<2x4xi32>
}

// -----

// conv2d with default attributes: 8 - 3 + 1 = 6 (defaults are not printed).
// CHECK-LABEL: func.func @conv2d_default
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK: %[[R:.*]] = train.conv2d %[[X]], %[[W]] : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
// CHECK: return %[[R]]
func.func @conv2d_default(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %r = train.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %r : tensor<2x4x6x6xf32>
}

// -----

// Explicitly written default attributes are elided when printed.
// CHECK-LABEL: func.func @conv2d_explicit_defaults
// CHECK: train.conv2d %{{.*}}, %{{.*}} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
func.func @conv2d_explicit_defaults(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %r : tensor<2x4x6x6xf32>
}

// -----

// Stride 2 floors: (9 - 3) / 2 + 1 = 4.
// CHECK-LABEL: func.func @conv2d_stride
// CHECK: train.conv2d %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>} : (tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32>
func.func @conv2d_stride(%x: tensor<1x3x9x9xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----

// "Same" padding with a 3x3 kernel keeps the spatial size.
// CHECK-LABEL: func.func @conv2d_same_padding
// CHECK: train.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
func.func @conv2d_same_padding(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> {
  %r = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}

// -----

// Asymmetric padding [top, bottom, left, right] with per-dim strides:
// h = (10 + 1 + 0 - 2 - 1) / 2 + 1 = 5, w = (7 + 2 + 1 - 1 - 1) / 3 + 1 = 3.
// CHECK-LABEL: func.func @conv2d_asymmetric_padding
// CHECK: train.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<1x3x10x7xf32>, tensor<2x3x3x2xf32>) -> tensor<1x2x5x3xf32>
func.func @conv2d_asymmetric_padding(%x: tensor<1x3x10x7xf32>, %w: tensor<2x3x3x2xf32>) -> tensor<1x2x5x3xf32> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 1, 0, 2, 1>} : (tensor<1x3x10x7xf32>, tensor<2x3x3x2xf32>) -> tensor<1x2x5x3xf32>
  return %r : tensor<1x2x5x3xf32>
}

// -----

// Per-dim dilation: h = 10 - 2 * 2 - 1 + 1 = 6, w = 10 - 3 * 2 - 1 + 1 = 4.
// CHECK-LABEL: func.func @conv2d_dilation
// CHECK: train.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 3>} : (tensor<1x1x10x10xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x4xf32>
func.func @conv2d_dilation(%x: tensor<1x1x10x10xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x4xf32> {
  %r = train.conv2d %x, %w {dilations = array<i64: 2, 3>} : (tensor<1x1x10x10xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x4xf32>
  return %r : tensor<1x1x6x4xf32>
}

// -----

// A kernel larger than the input fits once padded: (4 + 1 - 5) + 1 = 1.
// CHECK-LABEL: func.func @conv2d_kernel_fits_with_padding
// CHECK: train.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 0, 0, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32>
func.func @conv2d_kernel_fits_with_padding(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32> {
  %r = train.conv2d %x, %w {padding = array<i64: 1, 0, 0, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32>
  return %r : tensor<1x1x1x1xf32>
}

// -----

// Grouped 1x1 conv: 6 input channels in 3 groups of 2, 9 output channels.
// CHECK-LABEL: func.func @conv2d_groups
// CHECK: train.conv2d %{{.*}}, %{{.*}} {groups = 3 : i64} : (tensor<2x6x5x5xf32>, tensor<9x2x1x1xf32>) -> tensor<2x9x5x5xf32>
func.func @conv2d_groups(%x: tensor<2x6x5x5xf32>, %w: tensor<9x2x1x1xf32>) -> tensor<2x9x5x5xf32> {
  %r = train.conv2d %x, %w {groups = 3 : i64} : (tensor<2x6x5x5xf32>, tensor<9x2x1x1xf32>) -> tensor<2x9x5x5xf32>
  return %r : tensor<2x9x5x5xf32>
}

// -----

// Depthwise conv (groups = channels) in f16 with same padding.
// CHECK-LABEL: func.func @conv2d_depthwise
// CHECK: train.conv2d %{{.*}}, %{{.*}} {groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf16>, tensor<4x1x3x3xf16>) -> tensor<1x4x7x7xf16>
func.func @conv2d_depthwise(%x: tensor<1x4x7x7xf16>, %w: tensor<4x1x3x3xf16>) -> tensor<1x4x7x7xf16> {
  %r = train.conv2d %x, %w {groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf16>, tensor<4x1x3x3xf16>) -> tensor<1x4x7x7xf16>
  return %r : tensor<1x4x7x7xf16>
}

// -----

// Every attribute at once: h = (16 + 3 - 2 * 2 - 1) / 2 + 1 = 8,
// w = (12 + 2 - 4 - 1) / 1 + 1 = 10; 4 channels in 2 groups.
// CHECK-LABEL: func.func @conv2d_all_attributes
// CHECK: train.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, groups = 2 : i64, padding = array<i64: 1, 2, 0, 2>, strides = array<i64: 2, 1>} : (tensor<2x4x16x12xbf16>, tensor<6x2x3x5xbf16>) -> tensor<2x6x8x10xbf16>
func.func @conv2d_all_attributes(%x: tensor<2x4x16x12xbf16>, %w: tensor<6x2x3x5xbf16>) -> tensor<2x6x8x10xbf16> {
  %r = train.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 2, 0, 2>, dilations = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x4x16x12xbf16>, tensor<6x2x3x5xbf16>) -> tensor<2x6x8x10xbf16>
  return %r : tensor<2x6x8x10xbf16>
}

// -----

// The input gradient of @conv2d_default: input_size 8x8 gives 6x6.
// CHECK-LABEL: func.func @conv2d_backward_input
// CHECK-SAME: (%[[G:.*]]: tensor<2x4x6x6xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK: %[[R:.*]] = train.conv2d_backward_input %[[G]], %[[W]] {input_size = array<i64: 8, 8>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
// CHECK: return %[[R]]
func.func @conv2d_backward_input(%g: tensor<2x4x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 8, 8>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %r : tensor<2x3x8x8xf32>
}

// -----

// With stride 2 both 9 and 10 pool to 4: input_size picks the result size.
// CHECK-LABEL: func.func @conv2d_backward_input_stride
// CHECK: train.conv2d_backward_input %{{.*}}, %{{.*}} {input_size = array<i64: 9, 9>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x9x9xf32>
// CHECK: train.conv2d_backward_input %{{.*}}, %{{.*}} {input_size = array<i64: 10, 10>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x10x10xf32>
func.func @conv2d_backward_input_stride(%g: tensor<1x8x4x4xf32>, %w: tensor<8x3x3x3xf32>) -> (tensor<1x3x9x9xf32>, tensor<1x3x10x10xf32>) {
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 9, 9>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x9x9xf32>
  %s = train.conv2d_backward_input %g, %w {input_size = array<i64: 10, 10>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x10x10xf32>
  return %r, %s : tensor<1x3x9x9xf32>, tensor<1x3x10x10xf32>
}

// -----

// The input gradient of @conv2d_all_attributes: channels = 2 per group x 2.
// CHECK-LABEL: func.func @conv2d_backward_input_all_attributes
// CHECK: train.conv2d_backward_input %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, groups = 2 : i64, input_size = array<i64: 16, 12>, padding = array<i64: 1, 2, 0, 2>, strides = array<i64: 2, 1>} : (tensor<2x6x8x10xbf16>, tensor<6x2x3x5xbf16>) -> tensor<2x4x16x12xbf16>
func.func @conv2d_backward_input_all_attributes(%g: tensor<2x6x8x10xbf16>, %w: tensor<6x2x3x5xbf16>) -> tensor<2x4x16x12xbf16> {
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 16, 12>, strides = array<i64: 2, 1>, padding = array<i64: 1, 2, 0, 2>, dilations = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x6x8x10xbf16>, tensor<6x2x3x5xbf16>) -> tensor<2x4x16x12xbf16>
  return %r : tensor<2x4x16x12xbf16>
}

// -----

// The filter gradient of @conv2d_default: kernel_size 3x3 gives 6x6.
// CHECK-LABEL: func.func @conv2d_backward_filter
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8x8xf32>, %[[G:.*]]: tensor<2x4x6x6xf32>)
// CHECK: %[[R:.*]] = train.conv2d_backward_filter %[[X]], %[[G]] {kernel_size = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
// CHECK: return %[[R]]
func.func @conv2d_backward_filter(%x: tensor<2x3x8x8xf32>, %g: tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32> {
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return %r : tensor<4x3x3x3xf32>
}

// -----

// The filter gradient of @conv2d_asymmetric_padding (non-square kernel).
// CHECK-LABEL: func.func @conv2d_backward_filter_padding_stride
// CHECK: train.conv2d_backward_filter %{{.*}}, %{{.*}} {kernel_size = array<i64: 3, 2>, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<1x3x10x7xf32>, tensor<1x2x5x3xf32>) -> tensor<2x3x3x2xf32>
func.func @conv2d_backward_filter_padding_stride(%x: tensor<1x3x10x7xf32>, %g: tensor<1x2x5x3xf32>) -> tensor<2x3x3x2xf32> {
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 3>, padding = array<i64: 1, 0, 2, 1>} : (tensor<1x3x10x7xf32>, tensor<1x2x5x3xf32>) -> tensor<2x3x3x2xf32>
  return %r : tensor<2x3x3x2xf32>
}

// -----

// The filter gradient of @conv2d_all_attributes: [f, c / groups, kh, kw].
// CHECK-LABEL: func.func @conv2d_backward_filter_all_attributes
// CHECK: train.conv2d_backward_filter %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, groups = 2 : i64, kernel_size = array<i64: 3, 5>, padding = array<i64: 1, 2, 0, 2>, strides = array<i64: 2, 1>} : (tensor<2x4x16x12xbf16>, tensor<2x6x8x10xbf16>) -> tensor<6x2x3x5xbf16>
func.func @conv2d_backward_filter_all_attributes(%x: tensor<2x4x16x12xbf16>, %g: tensor<2x6x8x10xbf16>) -> tensor<6x2x3x5xbf16> {
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 5>, strides = array<i64: 2, 1>, padding = array<i64: 1, 2, 0, 2>, dilations = array<i64: 2, 1>, groups = 2 : i64} : (tensor<2x4x16x12xbf16>, tensor<2x6x8x10xbf16>) -> tensor<6x2x3x5xbf16>
  return %r : tensor<6x2x3x5xbf16>
}

// -----

// The filter gradient of @conv2d_depthwise: one input channel per filter.
// CHECK-LABEL: func.func @conv2d_backward_filter_depthwise
// CHECK: train.conv2d_backward_filter %{{.*}}, %{{.*}} {groups = 4 : i64, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf16>, tensor<1x4x7x7xf16>) -> tensor<4x1x3x3xf16>
func.func @conv2d_backward_filter_depthwise(%x: tensor<1x4x7x7xf16>, %g: tensor<1x4x7x7xf16>) -> tensor<4x1x3x3xf16> {
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, groups = 4 : i64, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x7x7xf16>, tensor<1x4x7x7xf16>) -> tensor<4x1x3x3xf16>
  return %r : tensor<4x1x3x3xf16>
}
