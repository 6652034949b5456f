// RUN: dist-opt %s -split-input-file -verify-diagnostics

// reshape must keep the element count.
func.func @reshape_element_count(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'train.reshape' op cannot reshape 'tensor<6x4xf32>' (24 elements) to 'tensor<25xf32>' (25 elements)}}
  %r = train.reshape %x : (tensor<6x4xf32>) -> tensor<25xf32>
  return
}

// -----

// reshape must keep the element type.
func.func @reshape_element_type(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'train.reshape' op element type changes from 'f32' to 'f16' (use train.convert)}}
  %r = train.reshape %x : (tensor<6x4xf32>) -> tensor<24xf16>
  return
}

// -----

// reshape of a dynamic result is rejected.
func.func @reshape_dynamic(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'train.reshape' op result #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<?xf32>'}}
  %r = train.reshape %x : (tensor<6x4xf32>) -> tensor<?xf32>
  return
}

// -----

// transpose needs one permutation entry per dim.
func.func @transpose_short_permutation(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.transpose' op permutation has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %r = train.transpose %x {permutation = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// A repeated dim is not a permutation; the message lists the permutation
// (not as a shape such as `1x1`).
func.func @transpose_repeated_dim(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.transpose' op permutation [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %r = train.transpose %x {permutation = array<i64: 1, 1>} : (tensor<6x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// An out-of-range dim is not a permutation.
func.func @transpose_dim_out_of_range(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{is not a permutation of 0..1}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %r = train.transpose %x {permutation = array<i64: 0, 2>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// A negative dim is not a permutation.
func.func @transpose_negative_dim(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{is not a permutation of 0..1}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %r = train.transpose %x {permutation = array<i64: -1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return
}

// -----

// The declared result must be the permuted shape.
func.func @transpose_wrong_result(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.transpose' op inferred type(s) 'tensor<4x6xf32>' are incompatible with return type(s) of operation 'tensor<6x4xf32>'}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %r = train.transpose %x {permutation = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// transpose requires a permutation.
func.func @transpose_no_permutation(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'train.transpose' op requires attribute 'permutation'}}
  %r = train.transpose %x : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// broadcast must keep the element type.
func.func @broadcast_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op element type changes from 'f32' to 'f16'}}
  %r = train.broadcast %x {dims = array<i64: 1>} : (tensor<4xf32>) -> tensor<6x4xf16>
  return
}

// -----

// broadcast needs one dims entry per operand dim.
func.func @broadcast_dims_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims has 2 entries for an operand of rank 1}}
  %r = train.broadcast %x {dims = array<i64: 0, 1>} : (tensor<4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// broadcast dims must index result dims.
func.func @broadcast_dim_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims[0] = 2 is out of range for result rank 2}}
  %r = train.broadcast %x {dims = array<i64: 2>} : (tensor<4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// broadcast dims do not count from the back.
func.func @broadcast_negative_dim(%x: tensor<4xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims[0] = -1 is out of range for result rank 2}}
  %r = train.broadcast %x {dims = array<i64: -1>} : (tensor<4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// broadcast cannot reduce the rank.
func.func @broadcast_to_lower_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims[1] = 1 is out of range for result rank 1}}
  %r = train.broadcast %x {dims = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

// broadcast cannot transpose: dims must be strictly increasing.
func.func @broadcast_decreasing_dims(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims must be strictly increasing}}
  %r = train.broadcast %x {dims = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return
}

// -----

// broadcast dims must not repeat.
func.func @broadcast_repeated_dims(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'train.broadcast' op dims must be strictly increasing}}
  %r = train.broadcast %x {dims = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// An operand dim of size other than 1 must match its result dim.
func.func @broadcast_size_mismatch(%x: tensor<3xf32>) {
  // expected-error @+1 {{'train.broadcast' op operand dim 0 of size 3 cannot broadcast to result dim 1 of size 4}}
  %r = train.broadcast %x {dims = array<i64: 1>} : (tensor<3xf32>) -> tensor<6x4xf32>
  return
}

// -----

// slice needs one start entry per dim.
func.func @slice_start_count(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op start has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0>, limit = array<i64: 6, 4>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// slice needs one limit entry per dim.
func.func @slice_limit_count(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op limit has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// slice needs one stride per dim when strides are given.
func.func @slice_strides_count(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op strides has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6, 4>, strides = array<i64: 1>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// slice limit past the end of the dim.
func.func @slice_limit_too_large(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op dim 0: need 0 <= start <= limit <= 6, got start 0 and limit 7}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 7, 4>} : (tensor<6x4xf32>) -> tensor<7x4xf32>
  return
}

// -----

// slice start after limit.
func.func @slice_start_after_limit(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op dim 1: need 0 <= start <= limit <= 4, got start 3 and limit 2}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 3>, limit = array<i64: 6, 2>} : (tensor<6x4xf32>) -> tensor<6x0xf32>
  return
}

// -----

// slice start before 0.
func.func @slice_negative_start(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op dim 0: need 0 <= start <= limit <= 6, got start -1 and limit 6}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: -1, 0>, limit = array<i64: 6, 4>} : (tensor<6x4xf32>) -> tensor<7x4xf32>
  return
}

// -----

// slice strides must be positive.
func.func @slice_zero_stride(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op dim 1: stride must be positive, got 0}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6, 4>, strides = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// Negative strides (reversal) are not supported.
func.func @slice_negative_stride(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op dim 0: stride must be positive, got -1}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6, 4>, strides = array<i64: -1, 1>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// The declared result must have ceil((limit - start) / stride) elements per dim.
func.func @slice_wrong_result(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.slice' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4xf32>'}}
  // expected-error @+1 {{'train.slice' op failed to infer returned types}}
  %r = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6, 4>, strides = array<i64: 4, 1>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  return
}

// -----

// slice requires start.
func.func @slice_no_start(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'train.slice' op requires attribute 'start'}}
  %r = train.slice %x {limit = array<i64: 6, 4>} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// concat inputs need one element type.
func.func @concat_element_types(%x: tensor<6x4xf32>, %y: tensor<6x4xf16>) {
  // expected-error @+2 {{'train.concat' op inputs have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = 0} : (tensor<6x4xf32>, tensor<6x4xf16>) -> tensor<12x4xf32>
  return
}

// -----

// concat dim out of range.
func.func @concat_dim_out_of_range(%x: tensor<6x4xf32>, %y: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.concat' op dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = 2} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<12x4xf32>
  return
}

// -----

// concat dim does not count from the back.
func.func @concat_negative_dim(%x: tensor<6x4xf32>, %y: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.concat' op dim -1 is out of range for rank 2}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = -1} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  return
}

// -----

// Scalars cannot be concatenated.
func.func @concat_scalars(%x: tensor<f32>, %y: tensor<f32>) {
  // expected-error @+2 {{'train.concat' op dim 0 is out of range for rank 0}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = 0} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  return
}

// -----

// concat inputs need one rank.
func.func @concat_ranks_differ(%x: tensor<6x4xf32>, %y: tensor<6xf32>) {
  // expected-error @+2 {{'train.concat' op input #1 has rank 1, input #0 has rank 2}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = 0} : (tensor<6x4xf32>, tensor<6xf32>) -> tensor<12x4xf32>
  return
}

// -----

// concat inputs must match outside the concatenated dim.
func.func @concat_other_dim_differs(%x: tensor<6x4xf32>, %y: tensor<6x4xf32>, %z: tensor<6x5xf32>) {
  // expected-error @+2 {{'train.concat' op input #2 has size 5 in dim 1, input #0 has 4}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y, %z {dim = 0} : (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<18x4xf32>
  return
}

// -----

// concat needs at least one input.
func.func @concat_no_inputs() {
  // expected-error @+2 {{'train.concat' op needs at least one input}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat {dim = 0} : () -> tensor<12x4xf32>
  return
}

// -----

// The declared result must grow the concatenated dim only.
func.func @concat_wrong_result(%x: tensor<6x4xf32>, %y: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.concat' op inferred type(s) 'tensor<12x4xf32>' are incompatible with return type(s) of operation 'tensor<6x8xf32>'}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %r = train.concat %x, %y {dim = 0} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  return
}

// -----

// Negative low padding (cropping) is rejected.
func.func @pad_negative_low(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.pad' op dim 1: padding must be non-negative, got low -1 and high 2}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %r = train.pad %x {low = array<i64: 1, -1>, high = array<i64: 0, 2>} : (tensor<6x4xf32>) -> tensor<7x5xf32>
  return
}

// -----

// Negative high padding is rejected.
func.func @pad_negative_high(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.pad' op dim 0: padding must be non-negative, got low 0 and high -2}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %r = train.pad %x {low = array<i64: 0, 0>, high = array<i64: -2, 0>} : (tensor<6x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// pad needs one low entry per dim.
func.func @pad_low_count(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.pad' op low has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %r = train.pad %x {low = array<i64: 1>, high = array<i64: 0, 2>} : (tensor<6x4xf32>) -> tensor<7x6xf32>
  return
}

// -----

// pad needs one high entry per dim.
func.func @pad_high_count(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.pad' op high has 3 entries for an operand of rank 2}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %r = train.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 2, 3>} : (tensor<6x4xf32>) -> tensor<7x6xf32>
  return
}

// -----

// The declared result must add low + high to every dim.
func.func @pad_wrong_result(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'train.pad' op inferred type(s) 'tensor<7x6xf32>' are incompatible with return type(s) of operation 'tensor<7x5xf32>'}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %r = train.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 2>} : (tensor<6x4xf32>) -> tensor<7x5xf32>
  return
}

// -----

// The pad value is an f64 attribute.
func.func @pad_integer_value(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{attribute 'value' failed to satisfy constraint: 64-bit float attribute}}
  %r = train.pad %x {low = array<i64: 1, 0>, high = array<i64: 0, 2>, value = 1 : i64} : (tensor<6x4xf32>) -> tensor<7x6xf32>
  return
}

// -----

// gather needs a table with a row dim.
func.func @gather_scalar_table(%t: tensor<f32>, %i: tensor<4xi32>) {
  // expected-error @+2 {{'train.gather' op table must have rank >= 1}}
  // expected-error @+1 {{'train.gather' op failed to infer returned types}}
  %r = train.gather %t, %i : (tensor<f32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// gather indices must be i32 or i64.
func.func @gather_i16_indices(%t: tensor<10x3xf32>, %i: tensor<4xi16>) {
  // expected-error @+1 {{'train.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi16>'}}
  %r = train.gather %t, %i : (tensor<10x3xf32>, tensor<4xi16>) -> tensor<4x3xf32>
  return
}

// -----

// gather indices cannot be floats.
func.func @gather_float_indices(%t: tensor<10x3xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{'train.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = train.gather %t, %i : (tensor<10x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// The gather result puts the index dims first.
func.func @gather_wrong_result(%t: tensor<10x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{'train.gather' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{'train.gather' op failed to infer returned types}}
  %r = train.gather %t, %i : (tensor<10x3xf32>, tensor<4xi64>) -> tensor<3x4xf32>
  return
}

// -----

// The gather result has the table's element type.
func.func @gather_wrong_result_element_type(%t: tensor<10x3xbf16>, %i: tensor<4xi64>) {
  // expected-error @+2 {{'train.gather' op inferred type(s) 'tensor<4x3xbf16>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'train.gather' op failed to infer returned types}}
  %r = train.gather %t, %i : (tensor<10x3xbf16>, tensor<4xi64>) -> tensor<4x3xf32>
  return
}

// -----

// scatter_add needs an init with a row dim.
func.func @scatter_add_scalar_init(%t: tensor<f32>, %i: tensor<4xi64>, %u: tensor<4xf32>) {
  // expected-error @+2 {{'train.scatter_add' op init must have rank >= 1}}
  // expected-error @+1 {{'train.scatter_add' op failed to infer returned types}}
  %r = train.scatter_add %t, %i, %u : (tensor<f32>, tensor<4xi64>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

// scatter_add updates must be [indices..., d...].
func.func @scatter_add_updates_shape(%t: tensor<10x3xf32>, %i: tensor<4xi64>, %u: tensor<4x4xf32>) {
  // expected-error @+2 {{'train.scatter_add' op updates must have shape 4x3, got 4x4}}
  // expected-error @+1 {{'train.scatter_add' op failed to infer returned types}}
  %r = train.scatter_add %t, %i, %u : (tensor<10x3xf32>, tensor<4xi64>, tensor<4x4xf32>) -> tensor<10x3xf32>
  return
}

// -----

// scatter_add updates must have the init's element type.
func.func @scatter_add_updates_element_type(%t: tensor<10x3xf32>, %i: tensor<4xi64>, %u: tensor<4x3xf16>) {
  // expected-error @+2 {{'train.scatter_add' op updates must have element type 'f32', got 'f16'}}
  // expected-error @+1 {{'train.scatter_add' op failed to infer returned types}}
  %r = train.scatter_add %t, %i, %u : (tensor<10x3xf32>, tensor<4xi64>, tensor<4x3xf16>) -> tensor<10x3xf32>
  return
}

// -----

// The scatter_add result has the init's type.
func.func @scatter_add_wrong_result(%t: tensor<10x3xf32>, %i: tensor<4xi64>, %u: tensor<4x3xf32>) {
  // expected-error @+2 {{'train.scatter_add' op inferred type(s) 'tensor<10x3xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'train.scatter_add' op failed to infer returned types}}
  %r = train.scatter_add %t, %i, %u : (tensor<10x3xf32>, tensor<4xi64>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// scatter_add indices must be i32 or i64.
func.func @scatter_add_bool_indices(%t: tensor<10x3xf32>, %i: tensor<4xi1>, %u: tensor<4x3xf32>) {
  // expected-error @+1 {{'train.scatter_add' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %r = train.scatter_add %t, %i, %u : (tensor<10x3xf32>, tensor<4xi1>, tensor<4x3xf32>) -> tensor<10x3xf32>
  return
}

// -----

// iota dim out of range.
func.func @iota_dim_out_of_range() {
  // expected-error @+1 {{'train.iota' op dim 2 is out of range for rank 2}}
  %r = train.iota {dim = 2} : () -> tensor<3x5xi32>
  return
}

// -----

// iota dim does not count from the back.
func.func @iota_negative_dim() {
  // expected-error @+1 {{'train.iota' op dim -1 is out of range for rank 2}}
  %r = train.iota {dim = -1} : () -> tensor<3x5xi32>
  return
}

// -----

// A scalar iota has no dim.
func.func @iota_scalar() {
  // expected-error @+1 {{'train.iota' op dim 0 is out of range for rank 0}}
  %r = train.iota {dim = 0} : () -> tensor<i32>
  return
}

// -----

// iota requires a dim.
func.func @iota_no_dim() {
  // expected-error @+1 {{'train.iota' op requires attribute 'dim'}}
  %r = train.iota : () -> tensor<3xi32>
  return
}

// -----

// iota of index type is rejected.
func.func @iota_index() {
  // expected-error @+1 {{'train.iota' op result #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<3xindex>'}}
  %r = train.iota {dim = 0} : () -> tensor<3xindex>
  return
}

// -----

// constant of index type is rejected.
func.func @constant_index() {
  // expected-error @+1 {{'train.constant' op result #0 must be statically shaped tensor of float or signless integer values, but got 'tensor<3xindex>'}}
  %r = train.constant dense<1> : tensor<3xindex>
  return
}

// -----

// A vector constant is rejected.
func.func @constant_vector() {
  // expected-error @+1 {{'train.constant' op result #0 must be statically shaped tensor of float or signless integer values, but got 'vector<3xf32>'}}
  %r = train.constant dense<1.0> : vector<3xf32>
  return
}

// -----

// The declared result must be the value's type (generic form).
func.func @constant_wrong_result() {
  // expected-error @+2 {{'train.constant' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'train.constant' op failed to infer returned types}}
  %r = "train.constant"() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<4xf32>
  return
}

// -----

// The value must be an elements attribute.
func.func @constant_scalar_attribute() {
  // expected-error @+1 {{'train.constant' op attribute 'value' failed to satisfy constraint: constant vector/tensor attribute}}
  %r = "train.constant"() {value = 1.0 : f32} : () -> tensor<f32>
  return
}

// -----

// A fractional padding value for an integer tensor.
func.func @pad_fractional_integer_value(%x: tensor<3xi8>) -> tensor<5xi8> {
  // expected-error @+2 {{'train.pad' op padding value 5.000000e-01 is not representable in 'i8'}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %0 = train.pad %x {low = array<i64: 1>, high = array<i64: 1>, value = 0.5 : f64} : (tensor<3xi8>) -> tensor<5xi8>
  return %0 : tensor<5xi8>
}

// -----

// A padding value outside the range of an i8 (signless: -128 to 255).
func.func @pad_out_of_range_value(%x: tensor<3xi8>) -> tensor<5xi8> {
  // expected-error @+2 {{'train.pad' op padding value 2.560000e+02 is not representable in 'i8'}}
  // expected-error @+1 {{'train.pad' op failed to infer returned types}}
  %0 = train.pad %x {low = array<i64: 1>, high = array<i64: 1>, value = 256.0 : f64} : (tensor<3xi8>) -> tensor<5xi8>
  return %0 : tensor<5xi8>
}

// -----

// iota cannot count in i1.
func.func @iota_i1() -> tensor<4xi1> {
  // expected-error @+1 {{'train.iota' op cannot count in i1}}
  %0 = train.iota {dim = 0 : i64} : () -> tensor<4xi1>
  return %0 : tensor<4xi1>
}
