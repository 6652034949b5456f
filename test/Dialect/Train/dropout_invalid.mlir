// RUN: dist-opt %s -split-input-file -verify-diagnostics

// A rate of 1 would drop everything and divide by zero.
func.func @rate_one(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op rate must be in [0, 1), got 1.000000e+00}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = 1.0} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// A negative rate.
func.func @rate_negative(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op rate must be in [0, 1), got -2.500000e-01}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = -0.25} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// A NaN rate is not in [0, 1).
func.func @rate_nan(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op rate must be in [0, 1), got}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// rate is an f64 attribute.
func.func @rate_f32(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{attribute 'rate' failed to satisfy constraint: 64-bit float attribute}}
  %r = train.dropout %x, %seed {rate = 0.1 : f32} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// rate is required.
func.func @rate_missing(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'train.dropout' op requires attribute 'rate'}}
  %r = train.dropout %x, %seed : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// dropout is float-only.
func.func @integer_operand(%x: tensor<8x128xi32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'train.dropout' op operand #0 must be statically shaped tensor of float values, but got 'tensor<8x128xi32>'}}
  %r = train.dropout %x, %seed {rate = 0.1} : (tensor<8x128xi32>, tensor<i64>) -> tensor<8x128xi32>
  return
}

// -----

// The seed is an i64 scalar tensor, not i32.
func.func @seed_i32(%x: tensor<4xf32>, %seed: tensor<i32>) {
  // expected-error @+1 {{'train.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %r = train.dropout %x, %seed {rate = 0.1} : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

// The seed is a scalar tensor, not a vector of keys.
func.func @seed_rank1(%x: tensor<4xf32>, %seed: tensor<2xi64>) {
  // expected-error @+1 {{'train.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<2xi64>'}}
  %r = train.dropout %x, %seed {rate = 0.1} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

// Offsets are index values.
func.func @offset_i64(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index, %o1: i64) {
  // expected-error @+1 {{'train.dropout' op operand #3 must be variadic of index, but got 'i64'}}
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 64, 128>} : (tensor<8x128xf32>, tensor<i64>, index, i64) -> tensor<8x128xf32>
  return
}

// -----

// Offsets without global_shape.
func.func @offsets_without_global_shape(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index, %o1: index) {
  // expected-error @+2 {{'train.dropout' op offsets need a global_shape}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 0.1} : (tensor<8x128xf32>, tensor<i64>, index, index) -> tensor<8x128xf32>
  return
}

// -----

// global_shape without offsets.
func.func @global_shape_without_offsets(%x: tensor<8x128xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op needs one offset and one global_shape entry per dim (rank 2), got 0 and 2}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = 0.1, global_shape = array<i64: 64, 128>} : (tensor<8x128xf32>, tensor<i64>) -> tensor<8x128xf32>
  return
}

// -----

// Too few offsets for the rank.
func.func @too_few_offsets(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index) {
  // expected-error @+2 {{'train.dropout' op needs one offset and one global_shape entry per dim (rank 2), got 1 and 2}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed, %o0 {rate = 0.1, global_shape = array<i64: 64, 128>} : (tensor<8x128xf32>, tensor<i64>, index) -> tensor<8x128xf32>
  return
}

// -----

// Too few global_shape entries for the rank.
func.func @global_shape_too_short(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index, %o1: index) {
  // expected-error @+2 {{'train.dropout' op needs one offset and one global_shape entry per dim (rank 2), got 2 and 1}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 64>} : (tensor<8x128xf32>, tensor<i64>, index, index) -> tensor<8x128xf32>
  return
}

// -----

// Offsets and global_shape agree with each other but not with the rank.
func.func @offsets_exceed_rank(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o: index) {
  // expected-error @+2 {{'train.dropout' op needs one offset and one global_shape entry per dim (rank 2), got 3 and 3}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed, %o, %o, %o {rate = 0.1, global_shape = array<i64: 64, 128, 1>} : (tensor<8x128xf32>, tensor<i64>, index, index, index) -> tensor<8x128xf32>
  return
}

// -----

// A shard cannot be larger than the global tensor in any dim.
func.func @global_shape_smaller_than_shard(%x: tensor<8x128xf32>, %seed: tensor<i64>, %o0: index, %o1: index) {
  // expected-error @+2 {{'train.dropout' op global_shape 64x64 is smaller than the operand's 8x128}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 0.1, global_shape = array<i64: 64, 64>} : (tensor<8x128xf32>, tensor<i64>, index, index) -> tensor<8x128xf32>
  return
}

// -----

// The result has the operand's type.
func.func @wrong_result_shape(%x: tensor<8x128xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op inferred type(s) 'tensor<8x128xf32>' are incompatible with return type(s) of operation 'tensor<8x64xf32>'}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = 0.1} : (tensor<8x128xf32>, tensor<i64>) -> tensor<8x64xf32>
  return
}

// -----

// The result keeps the operand's element type.
func.func @wrong_result_element_type(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'train.dropout' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf16>'}}
  // expected-error @+1 {{'train.dropout' op failed to infer returned types}}
  %r = train.dropout %x, %seed {rate = 0.1} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf16>
  return
}
