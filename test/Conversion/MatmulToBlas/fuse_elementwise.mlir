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

// -----

#id = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#window = affine_map<(d0, d1) -> (d0 + d1)>

// A producer read more than once per element by its consumer (broadcast
// along rows, a sliding window) stays its own loop: fused, it would be
// recomputed for every read. Read once (identity), it fuses.
// CHECK-LABEL: func.func @reads
func.func @reads(%x: tensor<4xf32>, %y: tensor<6xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  // CHECK: %[[NEG:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4xf32>)
  // CHECK: arith.negf
  // CHECK: linalg.generic {{.*}} ins(%[[NEG]] : tensor<4xf32>)
  // CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<6xf32>)
  // CHECK: math.exp
  // CHECK: linalg.generic {{.*}} ins(%[[EXP]] : tensor<6xf32>)
  // The identity read: one loop computing both.
  // CHECK: linalg.generic
  // CHECK: math.sqrt
  // CHECK: math.absf
  // CHECK: return
  %e4 = tensor.empty() : tensor<4xf32>
  %e6 = tensor.empty() : tensor<6xf32>
  %e34 = tensor.empty() : tensor<3x4xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %bcast = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]} ins(%neg : tensor<4xf32>) outs(%e34 : tensor<3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<3x4xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%y : tensor<6xf32>) outs(%e6 : tensor<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %win = linalg.generic {indexing_maps = [#window, #id2], iterator_types = ["parallel", "parallel"]} ins(%exp : tensor<6xf32>) outs(%e34 : tensor<3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<3x4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.sqrt %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %abs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%sq : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.absf %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %bcast, %win, %abs : tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xf32>
}
