// RUN: dist-opt %s -split-input-file -verify-diagnostics

// A reduced dim past the last dim.
func.func @reduce_dim_too_large(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'train.reduce' op reduced dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'train.reduce' op failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// reduce takes no negative dims (unlike softmax).
func.func @reduce_dim_negative(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'train.reduce' op reduced dim -1 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: -1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// A scalar has no dim 0.
func.func @reduce_scalar_dim(%x: tensor<f32>) {
  // expected-error @+2 {{'train.reduce' op reduced dim 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<max>, dims = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// A dim listed twice.
func.func @reduce_dim_repeated(%x: tensor<4x8x16xf32>) {
  // expected-error @+2 {{'train.reduce' op reduced dim 1 is listed twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 1, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4xf32>
  return
}

// -----

// mean is float-only (an integer mean would silently truncate).
func.func @reduce_mean_integer(%x: tensor<4x8xi32>) {
  // expected-error @+2 {{'train.reduce' op mean needs a float operand, got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64: 0>} : (tensor<4x8xi32>) -> tensor<8xi32>
  return
}

// -----

// mean over no dims of an integer operand is still a mean on integers.
func.func @reduce_mean_integer_empty_dims(%x: tensor<4x8xi64>) {
  // expected-error @+2 {{'train.reduce' op mean needs a float operand, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<mean>, dims = array<i64>} : (tensor<4x8xi64>) -> tensor<4x8xi64>
  return
}

// -----

// A declared result that keeps the reduced dim without keepdims.
func.func @reduce_result_missing_keepdims(%x: tensor<4x8x16xf32>) {
  // expected-error @+2 {{'train.reduce' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<4x1x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 1>} : (tensor<4x8x16xf32>) -> tensor<4x1x16xf32>
  return
}

// -----

// A declared result that drops the reduced dim despite keepdims.
func.func @reduce_result_keepdims(%x: tensor<4x8x16xf32>) {
  // expected-error @+2 {{'train.reduce' op inferred type(s) 'tensor<4x1x16xf32>' are incompatible with return type(s) of operation 'tensor<4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 1>, keepdims} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

// A declared result that reduces the wrong dim.
func.func @reduce_result_wrong_dim(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'train.reduce' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// A declared result element type that differs from the operand's.
func.func @reduce_result_element_type(%x: tensor<4x8xi32>) {
  // expected-error @+2 {{'train.reduce' op inferred type(s) 'tensor<8xi32>' are incompatible with return type(s) of operation 'tensor<8xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>, dims = array<i64: 0>} : (tensor<4x8xi32>) -> tensor<8xi64>
  return
}

// -----

// dims is required.
func.func @reduce_dims_missing(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'train.reduce' op requires attribute 'dims'}}
  %r = train.reduce %x {kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<f32>
  return
}

// -----

// kind is required.
func.func @reduce_kind_missing(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'train.reduce' op requires attribute 'kind'}}
  %r = train.reduce %x {dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

// There is no product reduction.
func.func @reduce_kind_unknown(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{expected ::mlir::train::ReduceKind to be one of: sum, mean, max, min}}
  // expected-error @+1 {{failed to parse Train_ReduceKindAttr parameter 'value'}}
  %r = train.reduce %x {kind = #train.reduce_kind<prod>, dims = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

// softmax over a dim past the last one.
func.func @softmax_dim_too_large(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.softmax' op dim 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax %x {dim = 2 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return
}

// -----

// softmax over a negative dim before the first one.
func.func @softmax_dim_too_negative(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.softmax' op dim -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax %x {dim = -3 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return
}

// -----

// softmax of a scalar has no dim to normalize over.
func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{'train.softmax' op dim 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax %x {dim = 0 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// softmax is float-only.
func.func @softmax_integer(%x: tensor<8x10xi32>) {
  // expected-error @+1 {{'train.softmax' op operand #0 must be statically shaped tensor of float values, but got 'tensor<8x10xi32>'}}
  %r = train.softmax %x {dim = 1 : i64} : (tensor<8x10xi32>) -> tensor<8x10xi32>
  return
}

// -----

// softmax needs its dim.
func.func @softmax_dim_missing(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'train.softmax' op requires attribute 'dim'}}
  %r = train.softmax %x : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return
}

// -----

// A declared softmax result of another element type.
func.func @softmax_result_type(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.softmax' op inferred type(s) 'tensor<8x10xf32>' are incompatible with return type(s) of operation 'tensor<8x10xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax %x {dim = 1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf16>
  return
}

// -----

// log_softmax over a dim past the last one of a rank-3 operand.
func.func @log_softmax_dim_too_large(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'train.log_softmax' op dim 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax %x {dim = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// log_softmax over a negative dim before the first one.
func.func @log_softmax_dim_too_negative(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'train.log_softmax' op dim -4 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax %x {dim = -4 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// A declared log_softmax result of another shape.
func.func @log_softmax_result_shape(%x: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.log_softmax' op inferred type(s) 'tensor<8x10xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax %x {dim = 1 : i64} : (tensor<8x10xf32>) -> tensor<8xf32>
  return
}

// -----

// softmax_backward operands of different shapes.
func.func @softmax_backward_shapes(%g: tensor<8x10xf32>, %y: tensor<8x1xf32>) {
  // expected-error @+2 {{'train.softmax_backward' op operands must have one type, got 'tensor<8x10xf32>' and 'tensor<8x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax_backward %g, %y {dim = 1 : i64} : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32>
  return
}

// -----

// softmax_backward operands of different element types.
func.func @softmax_backward_element_types(%g: tensor<8x10xf32>, %y: tensor<8x10xbf16>) {
  // expected-error @+2 {{'train.softmax_backward' op operands must have one type, got 'tensor<8x10xf32>' and 'tensor<8x10xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax_backward %g, %y {dim = 1 : i64} : (tensor<8x10xf32>, tensor<8x10xbf16>) -> tensor<8x10xf32>
  return
}

// -----

// softmax_backward over a dim out of range.
func.func @softmax_backward_dim(%g: tensor<8x10xf32>, %y: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.softmax_backward' op dim -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax_backward %g, %y {dim = -3 : i64} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  return
}

// -----

// A declared softmax_backward result of another shape.
func.func @softmax_backward_result(%g: tensor<8x10xf32>, %y: tensor<8x10xf32>) {
  // expected-error @+2 {{'train.softmax_backward' op inferred type(s) 'tensor<8x10xf32>' are incompatible with return type(s) of operation 'tensor<10x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.softmax_backward %g, %y {dim = 1 : i64} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<10x8xf32>
  return
}

// -----

// log_softmax_backward operands of different shapes (a broadcast is not implied).
func.func @log_softmax_backward_shapes(%g: tensor<2x3x4xf32>, %y: tensor<3x4xf32>) {
  // expected-error @+2 {{'train.log_softmax_backward' op operands must have one type, got 'tensor<2x3x4xf32>' and 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax_backward %g, %y {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// log_softmax_backward over a dim out of range.
func.func @log_softmax_backward_dim(%g: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'train.log_softmax_backward' op dim 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax_backward %g, %y {dim = 3 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// log_softmax_backward is float-only.
func.func @log_softmax_backward_integer(%g: tensor<2x3xi32>, %y: tensor<2x3xi32>) {
  // expected-error @+1 {{'train.log_softmax_backward' op operand #0 must be statically shaped tensor of float values, but got 'tensor<2x3xi32>'}}
  %r = train.log_softmax_backward %g, %y {dim = 1 : i64} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  return
}

// -----

// A declared log_softmax_backward result of another element type.
func.func @log_softmax_backward_result(%g: tensor<2x3x4xf16>, %y: tensor<2x3x4xf16>) {
  // expected-error @+2 {{'train.log_softmax_backward' op inferred type(s) 'tensor<2x3x4xf16>' are incompatible with return type(s) of operation 'tensor<2x3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.log_softmax_backward %g, %y {dim = -2 : i64} : (tensor<2x3x4xf16>, tensor<2x3x4xf16>) -> tensor<2x3x4xf32>
  return
}
