// train-to-linalg{conv-products} (dist-lower-cuda): a stride-1 conv2d and
// both its backward ops become im2col, one product per group and col2im
// (three products, which dist-lower-cuda sends to cuBLAS: one alone,
// then two independent ones as one grouped call), where the CPU's
// default keeps stride-1 convolutions as direct contractions for
// dist-conv-to-kernels; a depthwise convolution (many small groups) stays
// direct either way. Executed against NumPy in
// train_to_linalg_window_execution.mlir (dist-run --gpu-mapped).
// RUN: dist-opt %s --train-to-linalg=conv-products --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-matmul-to-blas | FileCheck %s
// RUN: dist-opt %s --train-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-matmul-to-blas | FileCheck %s --check-prefix=DEFAULT
// RUN: dist-opt %s --dist-lower-cuda=format=isa | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: func.func @conv
// CHECK-COUNT-3: call @distopt_matmul_f32(
// CHECK-NOT: call @distopt_matmul_f32(
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: call @distopt_matmul_f32(
// DEFAULT-NOT: call @distopt_matmul_f32(
// CUDA-LABEL: llvm.func @conv
// CUDA-COUNT-1: llvm.call @distopt_cuda_matmul_f32(
// CUDA-NOT: llvm.call @distopt_cuda_matmul_f32(
// CUDA: llvm.call @distopt_cuda_matmul_group_f32(
// CUDA-NOT: llvm.call @distopt_cuda_matmul
// CUDA: gpu.launch_func
func.func @conv(%x: tensor<2x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %g: tensor<2x16x6x6xf32>)
    -> (tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>, tensor<2x8x6x6xf32>) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x6x6xf32>
  %dw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<16x8x3x3xf32>
  %dx = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  return %y, %dw, %dx : tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>, tensor<2x8x6x6xf32>
}

func.func @depthwise(%x: tensor<2x8x6x6xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, groups = 8 : i64} : (tensor<2x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32>
  return %y : tensor<2x8x6x6xf32>
}
