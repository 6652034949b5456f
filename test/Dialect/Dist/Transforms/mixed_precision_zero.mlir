// RUN: dist-opt %s --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-zero="stage=3 replicas=2" 2>/dev/null | FileCheck %s

// ZeRO-3 of a step with dynamic loss scaling: the unscaled float32
// gradients are reduce-scattered (the widening convert and the product by
// the scale's reciprocal keep their partial sums pending), and the
// finiteness check adds the shards' sums: one scalar all-reduce with the
// loss, no whole gradient all-reduced and sliced (which this did before).
// CHECK: %[[GW:.*]] = train.convert %{{.*}} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[UW:.*]] = train.mul %[[GW]], %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK: %{{.*}}:2 = dist.reduce_scatter {{.*}} on @mesh axes = ["data"] scatter_dims = [0, 0] : tensor<4x8xf32>, tensor<4xf32> -> tensor<2x8xf32>, tensor<2xf32>
// CHECK-NOT: dist.local_slice
// CHECK: dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<f32>
// CHECK-NOT: dist.all_reduce
// CHECK-NOT: dist.local_slice
// CHECK: return
func.func @step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
    %mw: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
    %mb: tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
        tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xw = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %z = train.add %xw, %b : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %z, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dz = train.cross_entropy_backward %one, %z, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dz, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %db = train.reduce %dz {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<16x4xf32>) -> tensor<4xf32>
  %w2, %mw2 = train.sgd %w, %dw, %lr, %mw {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %b2, %mb2 = train.sgd %b, %db, %lr, %mb {momentum = 9.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %w2, %b2, %mw2, %mb2, %loss : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
