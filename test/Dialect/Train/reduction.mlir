// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// A sum over the batch dim (a bias gradient) drops it.
// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>)
// CHECK: %[[R:.*]] = train.reduce %[[X]] {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x128xf32>) -> tensor<128xf32>
// CHECK: return %[[R]]
func.func @reduce_sum(%x: tensor<64x128xf32>) -> tensor<128xf32> {
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 0>} : (tensor<64x128xf32>) -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// -----

// A mean over a middle dim.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: train.reduce %{{.*}} {dims = array<i64: 1>, kind = #train.reduce_kind<mean>} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
func.func @reduce_mean(%x: tensor<4x8x16xf32>) -> tensor<4x16xf32> {
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64: 1>} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A max over two non-adjacent dims keeps the one in between.
// CHECK-LABEL: func.func @reduce_max_two_dims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 0, 2>, kind = #train.reduce_kind<max>} : (tensor<4x8x16xf32>) -> tensor<8xf32>
func.func @reduce_max_two_dims(%x: tensor<4x8x16xf32>) -> tensor<8xf32> {
  %r = train.reduce %x {kind = #train.reduce_kind<max>, dims = array<i64: 0, 2>} : (tensor<4x8x16xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A min with dims in decreasing order (any order is allowed and kept).
// CHECK-LABEL: func.func @reduce_min_unordered_dims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 3, 1>, kind = #train.reduce_kind<min>} : (tensor<2x3x4x5xf16>) -> tensor<2x4xf16>
func.func @reduce_min_unordered_dims(%x: tensor<2x3x4x5xf16>) -> tensor<2x4xf16> {
  %r = train.reduce %x {kind = #train.reduce_kind<min>, dims = array<i64: 3, 1>} : (tensor<2x3x4x5xf16>) -> tensor<2x4xf16>
  return %r : tensor<2x4xf16>
}

// -----

// keepdims leaves the reduced dim with size 1.
// CHECK-LABEL: func.func @reduce_keepdims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 1>, keepdims, kind = #train.reduce_kind<sum>} : (tensor<4x8x16xf32>) -> tensor<4x1x16xf32>
func.func @reduce_keepdims(%x: tensor<4x8x16xf32>) -> tensor<4x1x16xf32> {
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 1>, keepdims} : (tensor<4x8x16xf32>) -> tensor<4x1x16xf32>
  return %r : tensor<4x1x16xf32>
}

// -----

// keepdims with several (unordered) dims.
// CHECK-LABEL: func.func @reduce_keepdims_two_dims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 2, 0>, keepdims, kind = #train.reduce_kind<mean>} : (tensor<4x8x16xbf16>) -> tensor<1x8x1xbf16>
func.func @reduce_keepdims_two_dims(%x: tensor<4x8x16xbf16>) -> tensor<1x8x1xbf16> {
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64: 2, 0>, keepdims} : (tensor<4x8x16xbf16>) -> tensor<1x8x1xbf16>
  return %r : tensor<1x8x1xbf16>
}

// -----

// Reducing every dim gives a scalar tensor.
// CHECK-LABEL: func.func @reduce_all_dims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 0, 1, 2>, kind = #train.reduce_kind<mean>} : (tensor<4x8x16xf32>) -> tensor<f32>
func.func @reduce_all_dims(%x: tensor<4x8x16xf32>) -> tensor<f32> {
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64: 0, 1, 2>} : (tensor<4x8x16xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Reducing every dim with keepdims gives all-ones dims.
// CHECK-LABEL: func.func @reduce_all_dims_keepdims
// CHECK: train.reduce %{{.*}} {dims = array<i64: 0, 1, 2>, keepdims, kind = #train.reduce_kind<sum>} : (tensor<4x8x16xf32>) -> tensor<1x1x1xf32>
func.func @reduce_all_dims_keepdims(%x: tensor<4x8x16xf32>) -> tensor<1x1x1xf32> {
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 0, 1, 2>, keepdims} : (tensor<4x8x16xf32>) -> tensor<1x1x1xf32>
  return %r : tensor<1x1x1xf32>
}

// -----

// Reducing over no dims is the identity, with or without keepdims.
// CHECK-LABEL: func.func @reduce_empty_dims
// CHECK: train.reduce %{{.*}} {dims = array<i64>, kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: train.reduce %{{.*}} {dims = array<i64>, keepdims, kind = #train.reduce_kind<max>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @reduce_empty_dims(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = train.reduce %x {kind = #train.reduce_kind<max>, dims = array<i64>, keepdims} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A scalar operand reduces over no dims to itself.
// CHECK-LABEL: func.func @reduce_scalar
// CHECK: train.reduce %{{.*}} {dims = array<i64>, kind = #train.reduce_kind<mean>} : (tensor<f32>) -> tensor<f32>
func.func @reduce_scalar(%x: tensor<f32>) -> tensor<f32> {
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64>} : (tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// sum, max and min work on integers and keep the element type.
// CHECK-LABEL: func.func @reduce_integers
// CHECK: train.reduce %{{.*}} {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<4x8xi32>) -> tensor<4xi32>
// CHECK: train.reduce %{{.*}} {dims = array<i64: 0>, kind = #train.reduce_kind<max>} : (tensor<4x8xi64>) -> tensor<8xi64>
// CHECK: train.reduce %{{.*}} {dims = array<i64: 0, 1>, kind = #train.reduce_kind<min>} : (tensor<4x8xi64>) -> tensor<i64>
func.func @reduce_integers(%x: tensor<4x8xi32>, %y: tensor<4x8xi64>) -> (tensor<4xi32>, tensor<8xi64>, tensor<i64>) {
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 1>} : (tensor<4x8xi32>) -> tensor<4xi32>
  %s = train.reduce %y {kind = #train.reduce_kind<max>, dims = array<i64: 0>} : (tensor<4x8xi64>) -> tensor<8xi64>
  %t = train.reduce %y {kind = #train.reduce_kind<min>, dims = array<i64: 0, 1>} : (tensor<4x8xi64>) -> tensor<i64>
  return %r, %s, %t : tensor<4xi32>, tensor<8xi64>, tensor<i64>
}

// -----

// softmax over the class dim keeps the operand type.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32>)
// CHECK: %[[R:.*]] = train.softmax %[[X]] {dim = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %r = train.softmax %x {dim = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return %r : tensor<8x10xf32>
}

// -----

// softmax with a negative dim (the last) on a rank-3 f16 operand.
// CHECK-LABEL: func.func @softmax_negative_dim
// CHECK: train.softmax %{{.*}} {dim = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
func.func @softmax_negative_dim(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %r = train.softmax %x {dim = -1 : i64} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return %r : tensor<2x3x4xf16>
}

// -----

// softmax over the only dim of a rank-1 operand.
// CHECK-LABEL: func.func @softmax_rank1
// CHECK: train.softmax %{{.*}} {dim = 0 : i64} : (tensor<10xf64>) -> tensor<10xf64>
func.func @softmax_rank1(%x: tensor<10xf64>) -> tensor<10xf64> {
  %r = train.softmax %x {dim = 0 : i64} : (tensor<10xf64>) -> tensor<10xf64>
  return %r : tensor<10xf64>
}

// -----

// log_softmax over the leading dim.
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32>)
// CHECK: train.log_softmax %[[X]] {dim = 0 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
func.func @log_softmax(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %r = train.log_softmax %x {dim = 0 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return %r : tensor<8x10xf32>
}

// -----

// log_softmax with the most negative valid dim (-rank is dim 0).
// CHECK-LABEL: func.func @log_softmax_negative_dim
// CHECK: train.log_softmax %{{.*}} {dim = -3 : i64} : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
func.func @log_softmax_negative_dim(%x: tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16> {
  %r = train.log_softmax %x {dim = -3 : i64} : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
  return %r : tensor<2x3x4xbf16>
}

// -----

// softmax_backward takes the output gradient and the softmax output.
// CHECK-LABEL: func.func @softmax_backward
// CHECK-SAME: (%[[G:.*]]: tensor<8x10xf32>, %[[Y:.*]]: tensor<8x10xf32>)
// CHECK: %[[R:.*]] = train.softmax_backward %[[G]], %[[Y]] {dim = 1 : i64} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
// CHECK: return %[[R]]
func.func @softmax_backward(%g: tensor<8x10xf32>, %y: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %r = train.softmax_backward %g, %y {dim = 1 : i64} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  return %r : tensor<8x10xf32>
}

// -----

// softmax_backward with a negative dim on attention-shaped scores.
// CHECK-LABEL: func.func @softmax_backward_negative_dim
// CHECK: train.softmax_backward %{{.*}}, %{{.*}} {dim = -1 : i64} : (tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16>) -> tensor<2x4x16x16xbf16>
func.func @softmax_backward_negative_dim(%g: tensor<2x4x16x16xbf16>, %y: tensor<2x4x16x16xbf16>) -> tensor<2x4x16x16xbf16> {
  %r = train.softmax_backward %g, %y {dim = -1 : i64} : (tensor<2x4x16x16xbf16>, tensor<2x4x16x16xbf16>) -> tensor<2x4x16x16xbf16>
  return %r : tensor<2x4x16x16xbf16>
}

// -----

// log_softmax_backward over a middle dim.
// CHECK-LABEL: func.func @log_softmax_backward
// CHECK-SAME: (%[[G:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x3x4xf32>)
// CHECK: train.log_softmax_backward %[[G]], %[[Y]] {dim = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @log_softmax_backward(%g: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = train.log_softmax_backward %g, %y {dim = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// log_softmax_backward with a negative dim (-2 is dim 1 of a rank-3 operand).
// CHECK-LABEL: func.func @log_softmax_backward_negative_dim
// CHECK: train.log_softmax_backward %{{.*}}, %{{.*}} {dim = -2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
func.func @log_softmax_backward_negative_dim(%g: tensor<2x3x4xf16>, %y: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %r = train.log_softmax_backward %g, %y {dim = -2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return %r : tensor<2x3x4xf16>
}
