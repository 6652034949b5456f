// REQUIRES: ptxas
// The whole CUDA lowering, through ptxas (no GPU needed): every product
// form in one grouped cuBLAS call (libdistopt_cuda's
// distopt_matmul_group_f32: the six products are independent), every other
// op a kernel in a gpu.binary for sm_90, the
// host's allocations, copies and launches on the one stream.
// RUN: dist-opt %s --dist-lower-cuda | FileCheck %s
// RUN: dist-opt %s --dist-lower-cuda="chip=sm_80 features=+ptx75 opt-level=2" | FileCheck %s --check-prefix=CHIP
// RUN: dist-opt %s --dist-lower-cuda="format=isa" | FileCheck %s --check-prefix=ISA
// Every op family becomes kernels (no host access left): the steps the
// execution tests run against NumPy, and the examples.
// RUN: dist-opt %S/../TrainToLinalg/train_to_linalg_execution.mlir --dist-lower-cuda | FileCheck %s --check-prefix=FAMILIES
// RUN: dist-opt %S/../TrainToLinalg/train_to_linalg_window_execution.mlir --dist-lower-cuda | FileCheck %s --check-prefix=FAMILIES
// RUN: dist-opt %S/../TrainToLinalg/degenerate_maps_execution.mlir --dist-lower-cuda | FileCheck %s --check-prefix=FAMILIES
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda | FileCheck %s --check-prefix=FAMILIES
// RUN: dist-opt %examples/embedding_classifier.mlir --dist-lower-cuda | FileCheck %s --check-prefix=FAMILIES
// FAMILIES: gpu.launch_func
// FAMILIES: gpu.binary

// CHECK-LABEL: llvm.func @products
// Plain, transposed right, transposed left, batched, batched by one matrix
// (flattened into one taller product), batched with both transposed
// (batch, m, n, k, transA, transB, batchedA, batchedB).
// CHECK-NOT: llvm.call @distopt_cuda_matmul_f32(
// CHECK: llvm.call @distopt_cuda_matmul_group_f32(
// CHECK-NOT: llvm.call @distopt_cuda_matmul_f32(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @products_kernel::@products_kernel
// CHECK-NOT: llvm.call @malloc
// CHECK: gpu.binary @products_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">, properties = {ISAToBinaryTimeInMs
// CHECK: llvm.func private @distopt_cuda_matmul_group_f32(
// CHECK: llvm.func @mgpuStreamCreate()
// CHIP: gpu.binary @products_kernel  [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx75">
// ISA: gpu.binary @products_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx81">, properties = {{{.*}}}, assembly = "
// ISA-SAME: .target sm_90
func.func @products(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>, %bt: tensor<16x32xf32>,
                    %at: tensor<32x8xf32>, %ba: tensor<4x8x32xf32>, %bb: tensor<4x32x16xf32>,
                    %bat: tensor<4x32x8xf32>, %bbt: tensor<4x16x32xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x8x16xf32>,
        tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %p0 = train.matmul %a, %b : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %p1 = train.matmul %a, %bt {transpose_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  %p2 = train.matmul %at, %b {transpose_lhs} : (tensor<32x8xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %p3 = train.matmul %ba, %bb : (tensor<4x8x32xf32>, tensor<4x32x16xf32>) -> tensor<4x8x16xf32>
  %p4 = train.matmul %ba, %b : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
  %p5 = train.matmul %bat, %bbt {transpose_lhs, transpose_rhs} : (tensor<4x32x8xf32>, tensor<4x16x32xf32>) -> tensor<4x8x16xf32>
  %s = train.add %p0, %p1 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %s, %p1, %p2, %p3, %p4, %p5 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>
}
