// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// 2x2 max pooling with stride 2 halves the spatial dims.
// CHECK-LABEL: func.func @max_pool2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK: %[[R:.*]] = train.max_pool2d %[[X]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK: return %[[R]]
func.func @max_pool2d(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %r : tensor<1x3x4x4xf32>
}

// -----

// The output size floors: (7 - 2) / 2 + 1 = 3.
// CHECK-LABEL: func.func @max_pool2d_floor
// CHECK: train.max_pool2d %{{.*}} {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
func.func @max_pool2d_floor(%x: tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
  return %r : tensor<1x1x3x3xf32>
}

// -----

// The ResNet stem pool: kernel 3, stride 2, padding 1: (7 + 2 - 3) / 2 + 1 = 4.
// CHECK-LABEL: func.func @max_pool2d_padding
// CHECK: train.max_pool2d %{{.*}} {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x16x7x7xf32>) -> tensor<2x16x4x4xf32>
func.func @max_pool2d_padding(%x: tensor<2x16x7x7xf32>) -> tensor<2x16x4x4xf32> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x16x7x7xf32>) -> tensor<2x16x4x4xf32>
  return %r : tensor<2x16x4x4xf32>
}

// -----

// Non-square kernel, per-dim strides, asymmetric padding:
// h = (5 + 1 + 0 - 3) / 1 + 1 = 4, w = (7 + 1 + 1 - 2) / 2 + 1 = 4.
// CHECK-LABEL: func.func @max_pool2d_asymmetric
// CHECK: train.max_pool2d %{{.*}} {kernel_size = array<i64: 3, 2>, padding = array<i64: 1, 0, 1, 1>, strides = array<i64: 1, 2>} : (tensor<1x1x5x7xf16>) -> tensor<1x1x4x4xf16>
func.func @max_pool2d_asymmetric(%x: tensor<1x1x5x7xf16>) -> tensor<1x1x4x4xf16> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 1, 1>} : (tensor<1x1x5x7xf16>) -> tensor<1x1x4x4xf16>
  return %r : tensor<1x1x4x4xf16>
}

// -----

// Padding of exactly half an even kernel is allowed: (4 + 2 - 2) / 2 + 1 = 3.
// CHECK-LABEL: func.func @max_pool2d_half_kernel_padding
// CHECK: train.max_pool2d %{{.*}} {kernel_size = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
func.func @max_pool2d_half_kernel_padding(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %r : tensor<1x1x3x3xf32>
}

// -----

// A window covering the whole input (global pooling).
// CHECK-LABEL: func.func @max_pool2d_global
// CHECK: train.max_pool2d %{{.*}} {kernel_size = array<i64: 7, 7>, strides = array<i64: 1, 1>} : (tensor<8x512x7x7xbf16>) -> tensor<8x512x1x1xbf16>
func.func @max_pool2d_global(%x: tensor<8x512x7x7xbf16>) -> tensor<8x512x1x1xbf16> {
  %r = train.max_pool2d %x {kernel_size = array<i64: 7, 7>, strides = array<i64: 1, 1>} : (tensor<8x512x7x7xbf16>) -> tensor<8x512x1x1xbf16>
  return %r : tensor<8x512x1x1xbf16>
}

// -----

// avg_pool2d with the default count_include_pad (true, not printed).
// CHECK-LABEL: func.func @avg_pool2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK: %[[R:.*]] = train.avg_pool2d %[[X]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK: return %[[R]]
func.func @avg_pool2d(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %r = train.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %r : tensor<1x3x4x4xf32>
}

// -----

// avg_pool2d with same padding, excluding padded positions from the divisor.
// CHECK-LABEL: func.func @avg_pool2d_exclude_pad
// CHECK: train.avg_pool2d %{{.*}} {count_include_pad = false, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
func.func @avg_pool2d_exclude_pad(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32> {
  %r = train.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %r : tensor<1x2x6x6xf32>
}

// -----

// avg_pool2d with overlapping windows and a floored size: (10 - 3) / 2 + 1 = 4,
// (9 - 3) / 2 + 1 = 4.
// CHECK-LABEL: func.func @avg_pool2d_overlapping
// CHECK: train.avg_pool2d %{{.*}} {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x4x10x9xf64>) -> tensor<2x4x4x4xf64>
func.func @avg_pool2d_overlapping(%x: tensor<2x4x10x9xf64>) -> tensor<2x4x4x4xf64> {
  %r = train.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x4x10x9xf64>) -> tensor<2x4x4x4xf64>
  return %r : tensor<2x4x4x4xf64>
}

// -----

// max_pool2d_backward of @max_pool2d_padding returns the input's type.
// CHECK-LABEL: func.func @max_pool2d_backward
// CHECK-SAME: (%[[G:.*]]: tensor<2x16x4x4xf32>, %[[X:.*]]: tensor<2x16x7x7xf32>)
// CHECK: %[[R:.*]] = train.max_pool2d_backward %[[G]], %[[X]] {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x16x4x4xf32>, tensor<2x16x7x7xf32>) -> tensor<2x16x7x7xf32>
// CHECK: return %[[R]]
func.func @max_pool2d_backward(%g: tensor<2x16x4x4xf32>, %x: tensor<2x16x7x7xf32>) -> tensor<2x16x7x7xf32> {
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x16x4x4xf32>, tensor<2x16x7x7xf32>) -> tensor<2x16x7x7xf32>
  return %r : tensor<2x16x7x7xf32>
}

// -----

// max_pool2d_backward of @max_pool2d_floor still returns the full 7x7 input type.
// CHECK-LABEL: func.func @max_pool2d_backward_floor
// CHECK: train.max_pool2d_backward %{{.*}}, %{{.*}} {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x1x7x7xf32>) -> tensor<1x1x7x7xf32>
func.func @max_pool2d_backward_floor(%g: tensor<1x1x3x3xf32>, %x: tensor<1x1x7x7xf32>) -> tensor<1x1x7x7xf32> {
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x1x7x7xf32>) -> tensor<1x1x7x7xf32>
  return %r : tensor<1x1x7x7xf32>
}

// -----

// avg_pool2d_backward of @avg_pool2d.
// CHECK-LABEL: func.func @avg_pool2d_backward
// CHECK-SAME: (%[[G:.*]]: tensor<1x3x4x4xf32>, %[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK: %[[R:.*]] = train.avg_pool2d_backward %[[G]], %[[X]] {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// CHECK: return %[[R]]
func.func @avg_pool2d_backward(%g: tensor<1x3x4x4xf32>, %x: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %r : tensor<1x3x8x8xf32>
}

// -----

// avg_pool2d_backward of @avg_pool2d_exclude_pad keeps count_include_pad.
// CHECK-LABEL: func.func @avg_pool2d_backward_exclude_pad
// CHECK: train.avg_pool2d_backward %{{.*}}, %{{.*}} {count_include_pad = false, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6xbf16>, tensor<1x2x6x6xbf16>) -> tensor<1x2x6x6xbf16>
func.func @avg_pool2d_backward_exclude_pad(%g: tensor<1x2x6x6xbf16>, %x: tensor<1x2x6x6xbf16>) -> tensor<1x2x6x6xbf16> {
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xbf16>, tensor<1x2x6x6xbf16>) -> tensor<1x2x6x6xbf16>
  return %r : tensor<1x2x6x6xbf16>
}
