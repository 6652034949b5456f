// RUN: dist-opt %s -split-input-file --train-to-linalg --dist-matmul-to-blas | FileCheck %s

// A linear layer (x times w transposed) becomes one sgemm: batch 1, m 4,
// n 5, k 3, B transposed.
// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>) -> tensor<4x5xf32> {
  // CHECK: %[[C:.*]] = memref.alloc() : memref<4x5xf32>
  // CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 5 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[B1]], %[[M]], %[[N]], %[[K]], %[[NO]], %[[YES]], %[[YES]], %[[YES]])
  // CHECK: bufferization.to_tensor %[[C]] restrict writable
  // CHECK-NOT: linalg.generic
  %r = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}
// CHECK: func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {llvm.emit_c_interface}

// -----

// A batched product with a weight shared by every batch: the batch merges
// into m (2 x 4 = 8 rows), one gemm.
// CHECK-LABEL: func.func @shared_weight
func.func @shared_weight(%x: tensor<2x4x3xf32>, %w: tensor<3x5xf32>) -> tensor<2x4x5xf32> {
  // CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[M:.*]] = arith.constant 8 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK: call @distopt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[M]], %{{.*}}, %{{.*}}, %[[NO]], %[[NO]], %[[NO]], %[[NO]])
  %r = train.matmul %x, %w : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
  return %r : tensor<2x4x5xf32>
}

// -----

// Two batched operands: one gemm per batch.
// CHECK-LABEL: func.func @bmm
func.func @bmm(%q: tensor<3x4x8xf32>, %k: tensor<3x5x8xf32>) -> tensor<3x4x5xf32> {
  // CHECK-DAG: %[[BATCH:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[BATCH]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NO]], %[[YES]], %[[YES]], %[[YES]])
  %r = train.matmul %q, %k {transpose_rhs} : (tensor<3x4x8xf32>, tensor<3x5x8xf32>) -> tensor<3x4x5xf32>
  return %r : tensor<3x4x5xf32>
}

// -----

// Not a product (a sum over rows), and an f64 product, stay loops.
// CHECK-LABEL: func.func @others
func.func @others(%x: tensor<4x3xf32>, %a: tensor<2x2xf64>) -> (tensor<3xf32>, tensor<2x2xf64>) {
  // CHECK-NOT: call @distopt_matmul_f32
  // CHECK: linalg.generic
  // CHECK: linalg.generic
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4x3xf32>) -> tensor<3xf32>
  %p = train.matmul %a, %a : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %s, %p : tensor<3xf32>, tensor<2x2xf64>
}
