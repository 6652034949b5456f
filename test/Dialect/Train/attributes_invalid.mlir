// RUN: dist-opt %s -split-input-file -verify-diagnostics

// A result role on an argument.
// expected-error @+1 {{'func.func' op argument #0: role 'loss' is not valid on an argument (expected param, opt_state, input, label or hyper)}}
func.func @loss_argument(%x: tensor<f32> {train.role = #train.role<loss>}) {
  return
}

// -----

// An argument role on a result.
// expected-error @+1 {{'func.func' op result #0: role 'input' is not valid on a result (expected param, opt_state, loss or metric)}}
func.func @input_result(%x: tensor<f32>) -> (tensor<f32> {train.role = #train.role<input>}) {
  return %x : tensor<f32>
}

// -----

// A role given as a string.
// expected-error @+1 {{'func.func' op argument #0: 'train.role' must be a #train.role attribute, got "param"}}
func.func @string_role(%x: tensor<f32> {train.role = "param"}) {
  return
}

// -----

// An unknown role keyword.
// expected-error @+2 {{expected ::mlir::train::Role to be one of: param, opt_state, input, label, hyper, loss, metric}}
// expected-error @+1 {{failed to parse Train_RoleAttr parameter 'value'}}
func.func @unknown_role(%x: tensor<f32> {train.role = #train.role<weights>}) {
  return
}

// -----

// An empty name.
// expected-error @+1 {{'func.func' op argument #0: 'train.name' must be a non-empty string, got ""}}
func.func @empty_name(%x: tensor<f32> {train.name = ""}) {
  return
}

// -----

// A name that is not a string.
// expected-error @+1 {{'func.func' op result #0: 'train.name' must be a non-empty string, got 3 : i64}}
func.func @integer_name(%x: tensor<f32>) -> (tensor<f32> {train.name = 3}) {
  return %x : tensor<f32>
}

// -----

// An unknown train attribute on an argument.
// expected-error @+1 {{'func.func' op argument #0: unknown attribute 'train.rol'}}
func.func @typo(%x: tensor<f32> {train.rol = #train.role<param>}) {
  return
}

// -----

// An unknown train attribute on an op.
func.func @op_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.neg' op unknown attribute 'train.role' (train attributes on ops are 'train.sharding_rule', 'train.cost', 'train.stage' and 'train.loss_seed', on functions 'train.eval_of', 'train.mixed_precision' and 'train.remat', on modules 'train.step'; roles and names belong on function arguments and results)}}
  %0 = train.neg %x {train.role = #train.role<param>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The test passes' attributes must have their types.
func.func @bad_rule_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.neg' op 'train.sharding_rule' must be a string}}
  %0 = train.neg %x {train.sharding_rule = 1} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A misspelled attribute is an error, not silently ignored.
func.func @misspelled_attribute(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+1 {{'train.conv2d' op unknown attribute 'stride' (the op's attributes are: dilations, groups, padding, strides)}}
  %0 = train.conv2d %x, %w {stride = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

// An attribute of another op is an error too.
func.func @foreign_attribute(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{'train.max_pool2d' op unknown attribute 'count_include_pad' (the op's attributes are: kernel_size, padding, strides)}}
  %0 = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = false} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// An op without attributes says so.
func.func @no_attributes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.neg' op unknown attribute 'fast' (the op's attributes are: none)}}
  %0 = train.neg %x {fast} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The step record belongs on a module, as a dictionary.
// expected-error @+1 {{'func.func' op 'train.step' must be a dictionary on a module}}
func.func @record_on_func() attributes {train.step = {entry = "x"}} {
  return
}

// -----

// expected-error @+1 {{'builtin.module' op 'train.step' must be a dictionary on a module}}
module attributes {train.step = "train_step"} {
}

// -----

// The classes of a label: a positive integer, on an argument.
// expected-error @+1 {{'func.func' op argument #0: 'train.classes' must be a positive integer on an argument (the classes a label indexes), got 0 : i64}}
func.func @zero_classes(%y: tensor<4xi32> {train.classes = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'train.classes' must be a positive integer on an argument (the classes a label indexes), got 3 : i64}}
func.func @result_classes(%y: tensor<4xi32>) -> (tensor<4xi32> {train.classes = 3 : i64}) {
  return %y : tensor<4xi32>
}

// -----

// train.eval_of names the step a function evaluates: a symbol.
// expected-error @+1 {{'func.func' op 'train.eval_of' must be a symbol (the training step) on a function}}
func.func @bad_eval_of() attributes {train.eval_of = "train_step"} {
  return
}

// -----

// An initial value: a float or "normal", on an argument.
// expected-error @+1 {{'func.func' op argument #0: 'train.init' must be a float or "normal" on an argument (its initial value), got "uniform"}}
func.func @bad_init(%s: tensor<f32> {train.init = "uniform"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'train.init' must be a float or "normal" on an argument (its initial value), got 1.000000e+00 : f64}}
func.func @result_init(%s: tensor<f32>) -> (tensor<f32> {train.init = 1.0 : f64}) {
  return %s : tensor<f32>
}

// -----

// The backward's seed is a constant.
func.func @bad_seed(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'train.neg' op 'train.loss_seed' must be a unit attribute on a train.constant (the backward's seed)}}
  %0 = train.neg %x {train.loss_seed} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op 'train.mixed_precision' must be a string (train-mixed-precision's options) on a function}}
func.func @bad_precision() attributes {train.mixed_precision = 16} {
  return
}
