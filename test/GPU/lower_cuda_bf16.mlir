// REQUIRES: ptxas
// The CUDA lowering of 16-bit products (no GPU needed): each is a call of
// libdistopt_cuda's distopt_matmul_bf16 / distopt_matmul_f16 (one
// cublasGemmStridedBatchedEx with bf16 / f16 inputs and output and
// CUBLAS_COMPUTE_32F), never a kernel of loops accumulating in 16 bits;
// the elementwise op on the bf16 result is a kernel in the gpu.binary.
// RUN: dist-opt %s --dist-lower-cuda | FileCheck %s

// CHECK-LABEL: llvm.func @products
// A bf16 linear layer (batch 1, m 8, n 16, k 32, B transposed), then a
// batched f16 product with A transposed (batch 4).
// CHECK-DAG: %[[C1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-DAG: %[[C4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-DAG: %[[C8:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-DAG: %[[C32:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-DAG: %[[NO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG: %[[YES:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @distopt_cuda_matmul_bf16({{%[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+}}, %[[C1]], %[[C8]], %[[C16]], %[[C32]], %[[NO]], %[[YES]], %[[YES]], %[[YES]])
// CHECK: llvm.call @distopt_cuda_matmul_f16({{%[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+, %[0-9]+}}, %[[C4]], %[[C8]], %[[C16]], %[[C32]], %[[YES]], %[[NO]], %[[YES]], %[[YES]])
// CHECK-NOT: llvm.call @distopt_cuda_matmul_f32(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @products_kernel::@products_kernel
// CHECK: gpu.binary @products_kernel
// CHECK: llvm.func @_mlir_ciface_distopt_cuda_matmul_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i32, i32, i32, i32)
// CHECK: llvm.func @_mlir_ciface_distopt_cuda_matmul_f16(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @products(%a: tensor<8x32xbf16>, %b: tensor<16x32xbf16>, %c: tensor<4x32x8xf16>, %d: tensor<4x32x16xf16>) -> (tensor<8x16xbf16>, tensor<4x8x16xf16>) {
  %p0 = train.matmul %a, %b {transpose_rhs} : (tensor<8x32xbf16>, tensor<16x32xbf16>) -> tensor<8x16xbf16>
  %p1 = train.matmul %c, %d {transpose_lhs} : (tensor<4x32x8xf16>, tensor<4x32x16xf16>) -> tensor<4x8x16xf16>
  %e = train.relu %p0 : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return %e, %p1 : tensor<8x16xbf16>, tensor<4x8x16xf16>
}
