// ZeRO-3 gathers a parameter before the ops that need it whole, but an
// elementwise op on the parameter alone (other operands scalars: an L2
// term's 2 * coef * w, a zero gradient w * 0) runs on this rank's shard:
// once it all-gathered the parameter to multiply it by zero and sliced the
// product again.
// RUN: dist-opt %s --dist-zero="stage=3 replicas=2" | FileCheck %s
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[U:[^:]*]]: tensor<4x4xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}data], []]>, train.name = "unused.weight"
// CHECK: dist.all_gather %{{.*}} : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NOT: dist.all_gather
// CHECK: %[[DU:.*]] = train.mul %[[U]], %{{.*}} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK-NOT: dist.local_slice
// CHECK: train.sgd %[[U]], %[[DU]], %{{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
func.func @train_step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %u: tensor<8x4xf32> {train.role = #train.role<param>, train.name = "unused.weight"},
    %x: tensor<4x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<8x4xf32> {train.role = #train.role<param>, train.name = "unused.weight"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x4xf32>, tensor<4xi32>) -> tensor<f32>
  %one = train.constant dense<1.0> : tensor<f32>
  %zero = train.constant dense<0.0> : tensor<f32>
  %d = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<4x4xf32>, tensor<4xi32>) -> tensor<4x4xf32>
  %dw = train.matmul %d, %x {transpose_lhs} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %du = train.mul %u, %zero : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %w2 = train.sgd %w, %dw, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %u2 = train.sgd %u, %du, %lr : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  return %w2, %u2, %loss : tensor<4x8xf32>, tensor<8x4xf32>, tensor<f32>
}
