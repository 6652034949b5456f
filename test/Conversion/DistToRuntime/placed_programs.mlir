// RUN: dist-opt %s -split-input-file --dist-to-runtime | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-to-runtime="outline-fragments=false" | FileCheck %s --check-prefix=NOOUTLINE

// Two placed programs (a 2-stage pipeline). The step records one program
// per place; sends start where they stood and complete before the return,
// a receive is posted before the fragment preceding it and waited where it
// stood; fragments are inlined between unit marks (kind, stage,
// microbatch); the placement attributes and the mesh are gone.

// CHECK-LABEL: module attributes {
// CHECK-SAME: train.step = {arguments = [{name = "w0", role = "param", type = tensor<4x4xf32>}, {name = "x", role = "input", type = tensor<2x4xf32>}],
// CHECK-SAME: entry = "step_pipe0", mesh_axes = ["pipe"], mesh_shape = array<i64: 2>,
// CHECK-SAME: programs = [{arguments = [{name = "w0", {{.*}}}], devices = array<i64: 0>, entry = "step_pipe0", results = [{name = "w0", role = "param", type = tensor<4x4xf32>}]},
// CHECK-SAME: {arguments = [{name = "w1", {{.*}}}], devices = array<i64: 1>, entry = "step_pipe1", results = [{name = "w1", role = "param", type = tensor<4x4xf32>}, {name = "loss", role = "loss", type = tensor<f32>}]}]
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @step_pipe0(
// CHECK-SAME: attributes {llvm.emit_c_interface} {
// CHECK: call @distrt_mlir_unit_begin(%[[F:.*]], %[[S0:.*]], %[[M0:.*]]) : (i64, i64, i64) -> ()
// CHECK: train.matmul
// CHECK: call @distrt_mlir_unit_end() : () -> ()
// CHECK: %[[SEND:.*]] = call @distrt_mlir_send_start_f32(%{{.*}}, %[[TO:.*]], %[[CH0:.*]]) : (memref<*xf32>, i64, i64) -> i64
// The gradient's receive is posted before the backward's predecessor...
// CHECK: %[[RECV:.*]] = call @distrt_mlir_recv_start_f32(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<*xf32>, i64, i64) -> i64
// CHECK: call @distrt_mlir_unit_begin
// CHECK: call @distrt_mlir_unit_end
// ... and completed before the backward.
// CHECK: call @distrt_mlir_wait(%[[RECV]], %{{.*}}) : (i64, index) -> ()
// CHECK: call @distrt_mlir_unit_begin
// CHECK: train.matmul
// CHECK: call @distrt_mlir_unit_end
// CHECK: call @distrt_mlir_wait(%[[SEND]], %{{.*}}) : (i64, index) -> ()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @step_pipe1(
// CHECK: call @distrt_mlir_recv_start_f32
// CHECK: call @distrt_mlir_wait
// CHECK: call @distrt_mlir_unit_begin
// CHECK: call @distrt_mlir_send_start_f32
// CHECK: func.func private @distrt_mlir_send_start_f32(memref<*xf32>, i64, i64) -> i64 attributes {distopt.host_operands, llvm.emit_c_interface}
// CHECK: func.func private @distrt_mlir_recv_start_f32(memref<*xf32>, i64, i64) -> i64 attributes {distopt.host_operands, llvm.emit_c_interface}
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @step_pipe0(
    %w0: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w0"},
    %x: tensor<2x4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w0"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  %h = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<F, stage = 0, microbatch = 0> (%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
    %m = train.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    dist.yield %m : tensor<2x4xf32>
  }
  dist.send %h to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2x4xf32>
  %idle = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<W, stage = 0, microbatch = 0> (%w0) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%b: tensor<4x4xf32>):
    dist.yield %b : tensor<4x4xf32>
  }
  %g = dist.recv from #dist.place<@pipe, pipe = 1> channel = 1 : tensor<2x4xf32>
  %w = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<B, stage = 0, microbatch = 0> (%x, %g, %idle) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %d: tensor<2x4xf32>, %b: tensor<4x4xf32>):
    %gw = train.matmul %a, %d {transpose_lhs} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %n = train.sub %b, %gw : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    dist.yield %n : tensor<4x4xf32>
  }
  return %w : tensor<4x4xf32>
}
func.func @step_pipe1(
    %w1: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w1"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w1"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"})
    attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  %h = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2x4xf32>
  %l, %d = dist.fragment on #dist.place<@pipe, pipe = 1> unit #dist.unit<F, stage = 1, microbatch = 0> (%h) : (tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
  ^bb0(%a: tensor<2x4xf32>):
    %s = train.reduce %a {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<2x4xf32>) -> tensor<f32>
    dist.yield %s, %a : tensor<f32>, tensor<2x4xf32>
  }
  dist.send %d to #dist.place<@pipe, pipe = 0> channel = 1 : tensor<2x4xf32>
  return %w1, %l : tensor<4x4xf32>, tensor<f32>
}

// -----

// On a [pipe, data] mesh a program placed on one stage runs on the stage's
// data group: the peer is this device moved along `pipe` (world rank + 2
// for stage 0 -> 1), found at run time.
// CHECK-LABEL: programs = [{arguments = [{type = tensor<4xf32>}], devices = array<i64: 0, 1>, entry = "s0", results = []}, {arguments = [], devices = array<i64: 2, 3>, entry = "s1", results = []}]
// CHECK-LABEL: func.func @s0(
// CHECK: %[[RANK:.*]] = call @distrt_mlir_world_rank() : () -> i64
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[PEER:.*]] = arith.addi %[[RANK]], %[[TWO]] : i64
// CHECK: call @distrt_mlir_send_start_f32(%{{.*}}, %[[PEER]], %{{.*}})
// CHECK-LABEL: func.func @s1(
// CHECK: arith.constant -2 : i64
dist.mesh @grid {axes = ["pipe", "data"], shape = array<i64: 2, 2>}
func.func @s0(%a: tensor<4xf32>) attributes {dist.place = #dist.place<@grid, pipe = 0>} {
  dist.send %a to #dist.place<@grid, pipe = 1> channel = 0 : tensor<4xf32>
  return
}
func.func @s1() attributes {dist.place = #dist.place<@grid, pipe = 1>} {
  %a = dist.recv from #dist.place<@grid, pipe = 0> channel = 0 : tensor<4xf32>
  return
}

// -----

// A server serving two workers in the order their requests arrive: a loop
// of two requests carrying the variable (and where to look first), the
// runtime's probe over the workers' ranks (1, 2) and probed channels (0, 1),
// a switch over the cases; a case receives, updates, replies and completes
// its reply before the next request. The cases' updates, the same
// computation, are one function.
// CHECK-LABEL: func.func @step_ps0(
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: tensor.from_elements %[[ONE]], %[[TWO]] : tensor<2xi64>
// CHECK: tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xi64>
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[V:.*]] = %arg0, %[[NEXT:.*]] = %{{.*}}) -> (tensor<4xf32>, i64) {
// CHECK: %[[K:.*]] = func.call @distrt_mlir_probe_any(%{{.*}}, %{{.*}}, %[[NEXT]]) : (memref<?xi64>, memref<?xi64>, i64) -> i64
// CHECK: %[[I:.*]] = arith.index_cast %[[K]] : i64 to index
// CHECK: scf.index_switch %[[I]] -> tensor<4xf32>
// CHECK: case 0 {
// CHECK: call @distrt_mlir_recv_start_f32
// CHECK: call @distrt_mlir_wait
// CHECK: call @distrt_mlir_unit_begin
// CHECK: call @step_ps0_U0(%[[V]], %{{.*}}) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: call @distrt_mlir_send_start_f32
// CHECK: call @distrt_mlir_wait
// CHECK-NEXT: scf.yield
// CHECK: case 1 {
// CHECK: default {
// CHECK-NEXT: scf.yield %[[V]]
// CHECK: arith.addi %[[K]], %{{.*}} : i64
// CHECK: return %[[R]]#0
// CHECK: func.func private @distrt_mlir_probe_any(memref<?xi64>, memref<?xi64>, i64) -> i64
dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @step_ps0(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {dist.place = #dist.place<@cluster, task = 0>} {
  %r = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>]
      channels [0, 1] count 2 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    %n = dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 0> (%v, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = train.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      dist.yield %s : tensor<4xf32>
    }
    dist.send %n to #dist.place<@cluster, task = 1> channel = 2 : tensor<4xf32>
    dist.yield %n : tensor<4xf32>
  }, {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 2> channel = 1 : tensor<4xf32>
    %n = dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 1> (%v, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = train.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      dist.yield %s : tensor<4xf32>
    }
    dist.send %n to #dist.place<@cluster, task = 2> channel = 3 : tensor<4xf32>
    dist.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// Fragments with the same body (the forward of two microbatches, which
// differ only in the rows their slice reads) become one private function
// called by each, the slice's start an index argument; a fragment like no
// other (the backward) is inlined. With outline-fragments=false every
// fragment is inlined (NOOUTLINE).
// CHECK-LABEL: func.func @mb_pipe0(
// CHECK: %[[ROW0:.*]] = arith.constant 0 : index
// CHECK: call @distrt_mlir_unit_begin
// CHECK: %[[F0:.*]] = call @mb_pipe0_F0(%arg0, %arg1, %[[ROW0]]) : (tensor<4x4xf32>, tensor<4x4xf32>, index) -> tensor<2x4xf32>
// CHECK: call @distrt_mlir_unit_end
// CHECK: %[[ROW2:.*]] = arith.constant 2 : index
// CHECK: call @distrt_mlir_unit_begin
// CHECK: %[[F1:.*]] = call @mb_pipe0_F0(%arg0, %arg1, %[[ROW2]])
// CHECK: call @distrt_mlir_unit_end
// CHECK: call @distrt_mlir_unit_begin
// CHECK: train.add %[[F0]], %[[F1]]
// CHECK: call @distrt_mlir_unit_end
// CHECK-LABEL: func.func private @mb_pipe0_F0(
// CHECK-SAME: %[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x4xf32>, %[[ROW:.*]]: index) -> tensor<2x4xf32> {
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][%[[ROW]], 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK: %[[M:.*]] = train.matmul %[[S]], %[[W]]
// CHECK: return %[[M]] : tensor<2x4xf32>
// NOOUTLINE-LABEL: func.func @mb_pipe0(
// NOOUTLINE-NOT: call @mb_pipe0
// NOOUTLINE: train.slice %arg0 {limit = array<i64: 2, 4>, start = array<i64: 0, 0>}
// NOOUTLINE: train.slice %arg0 {limit = array<i64: 4, 4>, start = array<i64: 2, 0>}
// NOOUTLINE-NOT: func.func private @mb_pipe0
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @mb_pipe0(
    %x: tensor<4x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2x4xf32> {train.role = #train.role<param>, train.name = "y"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  %f0 = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<F, stage = 0, microbatch = 0> (%x, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %s = train.slice %a {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %m = train.matmul %s, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    dist.yield %m : tensor<2x4xf32>
  }
  %f1 = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<F, stage = 0, microbatch = 1> (%x, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %s = train.slice %a {start = array<i64: 2, 0>, limit = array<i64: 4, 4>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %m = train.matmul %s, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    dist.yield %m : tensor<2x4xf32>
  }
  %sum = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<B, stage = 0, microbatch = 1> (%f0, %f1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>):
    %t = train.add %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %t : tensor<2x4xf32>
  }
  return %sum : tensor<2x4xf32>
}

// -----

// A backward that starts running sums (the first microbatch's: it yields
// its gradient) and one that adds to them (the others': one more input,
// the sum so far, and a train.add before the yield) are one function: the
// first calls it with zeros as the sums.
// CHECK-LABEL: func.func @acc_pipe0(
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
// CHECK: call @distrt_mlir_unit_begin
// CHECK: %[[G0:.*]] = call @acc_pipe0_B0(%arg0, %[[ZERO]], %{{.*}}) : (tensor<4x4xf32>, tensor<4x4xf32>, index) -> tensor<4x4xf32>
// CHECK: call @distrt_mlir_unit_begin
// CHECK: %[[G1:.*]] = call @acc_pipe0_B0(%arg0, %[[G0]], %{{.*}})
// CHECK: return %[[G1]]
// CHECK-LABEL: func.func private @acc_pipe0_B0(
// CHECK: train.matmul
// CHECK: %[[SUM:.*]] = train.add %arg1, %{{.*}}
// CHECK: return %[[SUM]]
// NOOUTLINE-LABEL: func.func @acc_pipe0(
// NOOUTLINE-NOT: call @acc_pipe0
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @acc_pipe0(
    %x: tensor<4x4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "g"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  %g0 = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<B, stage = 0, microbatch = 0> (%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    %s = train.slice %a {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %m = train.matmul %s, %s {transpose_lhs} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    dist.yield %m : tensor<4x4xf32>
  }
  %g1 = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<B, stage = 0, microbatch = 1> (%x, %g0) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %acc: tensor<4x4xf32>):
    %s = train.slice %a {start = array<i64: 2, 0>, limit = array<i64: 4, 4>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %m = train.matmul %s, %s {transpose_lhs} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %t = train.add %acc, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    dist.yield %t : tensor<4x4xf32>
  }
  return %g1 : tensor<4x4xf32>
}
