// RUN: dist-opt %s -split-input-file --train-verify -verify-diagnostics

// An argument without a role in a training step.
func.func @missing_role(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    // expected-error @+1 {{argument #1 'x' has no 'train.role'}}
    %x: tensor<4xf32> {train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A result without a name.
func.func @missing_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 (loss) has no 'train.name'}}
  return %s : tensor<f32>
}

// -----

// Two arguments with one name.
func.func @duplicate_argument_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"},
    // expected-error @+1 {{argument #1 'x' (label) reuses the name of argument #0 'x' (input)}}
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Two results with one name.
func.func @duplicate_result_name(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
        tensor<f32> {train.role = #train.role<metric>, train.name = "loss"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #1 'loss' (metric) reuses the name of result #0 'loss' (loss)}}
  return %s, %s : tensor<f32>, tensor<f32>
}

// -----

// An updated param that names no argument.
func.func @param_without_argument(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w2"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'w2' (param) does not name an argument: updated state must replace the argument of the same name}}
  return %w, %s : tensor<4xf32>, tensor<f32>
}

// -----

// An updated param whose type differs from its argument's.
func.func @param_type_changes(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2x2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %r = train.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  // expected-error @+1 {{result #0 'w' (param) has type 'tensor<2x2xf32>' but argument #0 'w' (param) has 'tensor<4xf32>'}}
  return %r, %s : tensor<2x2xf32>, tensor<f32>
}

// -----

// Optimizer state returned as a param.
func.func @role_changes(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "m"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "m"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'm' (param) replaces argument #1 'm' (opt_state) of another role}}
  return %m, %s : tensor<4xf32>, tensor<f32>
}

// -----

// No loss.
// expected-error @+1 {{training step 'no_loss' has no result with role 'loss'}}
func.func @no_loss(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// Two losses.
func.func @two_losses(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "a"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "b"}) {
  %s = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #1 'b' (loss) is a second loss (result #0 'a' (loss) is one)}}
  return %s, %s : tensor<f32>, tensor<f32>
}

// -----

// A loss that is not a float scalar.
func.func @vector_loss(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4xf32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // expected-error @+1 {{result #0 'loss' (loss) must be a float scalar tensor, got 'tensor<4xf32>'}}
  return %x : tensor<4xf32>
}
