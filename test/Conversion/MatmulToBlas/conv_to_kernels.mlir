// RUN: dist-opt %s -split-input-file --train-to-linalg --dist-fuse-elementwise --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --dist-conv-to-kernels | FileCheck %s

// A stride-1 convolution and both gradients (dilated along w): three
// kernel calls on the buffers the contractions read and wrote, kinds 0
// (conv2d), 3 (input gradient: the padded output gradient and the filter
// itself, read flipped: train-to-linalg's flipped copy is gone) and 2
// (filter gradient), dilations 1 and 2; their zero fills are gone.
// CHECK-NOT: -d2 + 2
// CHECK-LABEL: func.func @conv_layer
// CHECK-SAME: %[[FILTER:[a-z0-9]+]]: memref<16x8x3x3xf32>
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<{{[0-9]+x[0-9]+x[0-9]+x[0-9]+x[0-9]+x}}f32>)
// CHECK: %[[X:.*]] = memref.cast %{{.*}} : memref<2x1x8x8x10xf32{{.*}}> to memref<*xf32>
// CHECK: %[[W:.*]] = memref.cast %{{.*}} : memref<1x16x8x3x3xf32{{.*}}> to memref<*xf32>
// CHECK: %[[Y:.*]] = memref.cast %{{.*}} : memref<2x1x16x6x6xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[K0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[DH0:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW0:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SH0:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[SW0:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @distopt_conv2d_f32(%[[X]], %[[W]], %[[Y]], %[[K0]], %[[DH0]], %[[DW0]], %[[SH0]], %[[SW0]])
// CHECK: %[[FV:.*]] = memref.expand_shape %[[FILTER]] {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 3, 3]
// CHECK: %[[G:.*]] = memref.cast %{{.*}} : memref<2x1x16x8x10xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[F:.*]] = memref.cast %[[FV]] : memref<1x16x8x3x3xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[GX:.*]] = memref.cast %{{.*}} : memref<2x1x8x6x6xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[K1:.*]] = arith.constant 3 : i32
// CHECK-NEXT: %[[DH1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW1:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SH1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[SW1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @distopt_conv2d_f32(%[[G]], %[[F]], %[[GX]], %[[K1]], %[[DH1]], %[[DW1]], %[[SH1]], %[[SW1]])
// CHECK: %[[GY:.*]] = memref.cast %{{.*}} : memref<2x1x16x6x6xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[XP:.*]] = memref.cast %{{.*}} : memref<2x1x8x8x10xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[GW:.*]] = memref.cast %{{.*}} : memref<1x16x8x3x3xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[K2:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[DH2:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SH2:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[SW2:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @distopt_conv2d_f32(%[[GY]], %[[XP]], %[[GW]], %[[K2]], %[[DH2]], %[[DW2]], %[[SH2]], %[[SW2]])
// CHECK-NOT: linalg.generic {{.*}}"reduction", "reduction", "reduction"
// CHECK: func.func private @distopt_conv2d_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i32, i64, i64, i64, i64) attributes {distopt.sync_buffers, llvm.emit_c_interface}
func.func @conv_layer(%x: tensor<2x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %g: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>) {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 2, 2>, dilations = array<i64: 1, 2>} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x6x6xf32>
  %gx = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, padding = array<i64: 1, 1, 2, 2>, dilations = array<i64: 1, 2>} : (tensor<2x16x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  %gw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 2, 2>, dilations = array<i64: 1, 2>} : (tensor<2x8x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<16x8x3x3xf32>
  return %y, %gx, %gw : tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>
}

// -----

// Four groups of 4 x 4 channels: one call over the [n, g, c, h, w] views.
// CHECK-LABEL: func.func @grouped
// CHECK: memref.cast %{{.*}} : memref<1x4x4x6x6xf32{{.*}}> to memref<*xf32>
// CHECK: call @distopt_conv2d_f32
func.func @grouped(%x: tensor<1x16x4x4xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x4x4xf32> {
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<1x16x4x4xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x4x4xf32>
  return %y : tensor<1x16x4x4xf32>
}

// -----

// A strided convolution (strides 2 and 3, dilations 1): kind 0 with its
// strides, on the padded image.
// CHECK-LABEL: func.func @strided
// CHECK: %[[X:.*]] = memref.cast %{{.*}} : memref<1x1x4x8x8xf32{{.*}}> to memref<*xf32>
// CHECK: %[[Y:.*]] = memref.cast %{{.*}} : memref<1x1x8x3x2xf32{{.*}}> to memref<*xf32>
// CHECK-NEXT: %[[K:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[DH:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[SH:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SW:.*]] = arith.constant 3 : i64
// CHECK-NEXT: call @distopt_conv2d_f32(%[[X]], %{{.*}}, %[[Y]], %[[K]], %[[DH]], %[[DW]], %[[SH]], %[[SW]])
func.func @strided(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x3x2xf32> {
  %s = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 3>} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x3x2xf32>
  return %s : tensor<1x8x3x2xf32>
}

// -----

// Left to the loops: a depthwise layer (1 x 1 products per group, faster
// as loops) and an f64 convolution.
// CHECK-LABEL: func.func @not_kernels
// CHECK-NOT: call @distopt_conv2d_f32
// CHECK-COUNT-2: linalg.generic {{.*}}"reduction"
// CHECK-NOT: call @distopt_conv2d_f32
func.func @not_kernels(%x: tensor<1x4x6x6xf32>, %wd: tensor<4x1x3x3xf32>, %xd: tensor<1x4x6x6xf64>, %wf: tensor<8x4x3x3xf64>) -> (tensor<1x4x6x6xf32>, tensor<1x8x6x6xf64>) {
  %d = train.conv2d %x, %wd {padding = array<i64: 1, 1, 1, 1>, groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %f = train.conv2d %xd, %wf {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf64>, tensor<8x4x3x3xf64>) -> tensor<1x8x6x6xf64>
  return %d, %f : tensor<1x4x6x6xf32>, tensor<1x8x6x6xf64>
}

// -----

// An output that is not zero-filled right before (the contraction adds to
// a buffer another op wrote in between) keeps its loops.
// CHECK-LABEL: func.func @not_filled
// CHECK-NOT: call @distopt_conv2d_f32
// CHECK: linalg.generic {{.*}}"reduction", "reduction", "reduction"
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func @not_filled(%x: memref<1x1x8x6x6xf32>, %w: memref<1x8x8x3x3xf32>, %y: memref<1x1x8x4x4xf32>) {
  linalg.generic {indexing_maps = [#in, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x1x8x6x6xf32>, memref<1x8x8x3x3xf32>) outs(%y : memref<1x1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A strided filter gradient: kind 2 with strides (2, 1). An input
// gradient's contraction read through strides (the kernels take strides
// for kinds 0 and 2 only) keeps its loops.
// CHECK-LABEL: func.func @strided_gradients
// CHECK: %[[K:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[DH:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[SH:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SW:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @distopt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %[[DH]], %[[DW]], %[[SH]], %[[SW]])
// CHECK-NOT: call @distopt_conv2d_f32
// CHECK: linalg.generic {{.*}}"reduction", "reduction", "reduction"
// CHECK-NOT: call @distopt_conv2d_f32
#grad = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#image = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d6 * 2 + d3, d7 + d4)>
#gradFilter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#gradIn = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 + d7)>
#filterT = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#gradOut = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func @strided_gradients(%g: memref<1x1x8x2x4xf32>, %x: memref<1x1x8x6x6xf32>, %gp: memref<1x1x8x6x6xf32>) -> (memref<1x8x8x3x3xf32>, memref<1x1x8x2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = memref.alloc() : memref<1x8x8x3x3xf32>
  %dx = memref.alloc() : memref<1x1x8x2x4xf32>
  linalg.fill ins(%zero : f32) outs(%w : memref<1x8x8x3x3xf32>)
  linalg.generic {indexing_maps = [#grad, #image, #gradFilter], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %x : memref<1x1x8x2x4xf32>, memref<1x1x8x6x6xf32>) outs(%w : memref<1x8x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dx : memref<1x1x8x2x4xf32>)
  linalg.generic {indexing_maps = [#gradIn, #filterT, #gradOut], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%gp, %w : memref<1x1x8x6x6xf32>, memref<1x8x8x3x3xf32>) outs(%dx : memref<1x1x8x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return %w, %dx : memref<1x8x8x3x3xf32>, memref<1x1x8x2x4xf32>
}
