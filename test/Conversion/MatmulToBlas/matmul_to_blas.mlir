// RUN: dist-opt %s -split-input-file --train-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-matmul-to-blas | FileCheck %s

// A linear layer (x times w transposed) becomes one sgemm on the buffers
// the product used: batch 1, m 4, n 5, k 3, B transposed; the zero fill of
// the output goes (beta 0).
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: memref<4x3xf32{{.*}}>, %[[W:.*]]: memref<5x3xf32{{.*}}>)
func.func @linear(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>) -> tensor<4x5xf32> {
  // CHECK: %[[C:.*]] = memref.alloc() {{.*}}: memref<4x5xf32>
  // CHECK-NOT: linalg.fill
  // CHECK-DAG: %[[XV:.*]] = memref.cast %[[X]] : {{.*}} to memref<*xf32>
  // CHECK-DAG: %[[WV:.*]] = memref.cast %[[W]] : {{.*}} to memref<*xf32>
  // CHECK-DAG: %[[CV:.*]] = memref.cast %[[C]] : {{.*}} to memref<*xf32>
  // CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 5 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_f32(%[[XV]], %[[WV]], %[[CV]], %[[B1]], %[[M]], %[[N]], %[[K]], %[[NO]], %[[YES]], %[[YES]], %[[YES]])
  // CHECK-NOT: linalg.generic
  // CHECK: return %[[C]]
  %r = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}
// CHECK: func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {distopt.sync_buffers, llvm.emit_c_interface}

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

// -----

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// Products sgemm must not compute stay loops: an output that is not
// zero-filled (the product accumulates), an output read between its fill
// and the product, an output that is not a local allocation, and a strided
// (non-contiguous) operand.
// CHECK-LABEL: func.func @kept
func.func @kept(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %out: memref<4x5xf32>,
                %big: memref<4x6xf32>, %probe: memref<4x5xf32>) {
  // CHECK-NOT: call @distopt_matmul_f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c1 = memref.alloc() : memref<4x5xf32>
  linalg.fill ins(%one : f32) outs(%c1 : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c1 : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %c2 = memref.alloc() : memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x5xf32>)
  memref.copy %c2, %probe : memref<4x5xf32> to memref<4x5xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c2 : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%out : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%out : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %c3 = memref.alloc() : memref<4x5xf32>
  %view = memref.subview %big[0, 0] [4, 3] [1, 2] : memref<4x6xf32> to memref<4x3xf32, strided<[6, 2]>>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%view, %b : memref<4x3xf32, strided<[6, 2]>>, memref<3x5xf32>) outs(%c3 : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  // CHECK-COUNT-4: linalg.generic
  return
}

// -----

#a = affine_map<(b, m, n, k) -> (m, k)>
#b = affine_map<(b, m, n, k) -> (b, k, n)>
#c = affine_map<(b, m, n, k) -> (b, m, n)>

// Operands whose rows are apart (a column block) or whose batches are apart
// (a channel block of every image), with one A for every batch: one sgemm
// per batch on the strided buffers (the kernel reads the strides).
// CHECK-LABEL: func.func @strided
func.func @strided(%w: memref<4x6xf32>, %x: memref<2x8x5xf32>) -> memref<2x4x5xf32> {
  // CHECK-DAG: %[[BATCH:.*]] = arith.constant 2 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[BATCH]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NO]], %[[NO]], %[[NO]], %[[YES]])
  // CHECK-NOT: linalg.generic
  %zero = arith.constant 0.0 : f32
  %a = memref.subview %w[0, 1] [4, 3] [1, 1] : memref<4x6xf32> to memref<4x3xf32, strided<[6, 1], offset: 1>>
  %bm = memref.subview %x[0, 2, 0] [2, 3, 5] [1, 1, 1] : memref<2x8x5xf32> to memref<2x3x5xf32, strided<[40, 5, 1], offset: 10>>
  %c = memref.alloc() : memref<2x4x5xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x4x5xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bm : memref<4x3xf32, strided<[6, 1], offset: 1>>, memref<2x3x5xf32, strided<[40, 5, 1], offset: 10>>) outs(%c : memref<2x4x5xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  return %c : memref<2x4x5xf32>
}
