// RUN: dist-opt %s -split-input-file -verify-diagnostics

// Trailing dims 4 and 8 do not broadcast.
func.func @add_not_broadcastable(%a: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'train.add' op operand #1 of shape 8 does not broadcast: dim 0 has size 8 where another operand has 4}}
  // expected-error @+1 {{'train.add' op failed to infer returned types}}
  %r = train.add %a, %b : (tensor<8x4xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Two non-1 sizes in a middle dim of rank-3 operands do not broadcast.
func.func @max_not_broadcastable_rank3(%a: tensor<2x3x4xi32>, %b: tensor<2x5x4xi32>) {
  // expected-error @+2 {{'train.max' op operand #1 of shape 2x5x4 does not broadcast: dim 1 has size 5 where another operand has 3}}
  // expected-error @+1 {{'train.max' op failed to infer returned types}}
  %r = train.max %a, %b : (tensor<2x3x4xi32>, tensor<2x5x4xi32>) -> tensor<2x5x4xi32>
  return
}

// -----

// A size-0 dim does not broadcast against a size other than 1.
func.func @min_zero_against_four(%a: tensor<0xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.min' op operand #1 of shape 4 does not broadcast: dim 0 has size 4 where another operand has 0}}
  // expected-error @+1 {{'train.min' op failed to infer returned types}}
  %r = train.min %a, %b : (tensor<0xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// No implicit promotion between element types.
func.func @sub_element_types_differ(%a: tensor<8x4xf32>, %b: tensor<8x4xf16>) {
  // expected-error @+2 {{'train.sub' op operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'train.sub' op failed to infer returned types}}
  %r = train.sub %a, %b : (tensor<8x4xf32>, tensor<8x4xf16>) -> tensor<8x4xf32>
  return
}

// -----

// No implicit promotion between integer widths either.
func.func @add_integer_widths_differ(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{'train.add' op operands have different element types 'i32' and 'i64'}}
  // expected-error @+1 {{'train.add' op failed to infer returned types}}
  %r = train.add %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

// The declared result must be the broadcast shape, not an operand's shape.
func.func @mul_wrong_result_shape(%a: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.mul' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.mul' op failed to infer returned types}}
  %r = train.mul %a, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The declared result must keep a size-1 dim that both operands have.
func.func @add_result_drops_unit_dim(%a: tensor<1x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.add' op inferred type(s) 'tensor<1x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.add' op failed to infer returned types}}
  %r = train.add %a, %b : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The declared result must have the operands' element type.
func.func @div_wrong_result_element_type(%a: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.div' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<8x4xf16>'}}
  // expected-error @+1 {{'train.div' op failed to infer returned types}}
  %r = train.div %a, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf16>
  return
}

// -----

// pow is float-only.
func.func @pow_integer(%a: tensor<4xi32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'train.pow' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xi32>'}}
  %r = train.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

// Dynamic dims are rejected.
func.func @max_dynamic_dim(%a: tensor<?x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'train.max' op operand #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<?x4xf32>'}}
  %r = train.max %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Unranked tensors are rejected.
func.func @min_unranked(%a: tensor<*xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'train.min' op operand #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<*xf32>'}}
  %r = train.min %a, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// A binary op needs two operands.
func.func @add_one_operand(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.add' op expected 2 operands, but found 1}}
  %r = train.add %a : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// exp is float-only.
func.func @exp_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'train.exp' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xi32>'}}
  %r = train.exp %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

// gelu is float-only, i1 included.
func.func @gelu_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'train.gelu' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xi1>'}}
  %r = train.gelu %a : (tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

// Only f16, bf16, f32 and f64 are floats of the dialect.
func.func @sqrt_f8(%a: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'train.sqrt' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xf8E4M3FN>'}}
  %r = train.sqrt %a : (tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  return
}

// -----

// Vectors are not tensors.
func.func @tanh_vector(%a: vector<4xf32>) {
  // expected-error @+1 {{'train.tanh' op operand #0 must be statically shaped tensor of float values, but got 'vector<4xf32>'}}
  %r = train.tanh %a : (vector<4xf32>) -> vector<4xf32>
  return
}

// -----

// index is not a signless integer of the dialect.
func.func @abs_index(%a: tensor<4xindex>) {
  // expected-error @+1 {{'train.abs' op operand #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<4xindex>'}}
  %r = train.abs %a : (tensor<4xindex>) -> tensor<4xindex>
  return
}

// -----

// Unsigned integers are rejected.
func.func @relu_unsigned(%a: tensor<4xui32>) {
  // expected-error @+1 {{'train.relu' op operand #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<4xui32>'}}
  %r = train.relu %a : (tensor<4xui32>) -> tensor<4xui32>
  return
}

// -----

// A unary op cannot change the element type.
func.func @neg_changes_element_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.neg' op requires the same type for all operands and results}}
  %r = train.neg %a : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// A unary op cannot change the shape.
func.func @sigmoid_changes_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.sigmoid' op requires the same type for all operands and results}}
  %r = train.sigmoid %a : (tensor<4xf32>) -> tensor<1x4xf32>
  return
}

// -----

// compare operands need one element type.
func.func @compare_element_types_differ(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'train.compare' op operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'train.compare' op failed to infer returned types}}
  %r = train.compare %a, %b {direction = #train.compare_direction<eq>} : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return
}

// -----

// compare operands must broadcast.
func.func @compare_not_broadcastable(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'train.compare' op operand #1 of shape 3 does not broadcast: dim 0 has size 3 where another operand has 4}}
  // expected-error @+1 {{'train.compare' op failed to infer returned types}}
  %r = train.compare %a, %b {direction = #train.compare_direction<ne>} : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xi1>
  return
}

// -----

// compare returns i1, not the operand element type.
func.func @compare_float_result(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'train.compare' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = train.compare %a, %b {direction = #train.compare_direction<lt>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// compare's declared result must have the broadcast shape.
func.func @compare_wrong_result_shape(%a: tensor<4xf32>, %b: tensor<f32>) {
  // expected-error @+2 {{'train.compare' op inferred type(s) 'tensor<4xi1>' are incompatible with return type(s) of operation 'tensor<i1>'}}
  // expected-error @+1 {{'train.compare' op failed to infer returned types}}
  %r = train.compare %a, %b {direction = #train.compare_direction<le>} : (tensor<4xf32>, tensor<f32>) -> tensor<i1>
  return
}

// -----

// compare requires a direction.
func.func @compare_no_direction(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'train.compare' op requires attribute 'direction'}}
  %r = train.compare %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// An unknown direction keyword.
func.func @compare_unknown_direction(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::train::CompareDirection to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Train_CompareDirectionAttr parameter 'value'}}
  %r = train.compare %a, %b {direction = #train.compare_direction<gte>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// A direction given as an integer instead of the enum attribute.
func.func @compare_integer_direction(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'direction' failed to satisfy constraint: comparison: eq, ne, lt, le, gt or ge}}
  %r = train.compare %a, %b {direction = 4 : i32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// select's condition must be i1.
func.func @select_integer_condition(%c: tensor<4xi32>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'train.select' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %r = train.select %c, %a, %b : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// select's branches need one element type.
func.func @select_branch_types_differ(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'train.select' op on_true and on_false have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %r = train.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

// select's condition must broadcast with the branches.
func.func @select_condition_not_broadcastable(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.select' op operand #1 of shape 4 does not broadcast: dim 0 has size 4 where another operand has 3}}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %r = train.select %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// select's third operand must broadcast with the first two.
func.func @select_on_false_not_broadcastable(%c: tensor<1x3xi1>, %a: tensor<2x1xf32>, %b: tensor<4x2x4xf32>) {
  // expected-error @+2 {{'train.select' op operand #2 of shape 4x2x4 does not broadcast: dim 2 has size 4 where another operand has 3}}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %r = train.select %c, %a, %b : (tensor<1x3xi1>, tensor<2x1xf32>, tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
  return
}

// -----

// A broadcasting condition enlarges the result.
func.func @select_wrong_result_shape(%c: tensor<2x1xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.select' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %r = train.select %c, %a, %b : (tensor<2x1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// select's result has the branches' element type.
func.func @select_wrong_result_element_type(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'train.select' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xi1>'}}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %r = train.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

// convert cannot transpose.
func.func @convert_permuted_shape(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'train.convert' op result shape must match the operand's, got 'tensor<4x8xbf16>' for 'tensor<8x4xf32>'}}
  %r = train.convert %a : (tensor<8x4xf32>) -> tensor<4x8xbf16>
  return
}

// -----

// convert cannot reshape, even to the same element count.
func.func @convert_reshape(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'train.convert' op result shape must match the operand's, got 'tensor<32xf32>' for 'tensor<8x4xf32>'}}
  %r = train.convert %a : (tensor<8x4xf32>) -> tensor<32xf32>
  return
}

// -----

// convert cannot broadcast a scalar.
func.func @convert_broadcast_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{'train.convert' op result shape must match the operand's, got 'tensor<1xf32>' for 'tensor<f32>'}}
  %r = train.convert %a : (tensor<f32>) -> tensor<1xf32>
  return
}

// -----

// convert's target must be an element type of the dialect.
func.func @convert_to_unsigned(%a: tensor<8x4xf32>) {
  // expected-error @+1 {{'train.convert' op result #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<8x4xui8>'}}
  %r = train.convert %a : (tensor<8x4xf32>) -> tensor<8x4xui8>
  return
}

// -----

// erf is float-only.
func.func @erf_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'train.erf' op operand #0 must be statically shaped tensor of float values, but got 'tensor<4xi32>'}}
  %r = train.erf %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

// log1p's result has the operand's type.
func.func @log1p_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'train.log1p' op}}
  %r = train.log1p %a : (tensor<4xf32>) -> tensor<4xf64>
  return
}

// -----

// expm1 takes a statically shaped tensor.
func.func @expm1_dynamic(%a: tensor<?xf32>) {
  // expected-error @+1 {{'train.expm1' op operand #0 must be statically shaped tensor of float values, but got 'tensor<?xf32>'}}
  %r = train.expm1 %a : (tensor<?xf32>) -> tensor<?xf32>
  return
}
