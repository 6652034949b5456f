// RUN: dist-opt %s -split-input-file --dist-hierarchical-all-reduce -verify-diagnostics | FileCheck %s

// A bucket over hosts x devices (2 x 4): the tensors are reduce-scattered (one
// variadic op)
// within the host along its first dim divisible by 4 (dim 0 of 128x784,
// dim 1 of 10x128), the slices are all-reduced across hosts in one op and
// gathered back within the host; a 10-element tensor (no dim divisible by 4)
// is all-reduced within the host, then across hosts.
// CHECK-LABEL: func.func @bucket
// CHECK-SAME: (%[[A:[^:]+]]: tensor<128x784xf32>, %[[B:[^:]+]]: tensor<10x128xf32>, %[[C:[^:]+]]: tensor<10xf32>)
// CHECK: %[[S:.*]]:2 = dist.reduce_scatter %[[A]], %[[B]] on @mesh axes = ["devices"] scatter_dims = [0, 1] : tensor<128x784xf32>, tensor<10x128xf32> -> tensor<32x784xf32>, tensor<10x32xf32>
// CHECK: %[[SC:.*]] = dist.all_reduce %[[C]] on @mesh axes = ["devices"] : tensor<10xf32>
// CHECK: %[[R:.*]]:3 = dist.all_reduce %[[S]]#0, %[[S]]#1, %[[SC]] on @mesh axes = ["hosts"] : tensor<32x784xf32>, tensor<10x32xf32>, tensor<10xf32>
// CHECK: %[[GA:.*]] = dist.all_gather %[[R]]#0 on @mesh axes = ["devices"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
// CHECK: %[[GB:.*]] = dist.all_gather %[[R]]#1 on @mesh axes = ["devices"] gather_dim = 1 : tensor<10x32xf32> -> tensor<10x128xf32>
// CHECK-NOT: dist.
// CHECK: return %[[GA]], %[[GB]], %[[R]]#2
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>, host_axes = ["hosts"]}
func.func @bucket(%a: tensor<128x784xf32>, %b: tensor<10x128xf32>, %c: tensor<10xf32>)
    -> (tensor<128x784xf32>, tensor<10x128xf32>, tensor<10xf32>) {
  // expected-remark @+1 {{tensor of type 'tensor<10xf32>' has no dim divisible by the 4 devices of a host: all-reduced within the host, then across hosts}}
  %r:3 = dist.all_reduce %a, %b, %c on @mesh axes = ["hosts", "devices"] : tensor<128x784xf32>, tensor<10x128xf32>, tensor<10xf32>
  return %r#0, %r#1, %r#2 : tensor<128x784xf32>, tensor<10x128xf32>, tensor<10xf32>
}

// -----

// A scalar (the loss) cannot be scattered: within the host, then across.
// CHECK-LABEL: func.func @scalar
// CHECK-SAME: (%[[L:[^:]+]]: tensor<f32>)
// CHECK: %[[IN:.*]] = dist.all_reduce %[[L]] on @mesh axes = ["devices"] : tensor<f32>
// CHECK: %[[OUT:.*]] = dist.all_reduce %[[IN]] on @mesh axes = ["hosts"] : tensor<f32>
// CHECK: return %[[OUT]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>, host_axes = ["hosts"]}
func.func @scalar(%loss: tensor<f32>) -> tensor<f32> {
  // expected-remark @+1 {{tensor of type 'tensor<f32>' has no dim divisible by the 4 devices of a host}}
  %r = dist.all_reduce %loss on @mesh axes = ["hosts", "devices"] : tensor<f32>
  return %r : tensor<f32>
}

// -----

// On a 3-D mesh the intra-host group is every non-host axis of the op.
// CHECK-LABEL: func.func @three_axes
// CHECK-SAME: (%[[A:[^:]+]]: tensor<8xf32>)
// CHECK: %[[S:.*]] = dist.reduce_scatter %[[A]] on @mesh axes = ["x", "y"] scatter_dims = [0] : tensor<8xf32> -> tensor<2xf32>
// CHECK: %[[R:.*]] = dist.all_reduce %[[S]] on @mesh axes = ["hosts"] : tensor<2xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[R]] on @mesh axes = ["x", "y"] gather_dim = 0 : tensor<2xf32> -> tensor<8xf32>
// CHECK: return %[[G]]
dist.mesh @mesh {axes = ["hosts", "x", "y"], shape = array<i64: 2, 2, 2>, host_axes = ["hosts"]}
func.func @three_axes(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = dist.all_reduce %a on @mesh axes = ["x", "hosts", "y"] : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// All-reduces within a host, across hosts only, or not a sum are kept.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: (%[[A:[^:]+]]: tensor<8xf32>)
// CHECK-NEXT: %[[R0:.*]] = dist.all_reduce %[[A]] on @mesh axes = ["devices"] : tensor<8xf32>
// CHECK-NEXT: %[[R1:.*]] = dist.all_reduce %[[A]] on @mesh axes = ["hosts"] : tensor<8xf32>
// CHECK-NEXT: %[[R2:.*]] = dist.all_reduce %[[A]] on @mesh axes = ["hosts", "devices"] reduction = <max> : tensor<8xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>, host_axes = ["hosts"]}
func.func @kept(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = dist.all_reduce %a on @mesh axes = ["devices"] : tensor<8xf32>
  %1 = dist.all_reduce %a on @mesh axes = ["hosts"] : tensor<8xf32>
  %2 = dist.all_reduce %a on @mesh axes = ["hosts", "devices"] reduction = <max> : tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A mesh without host_axes has no host boundary: nothing to decompose.
// CHECK-LABEL: func.func @no_host_axes
// CHECK-NEXT: dist.all_reduce %{{.*}} on @mesh axes = ["hosts", "devices"] : tensor<8xf32>
// CHECK-NEXT: return
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @no_host_axes(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = dist.all_reduce %a on @mesh axes = ["hosts", "devices"] : tensor<8xf32>
  return %0 : tensor<8xf32>
}
