// RUN: dist-opt %s --dist-zero="stage=2 replicas=2" 2>/dev/null | FileCheck %s
// RUN: dist-opt %s --dist-mirrored=replicas=2 | FileCheck %s --check-prefix=MIRRORED

// A partial sum divided (or multiplied) by a whole scalar stays partial:
// the gradient is reduce-scattered after the division, not all-reduced
// before it and sliced (a gradient unscaled by a loss scale, a mean).
// CHECK: %[[DW:.*]] = train.matmul {{.*}} {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[SCALED:.*]] = train.div %[[DW]], %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[RS:.*]] = dist.reduce_scatter %[[SCALED]] on @mesh axes = ["data"] scatter_dims = [0] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NOT: dist.local_slice %[[SCALED]]
// CHECK: train.sgd %{{.*}}, %[[RS]],
// MIRRORED: %[[DW:.*]] = train.matmul {{.*}} {transpose_lhs}
// MIRRORED-NEXT: %[[SCALED:.*]] = train.div %[[DW]], %{{.*}}
// MIRRORED-NEXT: dist.all_reduce {{.*}}%[[SCALED]]
func.func @step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %s: tensor<f32> {train.role = #train.role<hyper>, train.name = "grad_scale"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %scaled = train.div %dw, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %w2, %m2 = train.sgd %w, %scaled, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %w2, %m2, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
