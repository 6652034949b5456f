// RUN: dist-opt %s -split-input-file --train-to-linalg | FileCheck %s

// A broadcast add: the bias is read at the result's column index.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_bias
func.func @add_bias(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
  // CHECK: arith.addf
  // CHECK-NOT: train.
  %r = train.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// matmul with transpose_rhs: a contraction over d2 of a zero-filled
// accumulator, rhs read as (n, k).
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$RHS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>) -> tensor<4x5xf32> {
  // CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x5xf32>)
  // CHECK: linalg.generic {indexing_maps = [#[[$LHS]], #[[$RHS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}{{.*}}outs(%[[Z]] : tensor<4x5xf32>)
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %r = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

// A batched matmul with a shared (unbatched) rhs.
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-LABEL: func.func @batched
func.func @batched(%x: tensor<2x4x3xf32>, %w: tensor<3x5xf32>) -> tensor<2x4x5xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$LHS]], #[[$RHS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
  %r = train.matmul %x, %w : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
  return %r : tensor<2x4x5xf32>
}

// -----

// A mean reduction sums from zero, then divides by the count (8).
// CHECK-LABEL: func.func @mean
func.func @mean(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  // CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-DAG: %[[N:.*]] = arith.constant 8.000000e+00 : f32
  // CHECK: linalg.fill ins(%[[ZERO]] : f32)
  // CHECK: iterator_types = ["reduction", "parallel"]
  // CHECK: arith.addf
  // CHECK: arith.divf %{{.*}}, %[[N]] : f32
  %r = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// cross_entropy: a row max from -inf, the row sum of exp(x - max), the
// label's logit read with tensor.extract, then the mean over rows.
// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<4x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: arith.constant 0xFF800000 : f32
  // CHECK: arith.maximumf
  // CHECK: math.exp
  // CHECK: arith.index_cast
  // CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<4x3xf32>
  // CHECK: math.log
  // CHECK: arith.divf
  %r = train.cross_entropy %logits, %labels : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// AdamW: one generic producing the parameter and both moments, the step
// count incremented apart.
// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<f32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>) {
  // CHECK: %[[STEP:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<f32>)
  // CHECK: %[[R:.*]]:3 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: math.powf
  // CHECK: math.sqrt
  // CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[STEP]]
  %np, %nm, %nv, %nt = train.adamw %p, %g, %m, %v, %t, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>)
  return %np, %nm, %nv, %nt : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>
}
