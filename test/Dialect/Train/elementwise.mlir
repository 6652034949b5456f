// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// add of two operands of one shape keeps that shape.
// CHECK-LABEL: func.func @add_same_shape
// CHECK-SAME: (%[[LHS:.*]]: tensor<8x4xf32>, %[[RHS:.*]]: tensor<8x4xf32>)
// CHECK: %[[R:.*]] = train.add %[[LHS]], %[[RHS]] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[R]] : tensor<8x4xf32>
func.func @add_same_shape(%lhs: tensor<8x4xf32>, %rhs: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %r = train.add %lhs, %rhs : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// add broadcasts a bias of the trailing dim over the leading dim.
// CHECK-LABEL: func.func @add_broadcast_trailing
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]] = train.add %[[X]], %[[B]] : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @add_broadcast_trailing(%x: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %r = train.add %x, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// add broadcasts when the lower-rank operand comes first.
// CHECK-LABEL: func.func @add_broadcast_lhs_lower_rank
// CHECK-SAME: (%[[B:.*]]: tensor<4xi32>, %[[X:.*]]: tensor<2x8x4xi32>)
// CHECK: %[[R:.*]] = train.add %[[B]], %[[X]] : (tensor<4xi32>, tensor<2x8x4xi32>) -> tensor<2x8x4xi32>
// CHECK: return %[[R]]
func.func @add_broadcast_lhs_lower_rank(%b: tensor<4xi32>, %x: tensor<2x8x4xi32>) -> tensor<2x8x4xi32> {
  %r = train.add %b, %x : (tensor<4xi32>, tensor<2x8x4xi32>) -> tensor<2x8x4xi32>
  return %r : tensor<2x8x4xi32>
}

// -----

// sub broadcasts size-1 dims of both operands: 8x1 - 1x4 -> 8x4.
// CHECK-LABEL: func.func @sub_broadcast_both
// CHECK-SAME: (%[[LHS:.*]]: tensor<8x1xf32>, %[[RHS:.*]]: tensor<1x4xf32>)
// CHECK: %[[R:.*]] = train.sub %[[LHS]], %[[RHS]] : (tensor<8x1xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @sub_broadcast_both(%lhs: tensor<8x1xf32>, %rhs: tensor<1x4xf32>) -> tensor<8x4xf32> {
  %r = train.sub %lhs, %rhs : (tensor<8x1xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// mul broadcasts a scalar tensor over any shape.
// CHECK-LABEL: func.func @mul_scalar
// CHECK-SAME: (%[[S:.*]]: tensor<f32>, %[[X:.*]]: tensor<8x4xf32>)
// CHECK: %[[R:.*]] = train.mul %[[S]], %[[X]] : (tensor<f32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @mul_scalar(%s: tensor<f32>, %x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %r = train.mul %s, %x : (tensor<f32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// mul of two scalar tensors is a scalar tensor.
// CHECK-LABEL: func.func @mul_scalars
// CHECK-SAME: (%[[A:.*]]: tensor<f64>, %[[B:.*]]: tensor<f64>)
// CHECK: %[[R:.*]] = train.mul %[[A]], %[[B]] : (tensor<f64>, tensor<f64>) -> tensor<f64>
// CHECK: return %[[R]]
func.func @mul_scalars(%a: tensor<f64>, %b: tensor<f64>) -> tensor<f64> {
  %r = train.mul %a, %b : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}

// -----

// div accepts signless integers (here i64) and broadcasts a size-1 dim.
// CHECK-LABEL: func.func @div_integer
// CHECK-SAME: (%[[LHS:.*]]: tensor<6x5xi64>, %[[RHS:.*]]: tensor<6x1xi64>)
// CHECK: %[[R:.*]] = train.div %[[LHS]], %[[RHS]] : (tensor<6x5xi64>, tensor<6x1xi64>) -> tensor<6x5xi64>
// CHECK: return %[[R]]
func.func @div_integer(%lhs: tensor<6x5xi64>, %rhs: tensor<6x1xi64>) -> tensor<6x5xi64> {
  %r = train.div %lhs, %rhs : (tensor<6x5xi64>, tensor<6x1xi64>) -> tensor<6x5xi64>
  return %r : tensor<6x5xi64>
}

// -----

// max on bf16 broadcasts across ranks: 2x1x4 and 3x1 give 2x3x4.
// CHECK-LABEL: func.func @max_bf16_rank3
// CHECK-SAME: (%[[LHS:.*]]: tensor<2x1x4xbf16>, %[[RHS:.*]]: tensor<3x1xbf16>)
// CHECK: %[[R:.*]] = train.max %[[LHS]], %[[RHS]] : (tensor<2x1x4xbf16>, tensor<3x1xbf16>) -> tensor<2x3x4xbf16>
// CHECK: return %[[R]]
func.func @max_bf16_rank3(%lhs: tensor<2x1x4xbf16>, %rhs: tensor<3x1xbf16>) -> tensor<2x3x4xbf16> {
  %r = train.max %lhs, %rhs : (tensor<2x1x4xbf16>, tensor<3x1xbf16>) -> tensor<2x3x4xbf16>
  return %r : tensor<2x3x4xbf16>
}

// -----

// min on f16 with a scalar operand second.
// CHECK-LABEL: func.func @min_f16_scalar_rhs
// CHECK-SAME: (%[[X:.*]]: tensor<16xf16>, %[[S:.*]]: tensor<f16>)
// CHECK: %[[R:.*]] = train.min %[[X]], %[[S]] : (tensor<16xf16>, tensor<f16>) -> tensor<16xf16>
// CHECK: return %[[R]]
func.func @min_f16_scalar_rhs(%x: tensor<16xf16>, %s: tensor<f16>) -> tensor<16xf16> {
  %r = train.min %x, %s : (tensor<16xf16>, tensor<f16>) -> tensor<16xf16>
  return %r : tensor<16xf16>
}

// -----

// min accepts i8 and i1 element types (any signless integer).
// CHECK-LABEL: func.func @min_small_integers
// CHECK-SAME: (%[[A:.*]]: tensor<4xi8>, %[[B:.*]]: tensor<4xi8>, %[[P:.*]]: tensor<4xi1>, %[[Q:.*]]: tensor<1xi1>)
// CHECK: %[[R0:.*]] = train.min %[[A]], %[[B]] : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
// CHECK: %[[R1:.*]] = train.min %[[P]], %[[Q]] : (tensor<4xi1>, tensor<1xi1>) -> tensor<4xi1>
// CHECK: return %[[R0]], %[[R1]]
func.func @min_small_integers(%a: tensor<4xi8>, %b: tensor<4xi8>, %p: tensor<4xi1>, %q: tensor<1xi1>) -> (tensor<4xi8>, tensor<4xi1>) {
  %r0 = train.min %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %r1 = train.min %p, %q : (tensor<4xi1>, tensor<1xi1>) -> tensor<4xi1>
  return %r0, %r1 : tensor<4xi8>, tensor<4xi1>
}

// -----

// pow on floats broadcasts a scalar exponent.
// CHECK-LABEL: func.func @pow_scalar_exponent
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[E:.*]]: tensor<f32>)
// CHECK: %[[R:.*]] = train.pow %[[X]], %[[E]] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @pow_scalar_exponent(%x: tensor<8x4xf32>, %e: tensor<f32>) -> tensor<8x4xf32> {
  %r = train.pow %x, %e : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// pow on bf16 with both operands broadcast.
// CHECK-LABEL: func.func @pow_bf16_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<1x4xbf16>, %[[E:.*]]: tensor<8x1xbf16>)
// CHECK: %[[R:.*]] = train.pow %[[X]], %[[E]] : (tensor<1x4xbf16>, tensor<8x1xbf16>) -> tensor<8x4xbf16>
// CHECK: return %[[R]]
func.func @pow_bf16_broadcast(%x: tensor<1x4xbf16>, %e: tensor<8x1xbf16>) -> tensor<8x4xbf16> {
  %r = train.pow %x, %e : (tensor<1x4xbf16>, tensor<8x1xbf16>) -> tensor<8x4xbf16>
  return %r : tensor<8x4xbf16>
}

// -----

// A size-0 dim broadcasts against size 1 as in NumPy: 0x1 + 1x4 -> 0x4.
// CHECK-LABEL: func.func @add_zero_sized
// CHECK-SAME: (%[[LHS:.*]]: tensor<0x1xf32>, %[[RHS:.*]]: tensor<1x4xf32>)
// CHECK: %[[R:.*]] = train.add %[[LHS]], %[[RHS]] : (tensor<0x1xf32>, tensor<1x4xf32>) -> tensor<0x4xf32>
// CHECK: return %[[R]]
func.func @add_zero_sized(%lhs: tensor<0x1xf32>, %rhs: tensor<1x4xf32>) -> tensor<0x4xf32> {
  %r = train.add %lhs, %rhs : (tensor<0x1xf32>, tensor<1x4xf32>) -> tensor<0x4xf32>
  return %r : tensor<0x4xf32>
}

// -----

// neg, abs and relu accept integer tensors.
// CHECK-LABEL: func.func @unary_integer
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xi32>)
// CHECK: %[[N:.*]] = train.neg %[[X]] : (tensor<8x4xi32>) -> tensor<8x4xi32>
// CHECK: %[[A:.*]] = train.abs %[[N]] : (tensor<8x4xi32>) -> tensor<8x4xi32>
// CHECK: %[[R:.*]] = train.relu %[[A]] : (tensor<8x4xi32>) -> tensor<8x4xi32>
// CHECK: return %[[R]]
func.func @unary_integer(%x: tensor<8x4xi32>) -> tensor<8x4xi32> {
  %n = train.neg %x : (tensor<8x4xi32>) -> tensor<8x4xi32>
  %a = train.abs %n : (tensor<8x4xi32>) -> tensor<8x4xi32>
  %r = train.relu %a : (tensor<8x4xi32>) -> tensor<8x4xi32>
  return %r : tensor<8x4xi32>
}

// -----

// Every unary op on f32 keeps its operand's type.
// CHECK-LABEL: func.func @unary_f32
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>)
// CHECK: %[[NEG:.*]] = train.neg %[[X]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[ABS:.*]] = train.abs %[[NEG]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[EXP:.*]] = train.exp %[[ABS]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[LOG:.*]] = train.log %[[EXP]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[SQRT:.*]] = train.sqrt %[[LOG]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[RSQRT:.*]] = train.rsqrt %[[SQRT]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[TANH:.*]] = train.tanh %[[RSQRT]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[SIG:.*]] = train.sigmoid %[[TANH]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[RELU:.*]] = train.relu %[[SIG]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[GELU:.*]] = train.gelu %[[RELU]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[GELU]]
func.func @unary_f32(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %neg = train.neg %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %abs = train.abs %neg : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %exp = train.exp %abs : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %log = train.log %exp : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %sqrt = train.sqrt %log : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %rsqrt = train.rsqrt %sqrt : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %tanh = train.tanh %rsqrt : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %sig = train.sigmoid %tanh : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %relu = train.relu %sig : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %gelu = train.gelu %relu : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %gelu : tensor<8x4xf32>
}

// -----

// The float-only unary ops accept bf16, f16 and f64, and scalar tensors.
// CHECK-LABEL: func.func @unary_float_types
// CHECK-SAME: (%[[H:.*]]: tensor<2x3xbf16>, %[[F:.*]]: tensor<5xf16>, %[[D:.*]]: tensor<f64>)
// CHECK: %[[R0:.*]] = train.exp %[[H]] : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
// CHECK: %[[R1:.*]] = train.gelu %[[H]] : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
// CHECK: %[[R2:.*]] = train.sigmoid %[[F]] : (tensor<5xf16>) -> tensor<5xf16>
// CHECK: %[[R3:.*]] = train.rsqrt %[[F]] : (tensor<5xf16>) -> tensor<5xf16>
// CHECK: %[[R4:.*]] = train.log %[[D]] : (tensor<f64>) -> tensor<f64>
// CHECK: %[[R5:.*]] = train.tanh %[[D]] : (tensor<f64>) -> tensor<f64>
// CHECK: %[[R6:.*]] = train.sqrt %[[D]] : (tensor<f64>) -> tensor<f64>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]], %[[R6]]
func.func @unary_float_types(%h: tensor<2x3xbf16>, %f: tensor<5xf16>, %d: tensor<f64>)
    -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<5xf16>, tensor<5xf16>, tensor<f64>, tensor<f64>, tensor<f64>) {
  %r0 = train.exp %h : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %r1 = train.gelu %h : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %r2 = train.sigmoid %f : (tensor<5xf16>) -> tensor<5xf16>
  %r3 = train.rsqrt %f : (tensor<5xf16>) -> tensor<5xf16>
  %r4 = train.log %d : (tensor<f64>) -> tensor<f64>
  %r5 = train.tanh %d : (tensor<f64>) -> tensor<f64>
  %r6 = train.sqrt %d : (tensor<f64>) -> tensor<f64>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6 : tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<5xf16>, tensor<5xf16>, tensor<f64>, tensor<f64>, tensor<f64>
}

// -----

// compare with a broadcast scalar returns an i1 tensor of the broadcast shape.
// CHECK-LABEL: func.func @compare_gt_scalar
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[Z:.*]]: tensor<f32>)
// CHECK: %[[R:.*]] = train.compare %[[X]], %[[Z]] {direction = #train.compare_direction<gt>} : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xi1>
// CHECK: return %[[R]]
func.func @compare_gt_scalar(%x: tensor<8x4xf32>, %z: tensor<f32>) -> tensor<8x4xi1> {
  %r = train.compare %x, %z {direction = #train.compare_direction<gt>} : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xi1>
  return %r : tensor<8x4xi1>
}

// -----

// compare prints every direction and accepts integer operands.
// CHECK-LABEL: func.func @compare_directions
// CHECK-SAME: (%[[A:.*]]: tensor<8x1xi32>, %[[B:.*]]: tensor<1x4xi32>)
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<eq>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<ne>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<lt>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<le>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<gt>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
// CHECK: train.compare %[[A]], %[[B]] {direction = #train.compare_direction<ge>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
func.func @compare_directions(%a: tensor<8x1xi32>, %b: tensor<1x4xi32>) {
  %eq = train.compare %a, %b {direction = #train.compare_direction<eq>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  %ne = train.compare %a, %b {direction = #train.compare_direction<ne>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  %lt = train.compare %a, %b {direction = #train.compare_direction<lt>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  %le = train.compare %a, %b {direction = #train.compare_direction<le>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  %gt = train.compare %a, %b {direction = #train.compare_direction<gt>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  %ge = train.compare %a, %b {direction = #train.compare_direction<ge>} : (tensor<8x1xi32>, tensor<1x4xi32>) -> tensor<8x4xi1>
  return
}

// -----

// compare of two bf16 scalars is an i1 scalar.
// CHECK-LABEL: func.func @compare_scalars
// CHECK-SAME: (%[[A:.*]]: tensor<bf16>, %[[B:.*]]: tensor<bf16>)
// CHECK: %[[R:.*]] = train.compare %[[A]], %[[B]] {direction = #train.compare_direction<le>} : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
// CHECK: return %[[R]]
func.func @compare_scalars(%a: tensor<bf16>, %b: tensor<bf16>) -> tensor<i1> {
  %r = train.compare %a, %b {direction = #train.compare_direction<le>} : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
  return %r : tensor<i1>
}

// -----

// select broadcasts all three operands; the result takes on_true's element type.
// CHECK-LABEL: func.func @select_broadcast
// CHECK-SAME: (%[[C:.*]]: tensor<8x1xi1>, %[[T:.*]]: tensor<1x4xf32>, %[[F:.*]]: tensor<f32>)
// CHECK: %[[R:.*]] = train.select %[[C]], %[[T]], %[[F]] : (tensor<8x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @select_broadcast(%c: tensor<8x1xi1>, %t: tensor<1x4xf32>, %f: tensor<f32>) -> tensor<8x4xf32> {
  %r = train.select %c, %t, %f : (tensor<8x1xi1>, tensor<1x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// select with a scalar condition picks whole integer tensors.
// CHECK-LABEL: func.func @select_scalar_condition
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[T:.*]]: tensor<3x2xi64>, %[[F:.*]]: tensor<3x2xi64>)
// CHECK: %[[R:.*]] = train.select %[[C]], %[[T]], %[[F]] : (tensor<i1>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
// CHECK: return %[[R]]
func.func @select_scalar_condition(%c: tensor<i1>, %t: tensor<3x2xi64>, %f: tensor<3x2xi64>) -> tensor<3x2xi64> {
  %r = train.select %c, %t, %f : (tensor<i1>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
  return %r : tensor<3x2xi64>
}

// -----

// The condition alone may set the result shape (on_true, on_false broadcast).
// CHECK-LABEL: func.func @select_condition_sets_shape
// CHECK-SAME: (%[[C:.*]]: tensor<2x8x4xi1>, %[[T:.*]]: tensor<4xf16>, %[[F:.*]]: tensor<8x1xf16>)
// CHECK: %[[R:.*]] = train.select %[[C]], %[[T]], %[[F]] : (tensor<2x8x4xi1>, tensor<4xf16>, tensor<8x1xf16>) -> tensor<2x8x4xf16>
// CHECK: return %[[R]]
func.func @select_condition_sets_shape(%c: tensor<2x8x4xi1>, %t: tensor<4xf16>, %f: tensor<8x1xf16>) -> tensor<2x8x4xf16> {
  %r = train.select %c, %t, %f : (tensor<2x8x4xi1>, tensor<4xf16>, tensor<8x1xf16>) -> tensor<2x8x4xf16>
  return %r : tensor<2x8x4xf16>
}

// -----

// convert changes the element type between floats, integers and i1.
// CHECK-LABEL: func.func @convert_element_types
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[M:.*]]: tensor<8x4xi1>, %[[I:.*]]: tensor<i32>)
// CHECK: %[[R0:.*]] = train.convert %[[X]] : (tensor<8x4xf32>) -> tensor<8x4xbf16>
// CHECK: %[[R1:.*]] = train.convert %[[X]] : (tensor<8x4xf32>) -> tensor<8x4xi32>
// CHECK: %[[R2:.*]] = train.convert %[[M]] : (tensor<8x4xi1>) -> tensor<8x4xf32>
// CHECK: %[[R3:.*]] = train.convert %[[I]] : (tensor<i32>) -> tensor<i64>
// CHECK: %[[R4:.*]] = train.convert %[[R0]] : (tensor<8x4xbf16>) -> tensor<8x4xf16>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @convert_element_types(%x: tensor<8x4xf32>, %m: tensor<8x4xi1>, %i: tensor<i32>)
    -> (tensor<8x4xbf16>, tensor<8x4xi32>, tensor<8x4xf32>, tensor<i64>, tensor<8x4xf16>) {
  %r0 = train.convert %x : (tensor<8x4xf32>) -> tensor<8x4xbf16>
  %r1 = train.convert %x : (tensor<8x4xf32>) -> tensor<8x4xi32>
  %r2 = train.convert %m : (tensor<8x4xi1>) -> tensor<8x4xf32>
  %r3 = train.convert %i : (tensor<i32>) -> tensor<i64>
  %r4 = train.convert %r0 : (tensor<8x4xbf16>) -> tensor<8x4xf16>
  return %r0, %r1, %r2, %r3, %r4 : tensor<8x4xbf16>, tensor<8x4xi32>, tensor<8x4xf32>, tensor<i64>, tensor<8x4xf16>
}

// -----

// convert to the operand's own type is allowed.
// CHECK-LABEL: func.func @convert_identity
// CHECK-SAME: (%[[X:.*]]: tensor<3xf64>)
// CHECK: %[[R:.*]] = train.convert %[[X]] : (tensor<3xf64>) -> tensor<3xf64>
// CHECK: return %[[R]]
func.func @convert_identity(%x: tensor<3xf64>) -> tensor<3xf64> {
  %r = train.convert %x : (tensor<3xf64>) -> tensor<3xf64>
  return %r : tensor<3xf64>
}

// -----

// erf, log1p and expm1 (exact GELU, softplus, ELU) keep the operand's type.
// CHECK-LABEL: func.func @erf_log1p_expm1
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[D:.*]]: tensor<3xf64>)
// CHECK: %[[E:.*]] = train.erf %[[X]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[L:.*]] = train.log1p %[[E]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[M:.*]] = train.expm1 %[[D]] : (tensor<3xf64>) -> tensor<3xf64>
// CHECK: return %[[L]], %[[M]]
func.func @erf_log1p_expm1(%x: tensor<8x4xf32>, %d: tensor<3xf64>) -> (tensor<8x4xf32>, tensor<3xf64>) {
  %e = train.erf %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %l = train.log1p %e : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = train.expm1 %d : (tensor<3xf64>) -> tensor<3xf64>
  return %l, %m : tensor<8x4xf32>, tensor<3xf64>
}
