// RUN: dist-opt %s -split-input-file --train-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-matmul-to-blas | FileCheck %s

// A bf16 linear layer becomes one call of the bf16 product (f32
// accumulation in the library) on the buffers the product used, as bf16
// unranked memrefs; the zero fill goes.
// CHECK-LABEL: func.func @linear_bf16
// CHECK-SAME: (%[[X:.*]]: memref<4x3xbf16{{.*}}>, %[[W:.*]]: memref<5x3xbf16{{.*}}>)
func.func @linear_bf16(%x: tensor<4x3xbf16>, %w: tensor<5x3xbf16>) -> tensor<4x5xbf16> {
  // CHECK: %[[C:.*]] = memref.alloc() {{.*}}: memref<4x5xbf16>
  // CHECK-NOT: linalg.fill
  // CHECK-DAG: %[[XV:.*]] = memref.cast %[[X]] : {{.*}} to memref<*xbf16>
  // CHECK-DAG: %[[WV:.*]] = memref.cast %[[W]] : {{.*}} to memref<*xbf16>
  // CHECK-DAG: %[[CV:.*]] = memref.cast %[[C]] : {{.*}} to memref<*xbf16>
  // CHECK-DAG: %[[B1:.*]] = arith.constant 1 : i64
  // CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 5 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_bf16(%[[XV]], %[[WV]], %[[CV]], %[[B1]], %[[M]], %[[N]], %[[K]], %[[NO]], %[[YES]], %[[YES]], %[[YES]])
  // CHECK-NOT: linalg.generic
  // CHECK: return %[[C]]
  %y = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xbf16>, tensor<5x3xbf16>) -> tensor<4x5xbf16>
  return %y : tensor<4x5xbf16>
}
// CHECK: func.func private @distopt_matmul_bf16(memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {distopt.sync_buffers, llvm.emit_c_interface}

// -----

// f16, A transposed, batched with one B for every batch: the f16 product.
// CHECK-LABEL: func.func @batched_f16
func.func @batched_f16(%a: tensor<2x7x3xf16>, %b: tensor<7x5xf16>) -> tensor<2x3x5xf16> {
  // CHECK-DAG: %[[B2:.*]] = arith.constant 2 : i64
  // CHECK-DAG: %[[M:.*]] = arith.constant 3 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 5 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 7 : i64
  // CHECK-DAG: %[[NO:.*]] = arith.constant 0 : i32
  // CHECK-DAG: %[[YES:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_matmul_f16({{.*}}, {{.*}}, {{.*}}, %[[B2]], %[[M]], %[[N]], %[[K]], %[[YES]], %[[NO]], %[[YES]], %[[NO]]) : (memref<*xf16>, memref<*xf16>, memref<*xf16>,
  %y = train.matmul %a, %b {transpose_lhs} : (tensor<2x7x3xf16>, tensor<7x5xf16>) -> tensor<2x3x5xf16>
  return %y : tensor<2x3x5xf16>
}

// -----

// A step with products of both widths calls each library function, each
// declared once.
// CHECK-LABEL: func.func @mixed
func.func @mixed(%a: tensor<4x8xbf16>, %b: tensor<8x6xbf16>, %c: tensor<4x8xf32>, %d: tensor<8x6xf32>, %e: tensor<6x2xbf16>) -> (tensor<4x2xbf16>, tensor<4x6xf32>) {
  // CHECK: call @distopt_matmul_bf16
  // CHECK: call @distopt_matmul_f32
  // CHECK: call @distopt_matmul_bf16
  %x = train.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
  %y = train.matmul %c, %d : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %z = train.matmul %x, %e : (tensor<4x6xbf16>, tensor<6x2xbf16>) -> tensor<4x2xbf16>
  return %z, %y : tensor<4x2xbf16>, tensor<4x6xf32>
}
// CHECK-DAG: func.func private @distopt_matmul_bf16(memref<*xbf16>
// CHECK-DAG: func.func private @distopt_matmul_f32(memref<*xf32>

// -----

// Operands of different element types (a mixed generic) stay loops: the
// library multiplies one type throughout.
// CHECK-LABEL: func.func @mixed_types
// CHECK-NOT: call @distopt_matmul
// CHECK: linalg.generic
func.func @mixed_types(%a: memref<4x8xbf16>, %b: memref<8x6xbf16>, %c: memref<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x6xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xbf16>, memref<8x6xbf16>) outs(%c : memref<4x6xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
