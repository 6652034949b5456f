// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// reshape merges two dims into one.
// CHECK-LABEL: func.func @reshape_flatten
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK: %[[R:.*]] = train.reshape %[[X]] : (tensor<6x4xf32>) -> tensor<24xf32>
// CHECK: return %[[R]]
func.func @reshape_flatten(%x: tensor<6x4xf32>) -> tensor<24xf32> {
  %r = train.reshape %x : (tensor<6x4xf32>) -> tensor<24xf32>
  return %r : tensor<24xf32>
}

// -----

// reshape splits dims with sizes that do not factor together (6x4 -> 3x8).
// CHECK-LABEL: func.func @reshape_regroup_i64
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xi64>)
// CHECK: %[[R:.*]] = train.reshape %[[X]] : (tensor<6x4xi64>) -> tensor<3x8xi64>
// CHECK: return %[[R]]
func.func @reshape_regroup_i64(%x: tensor<6x4xi64>) -> tensor<3x8xi64> {
  %r = train.reshape %x : (tensor<6x4xi64>) -> tensor<3x8xi64>
  return %r : tensor<3x8xi64>
}

// -----

// reshape between a scalar and a tensor of one element, both ways.
// CHECK-LABEL: func.func @reshape_scalar
// CHECK-SAME: (%[[S:.*]]: tensor<bf16>)
// CHECK: %[[E:.*]] = train.reshape %[[S]] : (tensor<bf16>) -> tensor<1x1xbf16>
// CHECK: %[[R:.*]] = train.reshape %[[E]] : (tensor<1x1xbf16>) -> tensor<bf16>
// CHECK: return %[[R]]
func.func @reshape_scalar(%s: tensor<bf16>) -> tensor<bf16> {
  %e = train.reshape %s : (tensor<bf16>) -> tensor<1x1xbf16>
  %r = train.reshape %e : (tensor<1x1xbf16>) -> tensor<bf16>
  return %r : tensor<bf16>
}

// -----

// transpose swaps the two dims of a matrix.
// CHECK-LABEL: func.func @transpose_2d
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK: %[[R:.*]] = train.transpose %[[X]] {permutation = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK: return %[[R]]
func.func @transpose_2d(%x: tensor<6x4xf32>) -> tensor<4x6xf32> {
  %r = train.transpose %x {permutation = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Result dim i of transpose is operand dim permutation[i]: [2, 0, 1] of 2x3x4 is 4x2x3.
// CHECK-LABEL: func.func @transpose_3d
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xi32>)
// CHECK: %[[R:.*]] = train.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
// CHECK: return %[[R]]
func.func @transpose_3d(%x: tensor<2x3x4xi32>) -> tensor<4x2x3xi32> {
  %r = train.transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
  return %r : tensor<4x2x3xi32>
}

// -----

// The identity permutation and the empty permutation of a scalar.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>, %[[S:.*]]: tensor<f16>)
// CHECK: %[[R0:.*]] = train.transpose %[[X]] {permutation = array<i64: 0, 1>} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: %[[R1:.*]] = train.transpose %[[S]] {permutation = array<i64>} : (tensor<f16>) -> tensor<f16>
// CHECK: return %[[R0]], %[[R1]]
func.func @transpose_identity(%x: tensor<2x3xf16>, %s: tensor<f16>) -> (tensor<2x3xf16>, tensor<f16>) {
  %r0 = train.transpose %x {permutation = array<i64: 0, 1>} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %r1 = train.transpose %s {permutation = array<i64>} : (tensor<f16>) -> tensor<f16>
  return %r0, %r1 : tensor<2x3xf16>, tensor<f16>
}

// -----

// broadcast of a bias to a new leading dim.
// CHECK-LABEL: func.func @broadcast_bias
// CHECK-SAME: (%[[B:.*]]: tensor<128xf32>)
// CHECK: %[[R:.*]] = train.broadcast %[[B]] {dims = array<i64: 1>} : (tensor<128xf32>) -> tensor<64x128xf32>
// CHECK: return %[[R]]
func.func @broadcast_bias(%b: tensor<128xf32>) -> tensor<64x128xf32> {
  %r = train.broadcast %b {dims = array<i64: 1>} : (tensor<128xf32>) -> tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}

// -----

// broadcast expands size-1 dims and adds new dims between them.
// CHECK-LABEL: func.func @broadcast_expand_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<1x4xbf16>)
// CHECK: %[[R:.*]] = train.broadcast %[[X]] {dims = array<i64: 0, 2>} : (tensor<1x4xbf16>) -> tensor<8x3x4xbf16>
// CHECK: return %[[R]]
func.func @broadcast_expand_unit_dims(%x: tensor<1x4xbf16>) -> tensor<8x3x4xbf16> {
  %r = train.broadcast %x {dims = array<i64: 0, 2>} : (tensor<1x4xbf16>) -> tensor<8x3x4xbf16>
  return %r : tensor<8x3x4xbf16>
}

// -----

// broadcast of a scalar takes empty dims; broadcast to the same shape is allowed.
// CHECK-LABEL: func.func @broadcast_scalar_and_identity
// CHECK-SAME: (%[[S:.*]]: tensor<i1>, %[[X:.*]]: tensor<2x3xi8>)
// CHECK: %[[R0:.*]] = train.broadcast %[[S]] {dims = array<i64>} : (tensor<i1>) -> tensor<6x4xi1>
// CHECK: %[[R1:.*]] = train.broadcast %[[X]] {dims = array<i64: 0, 1>} : (tensor<2x3xi8>) -> tensor<2x3xi8>
// CHECK: return %[[R0]], %[[R1]]
func.func @broadcast_scalar_and_identity(%s: tensor<i1>, %x: tensor<2x3xi8>) -> (tensor<6x4xi1>, tensor<2x3xi8>) {
  %r0 = train.broadcast %s {dims = array<i64>} : (tensor<i1>) -> tensor<6x4xi1>
  %r1 = train.broadcast %x {dims = array<i64: 0, 1>} : (tensor<2x3xi8>) -> tensor<2x3xi8>
  return %r0, %r1 : tensor<6x4xi1>, tensor<2x3xi8>
}

// -----

// slice without strides takes limit - start elements of every dim.
// CHECK-LABEL: func.func @slice_unit_strides
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK: %[[R:.*]] = train.slice %[[X]]
// CHECK-SAME: limit = array<i64: 5, 4>
// CHECK-SAME: start = array<i64: 2, 1>
// CHECK-NOT: strides
// CHECK-SAME: : (tensor<6x4xf32>) -> tensor<3x3xf32>
// CHECK: return %[[R]]
func.func @slice_unit_strides(%x: tensor<6x4xf32>) -> tensor<3x3xf32> {
  %r = train.slice %x {start = array<i64: 2, 1>, limit = array<i64: 5, 4>} : (tensor<6x4xf32>) -> tensor<3x3xf32>
  return %r : tensor<3x3xf32>
}

// -----

// slice with strides rounds the element count up: ceil((5 - 1) / 2) = 2, ceil(4 / 3) = 2.
// CHECK-LABEL: func.func @slice_strided
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK: %[[R:.*]] = train.slice %[[X]] {limit = array<i64: 5, 4>, start = array<i64: 1, 0>, strides = array<i64: 2, 3>} : (tensor<6x4xf32>) -> tensor<2x2xf32>
// CHECK: return %[[R]]
func.func @slice_strided(%x: tensor<6x4xf32>) -> tensor<2x2xf32> {
  %r = train.slice %x {start = array<i64: 1, 0>, limit = array<i64: 5, 4>, strides = array<i64: 2, 3>} : (tensor<6x4xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// An empty slice (start == limit) has a size-0 dim; a full slice is the identity.
// CHECK-LABEL: func.func @slice_empty_and_full
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xi32>)
// CHECK: %[[R0:.*]] = train.slice %[[X]] {limit = array<i64: 2, 3>, start = array<i64: 2, 0>} : (tensor<2x3xi32>) -> tensor<0x3xi32>
// CHECK: %[[R1:.*]] = train.slice %[[X]] {limit = array<i64: 2, 3>, start = array<i64: 0, 0>} : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK: return %[[R0]], %[[R1]]
func.func @slice_empty_and_full(%x: tensor<2x3xi32>) -> (tensor<0x3xi32>, tensor<2x3xi32>) {
  %r0 = train.slice %x {start = array<i64: 2, 0>, limit = array<i64: 2, 3>} : (tensor<2x3xi32>) -> tensor<0x3xi32>
  %r1 = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 2, 3>} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %r0, %r1 : tensor<0x3xi32>, tensor<2x3xi32>
}

// -----

// concat along dim 0 adds the sizes of that dim.
// CHECK-LABEL: func.func @concat_dim0
// CHECK-SAME: (%[[A:.*]]: tensor<6x4xf32>, %[[B:.*]]: tensor<2x4xf32>)
// CHECK: %[[R:.*]] = train.concat %[[A]], %[[B]] {dim = 0 : i64} : (tensor<6x4xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @concat_dim0(%a: tensor<6x4xf32>, %b: tensor<2x4xf32>) -> tensor<8x4xf32> {
  %r = train.concat %a, %b {dim = 0} : (tensor<6x4xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// concat of three bf16 operands along the last dim.
// CHECK-LABEL: func.func @concat_three_last_dim
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x1xbf16>, %[[B:.*]]: tensor<2x3x4xbf16>, %[[C:.*]]: tensor<2x3x2xbf16>)
// CHECK: %[[R:.*]] = train.concat %[[A]], %[[B]], %[[C]] {dim = 2 : i64} : (tensor<2x3x1xbf16>, tensor<2x3x4xbf16>, tensor<2x3x2xbf16>) -> tensor<2x3x7xbf16>
// CHECK: return %[[R]]
func.func @concat_three_last_dim(%a: tensor<2x3x1xbf16>, %b: tensor<2x3x4xbf16>, %c: tensor<2x3x2xbf16>) -> tensor<2x3x7xbf16> {
  %r = train.concat %a, %b, %c {dim = 2} : (tensor<2x3x1xbf16>, tensor<2x3x4xbf16>, tensor<2x3x2xbf16>) -> tensor<2x3x7xbf16>
  return %r : tensor<2x3x7xbf16>
}

// -----

// concat of a single integer operand is the identity.
// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[A:.*]]: tensor<5xi64>)
// CHECK: %[[R:.*]] = train.concat %[[A]] {dim = 0 : i64} : (tensor<5xi64>) -> tensor<5xi64>
// CHECK: return %[[R]]
func.func @concat_single(%a: tensor<5xi64>) -> tensor<5xi64> {
  %r = train.concat %a {dim = 0} : (tensor<5xi64>) -> tensor<5xi64>
  return %r : tensor<5xi64>
}

// -----

// pad adds low and high elements per dim; the default value 0.0 is not printed.
// CHECK-LABEL: func.func @pad_default_value
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK: %[[R:.*]] = train.pad %[[X]] {high = array<i64: 0, 2>, low = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<7x6xf32>
// CHECK: return %[[R]]
func.func @pad_default_value(%x: tensor<6x4xf32>) -> tensor<7x6xf32> {
  %r = train.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 2>} : (tensor<6x4xf32>) -> tensor<7x6xf32>
  return %r : tensor<7x6xf32>
}

// -----

// pad with an explicit value (-inf, as before a max pool) on an NCHW bf16 tensor.
// CHECK-LABEL: func.func @pad_explicit_value
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xbf16>)
// CHECK: %[[R:.*]] = train.pad %[[X]] {high = array<i64: 0, 0, 1, 1>, low = array<i64: 0, 0, 1, 1>, value = 0xFFF0000000000000 : f64} : (tensor<1x2x3x3xbf16>) -> tensor<1x2x5x5xbf16>
// CHECK: return %[[R]]
func.func @pad_explicit_value(%x: tensor<1x2x3x3xbf16>) -> tensor<1x2x5x5xbf16> {
  %r = train.pad %x {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>, value = 0xFFF0000000000000 : f64} : (tensor<1x2x3x3xbf16>) -> tensor<1x2x5x5xbf16>
  return %r : tensor<1x2x5x5xbf16>
}

// -----

// pad of an integer tensor with zero padding everywhere is the identity.
// CHECK-LABEL: func.func @pad_integer_zero
// CHECK-SAME: (%[[X:.*]]: tensor<3xi32>)
// CHECK: %[[R:.*]] = train.pad %[[X]] {high = array<i64: 0>, low = array<i64: 0>, value = 7.000000e+00 : f64} : (tensor<3xi32>) -> tensor<3xi32>
// CHECK: return %[[R]]
func.func @pad_integer_zero(%x: tensor<3xi32>) -> tensor<3xi32> {
  %r = train.pad %x {low = array<i64: 0>, high = array<i64: 0>, value = 7.0} : (tensor<3xi32>) -> tensor<3xi32>
  return %r : tensor<3xi32>
}

// -----

// gather of embedding rows: [v, d] table, [b, s] indices -> [b, s, d].
// CHECK-LABEL: func.func @gather_embedding
// CHECK-SAME: (%[[T:.*]]: tensor<1000x64xbf16>, %[[I:.*]]: tensor<8x16xi32>)
// CHECK: %[[R:.*]] = train.gather %[[T]], %[[I]] : (tensor<1000x64xbf16>, tensor<8x16xi32>) -> tensor<8x16x64xbf16>
// CHECK: return %[[R]]
func.func @gather_embedding(%t: tensor<1000x64xbf16>, %i: tensor<8x16xi32>) -> tensor<8x16x64xbf16> {
  %r = train.gather %t, %i : (tensor<1000x64xbf16>, tensor<8x16xi32>) -> tensor<8x16x64xbf16>
  return %r : tensor<8x16x64xbf16>
}

// -----

// gather with scalar i64 indices takes one row; from a rank-1 table, one element.
// CHECK-LABEL: func.func @gather_scalar_index
// CHECK-SAME: (%[[T:.*]]: tensor<10x3x2xf32>, %[[V:.*]]: tensor<10xi32>, %[[I:.*]]: tensor<i64>)
// CHECK: %[[R0:.*]] = train.gather %[[T]], %[[I]] : (tensor<10x3x2xf32>, tensor<i64>) -> tensor<3x2xf32>
// CHECK: %[[R1:.*]] = train.gather %[[V]], %[[I]] : (tensor<10xi32>, tensor<i64>) -> tensor<i32>
// CHECK: return %[[R0]], %[[R1]]
func.func @gather_scalar_index(%t: tensor<10x3x2xf32>, %v: tensor<10xi32>, %i: tensor<i64>) -> (tensor<3x2xf32>, tensor<i32>) {
  %r0 = train.gather %t, %i : (tensor<10x3x2xf32>, tensor<i64>) -> tensor<3x2xf32>
  %r1 = train.gather %v, %i : (tensor<10xi32>, tensor<i64>) -> tensor<i32>
  return %r0, %r1 : tensor<3x2xf32>, tensor<i32>
}

// -----

// scatter_add of embedding gradients returns the table's type.
// CHECK-LABEL: func.func @scatter_add_embedding
// CHECK-SAME: (%[[T:.*]]: tensor<1000x64xf32>, %[[I:.*]]: tensor<8x16xi64>, %[[U:.*]]: tensor<8x16x64xf32>)
// CHECK: %[[R:.*]] = train.scatter_add %[[T]], %[[I]], %[[U]] : (tensor<1000x64xf32>, tensor<8x16xi64>, tensor<8x16x64xf32>) -> tensor<1000x64xf32>
// CHECK: return %[[R]]
func.func @scatter_add_embedding(%t: tensor<1000x64xf32>, %i: tensor<8x16xi64>, %u: tensor<8x16x64xf32>) -> tensor<1000x64xf32> {
  %r = train.scatter_add %t, %i, %u : (tensor<1000x64xf32>, tensor<8x16xi64>, tensor<8x16x64xf32>) -> tensor<1000x64xf32>
  return %r : tensor<1000x64xf32>
}

// -----

// scatter_add with scalar indices adds one row; a rank-1 integer init takes scalar updates.
// CHECK-LABEL: func.func @scatter_add_scalar_index
// CHECK-SAME: (%[[T:.*]]: tensor<10x3xf16>, %[[I:.*]]: tensor<i32>, %[[U:.*]]: tensor<3xf16>, %[[C:.*]]: tensor<10xi32>, %[[N:.*]]: tensor<i32>)
// CHECK: %[[R0:.*]] = train.scatter_add %[[T]], %[[I]], %[[U]] : (tensor<10x3xf16>, tensor<i32>, tensor<3xf16>) -> tensor<10x3xf16>
// CHECK: %[[R1:.*]] = train.scatter_add %[[C]], %[[I]], %[[N]] : (tensor<10xi32>, tensor<i32>, tensor<i32>) -> tensor<10xi32>
// CHECK: return %[[R0]], %[[R1]]
func.func @scatter_add_scalar_index(%t: tensor<10x3xf16>, %i: tensor<i32>, %u: tensor<3xf16>, %c: tensor<10xi32>, %n: tensor<i32>) -> (tensor<10x3xf16>, tensor<10xi32>) {
  %r0 = train.scatter_add %t, %i, %u : (tensor<10x3xf16>, tensor<i32>, tensor<3xf16>) -> tensor<10x3xf16>
  %r1 = train.scatter_add %c, %i, %n : (tensor<10xi32>, tensor<i32>, tensor<i32>) -> tensor<10xi32>
  return %r0, %r1 : tensor<10x3xf16>, tensor<10xi32>
}

// -----

// iota along either dim, with integer and float element types.
// CHECK-LABEL: func.func @iota
// CHECK: %[[R0:.*]] = train.iota {dim = 1 : i64} : () -> tensor<3x5xi32>
// CHECK: %[[R1:.*]] = train.iota {dim = 0 : i64} : () -> tensor<3x5xf32>
// CHECK: return %[[R0]], %[[R1]]
func.func @iota() -> (tensor<3x5xi32>, tensor<3x5xf32>) {
  %r0 = train.iota {dim = 1} : () -> tensor<3x5xi32>
  %r1 = train.iota {dim = 0} : () -> tensor<3x5xf32>
  return %r0, %r1 : tensor<3x5xi32>, tensor<3x5xf32>
}

// -----

// constant takes its type from the attribute: splat, integer, bool and bf16 values.
// CHECK-LABEL: func.func @constant
// CHECK: %[[R0:.*]] = train.constant dense<5.000000e-01> : tensor<128xf32>
// CHECK: %[[R1:.*]] = train.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK: %[[R2:.*]] = train.constant dense<true> : tensor<2xi1>
// CHECK: %[[R3:.*]] = train.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xbf16>
// CHECK: %[[R4:.*]] = train.constant dense<0.000000e+00> : tensor<f32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @constant() -> (tensor<128xf32>, tensor<3xi64>, tensor<2xi1>, tensor<2x2xbf16>, tensor<f32>) {
  %r0 = train.constant dense<0.5> : tensor<128xf32>
  %r1 = train.constant dense<[1, 2, 3]> : tensor<3xi64>
  %r2 = train.constant dense<true> : tensor<2xi1>
  %r3 = train.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %r4 = train.constant dense<0.0> : tensor<f32>
  return %r0, %r1, %r2, %r3, %r4 : tensor<128xf32>, tensor<3xi64>, tensor<2xi1>, tensor<2x2xbf16>, tensor<f32>
}

// -----

// A shard of a vocabulary-split table: gather and scatter_add take the first
// row the shard holds (the indices stay global).
// CHECK-LABEL: func.func @embedding_shard_row_offset
// CHECK-SAME: (%[[T:.*]]: tensor<250x64xf32>, %[[I:.*]]: tensor<8x16xi32>, %[[U:.*]]: tensor<8x16x64xf32>, %[[OFF:.*]]: index)
// CHECK: train.gather %[[T]], %[[I]], %[[OFF]] : (tensor<250x64xf32>, tensor<8x16xi32>, index) -> tensor<8x16x64xf32>
// CHECK: train.scatter_add %[[T]], %[[I]], %[[U]], %[[OFF]] : (tensor<250x64xf32>, tensor<8x16xi32>, tensor<8x16x64xf32>, index) -> tensor<250x64xf32>
func.func @embedding_shard_row_offset(%t: tensor<250x64xf32>, %i: tensor<8x16xi32>, %u: tensor<8x16x64xf32>, %off: index) -> (tensor<8x16x64xf32>, tensor<250x64xf32>) {
  %r = train.gather %t, %i, %off : (tensor<250x64xf32>, tensor<8x16xi32>, index) -> tensor<8x16x64xf32>
  %s = train.scatter_add %t, %i, %u, %off : (tensor<250x64xf32>, tensor<8x16xi32>, tensor<8x16x64xf32>, index) -> tensor<250x64xf32>
  return %r, %s : tensor<8x16x64xf32>, tensor<250x64xf32>
}
