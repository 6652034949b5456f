// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// dropout of a whole tensor: no offsets, no global_shape; the result has the operand's type.
// CHECK-LABEL: func.func @dropout_whole_tensor
// CHECK-SAME: (%[[X:.*]]: tensor<64x128xf32>, %[[SEED:.*]]: tensor<i64>)
// CHECK: %[[R:.*]] = train.dropout %[[X]], %[[SEED]] {rate = 1.000000e-01 : f64} : (tensor<64x128xf32>, tensor<i64>) -> tensor<64x128xf32>
// CHECK: return %[[R]]
func.func @dropout_whole_tensor(%x: tensor<64x128xf32>, %seed: tensor<i64>) -> tensor<64x128xf32> {
  %r = train.dropout %x, %seed {rate = 1.000000e-01 : f64} : (tensor<64x128xf32>, tensor<i64>) -> tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}

// -----

// A rate of 0 (keep everything) is allowed; bf16 operands keep their type.
// CHECK-LABEL: func.func @dropout_rate_zero_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xbf16>, %[[SEED:.*]]: tensor<i64>)
// CHECK: %[[R:.*]] = train.dropout %[[X]], %[[SEED]] {rate = 0.000000e+00 : f64} : (tensor<2x8x16xbf16>, tensor<i64>) -> tensor<2x8x16xbf16>
// CHECK: return %[[R]]
func.func @dropout_rate_zero_bf16(%x: tensor<2x8x16xbf16>, %seed: tensor<i64>) -> tensor<2x8x16xbf16> {
  %r = train.dropout %x, %seed {rate = 0.0} : (tensor<2x8x16xbf16>, tensor<i64>) -> tensor<2x8x16xbf16>
  return %r : tensor<2x8x16xbf16>
}

// -----

// A high rate is allowed, on f16 and on a scalar f64.
// CHECK-LABEL: func.func @dropout_high_rate
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>, %[[S:.*]]: tensor<f64>, %[[SEED:.*]]: tensor<i64>)
// CHECK: %[[R0:.*]] = train.dropout %[[X]], %[[SEED]] {rate = 8.750000e-01 : f64} : (tensor<4xf16>, tensor<i64>) -> tensor<4xf16>
// CHECK: %[[R1:.*]] = train.dropout %[[S]], %[[SEED]] {rate = 5.000000e-01 : f64} : (tensor<f64>, tensor<i64>) -> tensor<f64>
// CHECK: return %[[R0]], %[[R1]]
func.func @dropout_high_rate(%x: tensor<4xf16>, %s: tensor<f64>, %seed: tensor<i64>) -> (tensor<4xf16>, tensor<f64>) {
  %r0 = train.dropout %x, %seed {rate = 0.875} : (tensor<4xf16>, tensor<i64>) -> tensor<4xf16>
  %r1 = train.dropout %s, %seed {rate = 0.5} : (tensor<f64>, tensor<i64>) -> tensor<f64>
  return %r0, %r1 : tensor<4xf16>, tensor<f64>
}

// -----

// A shard of a 64x128 tensor passes one index offset per dim and the global shape.
// CHECK-LABEL: func.func @dropout_shard
// CHECK-SAME: (%[[X:.*]]: tensor<8x128xf32>, %[[SEED:.*]]: tensor<i64>, %[[O0:.*]]: index, %[[O1:.*]]: index)
// CHECK: %[[R:.*]] = train.dropout %[[X]], %[[SEED]], %[[O0]], %[[O1]]
// CHECK-SAME: {global_shape = array<i64: 64, 128>, rate = 1.000000e-01 : f64}
// CHECK-SAME: : (tensor<8x128xf32>, tensor<i64>, index, index) -> tensor<8x128xf32>
// CHECK: return %[[R]]
func.func @dropout_shard(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index, %o1: index) -> tensor<8x128xf32> {
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 64, 128>} : (tensor<8x128xf32>, tensor<i64>, index, index) -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// A shard that is the whole tensor (global_shape equal to the operand shape), rank 3, f16.
// CHECK-LABEL: func.func @dropout_shard_whole
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf16>, %[[SEED:.*]]: tensor<i64>, %[[O:.*]]: index)
// CHECK: %[[R:.*]] = train.dropout %[[X]], %[[SEED]], %[[O]], %[[O]], %[[O]] {global_shape = array<i64: 2, 3, 4>, rate = 2.500000e-01 : f64} : (tensor<2x3x4xf16>, tensor<i64>, index, index, index) -> tensor<2x3x4xf16>
// CHECK: return %[[R]]
func.func @dropout_shard_whole(%x: tensor<2x3x4xf16>, %seed: tensor<i64>, %o: index) -> tensor<2x3x4xf16> {
  %r = train.dropout %x, %seed, %o, %o, %o {rate = 0.25, global_shape = array<i64: 2, 3, 4>} : (tensor<2x3x4xf16>, tensor<i64>, index, index, index) -> tensor<2x3x4xf16>
  return %r : tensor<2x3x4xf16>
}

// -----

// The backward of dropout is dropout of the gradient with the same seed and offsets.
// CHECK-LABEL: func.func @dropout_forward_backward
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[DY:.*]]: tensor<8x4xf32>, %[[SEED:.*]]: tensor<i64>, %[[O0:.*]]: index, %[[O1:.*]]: index)
// CHECK: %[[Y:.*]] = train.dropout %[[X]], %[[SEED]], %[[O0]], %[[O1]] {global_shape = array<i64: 32, 4>, rate = 1.000000e-01 : f64} : (tensor<8x4xf32>, tensor<i64>, index, index) -> tensor<8x4xf32>
// CHECK: %[[DX:.*]] = train.dropout %[[DY]], %[[SEED]], %[[O0]], %[[O1]] {global_shape = array<i64: 32, 4>, rate = 1.000000e-01 : f64} : (tensor<8x4xf32>, tensor<i64>, index, index) -> tensor<8x4xf32>
// CHECK: return %[[Y]], %[[DX]]
func.func @dropout_forward_backward(%x: tensor<8x4xf32>, %dy: tensor<8x4xf32>, %seed: tensor<i64>, %o0: index, %o1: index) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %y = train.dropout %x, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 32, 4>} : (tensor<8x4xf32>, tensor<i64>, index, index) -> tensor<8x4xf32>
  %dx = train.dropout %dy, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 32, 4>} : (tensor<8x4xf32>, tensor<i64>, index, index) -> tensor<8x4xf32>
  return %y, %dx : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A scalar has no dims: zero offsets and an empty global_shape describe it completely.
// CHECK-LABEL: func.func @dropout_scalar_empty_global_shape
// CHECK-SAME: (%[[S:.*]]: tensor<f32>, %[[SEED:.*]]: tensor<i64>)
// CHECK: %[[R:.*]] = train.dropout %[[S]], %[[SEED]] {global_shape = array<i64>, rate = 1.000000e-01 : f64} : (tensor<f32>, tensor<i64>) -> tensor<f32>
// CHECK: return %[[R]]
func.func @dropout_scalar_empty_global_shape(%s: tensor<f32>, %seed: tensor<i64>) -> tensor<f32> {
  %r = train.dropout %s, %seed {rate = 0.1, global_shape = array<i64>} : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return %r : tensor<f32>
}
