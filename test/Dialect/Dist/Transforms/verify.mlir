// RUN: dist-opt %s -split-input-file --dist-verify -verify-diagnostics | FileCheck %s

// A mirrored step keeps the contract: state results whole like their
// arguments, the batch split, the loss whole.
// CHECK-LABEL: func.func @mirrored
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @mirrored(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh, [[], []]>},
    %m: tensor<2x8xf32> {train.role = #train.role<opt_state>, train.name = "m", dist.sharding = #dist.sharding<@mesh, [[data], []]>},
    %x: tensor<2x8xf32> {train.role = #train.role<input>, train.name = "x", dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<2x8xf32> {train.role = #train.role<opt_state>, train.name = "m", dist.sharding = #dist.sharding<@mesh, [[data], []]>},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss", dist.sharding = #dist.sharding<@mesh, []>})
    attributes {dist.partitioned} {
  %l = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<2x8xf32>) -> tensor<f32>
  return %w, %m, %l : tensor<4x8xf32>, tensor<2x8xf32>, tensor<f32>
}

// -----

// A parameter argument whole but its update split over the data axis (what
// hybrid + ZeRO-1 once produced): the runner would feed a slice back.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 1>}
func.func @split_update(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight", dist.sharding = #dist.sharding<@mesh, [[], []]>},
    %x: tensor<2x8xf32> {train.role = #train.role<input>, train.name = "x", dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight", dist.sharding = #dist.sharding<@mesh, [[data], []]>},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<2x8xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'fc.weight' (param) comes back as #dist.sharding<@mesh, [[data], []]> but argument #0 'fc.weight' (param) is #dist.sharding<@mesh, [[], []]>: a state result must keep its argument's sharding}}
  return %w, %l : tensor<4x8xf32>, tensor<f32>
}

// -----

// A momentum buffer split by columns but returned split by rows (a
// hand-annotated step; partitioning returns what propagation chose).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @rows_for_columns(
    %m: tensor<4x4xf32> {train.role = #train.role<opt_state>, train.name = "m", dist.sharding = #dist.sharding<@mesh, [[], [data]]>},
    %x: tensor<4x4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4x4xf32> {train.role = #train.role<opt_state>, train.name = "m", dist.sharding = #dist.sharding<@mesh, [[data], []]>},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'm' (opt_state) comes back as #dist.sharding<@mesh, [[data], []]> but argument #0 'm' (opt_state) is #dist.sharding<@mesh, [[], [data]]>}}
  return %x, %l : tensor<4x4xf32>, tensor<f32>
}

// -----

// A state result split where its argument has no sharding at all.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @unannotated_argument(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh, [[data]]>},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'w' (param) comes back as #dist.sharding<@mesh, [[data]]> but argument #0 'w' (param) is whole (no dist.sharding)}}
  return %w, %l : tensor<4xf32>, tensor<f32>
}

// -----

// The loss comes back as a pending sum over the data axis.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @partial_loss(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss", dist.sharding = #dist.sharding<@mesh, [], partial = [data]>}) {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #0 'loss' (loss) comes back as a pending partial sum #dist.sharding<@mesh, [], partial = [data]>: a step's results are whole values or their slices}}
  return %l : tensor<f32>
}

// -----

// A metric split over the data axis.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @split_metric(
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
        tensor<4xf32> {train.role = #train.role<metric>, train.name = "per_sample", dist.sharding = #dist.sharding<@mesh, [[data]]>}) {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  // expected-error @+1 {{result #1 'per_sample' (metric) comes back split as #dist.sharding<@mesh, [[data]]>: a metric is whole on every device}}
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// A hyper-parameter split over the data axis.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @split_hyper(
    // expected-error @+1 {{argument #0 'lr' (hyper) is split as #dist.sharding<@mesh, [[data]]>: a hyper-parameter is the same on every device}}
    %lr: tensor<2xf32> {train.role = #train.role<hyper>, train.name = "lr", dist.sharding = #dist.sharding<@mesh, [[data]]>})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %lr {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The train dialect's contract is part of it: a state result of another
// type than its argument.
func.func @other_type(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %s = train.slice %w {start = array<i64: 0>, limit = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
  // expected-error @+1 {{result #0 'w' (param) has type 'tensor<2xf32>' but argument #0 'w' (param) has 'tensor<4xf32>'}}
  return %s, %l : tensor<2xf32>, tensor<f32>
}
