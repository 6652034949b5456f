// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-record-step | FileCheck %s
// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-record-step=drop-function-attributes | FileCheck %s --check-prefix=DROP

// A partitioned step: every value's name, role, block type and split axes,
// and the mesh; the entry gets a C interface.
// CHECK-LABEL: module attributes {train.step = {
// CHECK-SAME: arguments = [{name = "w", role = "param", split = {{\[}}[], ["model"]], type = tensor<4x2xf32>},
// CHECK-SAME: {name = "x", role = "input", split = {{\[}}["data"], []], type = tensor<8x4xf32>},
// CHECK-SAME: {name = "lr", role = "hyper", split = [], type = tensor<f32>}],
// CHECK-SAME: entry = "step", mesh_axes = ["data", "model"], mesh_shape = array<i64: 2, 2>,
// CHECK-SAME: results = [{name = "w", role = "param", split = {{\[}}[], ["model"]], type = tensor<4x2xf32>}]}}
// CHECK: func.func @step({{.*}}train.name = "w"{{.*}} attributes {dist.partitioned, llvm.emit_c_interface}
// DROP-LABEL: module attributes {train.step
// DROP-NOT: train.role
// DROP-NOT: train.name
// DROP: attributes {dist.partitioned, llvm.emit_c_interface}
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
func.func @step(%w: tensor<4x2xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh, [[], [model]]>},
                %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x", dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr", dist.sharding = #dist.sharding<@mesh, []>})
    -> (tensor<4x2xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh, [[], [model]]>})
    attributes {dist.partitioned} {
  return %w : tensor<4x2xf32>
}

// -----

// Not partitioned (annotations only): no mesh and no splits.
// CHECK-LABEL: module attributes {train.step = {arguments = [{name = "w", role = "param", type = tensor<4xf32>}], entry = "step", results = [{name = "loss", role = "loss", type = tensor<f32>}]}}
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh, [[data]]>})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A module that has a record keeps it.
// CHECK-LABEL: module attributes {train.step = {arguments = [], entry = "lowered", results = []}}
module attributes {train.step = {arguments = [], entry = "lowered", results = []}} {
  func.func @step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}

// -----

// Two training steps and no entry named, or none at all: nothing recorded.
// CHECK-LABEL: module {
// CHECK-NOT: train.step
func.func @a(%w: tensor<4xf32> {train.role = #train.role<param>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
func.func @b(%w: tensor<4xf32> {train.role = #train.role<param>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0 is 'memref<4xf32>', not a ranked tensor: the step signature cannot record it}}
func.func @step(%w: memref<4xf32> {train.role = #train.role<param>}) {
  return
}

// -----

// Runners bind by name: two arguments under one name are refused (dist-run
// bound both from one array and freed a shared result twice).
// expected-error @+1 {{argument #1 'w' reuses the name of argument #0}}
func.func @step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
                %v: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}) {
  return
}

// -----

// Placed programs with the single-device evaluation function that
// dist-pipeline and dist-parameter-server leave beside them: recorded with
// whole arrays (rank 0 evaluates on the gathered parameters).
// CHECK-LABEL: module attributes {train.step = {
// CHECK-SAME: eval = {arguments = [{name = "w", role = "param", type = tensor<4xf32>}, {name = "x", role = "input", type = tensor<2x4xf32>}], entry = "step_eval", results = [{name = "loss", role = "loss", type = tensor<f32>}]}
// CHECK-SAME: programs = [{arguments = [{name = "w", role = "param", type = tensor<4xf32>}], devices = array<i64: 0>, entry = "step_pipe0"
// CHECK: func.func @step_eval({{.*}} attributes {llvm.emit_c_interface, train.eval_of = @step}
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 1>}
func.func @step_pipe0(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return %w : tensor<4xf32>
}
func.func @step_eval(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
                     %x: tensor<2x4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"})
    attributes {train.eval_of = @step} {
  %l = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Placed programs evaluate on one device: a distributed evaluation
// function beside them is an error, and so is a second one.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @step_pipe0(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return %w : tensor<4xf32>
}
func.func @step_pipe1(%v: tensor<4xf32> {train.role = #train.role<param>, train.name = "v"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "v"})
    attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  return %v : tensor<4xf32>
}
// expected-error @+1 {{the evaluation function of the placed programs is distributed over mesh 'pipe': placed programs evaluate on one device (derive it before the strategy)}}
func.func @step_eval(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@pipe, [[pipe]]>})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"})
    attributes {dist.partitioned, train.eval_of = @step} {
  %l = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 1>}
func.func @step_pipe0(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return %w : tensor<4xf32>
}
func.func @step_eval(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<loss>, train.name = "loss"})
    attributes {train.eval_of = @step} {
  return %w : tensor<4xf32>
}
// expected-error @+1 {{is a second evaluation function (after 'step_eval'): placed programs have one}}
func.func @step_eval2(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<loss>, train.name = "loss"})
    attributes {train.eval_of = @step} {
  return %w : tensor<4xf32>
}
