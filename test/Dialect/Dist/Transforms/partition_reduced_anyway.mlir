// RUN: dist-opt %s --dist-mirrored=replicas=2 | FileCheck %s
// RUN: dist-opt %s --dist-zero="stage=2 replicas=2" 2>%t.remarks | FileCheck %s --check-prefix=ZERO
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-mirrored=replicas=2 | FileCheck %s --check-prefix=MLP

// A partial sum that a user needs whole (the optimizer reads the gradient)
// is reduced once; its linear users (a gradient's finiteness, sum(g * 0))
// read that sum instead of moving a second partial tensor. A partial sum
// only linear users read stays partial through them, a sum included: the
// finiteness of a reduce-scattered gradient is a partial scalar, and only
// that scalar is all-reduced.
// CHECK: %[[DW:.*]] = train.matmul {{.*}} {transpose_lhs}
// CHECK-NEXT: %[[SUM:.*]]:2 = dist.all_reduce %{{.*}}, %[[DW]] on @mesh axes = ["data"] : tensor<f32>, tensor<4x8xf32>
// CHECK: %[[TIMES0:.*]] = train.mul %[[SUM]]#1, %{{.*}} : (tensor<4x8xf32>, tensor<f32>)
// CHECK-NEXT: train.reduce %[[TIMES0]]
// CHECK-NOT: dist.all_reduce
// CHECK: return
// ZERO: %[[RS:.*]] = dist.reduce_scatter %{{.*}} on @mesh axes = ["data"] scatter_dims = [0] : tensor<4x8xf32> -> tensor<2x8xf32>
// ZERO: %[[TIMES0:.*]] = train.mul %[[RS]], %{{.*}} : (tensor<2x8xf32>, tensor<f32>)
// ZERO-NEXT: %[[PART:.*]] = train.reduce %[[TIMES0]] {{.*}} -> tensor<f32>
// ZERO: dist.all_reduce {{.*}}%[[PART]]{{.*}} : tensor<f32>
// The MLP's mixed step moves its gradients and loss, nothing else.
// MLP: dist.all_reduce %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} on @mesh axes = ["data"] : tensor<f32>, tensor<10x128xf32>, tensor<10xf32>, tensor<128x784xf32>, tensor<128xf32>
// MLP-NOT: dist.all_reduce
func.func @step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
        tensor<f32> {train.role = #train.role<metric>, train.name = "finite"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %times0 = train.mul %dw, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %finite = train.reduce %times0 {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<f32>
  %nw, %nm = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %nw, %nm, %loss, %finite : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>
}
