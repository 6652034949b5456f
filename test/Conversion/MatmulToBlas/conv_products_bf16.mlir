// A bf16 or f16 conv2d and both its backward ops become im2col, one
// product per group and col2im on the CPU too (train-to-linalg's default,
// without conv-products): three 16-bit library products (f32
// accumulation), where f32 stride-1 convolutions stay direct contractions
// for dist-conv-to-kernels, whose kernels are f32 only. A depthwise 16-bit
// convolution (many small groups) stays a direct contraction.
// RUN: dist-opt %s --train-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-matmul-to-blas --dist-conv-to-kernels | FileCheck %s

// CHECK-LABEL: func.func @conv_bf16
// CHECK-COUNT-3: call @distopt_matmul_bf16(
// CHECK-NOT: call @distopt_
// CHECK-LABEL: func.func @conv_f16
// CHECK-COUNT-3: call @distopt_matmul_f16(
// CHECK-NOT: call @distopt_
// CHECK-LABEL: func.func @conv_f32
// CHECK-COUNT-3: call @distopt_conv2d_f32(
// CHECK-NOT: call @distopt_matmul
// CHECK-LABEL: func.func @depthwise_bf16
// CHECK-NOT: call @distopt_
// CHECK: linalg.generic
// CHECK-NOT: call @distopt_
// CHECK-LABEL: func.func private
func.func @conv_bf16(%x: tensor<2x8x6x6xbf16>, %w: tensor<16x8x3x3xbf16>, %g: tensor<2x16x6x6xbf16>)
    -> (tensor<2x16x6x6xbf16>, tensor<16x8x3x3xbf16>, tensor<2x8x6x6xbf16>) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16>
  %dw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xbf16>, tensor<2x16x6x6xbf16>) -> tensor<16x8x3x3xbf16>
  %dx = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x8x6x6xbf16>
  return %y, %dw, %dx : tensor<2x16x6x6xbf16>, tensor<16x8x3x3xbf16>, tensor<2x8x6x6xbf16>
}

// Strided: the input gradient too is a product and col2im.
func.func @conv_f16(%x: tensor<2x8x7x7xf16>, %w: tensor<16x8x3x3xf16>, %g: tensor<2x16x4x4xf16>)
    -> (tensor<2x16x4x4xf16>, tensor<16x8x3x3xf16>, tensor<2x8x7x7xf16>) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x7x7xf16>, tensor<16x8x3x3xf16>) -> tensor<2x16x4x4xf16>
  %dw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x7x7xf16>, tensor<2x16x4x4xf16>) -> tensor<16x8x3x3xf16>
  %dx = train.conv2d_backward_input %g, %w {input_size = array<i64: 7, 7>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x16x4x4xf16>, tensor<16x8x3x3xf16>) -> tensor<2x8x7x7xf16>
  return %y, %dw, %dx : tensor<2x16x4x4xf16>, tensor<16x8x3x3xf16>, tensor<2x8x7x7xf16>
}

// The same convolution in f32: the in-place convolution kernels.
func.func @conv_f32(%x: tensor<2x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %g: tensor<2x16x6x6xf32>)
    -> (tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>, tensor<2x8x6x6xf32>) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x6x6xf32>
  %dw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<16x8x3x3xf32>
  %dx = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  return %y, %dw, %dx : tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>, tensor<2x8x6x6xf32>
}

func.func @depthwise_bf16(%x: tensor<2x8x6x6xbf16>, %w: tensor<8x1x3x3xbf16>) -> tensor<2x8x6x6xbf16> {
  %y = train.conv2d %x, %w {groups = 8 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xbf16>, tensor<8x1x3x3xbf16>) -> tensor<2x8x6x6xbf16>
  return %y : tensor<2x8x6x6xbf16>
}
