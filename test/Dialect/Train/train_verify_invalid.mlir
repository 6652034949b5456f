// RUN: dist-opt %s -split-input-file --train-verify -verify-diagnostics

// An argument without a role in a training step.
// expected-error @+1 {{'func.func' op argument #1 'x' has no 'train.role'}}
func.func @missing_role(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<4xf32> {train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A result without a name.
// expected-error @+1 {{'func.func' op result #0 (loss) has no 'train.name'}}
func.func @missing_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Two arguments with one name.
// expected-error @+1 {{'func.func' op argument #1 'x' (label) reuses the name of argument #0 'x' (input)}}
func.func @duplicate_argument_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Two results with one name.
// expected-error @+1 {{'func.func' op result #1 'loss' (metric) reuses the name of result #0 'loss' (loss)}}
func.func @duplicate_result_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
        tensor<f32> {train.role = #train.role<metric>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s, %s : tensor<f32>, tensor<f32>
}

// -----

// An updated param that names no argument.
// expected-error @+1 {{'func.func' op result #0 'w2' (param) does not name an argument: updated state must replace the argument of the same name}}
func.func @param_without_argument(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w2"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %w, %s : tensor<4xf32>, tensor<f32>
}

// -----

// An updated param whose type differs from its argument's.
// expected-error @+1 {{'func.func' op result #0 'w' (param) has type 'tensor<2x2xf32>' but argument #0 'w' (param) has 'tensor<4xf32>'}}
func.func @param_type_changes(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2x2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %r = train.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  return %r, %s : tensor<2x2xf32>, tensor<f32>
}

// -----

// Optimizer state returned as a param.
// expected-error @+1 {{'func.func' op result #0 'm' (param) replaces argument #1 'm' (opt_state) of another role}}
func.func @role_changes(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "m"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "m"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %m, %s : tensor<4xf32>, tensor<f32>
}

// -----

// No loss.
// expected-error @+1 {{'func.func' op has no result with role 'loss'}}
func.func @no_loss(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// Two losses.
// expected-error @+1 {{'func.func' op has two loss results: result #0 'a' (loss) and result #1 'b' (loss)}}
func.func @two_losses(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "a"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "b"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s, %s : tensor<f32>, tensor<f32>
}

// -----

// A loss that is not a float scalar.
// expected-error @+1 {{'func.func' op result #0 'loss' (loss) must be a float scalar tensor, got 'tensor<4xf32>'}}
func.func @vector_loss(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4xf32> {train.role = #train.role<loss>, train.name = "loss"}) {
  return %x : tensor<4xf32>
}
