// RUN: dist-opt %s -split-input-file --train-test-sharding-rule | FileCheck %s

// Every train op states its ShardingRuleOpInterface rule; the expectations
// below are derived from the op descriptions in TrainOps.td. Dims have
// distinct sizes so that a factor mapped to the wrong dim shows. Factors are
// named i, j, k, ... in creation order.

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

// Operands of the result's shape share one pass factor per dim; add, sub and
// neg are linear (partial sums pass through them).
// CHECK-LABEL: func.func @add_same_shape
func.func @add_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.add {{.*}}train.sharding_rule = "([i, j], [i, j])->([i, j]) {i=2, j=3} linear"
  %0 = train.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A lower-rank operand aligns with the trailing dims of the result.
// CHECK-LABEL: func.func @add_bias
func.func @add_bias(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.add {{.*}}train.sharding_rule = "([i, j], [j])->([i, j]) {i=2, j=3} linear"
  %0 = train.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Size-1 dims broadcast against larger ones map no factor.
// CHECK-LABEL: func.func @sub_broadcast_size_one
func.func @sub_broadcast_size_one(%a: tensor<5x1x7xf32>, %b: tensor<3x1xf32>) -> tensor<5x3x7xf32> {
  // CHECK: train.sub {{.*}}train.sharding_rule = "([i, 1, k], [j, 1])->([i, j, k]) {i=5, j=3, k=7} linear"
  %0 = train.sub %a, %b : (tensor<5x1x7xf32>, tensor<3x1xf32>) -> tensor<5x3x7xf32>
  return %0 : tensor<5x3x7xf32>
}

// -----

// A scalar operand maps no factor.
// CHECK-LABEL: func.func @mul_scalar
func.func @mul_scalar(%a: tensor<4x5xf32>, %b: tensor<f32>) -> tensor<4x5xf32> {
  // CHECK: train.mul {{.*}}train.sharding_rule = "([i, j], [])->([i, j]) {i=4, j=5}"
  %0 = train.mul %a, %b : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// div is pointwise.
// CHECK-LABEL: func.func @div
func.func @div(%a: tensor<2x7xf16>, %b: tensor<2x7xf16>) -> tensor<2x7xf16> {
  // CHECK: train.div {{.*}}train.sharding_rule = "([i, j], [i, j])->([i, j]) {i=2, j=7}"
  %0 = train.div %a, %b : (tensor<2x7xf16>, tensor<2x7xf16>) -> tensor<2x7xf16>
  return %0 : tensor<2x7xf16>
}

// -----

// Both operands broadcast: each maps only the dim where it is not 1.
// CHECK-LABEL: func.func @max_outer_broadcast
func.func @max_outer_broadcast(%a: tensor<1x5xf32>, %b: tensor<3x1xf32>) -> tensor<3x5xf32> {
  // CHECK: train.max {{.*}}train.sharding_rule = "([1, j], [i, 1])->([i, j]) {i=3, j=5}"
  %0 = train.max %a, %b : (tensor<1x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// min is pointwise on integers too.
// CHECK-LABEL: func.func @min
func.func @min(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<6xi32> {
  // CHECK: train.min {{.*}}train.sharding_rule = "([i], [i])->([i]) {i=6}"
  %0 = train.min %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// pow broadcasts like the other binary ops.
// CHECK-LABEL: func.func @pow
func.func @pow(%a: tensor<3x2xbf16>, %b: tensor<2xbf16>) -> tensor<3x2xbf16> {
  // CHECK: train.pow {{.*}}train.sharding_rule = "([i, j], [j])->([i, j]) {i=3, j=2}"
  %0 = train.pow %a, %b : (tensor<3x2xbf16>, tensor<2xbf16>) -> tensor<3x2xbf16>
  return %0 : tensor<3x2xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

// Unary ops: one pass factor per dim.
// CHECK-LABEL: func.func @neg
func.func @neg(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: train.neg {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=2, j=3} linear"
  %0 = train.neg %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A unary op on a scalar has no factor at all.
// CHECK-LABEL: func.func @neg_scalar
func.func @neg_scalar(%a: tensor<f32>) -> tensor<f32> {
  // CHECK: train.neg {{.*}}train.sharding_rule = "([])->([]) {} linear"
  %0 = train.neg %a : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// abs is pointwise.
// CHECK-LABEL: func.func @abs
func.func @abs(%a: tensor<5x7xi32>) -> tensor<5x7xi32> {
  // CHECK: train.abs {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=5, j=7}"
  %0 = train.abs %a : (tensor<5x7xi32>) -> tensor<5x7xi32>
  return %0 : tensor<5x7xi32>
}

// -----

// exp is pointwise.
// CHECK-LABEL: func.func @exp
func.func @exp(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.exp {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=3, j=5}"
  %0 = train.exp %a : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// log is pointwise.
// CHECK-LABEL: func.func @log
func.func @log(%a: tensor<7xf16>) -> tensor<7xf16> {
  // CHECK: train.log {{.*}}train.sharding_rule = "([i])->([i]) {i=7}"
  %0 = train.log %a : (tensor<7xf16>) -> tensor<7xf16>
  return %0 : tensor<7xf16>
}

// -----

// sqrt is pointwise.
// CHECK-LABEL: func.func @sqrt
func.func @sqrt(%a: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  // CHECK: train.sqrt {{.*}}train.sharding_rule = "([i, j, k])->([i, j, k]) {i=2, j=3, k=5}"
  %0 = train.sqrt %a : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// rsqrt is pointwise.
// CHECK-LABEL: func.func @rsqrt
func.func @rsqrt(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // CHECK: train.rsqrt {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=4, j=3}"
  %0 = train.rsqrt %a : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// tanh is pointwise.
// CHECK-LABEL: func.func @tanh
func.func @tanh(%a: tensor<5x2xbf16>) -> tensor<5x2xbf16> {
  // CHECK: train.tanh {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=5, j=2}"
  %0 = train.tanh %a : (tensor<5x2xbf16>) -> tensor<5x2xbf16>
  return %0 : tensor<5x2xbf16>
}

// -----

// sigmoid is pointwise.
// CHECK-LABEL: func.func @sigmoid
func.func @sigmoid(%a: tensor<3x7xf32>) -> tensor<3x7xf32> {
  // CHECK: train.sigmoid {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=3, j=7}"
  %0 = train.sigmoid %a : (tensor<3x7xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// relu is pointwise.
// CHECK-LABEL: func.func @relu
func.func @relu(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.relu {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=2, j=5}"
  %0 = train.relu %a : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// gelu is pointwise.
// CHECK-LABEL: func.func @gelu
func.func @gelu(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // CHECK: train.gelu {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=3, j=4}"
  %0 = train.gelu %a : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Factors after z are named a, b, ...: a rank-20 tensor has factors i..z, a, b.
// CHECK-LABEL: func.func @factor_names_after_z
func.func @factor_names_after_z(%a: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3x2xf32>) -> tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3x2xf32> {
  // CHECK: train.relu {{.*}}train.sharding_rule = "([i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z, a, b])->([i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z, a, b]) {i=1, j=1, k=1, l=1, m=1, n=1, o=1, p=1, q=1, r=1, s=1, t=1, u=1, v=1, w=1, x=1, y=1, z=1, a=3, b=2}"
  %0 = train.relu %a : (tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3x2xf32>) -> tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3x2xf32>
  return %0 : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3x2xf32>
}

// -----

//===----------------------------------------------------------------------===//
// compare, select, convert
//===----------------------------------------------------------------------===//

// compare against a scalar: the scalar maps no factor.
// CHECK-LABEL: func.func @compare_scalar
func.func @compare_scalar(%a: tensor<4x6xf32>, %b: tensor<f32>) -> tensor<4x6xi1> {
  // CHECK: train.compare {{.*}}train.sharding_rule = "([i, j], [])->([i, j]) {i=4, j=6}"
  %0 = train.compare %a, %b {direction = #train.compare_direction<gt>} : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xi1>
  return %0 : tensor<4x6xi1>
}

// -----

// compare broadcasts both operands.
// CHECK-LABEL: func.func @compare_broadcast
func.func @compare_broadcast(%a: tensor<3x1xi32>, %b: tensor<5xi32>) -> tensor<3x5xi1> {
  // CHECK: train.compare {{.*}}train.sharding_rule = "([i, 1], [j])->([i, j]) {i=3, j=5}"
  %0 = train.compare %a, %b {direction = #train.compare_direction<eq>} : (tensor<3x1xi32>, tensor<5xi32>) -> tensor<3x5xi1>
  return %0 : tensor<3x5xi1>
}

// -----

// select: the condition and on_true share the result's factors.
// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<2x3xi1>, %t: tensor<2x3xf32>, %f: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: train.select {{.*}}train.sharding_rule = "([i, j], [i, j], [])->([i, j]) {i=2, j=3}"
  %0 = train.select %c, %t, %f : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// select with a broadcast condition and a lower-rank on_true.
// CHECK-LABEL: func.func @select_broadcast
func.func @select_broadcast(%c: tensor<3x1xi1>, %t: tensor<5xf32>, %f: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.select {{.*}}train.sharding_rule = "([i, 1], [j], [i, j])->([i, j]) {i=3, j=5}"
  %0 = train.select %c, %t, %f : (tensor<3x1xi1>, tensor<5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// convert is pointwise across element types.
// CHECK-LABEL: func.func @convert
func.func @convert(%a: tensor<4x5xf32>) -> tensor<4x5xbf16> {
  // CHECK: train.convert {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=4, j=5}"
  %0 = train.convert %a : (tensor<4x5xf32>) -> tensor<4x5xbf16>
  return %0 : tensor<4x5xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// [m, k] x [k, n]: m, n pass, k is a reduction factor.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([i, k], [k, j])->([i, j]) {i=2, j=5, k=3} reduction={k}"
  %0 = train.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// transpose_rhs: rhs is [n, k].
// CHECK-LABEL: func.func @matmul_transpose_rhs
func.func @matmul_transpose_rhs(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([i, k], [j, k])->([i, j]) {i=2, j=5, k=3} reduction={k}"
  %0 = train.matmul %a, %b {transpose_rhs} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// transpose_lhs: lhs is [k, m].
// CHECK-LABEL: func.func @matmul_transpose_lhs
func.func @matmul_transpose_lhs(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([k, i], [k, j])->([i, j]) {i=2, j=5, k=3} reduction={k}"
  %0 = train.matmul %a, %b {transpose_lhs} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Both transposes: [k, m] x [n, k].
// CHECK-LABEL: func.func @matmul_transpose_both
func.func @matmul_transpose_both(%a: tensor<3x2xf32>, %b: tensor<5x3xf32>) -> tensor<2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([k, i], [j, k])->([i, j]) {i=2, j=5, k=3} reduction={k}"
  %0 = train.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<3x2xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Batched matmul (bmm): the batch dim is a pass factor of all three tensors.
// CHECK-LABEL: func.func @matmul_batch
func.func @matmul_batch(%a: tensor<7x2x3xf32>, %b: tensor<7x3x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([i, j, l], [i, l, k])->([i, j, k]) {i=7, j=2, k=5, l=3} reduction={l}"
  %0 = train.matmul %a, %b : (tensor<7x2x3xf32>, tensor<7x3x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// A linear layer: the 2-D weight is shared by every batch and maps no batch
// factor.
// CHECK-LABEL: func.func @matmul_shared_weight
func.func @matmul_shared_weight(%x: tensor<7x2x3xf32>, %w: tensor<5x3xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([i, j, l], [k, l])->([i, j, k]) {i=7, j=2, k=5, l=3} reduction={l}"
  %0 = train.matmul %x, %w {transpose_rhs} : (tensor<7x2x3xf32>, tensor<5x3xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// A shared 2-D lhs against a batched rhs.
// CHECK-LABEL: func.func @matmul_shared_lhs
func.func @matmul_shared_lhs(%a: tensor<2x3xf32>, %b: tensor<7x3x5xf32>) -> tensor<7x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([j, l], [i, l, k])->([i, j, k]) {i=7, j=2, k=5, l=3} reduction={l}"
  %0 = train.matmul %a, %b : (tensor<2x3xf32>, tensor<7x3x5xf32>) -> tensor<7x2x5xf32>
  return %0 : tensor<7x2x5xf32>
}

// -----

// Two batch dims with a transposed lhs (attention's scores-gradient shape).
// CHECK-LABEL: func.func @matmul_two_batch_dims_transpose_lhs
func.func @matmul_two_batch_dims_transpose_lhs(%a: tensor<7x11x3x2xf32>, %b: tensor<7x11x3x5xf32>) -> tensor<7x11x2x5xf32> {
  // CHECK: train.matmul {{.*}}train.sharding_rule = "([i, j, m, k], [i, j, m, l])->([i, j, k, l]) {i=7, j=11, k=2, l=5, m=3} reduction={m}"
  %0 = train.matmul %a, %b {transpose_lhs} : (tensor<7x11x3x2xf32>, tensor<7x11x3x5xf32>) -> tensor<7x11x2x5xf32>
  return %0 : tensor<7x11x2x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Convolutions: input [n, c, h, w], filter [f, c / groups, kh, kw]
//===----------------------------------------------------------------------===//

// conv2d: n, f pass; c reduces; spatial and kernel dims need replication.
// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<4x3x10x7xf32>, %w: tensor<5x3x3x2xf32>) -> tensor<4x5x8x6xf32> {
  // CHECK: train.conv2d {{.*}}train.sharding_rule = "([i, k, l, o], [j, k, m, p])->([i, j, n, q]) {i=4, j=5, k=3, l=10, m=3, n=8, o=7, p=2, q=6} reduction={k} need_replication={l, m, n, o, p, q}"
  %0 = train.conv2d %x, %w : (tensor<4x3x10x7xf32>, tensor<5x3x3x2xf32>) -> tensor<4x5x8x6xf32>
  return %0 : tensor<4x5x8x6xf32>
}

// -----

// Grouped conv2d (groups = 3, 6 -> 21 channels): the channel dims are
// compound, group (j) major and channels per group minor.
// CHECK-LABEL: func.func @conv2d_groups
func.func @conv2d_groups(%x: tensor<5x6x11x13xf32>, %w: tensor<21x2x4x8xf32>) -> tensor<5x21x6x9xf32> {
  // CHECK: train.conv2d {{.*}}train.sharding_rule = "([i, jl, m, p], [jk, l, n, q])->([i, jk, o, r]) {i=5, j=3, k=7, l=2, m=11, n=4, o=6, p=13, q=8, r=9} reduction={l} need_replication={m, n, o, p, q, r}"
  %0 = train.conv2d %x, %w {groups = 3 : i64, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x6x11x13xf32>, tensor<21x2x4x8xf32>) -> tensor<5x21x6x9xf32>
  return %0 : tensor<5x21x6x9xf32>
}

// -----

// conv2d_backward_input sums over the output channels f, which the result
// (the input gradient) does not map: f is the reduction factor.
// CHECK-LABEL: func.func @conv2d_backward_input
func.func @conv2d_backward_input(%dy: tensor<4x5x8x6xf32>, %w: tensor<5x3x3x2xf32>) -> tensor<4x3x10x7xf32> {
  // CHECK: train.conv2d_backward_input {{.*}}train.sharding_rule = "([i, j, n, q], [j, k, m, p])->([i, k, l, o]) {i=4, j=5, k=3, l=10, m=3, n=8, o=7, p=2, q=6} reduction={j} need_replication={l, m, n, o, p, q}"
  %0 = train.conv2d_backward_input %dy, %w {input_size = array<i64: 10, 7>} : (tensor<4x5x8x6xf32>, tensor<5x3x3x2xf32>) -> tensor<4x3x10x7xf32>
  return %0 : tensor<4x3x10x7xf32>
}

// -----

// Grouped conv2d_backward_input: compound channel dims as in the forward op.
// CHECK-LABEL: func.func @conv2d_backward_input_groups
func.func @conv2d_backward_input_groups(%dy: tensor<5x21x6x9xf32>, %w: tensor<21x2x4x8xf32>) -> tensor<5x6x11x13xf32> {
  // CHECK: train.conv2d_backward_input {{.*}}train.sharding_rule = "([i, jk, o, r], [jk, l, n, q])->([i, jl, m, p]) {i=5, j=3, k=7, l=2, m=11, n=4, o=6, p=13, q=8, r=9} reduction={k} need_replication={m, n, o, p, q, r}"
  %0 = train.conv2d_backward_input %dy, %w {groups = 3 : i64, input_size = array<i64: 11, 13>, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x21x6x9xf32>, tensor<21x2x4x8xf32>) -> tensor<5x6x11x13xf32>
  return %0 : tensor<5x6x11x13xf32>
}

// -----

// conv2d_backward_filter: the batch dim is the reduction factor.
// CHECK-LABEL: func.func @conv2d_backward_filter
func.func @conv2d_backward_filter(%x: tensor<4x3x10x7xf32>, %dy: tensor<4x5x8x6xf32>) -> tensor<5x3x3x2xf32> {
  // CHECK: train.conv2d_backward_filter {{.*}}train.sharding_rule = "([i, k, l, o], [i, j, n, q])->([j, k, m, p]) {i=4, j=5, k=3, l=10, m=3, n=8, o=7, p=2, q=6} reduction={i} need_replication={l, m, n, o, p, q}"
  %0 = train.conv2d_backward_filter %x, %dy {kernel_size = array<i64: 3, 2>} : (tensor<4x3x10x7xf32>, tensor<4x5x8x6xf32>) -> tensor<5x3x3x2xf32>
  return %0 : tensor<5x3x3x2xf32>
}

// -----

// Grouped conv2d_backward_filter: the filter gradient's dim 0 is compound.
// CHECK-LABEL: func.func @conv2d_backward_filter_groups
func.func @conv2d_backward_filter_groups(%x: tensor<5x6x11x13xf32>, %dy: tensor<5x21x6x9xf32>) -> tensor<21x2x4x8xf32> {
  // CHECK: train.conv2d_backward_filter {{.*}}train.sharding_rule = "([i, jl, m, p], [i, jk, o, r])->([jk, l, n, q]) {i=5, j=3, k=7, l=2, m=11, n=4, o=6, p=13, q=8, r=9} reduction={i} need_replication={m, n, o, p, q, r}"
  %0 = train.conv2d_backward_filter %x, %dy {groups = 3 : i64, kernel_size = array<i64: 4, 8>, padding = array<i64: 2, 1, 1, 2>, strides = array<i64: 2, 1>} : (tensor<5x6x11x13xf32>, tensor<5x21x6x9xf32>) -> tensor<21x2x4x8xf32>
  return %0 : tensor<21x2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

// The reduced dim is a reduction factor the result does not map.
// CHECK-LABEL: func.func @reduce_sum
func.func @reduce_sum(%a: tensor<3x5x7xf32>) -> tensor<3x7xf32> {
  // CHECK: train.reduce {{.*}}train.sharding_rule = "([i, j, k])->([i, k]) {i=3, j=5, k=7} reduction={j} linear"
  %0 = train.reduce %a {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<3x5x7xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// keepdims: the kept size-1 dims map no factor; a max / min reduces its
// dims as a sum does but combines them by max / min (the partitioner
// all-reduces right after the op instead of gathering the input).
// CHECK-LABEL: func.func @reduce_max_keepdims
func.func @reduce_max_keepdims(%a: tensor<3x5x7xf32>) -> tensor<1x5x1xf32> {
  // CHECK: train.reduce {{.*}}train.sharding_rule = "([i, j, k])->([1, j, 1]) {i=3, j=5, k=7} reduction={i, k} combiner=max"
  %0 = train.reduce %a {dims = array<i64: 0, 2>, keepdims, kind = #train.reduce_kind<max>} : (tensor<3x5x7xf32>) -> tensor<1x5x1xf32>
  return %0 : tensor<1x5x1xf32>
}

// -----

// dims in any order; a mean averages over its reduced factors.
// CHECK-LABEL: func.func @reduce_mean_unordered_dims
func.func @reduce_mean_unordered_dims(%a: tensor<3x5x7xf16>) -> tensor<5xf16> {
  // CHECK: train.reduce {{.*}}train.sharding_rule = "([i, j, k])->([j]) {i=3, j=5, k=7} reduction={i, k} mean={i, k} linear"
  %0 = train.reduce %a {dims = array<i64: 2, 0>, kind = #train.reduce_kind<mean>} : (tensor<3x5x7xf16>) -> tensor<5xf16>
  return %0 : tensor<5xf16>
}

// -----

// Reducing every dim gives a scalar.
// CHECK-LABEL: func.func @reduce_min_all
func.func @reduce_min_all(%a: tensor<4x6xi32>) -> tensor<i32> {
  // CHECK: train.reduce {{.*}}train.sharding_rule = "([i, j])->([]) {i=4, j=6} reduction={i, j} combiner=min"
  %0 = train.reduce %a {dims = array<i64: 0, 1>, kind = #train.reduce_kind<min>} : (tensor<4x6xi32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// Reducing over no dims is the identity: every factor passes.
// CHECK-LABEL: func.func @reduce_no_dims
func.func @reduce_no_dims(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.reduce {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=3, j=5} linear"
  %0 = train.reduce %a {dims = array<i64>, kind = #train.reduce_kind<sum>} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// softmax: the softmax dim needs replication.
// CHECK-LABEL: func.func @softmax
func.func @softmax(%a: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  // CHECK: train.softmax {{.*}}train.sharding_rule = "([i, j, k])->([i, j, k]) {i=3, j=5, k=7} need_replication={j}"
  %0 = train.softmax %a {dim = 1 : i64} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  return %0 : tensor<3x5x7xf32>
}

// -----

// A negative dim counts from the back.
// CHECK-LABEL: func.func @softmax_negative_dim
func.func @softmax_negative_dim(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // CHECK: train.softmax {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=4, j=6} need_replication={j}"
  %0 = train.softmax %a {dim = -1 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// log_softmax: the softmax dim needs replication.
// CHECK-LABEL: func.func @log_softmax
func.func @log_softmax(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  // CHECK: train.log_softmax {{.*}}train.sharding_rule = "([i, j])->([i, j]) {i=5, j=3} need_replication={i}"
  %0 = train.log_softmax %a {dim = 0 : i64} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// softmax_backward: both operands map every factor.
// CHECK-LABEL: func.func @softmax_backward
func.func @softmax_backward(%dy: tensor<2x7xf32>, %y: tensor<2x7xf32>) -> tensor<2x7xf32> {
  // CHECK: train.softmax_backward {{.*}}train.sharding_rule = "([i, j], [i, j])->([i, j]) {i=2, j=7} need_replication={j}"
  %0 = train.softmax_backward %dy, %y {dim = 1 : i64} : (tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// log_softmax_backward with a negative dim.
// CHECK-LABEL: func.func @log_softmax_backward
func.func @log_softmax_backward(%dy: tensor<3x2x5xf32>, %y: tensor<3x2x5xf32>) -> tensor<3x2x5xf32> {
  // CHECK: train.log_softmax_backward {{.*}}train.sharding_rule = "([i, j, k], [i, j, k])->([i, j, k]) {i=3, j=2, k=5} need_replication={k}"
  %0 = train.log_softmax_backward %dy, %y {dim = -1 : i64} : (tensor<3x2x5xf32>, tensor<3x2x5xf32>) -> tensor<3x2x5xf32>
  return %0 : tensor<3x2x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

// layer_norm over the two trailing dims: the leading dim passes (and maps
// mean and rstd), the normalized dims need replication (and map the weights).
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<3x5x7xf32>, %g: tensor<5x7xf32>, %b: tensor<5x7xf32>) {
  // CHECK: train.layer_norm {{.*}}train.sharding_rule = "([i, j, k], [j, k], [j, k])->([i, j, k], [i], [i]) {i=3, j=5, k=7} need_replication={j, k}"
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<3x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>) -> (tensor<3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// layer_norm over the last dim: two leading dims.
// CHECK-LABEL: func.func @layer_norm_last_dim
func.func @layer_norm_last_dim(%x: tensor<2x3x5xf32>, %g: tensor<5xf32>, %b: tensor<5xf32>) {
  // CHECK: train.layer_norm {{.*}}train.sharding_rule = "([i, j, k], [k], [k])->([i, j, k], [i, j], [i, j]) {i=2, j=3, k=5} need_replication={k}"
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

// layer_norm over every dim (axis 0): scalar statistics, nothing passes.
// CHECK-LABEL: func.func @layer_norm_axis_zero
func.func @layer_norm_axis_zero(%x: tensor<4x6xf32>, %g: tensor<4x6xf32>, %b: tensor<4x6xf32>) {
  // CHECK: train.layer_norm {{.*}}train.sharding_rule = "([i, j], [i, j], [i, j])->([i, j], [], []) {i=4, j=6} need_replication={i, j}"
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<f32>, tensor<f32>)
  return
}

// -----

// layer_norm_backward: the leading dims are reduction factors (grad_weight
// and grad_bias do not map them), the normalized dims need replication.
// CHECK-LABEL: func.func @layer_norm_backward
func.func @layer_norm_backward(%dy: tensor<3x5x7xf32>, %x: tensor<3x5x7xf32>, %mean: tensor<3xf32>, %rstd: tensor<3xf32>, %g: tensor<5x7xf32>) {
  // CHECK: train.layer_norm_backward {{.*}}train.sharding_rule = "([i, j, k], [i, j, k], [i], [i], [j, k])->([i, j, k], [j, k], [j, k]) {i=3, j=5, k=7} reduction={i} need_replication={j, k}"
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<5x7xf32>) -> (tensor<3x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>)
  return
}

// -----

// layer_norm_backward with two leading dims.
// CHECK-LABEL: func.func @layer_norm_backward_last_dim
func.func @layer_norm_backward_last_dim(%dy: tensor<2x3x5xbf16>, %x: tensor<2x3x5xbf16>, %mean: tensor<2x3xbf16>, %rstd: tensor<2x3xbf16>, %g: tensor<5xbf16>) {
  // CHECK: train.layer_norm_backward {{.*}}train.sharding_rule = "([i, j, k], [i, j, k], [i, j], [i, j], [k])->([i, j, k], [k], [k]) {i=2, j=3, k=5} reduction={i, j} need_replication={k}"
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 2 : i64} : (tensor<2x3x5xbf16>, tensor<2x3x5xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<5xbf16>) -> (tensor<2x3x5xbf16>, tensor<5xbf16>, tensor<5xbf16>)
  return
}

// -----

// batch_norm: the channel dim passes (and maps the per-channel tensors); the
// batch and spatial dims need replication.
// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x3x5x7xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) {
  // CHECK: train.batch_norm {{.*}}train.sharding_rule = "([i, j, k, l], [j], [j])->([i, j, k, l], [j], [j]) {i=2, j=3, k=5, l=7} need_replication={i, k, l}"
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm of a rank-2 [n, c] input.
// CHECK-LABEL: func.func @batch_norm_rank2
func.func @batch_norm_rank2(%x: tensor<4x6xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>) {
  // CHECK: train.batch_norm {{.*}}train.sharding_rule = "([i, j], [j], [j])->([i, j], [j], [j]) {i=4, j=6} need_replication={i}"
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

// batch_norm_backward: as batch_norm, over its five operands.
// CHECK-LABEL: func.func @batch_norm_backward
func.func @batch_norm_backward(%dy: tensor<2x3x5x7xf32>, %x: tensor<2x3x5x7xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %g: tensor<3xf32>) {
  // CHECK: train.batch_norm_backward {{.*}}train.sharding_rule = "([i, j, k, l], [i, j, k, l], [j], [j], [j])->([i, j, k, l], [j], [j]) {i=2, j=3, k=5, l=7} need_replication={i, k, l}"
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// max_pool2d: batch and channels pass; input and output spatial dims need
// replication.
// CHECK-LABEL: func.func @max_pool2d
func.func @max_pool2d(%x: tensor<2x5x9x8xf32>) -> tensor<2x5x4x3xf32> {
  // CHECK: train.max_pool2d {{.*}}train.sharding_rule = "([i, j, k, l])->([i, j, m, n]) {i=2, j=5, k=9, l=8, m=4, n=3} need_replication={k, l, m, n}"
  %0 = train.max_pool2d %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 3>} : (tensor<2x5x9x8xf32>) -> tensor<2x5x4x3xf32>
  return %0 : tensor<2x5x4x3xf32>
}

// -----

// max_pool2d_backward: the input gradient has the input's spatial factors.
// CHECK-LABEL: func.func @max_pool2d_backward
func.func @max_pool2d_backward(%dy: tensor<2x5x4x3xf32>, %x: tensor<2x5x9x8xf32>) -> tensor<2x5x9x8xf32> {
  // CHECK: train.max_pool2d_backward {{.*}}train.sharding_rule = "([i, j, k, l], [i, j, m, n])->([i, j, m, n]) {i=2, j=5, k=4, l=3, m=9, n=8} need_replication={k, l, m, n}"
  %0 = train.max_pool2d_backward %dy, %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 3>} : (tensor<2x5x4x3xf32>, tensor<2x5x9x8xf32>) -> tensor<2x5x9x8xf32>
  return %0 : tensor<2x5x9x8xf32>
}

// -----

// avg_pool2d with padding, count_include_pad = false.
// CHECK-LABEL: func.func @avg_pool2d
func.func @avg_pool2d(%x: tensor<3x2x7x13xf32>) -> tensor<3x2x4x5xf32> {
  // CHECK: train.avg_pool2d {{.*}}train.sharding_rule = "([i, j, k, l])->([i, j, m, n]) {i=3, j=2, k=7, l=13, m=4, n=5} need_replication={k, l, m, n}"
  %0 = train.avg_pool2d %x {count_include_pad = false, kernel_size = array<i64: 2, 4>, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<3x2x7x13xf32>) -> tensor<3x2x4x5xf32>
  return %0 : tensor<3x2x4x5xf32>
}

// -----

// avg_pool2d_backward mirrors max_pool2d_backward.
// CHECK-LABEL: func.func @avg_pool2d_backward
func.func @avg_pool2d_backward(%dy: tensor<3x2x4x5xf32>, %x: tensor<3x2x7x13xf32>) -> tensor<3x2x7x13xf32> {
  // CHECK: train.avg_pool2d_backward {{.*}}train.sharding_rule = "([i, j, k, l], [i, j, m, n])->([i, j, m, n]) {i=3, j=2, k=4, l=5, m=7, n=13} need_replication={k, l, m, n}"
  %0 = train.avg_pool2d_backward %dy, %x {kernel_size = array<i64: 2, 4>, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>} : (tensor<3x2x4x5xf32>, tensor<3x2x7x13xf32>) -> tensor<3x2x7x13xf32>
  return %0 : tensor<3x2x7x13xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

// cross_entropy: the batch dim is a reduction factor (the scalar loss maps
// nothing), the class dim needs replication.
// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<6x10xf32>, %labels: tensor<6xi32>) -> tensor<f32> {
  // CHECK: train.cross_entropy {{.*}}train.sharding_rule = "([i, j], [i])->([]) {i=6, j=10} reduction={i} need_replication={j} mean={i}"
  %0 = train.cross_entropy %logits, %labels : (tensor<6x10xf32>, tensor<6xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// cross_entropy with two batch dims and i64 labels.
// CHECK-LABEL: func.func @cross_entropy_two_batch_dims
func.func @cross_entropy_two_batch_dims(%logits: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>) -> tensor<f32> {
  // CHECK: train.cross_entropy {{.*}}train.sharding_rule = "([i, j, k], [i, j])->([]) {i=2, j=3, k=5} reduction={i, j} need_replication={k} mean={i, j}"
  %0 = train.cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// cross_entropy_backward: the gradient maps the batch dim, so it passes; the
// op divides by the number of labels, so the batch dim is a mean factor.
// CHECK-LABEL: func.func @cross_entropy_backward
func.func @cross_entropy_backward(%dl: tensor<f32>, %logits: tensor<6x10xf32>, %labels: tensor<6xi32>) -> tensor<6x10xf32> {
  // CHECK: train.cross_entropy_backward {{.*}}train.sharding_rule = "([], [i, j], [i])->([i, j]) {i=6, j=10} need_replication={j} mean={i}"
  %0 = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<6x10xf32>, tensor<6xi32>) -> tensor<6x10xf32>
  return %0 : tensor<6x10xf32>
}

// -----

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

// Merging dims gives a compound result dim (the ODS example).
// CHECK-LABEL: func.func @reshape_merge
func.func @reshape_merge(%a: tensor<6x4xf32>) -> tensor<24xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([i, j])->([ij]) {i=6, j=4}"
  %0 = train.reshape %a : (tensor<6x4xf32>) -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

// Splitting a dim gives a compound operand dim.
// CHECK-LABEL: func.func @reshape_split
func.func @reshape_split(%a: tensor<24xf32>) -> tensor<2x3x4xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([ijk])->([i, j, k]) {i=2, j=3, k=4}"
  %0 = train.reshape %a : (tensor<24xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Merging the two leading dims keeps the trailing dim a plain factor.
// CHECK-LABEL: func.func @reshape_merge_leading
func.func @reshape_merge_leading(%a: tensor<2x3x5xf32>) -> tensor<6x5xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([i, j, k])->([ij, k]) {i=2, j=3, k=5}"
  %0 = train.reshape %a : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  return %0 : tensor<6x5xf32>
}

// -----

// 6x4 -> 4x6: the common major factor 2 (i) is shared; the coprime rests
// (3x4 vs 2x6) get need-replication factors of their own.
// CHECK-LABEL: func.func @reshape_coprime
func.func @reshape_coprime(%a: tensor<6x4xf32>) -> tensor<4x6xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([ij, m])->([ik, l]) {i=2, j=3, k=2, l=6, m=4} need_replication={j, k, l, m}"
  %0 = train.reshape %a : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// 2x3 -> 3x2: no common factor at all, everything needs replication.
// CHECK-LABEL: func.func @reshape_coprime_all
func.func @reshape_coprime_all(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([i, k])->([j, l]) {i=2, j=3, k=3, l=2} need_replication={i, j, k, l}"
  %0 = train.reshape %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Split and merge across dim boundaries: 6x5 -> 2x15 shares 2, 3 and 5.
// CHECK-LABEL: func.func @reshape_regroup
func.func @reshape_regroup(%a: tensor<6x5xf32>) -> tensor<2x15xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([ij, k])->([i, jk]) {i=2, j=3, k=5}"
  %0 = train.reshape %a : (tensor<6x5xf32>) -> tensor<2x15xf32>
  return %0 : tensor<2x15xf32>
}

// -----

// Size-1 dims map no factor.
// CHECK-LABEL: func.func @reshape_unit_dims
func.func @reshape_unit_dims(%a: tensor<1x6x1xf32>) -> tensor<2x3xf32> {
  // CHECK: train.reshape {{.*}}train.sharding_rule = "([1, ij, 1])->([i, j]) {i=2, j=3}"
  %0 = train.reshape %a : (tensor<1x6x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// transpose, broadcast
//===----------------------------------------------------------------------===//

// Result dim d maps the factor of operand dim permutation[d].
// CHECK-LABEL: func.func @transpose
func.func @transpose(%a: tensor<2x3x5xf32>) -> tensor<5x2x3xf32> {
  // CHECK: train.transpose {{.*}}train.sharding_rule = "([i, j, k])->([k, i, j]) {i=2, j=3, k=5}"
  %0 = train.transpose %a {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
  return %0 : tensor<5x2x3xf32>
}

// -----

// A 2-D transpose.
// CHECK-LABEL: func.func @transpose_2d
func.func @transpose_2d(%a: tensor<4x7xi32>) -> tensor<7x4xi32> {
  // CHECK: train.transpose {{.*}}train.sharding_rule = "([i, j])->([j, i]) {i=4, j=7}"
  %0 = train.transpose %a {permutation = array<i64: 1, 0>} : (tensor<4x7xi32>) -> tensor<7x4xi32>
  return %0 : tensor<7x4xi32>
}

// -----

// Broadcasting a bias: the new dim maps only the result.
// CHECK-LABEL: func.func @broadcast_bias
func.func @broadcast_bias(%a: tensor<5xf32>) -> tensor<3x5xf32> {
  // CHECK: train.broadcast {{.*}}train.sharding_rule = "([j])->([i, j]) {i=3, j=5}"
  %0 = train.broadcast %a {dims = array<i64: 1>} : (tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// A size-1 operand dim broadcast to a larger result dim maps no factor.
// CHECK-LABEL: func.func @broadcast_size_one
func.func @broadcast_size_one(%a: tensor<1x5xf32>) -> tensor<3x4x5xf32> {
  // CHECK: train.broadcast {{.*}}train.sharding_rule = "([1, k])->([i, j, k]) {i=3, j=4, k=5}"
  %0 = train.broadcast %a {dims = array<i64: 0, 2>} : (tensor<1x5xf32>) -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

// Same rank, trailing size-1 dim expanded.
// CHECK-LABEL: func.func @broadcast_same_rank
func.func @broadcast_same_rank(%a: tensor<3x1xf32>) -> tensor<3x7xf32> {
  // CHECK: train.broadcast {{.*}}train.sharding_rule = "([i, 1])->([i, j]) {i=3, j=7}"
  %0 = train.broadcast %a {dims = array<i64: 0, 1>} : (tensor<3x1xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// Broadcasting a scalar.
// CHECK-LABEL: func.func @broadcast_scalar
func.func @broadcast_scalar(%a: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: train.broadcast {{.*}}train.sharding_rule = "([])->([i, j]) {i=2, j=3}"
  %0 = train.broadcast %a {dims = array<i64>} : (tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// slice, concat, pad
//===----------------------------------------------------------------------===//

// Slicing one dim: the untouched dims pass, the sliced one gets a
// need-replication factor per tensor.
// CHECK-LABEL: func.func @slice_one_dim
func.func @slice_one_dim(%a: tensor<6x8x5xf32>) -> tensor<6x6x5xf32> {
  // CHECK: train.slice {{.*}}train.sharding_rule = "([i, j, l])->([i, k, l]) {i=6, j=8, k=6, l=5} need_replication={j, k}"
  %0 = train.slice %a {limit = array<i64: 6, 8, 5>, start = array<i64: 0, 2, 0>} : (tensor<6x8x5xf32>) -> tensor<6x6x5xf32>
  return %0 : tensor<6x6x5xf32>
}

// -----

// A strided slice of the last dim.
// CHECK-LABEL: func.func @slice_strided
func.func @slice_strided(%a: tensor<7x9xf32>) -> tensor<7x3xf32> {
  // CHECK: train.slice {{.*}}train.sharding_rule = "([i, j])->([i, k]) {i=7, j=9, k=3} need_replication={j, k}"
  %0 = train.slice %a {limit = array<i64: 7, 9>, start = array<i64: 0, 1>, strides = array<i64: 1, 3>} : (tensor<7x9xf32>) -> tensor<7x3xf32>
  return %0 : tensor<7x3xf32>
}

// -----

// Slicing every dim: nothing passes.
// CHECK-LABEL: func.func @slice_all_dims
func.func @slice_all_dims(%a: tensor<6x8xf32>) -> tensor<4x4xf32> {
  // CHECK: train.slice {{.*}}train.sharding_rule = "([i, k])->([j, l]) {i=6, j=4, k=8, l=4} need_replication={i, j, k, l}"
  %0 = train.slice %a {limit = array<i64: 5, 4>, start = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// concat: the other dims pass; the concat dim needs replication with one
// factor per tensor.
// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<3x7xf32> {
  // CHECK: train.concat {{.*}}train.sharding_rule = "([i, j], [i, k])->([i, l]) {i=3, j=2, k=5, l=7} need_replication={j, k, l}"
  %0 = train.concat %a, %b {dim = 1 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<3x7xf32>
  return %0 : tensor<3x7xf32>
}

// -----

// concat of three operands along dim 0.
// CHECK-LABEL: func.func @concat_three
func.func @concat_three(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>, %c: tensor<1x4xf32>) -> tensor<6x4xf32> {
  // CHECK: train.concat {{.*}}train.sharding_rule = "([i, m], [j, m], [k, m])->([l, m]) {i=2, j=3, k=1, l=6, m=4} need_replication={i, j, k, l}"
  %0 = train.concat %a, %b, %c {dim = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// pad: unpadded dims pass, the padded dim needs replication.
// CHECK-LABEL: func.func @pad_one_dim
func.func @pad_one_dim(%a: tensor<3x4x5xf32>) -> tensor<3x7x5xf32> {
  // CHECK: train.pad {{.*}}train.sharding_rule = "([i, j, l])->([i, k, l]) {i=3, j=4, k=7, l=5} need_replication={j, k}"
  %0 = train.pad %a {high = array<i64: 0, 2, 0>, low = array<i64: 0, 1, 0>} : (tensor<3x4x5xf32>) -> tensor<3x7x5xf32>
  return %0 : tensor<3x7x5xf32>
}

// -----

// pad with low padding only, on the leading dim, with a fill value.
// CHECK-LABEL: func.func @pad_low_only
func.func @pad_low_only(%a: tensor<2x6xf32>) -> tensor<5x6xf32> {
  // CHECK: train.pad {{.*}}train.sharding_rule = "([i, k])->([j, k]) {i=2, j=5, k=6} need_replication={i, j}"
  %0 = train.pad %a {high = array<i64: 0, 0>, low = array<i64: 3, 0>, value = -1.000000e+00 : f64} : (tensor<2x6xf32>) -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}

// -----

//===----------------------------------------------------------------------===//
// gather, scatter_add
//===----------------------------------------------------------------------===//

// gather: the row dim v is a reduction factor; index dims and d pass.
// CHECK-LABEL: func.func @gather
func.func @gather(%table: tensor<11x6xf32>, %idx: tensor<3x5xi32>) -> tensor<3x5x6xf32> {
  // CHECK: train.gather {{.*}}train.sharding_rule = "([i, l], [j, k])->([j, k, l]) {i=11, j=3, k=5, l=6} reduction={i} positional={i}"
  %0 = train.gather %table, %idx : (tensor<11x6xf32>, tensor<3x5xi32>) -> tensor<3x5x6xf32>
  return %0 : tensor<3x5x6xf32>
}

// -----

// gather from a rank-1 table with i64 indices.
// CHECK-LABEL: func.func @gather_rank1_table
func.func @gather_rank1_table(%table: tensor<11xf32>, %idx: tensor<4xi64>) -> tensor<4xf32> {
  // CHECK: train.gather {{.*}}train.sharding_rule = "([i], [j])->([j]) {i=11, j=4} reduction={i} positional={i}"
  %0 = train.gather %table, %idx : (tensor<11xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// gather with several row dims.
// CHECK-LABEL: func.func @gather_rank3_table
func.func @gather_rank3_table(%table: tensor<10x2x3xbf16>, %idx: tensor<7xi32>) -> tensor<7x2x3xbf16> {
  // CHECK: train.gather {{.*}}train.sharding_rule = "([i, k, l], [j])->([j, k, l]) {i=10, j=7, k=2, l=3} reduction={i} positional={i}"
  %0 = train.gather %table, %idx : (tensor<10x2x3xbf16>, tensor<7xi32>) -> tensor<7x2x3xbf16>
  return %0 : tensor<7x2x3xbf16>
}

// -----

// gather with a scalar index returns one row.
// CHECK-LABEL: func.func @gather_scalar_index
func.func @gather_scalar_index(%table: tensor<11x6xf32>, %idx: tensor<i32>) -> tensor<6xf32> {
  // CHECK: train.gather {{.*}}train.sharding_rule = "([i, j], [])->([j]) {i=11, j=6} reduction={i} positional={i}"
  %0 = train.gather %table, %idx : (tensor<11x6xf32>, tensor<i32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// scatter_add: v and d pass; the index dims are reduction factors (the
// result does not map them).
// CHECK-LABEL: func.func @scatter_add
func.func @scatter_add(%init: tensor<11x6xf32>, %idx: tensor<3x5xi32>, %upd: tensor<3x5x6xf32>) -> tensor<11x6xf32> {
  // CHECK: train.scatter_add {{.*}}train.sharding_rule = "([i, l], [j, k], [j, k, l])->([i, l]) {i=11, j=3, k=5, l=6} reduction={j, k} positional={i}"
  %0 = train.scatter_add %init, %idx, %upd : (tensor<11x6xf32>, tensor<3x5xi32>, tensor<3x5x6xf32>) -> tensor<11x6xf32>
  return %0 : tensor<11x6xf32>
}

// -----

// scatter_add into a rank-1 table.
// CHECK-LABEL: func.func @scatter_add_rank1
func.func @scatter_add_rank1(%init: tensor<11xf32>, %idx: tensor<4xi64>, %upd: tensor<4xf32>) -> tensor<11xf32> {
  // CHECK: train.scatter_add {{.*}}train.sharding_rule = "([i], [j], [j])->([i]) {i=11, j=4} reduction={j} positional={i}"
  %0 = train.scatter_add %init, %idx, %upd : (tensor<11xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<11xf32>
  return %0 : tensor<11xf32>
}

// -----

//===----------------------------------------------------------------------===//
// iota, constant
//===----------------------------------------------------------------------===//

// iota: the iota dim needs replication, the others pass.
// CHECK-LABEL: func.func @iota
func.func @iota() -> tensor<3x5xi32> {
  // CHECK: train.iota {{.*}}train.sharding_rule = "()->([i, j]) {i=3, j=5} need_replication={j}"
  %0 = train.iota {dim = 1 : i64} : () -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

// A constant materializes its whole value: every dim needs replication (a
// shard is a local slice of it).
// CHECK-LABEL: func.func @constant
func.func @constant() -> tensor<2x3xf32> {
  // CHECK: train.constant {{.*}}train.sharding_rule = "()->([i, j]) {i=2, j=3} need_replication={i, j}"
  %0 = train.constant dense<1.000000e+00> : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A scalar constant has no factor.
// CHECK-LABEL: func.func @constant_scalar
func.func @constant_scalar() -> tensor<f32> {
  // CHECK: train.constant {{.*}}train.sharding_rule = "()->([]) {}"
  %0 = train.constant dense<0.000000e+00> : tensor<f32>
  return %0 : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// dropout
//===----------------------------------------------------------------------===//

// dropout: every dim passes; the scalar seed maps nothing.
// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x6xf32>, %seed: tensor<i64>) -> tensor<4x6xf32> {
  // CHECK: train.dropout {{.*}}train.sharding_rule = "([i, j], [])->([i, j]) {i=4, j=6} positional={i, j}"
  %0 = train.dropout %x, %seed {rate = 1.000000e-01 : f64} : (tensor<4x6xf32>, tensor<i64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// dropout of a shard: the index offsets map nothing either.
// CHECK-LABEL: func.func @dropout_offsets
func.func @dropout_offsets(%x: tensor<4x6xf32>, %seed: tensor<i64>, %o0: index, %o1: index) -> tensor<4x6xf32> {
  // CHECK: train.dropout {{.*}}train.sharding_rule = "([i, j], [], [], [])->([i, j]) {i=4, j=6} positional={i, j}"
  %0 = train.dropout %x, %seed, %o0, %o1 {global_shape = array<i64: 8, 12>, rate = 1.000000e-01 : f64} : (tensor<4x6xf32>, tensor<i64>, index, index) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// sgd without momentum: pointwise over the parameter; lr maps nothing.
// CHECK-LABEL: func.func @sgd
func.func @sgd(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %lr: tensor<f32>) -> tensor<3x5xf32> {
  // CHECK: train.sgd {{.*}}train.sharding_rule = "([i, j], [i, j], [])->([i, j]) {i=3, j=5}"
  %0 = train.sgd %p, %g, %lr : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// sgd with a momentum buffer: the buffer and the new buffer map the
// parameter's factors.
// CHECK-LABEL: func.func @sgd_momentum
func.func @sgd_momentum(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %lr: tensor<f32>, %buf: tensor<3x5xf32>) {
  // CHECK: train.sgd {{.*}}train.sharding_rule = "([i, j], [i, j], [], [i, j])->([i, j], [i, j]) {i=3, j=5}"
  %0, %1 = train.sgd %p, %g, %lr, %buf {momentum = 9.000000e-01 : f64} : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>, tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>)
  return
}

// -----

// adam with a scalar i64 step: the step and lr map nothing.
// CHECK-LABEL: func.func @adam
func.func @adam(%p: tensor<3x5xf32>, %g: tensor<3x5xf32>, %m: tensor<3x5xf32>, %v: tensor<3x5xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  // CHECK: train.adam {{.*}}train.sharding_rule = "([i, j], [i, j], [i, j], [i, j], [], [])->([i, j], [i, j], [i, j], []) {i=3, j=5}"
  %0:4 = train.adam %p, %g, %m, %v, %step, %lr : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<i64>, tensor<f32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<i64>)
  return
}

// -----

// adamw of a bias with a float step.
// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<7xbf16>, %g: tensor<7xbf16>, %m: tensor<7xbf16>, %v: tensor<7xbf16>, %step: tensor<f32>, %lr: tensor<f32>) {
  // CHECK: train.adamw {{.*}}train.sharding_rule = "([i], [i], [i], [i], [], [])->([i], [i], [i], []) {i=7}"
  %0:4 = train.adamw %p, %g, %m, %v, %step, %lr : (tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<f32>, tensor<f32>) -> (tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<f32>)
  return
}
