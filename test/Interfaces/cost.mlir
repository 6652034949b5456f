// RUN: dist-opt %s -split-input-file --train-test-cost | FileCheck %s

// Every train op reports its CostOpInterface cost: FLOPs (a multiply-add is
// two), bytes read (every operand once) and bytes written (every result once),
// with f64/i64/index = 8 bytes, f32/i32 = 4, bf16/f16 = 2, i1 = 1. The
// expectations are derived from the op descriptions in TrainOps.td and the
// conventions at the top of TrainCost.cpp.

//===----------------------------------------------------------------------===//
// Elementwise binary ops: 1 FLOP per result element
//===----------------------------------------------------------------------===//

// Same-shape add: 6 FLOPs, reads 2 * 24 bytes.
// CHECK-LABEL: func.func @add_same_shape
func.func @add_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.add {{.*}}train.cost = {flops = 6 : i64, read = 48 : i64, written = 24 : i64}
  %0 = train.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A broadcast operand is read once at its own size.
// CHECK-LABEL: func.func @add_bias
func.func @add_bias(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.add {{.*}}train.cost = {flops = 6 : i64, read = 36 : i64, written = 24 : i64}
  %0 = train.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// FLOPs count result elements (5*3*7), not operand elements.
// CHECK-LABEL: func.func @sub_broadcast_size_one
func.func @sub_broadcast_size_one(%a: tensor<5x1x7xf32>, %b: tensor<3x1xf32>) -> tensor<5x3x7xf32> {
  // CHECK: train.sub {{.*}}train.cost = {flops = 105 : i64, read = 152 : i64, written = 420 : i64}
  %0 = train.sub %a, %b : (tensor<5x1x7xf32>, tensor<3x1xf32>) -> tensor<5x3x7xf32>
  return %0 : tensor<5x3x7xf32>
}

// -----

// A scalar operand is one element.
// CHECK-LABEL: func.func @mul_scalar
func.func @mul_scalar(%a: tensor<4x5xf32>, %b: tensor<f32>) -> tensor<4x5xf32> {
  // CHECK: train.mul {{.*}}train.cost = {flops = 20 : i64, read = 84 : i64, written = 80 : i64}
  %0 = train.mul %a, %b : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// f16 elements are 2 bytes.
// CHECK-LABEL: func.func @div_f16
func.func @div_f16(%a: tensor<2x7xf16>, %b: tensor<2x7xf16>) -> tensor<2x7xf16> {
  // CHECK: train.div {{.*}}train.cost = {flops = 14 : i64, read = 56 : i64, written = 28 : i64}
  %0 = train.div %a, %b : (tensor<2x7xf16>, tensor<2x7xf16>) -> tensor<2x7xf16>
  return %0 : tensor<2x7xf16>
}

// -----

// An outer broadcast: 15 result elements from 5 + 3 operand elements.
// CHECK-LABEL: func.func @max_outer_broadcast
func.func @max_outer_broadcast(%a: tensor<1x5xf32>, %b: tensor<3x1xf32>) -> tensor<3x5xf32> {
  // CHECK: train.max {{.*}}train.cost = {flops = 15 : i64, read = 32 : i64, written = 60 : i64}
  %0 = train.max %a, %b : (tensor<1x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// i32 elements are 4 bytes.
// CHECK-LABEL: func.func @min_i32
func.func @min_i32(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<6xi32> {
  // CHECK: train.min {{.*}}train.cost = {flops = 6 : i64, read = 48 : i64, written = 24 : i64}
  %0 = train.min %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// bf16 elements are 2 bytes.
// CHECK-LABEL: func.func @pow_bf16
func.func @pow_bf16(%a: tensor<3x2xbf16>, %b: tensor<2xbf16>) -> tensor<3x2xbf16> {
  // CHECK: train.pow {{.*}}train.cost = {flops = 6 : i64, read = 16 : i64, written = 12 : i64}
  %0 = train.pow %a, %b : (tensor<3x2xbf16>, tensor<2xbf16>) -> tensor<3x2xbf16>
  return %0 : tensor<3x2xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise unary ops: the per-element FLOPs of their ODS definition
//===----------------------------------------------------------------------===//

// neg: 1 FLOP per element.
// CHECK-LABEL: func.func @neg
func.func @neg(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.neg {{.*}}train.cost = {flops = 6 : i64, read = 24 : i64, written = 24 : i64}
  %0 = train.neg %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A scalar is one element.
// CHECK-LABEL: func.func @neg_scalar
func.func @neg_scalar(%a: tensor<f32>) -> tensor<f32> {
  // CHECK: train.neg {{.*}}train.cost = {flops = 1 : i64, read = 4 : i64, written = 4 : i64}
  %0 = train.neg %a : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// abs: 1 FLOP per element.
// CHECK-LABEL: func.func @abs
func.func @abs(%a: tensor<5x7xi32>) -> tensor<5x7xi32> {
  // CHECK: train.abs {{.*}}train.cost = {flops = 35 : i64, read = 140 : i64, written = 140 : i64}
  %0 = train.abs %a : (tensor<5x7xi32>) -> tensor<5x7xi32>
  return %0 : tensor<5x7xi32>
}

// -----

// exp: 1 FLOP per element.
// CHECK-LABEL: func.func @exp
func.func @exp(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.exp {{.*}}train.cost = {flops = 15 : i64, read = 60 : i64, written = 60 : i64}
  %0 = train.exp %a : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// log: 1 FLOP per element.
// CHECK-LABEL: func.func @log
func.func @log(%a: tensor<7xf16>) -> tensor<7xf16> {
  // CHECK: train.log {{.*}}train.cost = {flops = 7 : i64, read = 14 : i64, written = 14 : i64}
  %0 = train.log %a : (tensor<7xf16>) -> tensor<7xf16>
  return %0 : tensor<7xf16>
}

// -----

// sqrt: 1 FLOP per element.
// CHECK-LABEL: func.func @sqrt
func.func @sqrt(%a: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  // CHECK: train.sqrt {{.*}}train.cost = {flops = 30 : i64, read = 120 : i64, written = 120 : i64}
  %0 = train.sqrt %a : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// rsqrt: 2 FLOPs per element.
// CHECK-LABEL: func.func @rsqrt
func.func @rsqrt(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // CHECK: train.rsqrt {{.*}}train.cost = {flops = 24 : i64, read = 48 : i64, written = 48 : i64}
  %0 = train.rsqrt %a : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// tanh: 1 FLOP per element.
// CHECK-LABEL: func.func @tanh
func.func @tanh(%a: tensor<5x2xbf16>) -> tensor<5x2xbf16> {
  // CHECK: train.tanh {{.*}}train.cost = {flops = 10 : i64, read = 20 : i64, written = 20 : i64}
  %0 = train.tanh %a : (tensor<5x2xbf16>) -> tensor<5x2xbf16>
  return %0 : tensor<5x2xbf16>
}

// -----

// sigmoid: 3 FLOPs per element.
// CHECK-LABEL: func.func @sigmoid
func.func @sigmoid(%a: tensor<3x7xf32>) -> tensor<3x7xf32> {
  // CHECK: train.sigmoid {{.*}}train.cost = {flops = 63 : i64, read = 84 : i64, written = 84 : i64}
  %0 = train.sigmoid %a : (tensor<3x7xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// relu: 1 FLOP per element.
// CHECK-LABEL: func.func @relu
func.func @relu(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.relu {{.*}}train.cost = {flops = 10 : i64, read = 40 : i64, written = 40 : i64}
  %0 = train.relu %a : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// gelu: 8 FLOPs per element.
// CHECK-LABEL: func.func @gelu
func.func @gelu(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // CHECK: train.gelu {{.*}}train.cost = {flops = 96 : i64, read = 48 : i64, written = 48 : i64}
  %0 = train.gelu %a : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// f64 elements are 8 bytes.
// CHECK-LABEL: func.func @gelu_f64
func.func @gelu_f64(%a: tensor<2xf64>) -> tensor<2xf64> {
  // CHECK: train.gelu {{.*}}train.cost = {flops = 16 : i64, read = 16 : i64, written = 16 : i64}
  %0 = train.gelu %a : (tensor<2xf64>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
}

// -----

//===----------------------------------------------------------------------===//
// compare, select, convert: 1 FLOP per result element
//===----------------------------------------------------------------------===//

// compare writes one byte per i1 element.
// CHECK-LABEL: func.func @compare_scalar
func.func @compare_scalar(%a: tensor<4x6xf32>, %b: tensor<f32>) -> tensor<4x6xi1> {
  // CHECK: train.compare {{.*}}train.cost = {flops = 24 : i64, read = 100 : i64, written = 24 : i64}
  %0 = train.compare %a, %b {direction = #train.compare_direction<gt>} : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xi1>
  return %0 : tensor<4x6xi1>
}

// -----

// compare with an outer broadcast of i32 operands.
// CHECK-LABEL: func.func @compare_broadcast
func.func @compare_broadcast(%a: tensor<3x1xi32>, %b: tensor<5xi32>) -> tensor<3x5xi1> {
  // CHECK: train.compare {{.*}}train.cost = {flops = 15 : i64, read = 32 : i64, written = 15 : i64}
  %0 = train.compare %a, %b {direction = #train.compare_direction<eq>} : (tensor<3x1xi32>, tensor<5xi32>) -> tensor<3x5xi1>
  return %0 : tensor<3x5xi1>
}

// -----

// select reads the i1 condition at one byte per element.
// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<2x3xi1>, %t: tensor<2x3xf32>, %f: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: train.select {{.*}}train.cost = {flops = 6 : i64, read = 34 : i64, written = 24 : i64}
  %0 = train.select %c, %t, %f : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// convert reads f32 and writes bf16.
// CHECK-LABEL: func.func @convert_f32_bf16
func.func @convert_f32_bf16(%a: tensor<4x5xf32>) -> tensor<4x5xbf16> {
  // CHECK: train.convert {{.*}}train.cost = {flops = 20 : i64, read = 80 : i64, written = 40 : i64}
  %0 = train.convert %a : (tensor<4x5xf32>) -> tensor<4x5xbf16>
  return %0 : tensor<4x5xbf16>
}

// -----

// convert reads i1 and writes f32.
// CHECK-LABEL: func.func @convert_i1_f32
func.func @convert_i1_f32(%a: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: train.convert {{.*}}train.cost = {flops = 6 : i64, read = 6 : i64, written = 24 : i64}
  %0 = train.convert %a : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// matmul: 2 * batch * m * n * k FLOPs
//===----------------------------------------------------------------------===//

// 2 * 2 * 5 * 3 = 60 FLOPs.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 60 : i64, read = 84 : i64, written = 40 : i64}
  %0 = train.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// transpose_rhs: k is rhs's last dim, the FLOPs do not change.
// CHECK-LABEL: func.func @matmul_transpose_rhs
func.func @matmul_transpose_rhs(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 60 : i64, read = 84 : i64, written = 40 : i64}
  %0 = train.matmul %a, %b {transpose_rhs} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// transpose_lhs: k (3) is lhs's first dim, not its last (2).
// CHECK-LABEL: func.func @matmul_transpose_lhs
func.func @matmul_transpose_lhs(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 60 : i64, read = 84 : i64, written = 40 : i64}
  %0 = train.matmul %a, %b {transpose_lhs} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Both transposes.
// CHECK-LABEL: func.func @matmul_transpose_both
func.func @matmul_transpose_both(%a: tensor<3x2xf32>, %b: tensor<5x3xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 60 : i64, read = 84 : i64, written = 40 : i64}
  %0 = train.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Batched: 2 * 7 * 2 * 5 * 3 = 420 FLOPs.
// CHECK-LABEL: func.func @matmul_batch
func.func @matmul_batch(%a: tensor<7x2x3xf32>, %b: tensor<7x3x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 420 : i64, read = 588 : i64, written = 280 : i64}
  %0 = train.matmul %a, %b : (tensor<7x2x3xf32>, tensor<7x3x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// A shared weight counts every batch's FLOPs but is read once.
// CHECK-LABEL: func.func @matmul_shared_weight
func.func @matmul_shared_weight(%x: tensor<7x2x3xf32>, %w: tensor<5x3xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 420 : i64, read = 228 : i64, written = 280 : i64}
  %0 = train.matmul %x, %w {transpose_rhs} : (tensor<7x2x3xf32>, tensor<5x3xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// A shared lhs.
// CHECK-LABEL: func.func @matmul_shared_lhs
func.func @matmul_shared_lhs(%a: tensor<2x3xf32>, %b: tensor<7x3x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 420 : i64, read = 444 : i64, written = 280 : i64}
  %0 = train.matmul %a, %b : (tensor<2x3xf32>, tensor<7x3x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// Two batch dims and transpose_lhs: 2 * 7 * 11 * 2 * 5 * 3 = 4620 FLOPs.
// CHECK-LABEL: func.func @matmul_two_batch_dims_transpose_lhs
func.func @matmul_two_batch_dims_transpose_lhs(%a: tensor<7x11x3x2xf32>, %b: tensor<7x11x3x5xf32>) -> tensor<7x11x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 4620 : i64, read = 6468 : i64, written = 3080 : i64}
  %0 = train.matmul %a, %b {transpose_lhs} : (tensor<7x11x3x2xf32>, tensor<7x11x3x5xf32>) -> tensor<7x11x2x5xf32>
  return %0 : tensor<7x11x2x5xf32>
}

// -----

// bf16 operands: same FLOPs, half the bytes.
// CHECK-LABEL: func.func @matmul_bf16
func.func @matmul_bf16(%a: tensor<2x3xbf16>, %b: tensor<3x5xbf16>) -> tensor<2x5xbf16> {
  // CHECK: train.matmul {{.*}}train.cost = {flops = 60 : i64, read = 42 : i64, written = 20 : i64}
  %0 = train.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x5xbf16>) -> tensor<2x5xbf16>
  return %0 : tensor<2x5xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Convolutions: 2 * n * f * oh * ow * (c / groups) * kh * kw FLOPs
//===----------------------------------------------------------------------===//

// 2 * 4 * 5 * 8 * 6 * 3 * 3 * 2 = 34560 FLOPs.
// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<4x3x10x7xf32>, %w: tensor<5x3x3x2xf32>) -> tensor<4x5x8x6xf32> {
  // CHECK: train.conv2d {{.*}}train.cost = {flops = 34560 : i64, read = 3720 : i64, written = 3840 : i64}
  %0 = train.conv2d %x, %w : (tensor<4x3x10x7xf32>, tensor<5x3x3x2xf32>) -> tensor<4x5x8x6xf32>
  return %0 : tensor<4x5x8x6xf32>
}

// -----

// groups = 3: 2 * 5 * 21 * 6 * 9 * (6 / 3) * 4 * 8 = 725760 FLOPs.
// CHECK-LABEL: func.func @conv2d_groups
func.func @conv2d_groups(%x: tensor<5x6x11x13xf32>, %w: tensor<21x2x4x8xf32>) -> tensor<5x21x6x9xf32> {
  // CHECK: train.conv2d {{.*}}train.cost = {flops = 725760 : i64, read = 22536 : i64, written = 22680 : i64}
  %0 = train.conv2d %x, %w {groups = 3 : i64, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x6x11x13xf32>, tensor<21x2x4x8xf32>) -> tensor<5x21x6x9xf32>
  return %0 : tensor<5x21x6x9xf32>
}

// -----

// The input gradient costs as much as the forward conv.
// CHECK-LABEL: func.func @conv2d_backward_input
func.func @conv2d_backward_input(%dy: tensor<4x5x8x6xf32>, %w: tensor<5x3x3x2xf32>) -> tensor<4x3x10x7xf32> {
  // CHECK: train.conv2d_backward_input {{.*}}train.cost = {flops = 34560 : i64, read = 4200 : i64, written = 3360 : i64}
  %0 = train.conv2d_backward_input %dy, %w {input_size = array<i64: 10, 7>} : (tensor<4x5x8x6xf32>, tensor<5x3x3x2xf32>) -> tensor<4x3x10x7xf32>
  return %0 : tensor<4x3x10x7xf32>
}

// -----

// Grouped input gradient.
// CHECK-LABEL: func.func @conv2d_backward_input_groups
func.func @conv2d_backward_input_groups(%dy: tensor<5x21x6x9xf32>, %w: tensor<21x2x4x8xf32>) -> tensor<5x6x11x13xf32> {
  // CHECK: train.conv2d_backward_input {{.*}}train.cost = {flops = 725760 : i64, read = 28056 : i64, written = 17160 : i64}
  %0 = train.conv2d_backward_input %dy, %w {groups = 3 : i64, input_size = array<i64: 11, 13>, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x21x6x9xf32>, tensor<21x2x4x8xf32>) -> tensor<5x6x11x13xf32>
  return %0 : tensor<5x6x11x13xf32>
}

// -----

// The filter gradient costs as much as the forward conv.
// CHECK-LABEL: func.func @conv2d_backward_filter
func.func @conv2d_backward_filter(%x: tensor<4x3x10x7xf32>, %dy: tensor<4x5x8x6xf32>) -> tensor<5x3x3x2xf32> {
  // CHECK: train.conv2d_backward_filter {{.*}}train.cost = {flops = 34560 : i64, read = 7200 : i64, written = 360 : i64}
  %0 = train.conv2d_backward_filter %x, %dy {kernel_size = array<i64: 3, 2>} : (tensor<4x3x10x7xf32>, tensor<4x5x8x6xf32>) -> tensor<5x3x3x2xf32>
  return %0 : tensor<5x3x3x2xf32>
}

// -----

// Grouped filter gradient.
// CHECK-LABEL: func.func @conv2d_backward_filter_groups
func.func @conv2d_backward_filter_groups(%x: tensor<5x6x11x13xf32>, %dy: tensor<5x21x6x9xf32>) -> tensor<21x2x4x8xf32> {
  // CHECK: train.conv2d_backward_filter {{.*}}train.cost = {flops = 725760 : i64, read = 39840 : i64, written = 5376 : i64}
  %0 = train.conv2d_backward_filter %x, %dy {groups = 3 : i64, kernel_size = array<i64: 4, 8>, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x6x11x13xf32>, tensor<5x21x6x9xf32>) -> tensor<21x2x4x8xf32>
  return %0 : tensor<21x2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// reduce: one operation per input element
//===----------------------------------------------------------------------===//

// sum over one dim of 105 elements.
// CHECK-LABEL: func.func @reduce_sum
func.func @reduce_sum(%a: tensor<3x5x7xf32>) -> tensor<3x7xf32> {
  // CHECK: train.reduce {{.*}}train.cost = {flops = 105 : i64, read = 420 : i64, written = 84 : i64}
  %0 = train.reduce %a {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<3x5x7xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// keepdims writes the same 5 elements.
// CHECK-LABEL: func.func @reduce_max_keepdims
func.func @reduce_max_keepdims(%a: tensor<3x5x7xf32>) -> tensor<1x5x1xf32> {
  // CHECK: train.reduce {{.*}}train.cost = {flops = 105 : i64, read = 420 : i64, written = 20 : i64}
  %0 = train.reduce %a {dims = array<i64: 0, 2>, keepdims, kind = #train.reduce_kind<max>} : (tensor<3x5x7xf32>) -> tensor<1x5x1xf32>
  return %0 : tensor<1x5x1xf32>
}

// -----

// mean of f16.
// CHECK-LABEL: func.func @reduce_mean_f16
func.func @reduce_mean_f16(%a: tensor<3x5x7xf16>) -> tensor<5xf16> {
  // CHECK: train.reduce {{.*}}train.cost = {flops = 105 : i64, read = 210 : i64, written = 10 : i64}
  %0 = train.reduce %a {dims = array<i64: 2, 0>, kind = #train.reduce_kind<mean>} : (tensor<3x5x7xf16>) -> tensor<5xf16>
  return %0 : tensor<5xf16>
}

// -----

// Full reduction to a scalar.
// CHECK-LABEL: func.func @reduce_min_all
func.func @reduce_min_all(%a: tensor<4x6xi32>) -> tensor<i32> {
  // CHECK: train.reduce {{.*}}train.cost = {flops = 24 : i64, read = 96 : i64, written = 4 : i64}
  %0 = train.reduce %a {dims = array<i64: 0, 1>, kind = #train.reduce_kind<min>} : (tensor<4x6xi32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

//===----------------------------------------------------------------------===//
// Softmax family: 5 (forward) or 4 (backward) operations per element
//===----------------------------------------------------------------------===//

// softmax: 5 * 105.
// CHECK-LABEL: func.func @softmax
func.func @softmax(%a: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  // CHECK: train.softmax {{.*}}train.cost = {flops = 525 : i64, read = 420 : i64, written = 420 : i64}
  %0 = train.softmax %a {dim = 1 : i64} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  return %0 : tensor<3x5x7xf32>
}

// -----

// log_softmax: 5 * 15.
// CHECK-LABEL: func.func @log_softmax
func.func @log_softmax(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  // CHECK: train.log_softmax {{.*}}train.cost = {flops = 75 : i64, read = 60 : i64, written = 60 : i64}
  %0 = train.log_softmax %a {dim = 0 : i64} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// softmax_backward: 4 * 14, two operands read.
// CHECK-LABEL: func.func @softmax_backward
func.func @softmax_backward(%dy: tensor<2x7xf32>, %y: tensor<2x7xf32>) -> tensor<2x7xf32> {
  // CHECK: train.softmax_backward {{.*}}train.cost = {flops = 56 : i64, read = 112 : i64, written = 56 : i64}
  %0 = train.softmax_backward %dy, %y {dim = 1 : i64} : (tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// log_softmax_backward: 4 * 30.
// CHECK-LABEL: func.func @log_softmax_backward
func.func @log_softmax_backward(%dy: tensor<3x2x5xf32>, %y: tensor<3x2x5xf32>) -> tensor<3x2x5xf32> {
  // CHECK: train.log_softmax_backward {{.*}}train.cost = {flops = 120 : i64, read = 240 : i64, written = 120 : i64}
  %0 = train.log_softmax_backward %dy, %y {dim = -1 : i64} : (tensor<3x2x5xf32>, tensor<3x2x5xf32>) -> tensor<3x2x5xf32>
  return %0 : tensor<3x2x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Normalizations: 8 (forward) or 12 (backward) operations per input element
//===----------------------------------------------------------------------===//

// layer_norm: 8 * 105; writes y and the two 3-element statistics.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<3x5x7xf32>, %g: tensor<5x7xf32>, %b: tensor<5x7xf32>) {
  // CHECK: train.layer_norm {{.*}}train.cost = {flops = 840 : i64, read = 700 : i64, written = 444 : i64}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<3x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>) -> (tensor<3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// layer_norm over the last dim.
// CHECK-LABEL: func.func @layer_norm_last_dim
func.func @layer_norm_last_dim(%x: tensor<2x3x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) {
  // CHECK: train.layer_norm {{.*}}train.cost = {flops = 240 : i64, read = 160 : i64, written = 168 : i64}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

// layer_norm_backward: 12 * 105; reads dy, x, mean, rstd and weight.
// CHECK-LABEL: func.func @layer_norm_backward
func.func @layer_norm_backward(%dy: tensor<3x5x7xf32>, %x: tensor<3x5x7xf32>, %mean: tensor<3xf32>, %rstd: tensor<3xf32>, %g: tensor<5x7xf32>) {
  // CHECK: train.layer_norm_backward {{.*}}train.cost = {flops = 1260 : i64, read = 1004 : i64, written = 700 : i64}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<5x7xf32>) -> (tensor<3x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>)
  return
}

// -----

// layer_norm_backward in bf16.
// CHECK-LABEL: func.func @layer_norm_backward_bf16
func.func @layer_norm_backward_bf16(%dy: tensor<2x3x5xbf16>, %x: tensor<2x3x5xbf16>, %mean: tensor<2x3xbf16>, %rstd: tensor<2x3xbf16>, %g: tensor<5xbf16>) {
  // CHECK: train.layer_norm_backward {{.*}}train.cost = {flops = 360 : i64, read = 154 : i64, written = 80 : i64}
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 2 : i64} : (tensor<2x3x5xbf16>, tensor<2x3x5xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<5xbf16>) -> (tensor<2x3x5xbf16>, tensor<5xbf16>, tensor<5xbf16>)
  return
}

// -----

// batch_norm: 8 * 210.
// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x3x5x7xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) {
  // CHECK: train.batch_norm {{.*}}train.cost = {flops = 1680 : i64, read = 864 : i64, written = 864 : i64}
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm_backward: 12 * 210.
// CHECK-LABEL: func.func @batch_norm_backward
func.func @batch_norm_backward(%dy: tensor<2x3x5x7xf32>, %x: tensor<2x3x5x7xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<3xf32>) {
  // CHECK: train.batch_norm_backward {{.*}}train.cost = {flops = 2520 : i64, read = 1716 : i64, written = 864 : i64}
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling: one operation per window element per pooled element
//===----------------------------------------------------------------------===//

// 2*5*4*3 pooled elements * 3*2 window.
// CHECK-LABEL: func.func @max_pool2d
func.func @max_pool2d(%x: tensor<2x5x9x8xf32>) -> tensor<2x5x4x3xf32> {
  // CHECK: train.max_pool2d {{.*}}train.cost = {flops = 720 : i64, read = 2880 : i64, written = 480 : i64}
  %0 = train.max_pool2d %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 3>} : (tensor<2x5x9x8xf32>) -> tensor<2x5x4x3xf32>
  return %0 : tensor<2x5x4x3xf32>
}

// -----

// The backward op counts the pooled (grad_output) elements.
// CHECK-LABEL: func.func @max_pool2d_backward
func.func @max_pool2d_backward(%dy: tensor<2x5x4x3xf32>, %x: tensor<2x5x9x8xf32>) -> tensor<2x5x9x8xf32> {
  // CHECK: train.max_pool2d_backward {{.*}}train.cost = {flops = 720 : i64, read = 3360 : i64, written = 2880 : i64}
  %0 = train.max_pool2d_backward %dy, %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 3>} : (tensor<2x5x4x3xf32>, tensor<2x5x9x8xf32>) -> tensor<2x5x9x8xf32>
  return %0 : tensor<2x5x9x8xf32>
}

// -----

// 3*2*4*5 pooled elements * 2*4 window.
// CHECK-LABEL: func.func @avg_pool2d
func.func @avg_pool2d(%x: tensor<3x2x7x13xf32>) -> tensor<3x2x4x5xf32> {
  // CHECK: train.avg_pool2d {{.*}}train.cost = {flops = 960 : i64, read = 2184 : i64, written = 480 : i64}
  %0 = train.avg_pool2d %x {count_include_pad = false, kernel_size = array<i64: 2, 4>, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<3x2x7x13xf32>) -> tensor<3x2x4x5xf32>
  return %0 : tensor<3x2x4x5xf32>
}

// -----

// avg_pool2d_backward never reads the values of the forward input (it only
// gives the shape): it reads just the 3*2*4*5 grad_output elements.
// CHECK-LABEL: func.func @avg_pool2d_backward
func.func @avg_pool2d_backward(%dy: tensor<3x2x4x5xf32>, %x: tensor<3x2x7x13xf32>) -> tensor<3x2x7x13xf32> {
  // CHECK: train.avg_pool2d_backward {{.*}}train.cost = {flops = 960 : i64, read = 480 : i64, written = 2184 : i64}
  %0 = train.avg_pool2d_backward %dy, %x {kernel_size = array<i64: 2, 4>, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<3x2x4x5xf32>, tensor<3x2x7x13xf32>) -> tensor<3x2x7x13xf32>
  return %0 : tensor<3x2x7x13xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Loss: 6 (forward) or 5 (backward) operations per logit
//===----------------------------------------------------------------------===//

// cross_entropy: 6 * 60; writes one f32.
// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<6x10xf32>, %labels: tensor<6xi32>) -> tensor<f32> {
  // CHECK: train.cross_entropy {{.*}}train.cost = {flops = 360 : i64, read = 264 : i64, written = 4 : i64}
  %0 = train.cross_entropy %logits, %labels : (tensor<6x10xf32>, tensor<6xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// i64 labels are 8 bytes each.
// CHECK-LABEL: func.func @cross_entropy_i64_labels
func.func @cross_entropy_i64_labels(%logits: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>) -> tensor<f32> {
  // CHECK: train.cross_entropy {{.*}}train.cost = {flops = 180 : i64, read = 168 : i64, written = 4 : i64}
  %0 = train.cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// cross_entropy_backward: 5 * 60.
// CHECK-LABEL: func.func @cross_entropy_backward
func.func @cross_entropy_backward(%dl: tensor<f32>, %logits: tensor<6x10xf32>, %labels: tensor<6xi32>) -> tensor<6x10xf32> {
  // CHECK: train.cross_entropy_backward {{.*}}train.cost = {flops = 300 : i64, read = 268 : i64, written = 240 : i64}
  %0 = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<6x10xf32>, tensor<6xi32>) -> tensor<6x10xf32>
  return %0 : tensor<6x10xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement: no FLOPs
//===----------------------------------------------------------------------===//

// A reshape is a view: no FLOPs and no bytes.
// CHECK-LABEL: func.func @reshape_merge
func.func @reshape_merge(%a: tensor<6x4xf32>) -> tensor<24xf32> {
  // CHECK: train.reshape {{.*}}train.cost = {flops = 0 : i64, read = 0 : i64, written = 0 : i64}
  %0 = train.reshape %a : (tensor<6x4xf32>) -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

// A coprime reshape is a view too.
// CHECK-LABEL: func.func @reshape_coprime
func.func @reshape_coprime(%a: tensor<6x4xf32>) -> tensor<4x6xf32> {
  // CHECK: train.reshape {{.*}}train.cost = {flops = 0 : i64, read = 0 : i64, written = 0 : i64}
  %0 = train.reshape %a : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// transpose reads and writes every element once.
// CHECK-LABEL: func.func @transpose
func.func @transpose(%a: tensor<2x3x5xf32>) -> tensor<5x2x3xf32> {
  // CHECK: train.transpose {{.*}}train.cost = {flops = 0 : i64, read = 120 : i64, written = 120 : i64}
  %0 = train.transpose %a {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
  return %0 : tensor<5x2x3xf32>
}

// -----

// broadcast reads the operand and writes the larger result.
// CHECK-LABEL: func.func @broadcast_bias
func.func @broadcast_bias(%a: tensor<5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.broadcast {{.*}}train.cost = {flops = 0 : i64, read = 20 : i64, written = 60 : i64}
  %0 = train.broadcast %a {dims = array<i64: 1>} : (tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// broadcast with a size-1 operand dim.
// CHECK-LABEL: func.func @broadcast_size_one
func.func @broadcast_size_one(%a: tensor<1x5xf32>) -> tensor<3x4x5xf32> {
  // CHECK: train.broadcast {{.*}}train.cost = {flops = 0 : i64, read = 20 : i64, written = 240 : i64}
  %0 = train.broadcast %a {dims = array<i64: 0, 2>} : (tensor<1x5xf32>) -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

// slice reads only the 6*6*5 elements it returns, not the 6*8*5 operand.
// CHECK-LABEL: func.func @slice_one_dim
func.func @slice_one_dim(%a: tensor<6x8x5xf32>) -> tensor<6x6x5xf32> {
  // CHECK: train.slice {{.*}}train.cost = {flops = 0 : i64, read = 720 : i64, written = 720 : i64}
  %0 = train.slice %a {limit = array<i64: 6, 8, 5>, start = array<i64: 0, 2, 0>} : (tensor<6x8x5xf32>) -> tensor<6x6x5xf32>
  return %0 : tensor<6x6x5xf32>
}

// -----

// A strided slice reads 7*3 elements.
// CHECK-LABEL: func.func @slice_strided
func.func @slice_strided(%a: tensor<7x9xf32>) -> tensor<7x3xf32> {
  // CHECK: train.slice {{.*}}train.cost = {flops = 0 : i64, read = 84 : i64, written = 84 : i64}
  %0 = train.slice %a {limit = array<i64: 7, 9>, start = array<i64: 0, 1>, strides = array<i64: 1, 3>} : (tensor<7x9xf32>) -> tensor<7x3xf32>
  return %0 : tensor<7x3xf32>
}

// -----

// A bf16 slice of every dim.
// CHECK-LABEL: func.func @slice_bf16
func.func @slice_bf16(%a: tensor<6x8xbf16>) -> tensor<4x4xbf16> {
  // CHECK: train.slice {{.*}}train.cost = {flops = 0 : i64, read = 32 : i64, written = 32 : i64}
  %0 = train.slice %a {limit = array<i64: 5, 4>, start = array<i64: 1, 0>} : (tensor<6x8xbf16>) -> tensor<4x4xbf16>
  return %0 : tensor<4x4xbf16>
}

// -----

// concat reads every operand once.
// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<3x7xf32> {
  // CHECK: train.concat {{.*}}train.cost = {flops = 0 : i64, read = 84 : i64, written = 84 : i64}
  %0 = train.concat %a, %b {dim = 1 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// concat of three operands.
// CHECK-LABEL: func.func @concat_three
func.func @concat_three(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>, %c: tensor<1x4xf32>) -> tensor<6x4xf32> {
  // CHECK: train.concat {{.*}}train.cost = {flops = 0 : i64, read = 96 : i64, written = 96 : i64}
  %0 = train.concat %a, %b, %c {dim = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// pad reads the operand and writes the padded result.
// CHECK-LABEL: func.func @pad
func.func @pad(%a: tensor<3x4x5xf32>) -> tensor<3x7x5xf32> {
  // CHECK: train.pad {{.*}}train.cost = {flops = 0 : i64, read = 240 : i64, written = 420 : i64}
  %0 = train.pad %a {high = array<i64: 0, 2, 0>, low = array<i64: 0, 1, 0>} : (tensor<3x4x5xf32>) -> tensor<3x7x5xf32>
  return %0 : tensor<3x7x5xf32>
}

// -----

// gather reads the indices and the 3*5 rows of 6 it returns, not the table.
// CHECK-LABEL: func.func @gather
func.func @gather(%table: tensor<11x6xf32>, %idx: tensor<3x5xi32>) -> tensor<3x5x6xf32> {
  // CHECK: train.gather {{.*}}train.cost = {flops = 0 : i64, read = 420 : i64, written = 360 : i64}
  %0 = train.gather %table, %idx : (tensor<11x6xf32>, tensor<3x5xi32>) -> tensor<3x5x6xf32>
  return %0 : tensor<3x5x6xf32>
}

// -----

// gather with i64 indices from a rank-1 table.
// CHECK-LABEL: func.func @gather_rank1_table
func.func @gather_rank1_table(%table: tensor<11xf32>, %idx: tensor<4xi64>) -> tensor<4xf32> {
  // CHECK: train.gather {{.*}}train.cost = {flops = 0 : i64, read = 48 : i64, written = 16 : i64}
  %0 = train.gather %table, %idx : (tensor<11xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// gather of bf16 rows.
// CHECK-LABEL: func.func @gather_bf16
func.func @gather_bf16(%table: tensor<10x2x3xbf16>, %idx: tensor<7xi32>) -> tensor<7x2x3xbf16> {
  // CHECK: train.gather {{.*}}train.cost = {flops = 0 : i64, read = 112 : i64, written = 84 : i64}
  %0 = train.gather %table, %idx : (tensor<10x2x3xbf16>, tensor<7xi32>) -> tensor<7x2x3xbf16>
  return %0 : tensor<7x2x3xbf16>
}

// -----

// scatter_add: one add per update element; reads init, indices and updates.
// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%init: tensor<11x6xf32>, %idx: tensor<3x5xi32>, %upd: tensor<3x5x6xf32>) -> tensor<11x6xf32> {
  // CHECK: train.scatter_add {{.*}}train.cost = {flops = 90 : i64, read = 684 : i64, written = 264 : i64}
  %0 = train.scatter_add %init, %idx, %upd : (tensor<11x6xf32>, tensor<3x5xi32>, tensor<3x5x6xf32>) -> tensor<11x6xf32>
  return %0 : tensor<11x6xf32>
}

// -----

// scatter_add into a rank-1 table with i64 indices.
// CHECK-LABEL: func.func @scatter_add_rank1
func.func @scatter_add_rank1(%init: tensor<11xf32>, %idx: tensor<4xi64>, %upd: tensor<4xf32>) -> tensor<11xf32> {
  // CHECK: train.scatter_add {{.*}}train.cost = {flops = 4 : i64, read = 92 : i64, written = 44 : i64}
  %0 = train.scatter_add %init, %idx, %upd : (tensor<11xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<11xf32>
  return %0 : tensor<11xf32>
}

// -----

// iota reads nothing and writes its result.
// CHECK-LABEL: func.func @iota
func.func @iota() -> tensor<3x5xi32> {
  // CHECK: train.iota {{.*}}train.cost = {flops = 0 : i64, read = 0 : i64, written = 60 : i64}
  %0 = train.iota {dim = 1 : i64} : () -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

// A constant reads nothing and writes its result.
// CHECK-LABEL: func.func @constant
func.func @constant() -> tensor<2x3xf32> {
  // CHECK: train.constant {{.*}}train.cost = {flops = 0 : i64, read = 0 : i64, written = 24 : i64}
  %0 = train.constant dense<1.000000e+00> : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// dropout: 4 operations per element
//===----------------------------------------------------------------------===//

// dropout reads the operand and the i64 seed.
// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x6xf32>, %seed: tensor<i64>) -> tensor<4x6xf32> {
  // CHECK: train.dropout {{.*}}train.cost = {flops = 96 : i64, read = 104 : i64, written = 96 : i64}
  %0 = train.dropout %x, %seed {rate = 1.000000e-01 : f64} : (tensor<4x6xf32>, tensor<i64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Each index offset is read as one 8-byte word.
// CHECK-LABEL: func.func @dropout_offsets
func.func @dropout_offsets(%x: tensor<4x6xf32>, %seed: tensor<i64>, %o0: index, %o1: index) -> tensor<4x6xf32> {
  // CHECK: train.dropout {{.*}}train.cost = {flops = 96 : i64, read = 120 : i64, written = 96 : i64}
  %0 = train.dropout %x, %seed, %o0, %o1 {global_shape = array<i64: 8, 12>, rate = 1.000000e-01 : f64} : (tensor<4x6xf32>, tensor<i64>, index, index) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Optimizer updates: 5 (sgd) or 12 (adam, adamw) operations per element
//===----------------------------------------------------------------------===//

// sgd without momentum: reads param, grad and lr.
// CHECK-LABEL: func.func @sgd
func.func @sgd(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %lr: tensor<f32>) -> tensor<3x5xf32> {
  // CHECK: train.sgd {{.*}}train.cost = {flops = 75 : i64, read = 124 : i64, written = 60 : i64}
  %0 = train.sgd %p, %g, %lr : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// sgd with momentum also reads and writes the buffer.
// CHECK-LABEL: func.func @sgd_momentum
func.func @sgd_momentum(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %lr: tensor<f32>, %buf: tensor<3x5xf32>) {
  // CHECK: train.sgd {{.*}}train.cost = {flops = 75 : i64, read = 184 : i64, written = 120 : i64}
  %0, %1 = train.sgd %p, %g, %lr, %buf {momentum = 9.000000e-01 : f64} : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>, tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>)
  return
}

// -----

// Nesterov sgd in bf16.
// CHECK-LABEL: func.func @sgd_nesterov_bf16
func.func @sgd_nesterov_bf16(%p: tensor<7xbf16>, %g: tensor<7xbf16>, %lr: tensor<bf16>, %buf: tensor<7xbf16>) {
  // CHECK: train.sgd {{.*}}train.cost = {flops = 35 : i64, read = 44 : i64, written = 28 : i64}
  %0, %1 = train.sgd %p, %g, %lr, %buf {momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-04 : f64} : (tensor<7xbf16>, tensor<7xbf16>, tensor<bf16>, tensor<7xbf16>) -> (tensor<7xbf16>, tensor<7xbf16>)
  return
}

// -----

// adam with a scalar i64 step: 12 * 15 FLOPs; the step is read and written.
// CHECK-LABEL: func.func @adam
func.func @adam(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %m: tensor<3x5xf32>, %v: tensor<3x5xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // CHECK: train.adam {{.*}}train.cost = {flops = 180 : i64, read = 252 : i64, written = 188 : i64}
  %0:4 = train.adam %p, %g, %m, %v, %step, %lr : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<i64>, tensor<f32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<i64>)
  return
}

// -----

// adamw in bf16 with an f32 step.
// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<7xbf16>, %g: tensor<7xbf16>, %m: tensor<7xbf16>, %v: tensor<7xbf16>, %step: tensor<f32>, %lr: tensor<f32>) {
  // CHECK: train.adamw {{.*}}train.cost = {flops = 84 : i64, read = 64 : i64, written = 46 : i64}
  %0:4 = train.adamw %p, %g, %m, %v, %step, %lr : (tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<f32>, tensor<f32>) -> (tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<f32>)
  return
}
