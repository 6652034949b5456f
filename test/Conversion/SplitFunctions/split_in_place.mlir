// RUN: dist-opt %s --dist-lower-cpu="ops-per-function=4" | FileCheck %s

// The whole CPU lowering of a step cut into parts, whose last part updates
// the filter and its momentum in place through the grouped [1, f, c, kh,
// kw] view the filter gradient's contraction produced: the part's results
// that reshape its arguments fold back into the arguments and are dropped,
// so the state is neither copied nor returned twice (ResNet-18: 94 MB of
// parameters and momenta had been cloned per step).
// CHECK: llvm.func @train_step_part
// CHECK-NOT: llvm.intr.memcpy
// CHECK-NOT: llvm.call @memcpy
// CHECK: llvm.func @train_step(
func.func @train_step(
    %w: tensor<8x4x3x3xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<8x4x3x3xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum"},
    %x: tensor<2x4x6x6xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x4x3x3xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<8x4x3x3xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum"},
        tensor<f32> {train.role = #train.role<loss>}) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  %l = train.reduce %y {dims = array<i64: 0, 1, 2, 3>, kind = #train.reduce_kind<sum>} : (tensor<2x8x6x6xf32>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<2x8x6x6xf32>
  %gw = train.conv2d_backward_filter %x, %one {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<8x4x3x3xf32>
  %nw, %nm = train.sgd %w, %gw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<f32>, tensor<8x4x3x3xf32>) -> (tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>)
  return %nw, %nm, %l : tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<f32>
}
