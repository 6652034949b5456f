// RUN: dist-opt %s -split-input-file --train-to-linalg --cse --dist-fuse-elementwise | FileCheck %s

// An activation feeding a matrix product stays its own loop (fused into
// the product it would turn the BLAS call into scalar loops); the bias add
// and the activation after the product fuse into one generic.
// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>, %b: tensor<4x5xf32>, %w2: tensor<2x5xf32>) -> tensor<4x2xf32> {
  // CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: arith.mulf
  // CHECK-NEXT: arith.addf
  // CHECK-NEXT: linalg.yield
  // The add and the relu, one loop:
  // CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
  // CHECK: arith.addf
  // CHECK: arith.maximumf
  // CHECK: linalg.yield
  // CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: arith.mulf
  // CHECK-NEXT: arith.addf
  // CHECK-NEXT: linalg.yield
  // CHECK-NOT: linalg.generic
  %h = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  %hb = train.add %h, %b : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %a = train.relu %hb : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %y = train.matmul %a, %w2 {transpose_rhs} : (tensor<4x5xf32>, tensor<2x5xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// CSE merged the zero fills of two equal-shaped products; each product gets
// its own fill again, so that each bufferizes to fill + product on one
// buffer (what dist-matmul-to-blas turns into a call), not to a copy.
// CHECK-LABEL: func.func @shared_fill
func.func @shared_fill(%a: tensor<4x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
  // CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
  // CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
  // CHECK: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
  // CHECK: linalg.generic {{.*}} outs(%[[F2]] : tensor<4x4xf32>)
  // CHECK: linalg.generic {{.*}} outs(%[[F1]] : tensor<4x4xf32>)
  %p = train.matmul %a, %b : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %q = train.matmul %a, %c : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  return %p, %q : tensor<4x4xf32>, tensor<4x4xf32>
}
