// RUN: dist-opt %s -split-input-file --dist-compress-gradients=dtype=bf16 | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-compress-gradients=dtype=f16 | FileCheck %s --check-prefix=F16

// A bucket with the loss and two gradients: the gradients are reduced in
// bf16 and widened before the update; the loss keeps float32.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @bucket
// F16-LABEL: func.func @bucket
func.func @bucket(%w: tensor<4x8xf32>, %b: tensor<4xf32>, %gw: tensor<4x8xf32>,
                  %gb: tensor<4xf32>, %loss: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4xf32>, tensor<f32>) attributes {dist.partitioned} {
  // CHECK: %[[NW:.*]] = train.convert %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  // CHECK-NEXT: %[[NB:.*]] = train.convert %{{.*}} : (tensor<4xf32>) -> tensor<4xbf16>
  // CHECK: %[[R:.*]]:3 = dist.all_reduce %{{.*}}, %[[NW]], %[[NB]] on @mesh axes = ["data"] : tensor<f32>, tensor<4x8xbf16>, tensor<4xbf16>
  // CHECK-NEXT: %[[WW:.*]] = train.convert %[[R]]#1 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  // CHECK-NEXT: %[[WB:.*]] = train.convert %[[R]]#2 : (tensor<4xbf16>) -> tensor<4xf32>
  // CHECK: train.sgd %{{.*}}, %[[WW]], %{{.*}} :
  // CHECK: train.sgd %{{.*}}, %[[WB]], %{{.*}} :
  // CHECK: return %{{.*}}, %{{.*}}, %[[R]]#0
  // F16: dist.all_reduce {{.*}} : tensor<f32>, tensor<4x8xf16>, tensor<4xf16>
  %r:3 = dist.all_reduce %loss, %gw, %gb on @mesh axes = ["data"] : tensor<f32>, tensor<4x8xf32>, tensor<4xf32>
  %nw = train.sgd %w, %r#1, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %nb = train.sgd %b, %r#2, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %nw, %nb, %r#0 : tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// A reduce-scatter (ZeRO-2) whose result reaches the update through a
// same-shape multiply (an unscaling by a loss scale) is compressed too.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @reduce_scatter
func.func @reduce_scatter(%w: tensor<2x8xf32>, %g: tensor<4x8xf32>,
                          %inv: tensor<f32>, %lr: tensor<f32>)
    -> tensor<2x8xf32> attributes {dist.partitioned} {
  // CHECK: %[[N:.*]] = train.convert %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  // CHECK: %[[S:.*]] = dist.reduce_scatter %[[N]] on @mesh axes = ["data"] scatter_dims = [0] : tensor<4x8xbf16> -> tensor<2x8xbf16>
  // CHECK: %[[W:.*]] = train.convert %[[S]] : (tensor<2x8xbf16>) -> tensor<2x8xf32>
  // CHECK: train.mul %[[W]]
  %s = dist.reduce_scatter %g on @mesh axes = ["data"] scatter_dims = [0] : tensor<4x8xf32> -> tensor<2x8xf32>
  %u = train.mul %s, %inv : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %nw = train.sgd %w, %u, %lr : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %nw : tensor<2x8xf32>
}

// -----

// What is not a gradient stays float32: an activation partial sum (tensor
// parallelism) that reaches the update only through a matmul, a max, a
// float64 gradient; a mixed step's gradient already reduced in bf16.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @not_gradients
func.func @not_gradients(%w: tensor<4x4xf32>, %x: tensor<4x4xf32>, %lr: tensor<f32>,
                         %m: tensor<4xf32>, %w64: tensor<4xf64>, %g64: tensor<4xf64>,
                         %lr64: tensor<f64>, %wb: tensor<4xf32>, %gb: tensor<4xbf16>)
    -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf32>) attributes {dist.partitioned} {
  // CHECK-NOT: train.convert {{.*}} -> tensor<4x4xbf16>
  // CHECK: dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<4x4xf32>
  // CHECK: dist.all_reduce %{{.*}} on @mesh axes = ["data"] reduction = <max> : tensor<4xf32>
  // CHECK: dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<4xf64>
  // CHECK: dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<4xbf16>
  // CHECK-NOT: -> tensor<4xbf16>
  %a = dist.all_reduce %x on @mesh axes = ["data"] : tensor<4x4xf32>
  %g = train.matmul %a, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %nw = train.sgd %w, %g, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %mx = dist.all_reduce %m on @mesh axes = ["data"] reduction = <max> : tensor<4xf32>
  %r64 = dist.all_reduce %g64 on @mesh axes = ["data"] : tensor<4xf64>
  %n64 = train.sgd %w64, %r64, %lr64 : (tensor<4xf64>, tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
  %rb = dist.all_reduce %gb on @mesh axes = ["data"] : tensor<4xbf16>
  %wide = train.convert %rb : (tensor<4xbf16>) -> tensor<4xf32>
  %nb = train.sgd %wb, %wide, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %nw, %mx, %n64, %nb : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf64>, tensor<4xf32>
}
