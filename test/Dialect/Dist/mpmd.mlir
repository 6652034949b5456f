// RUN: dist-opt %s -split-input-file | dist-opt -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// Two programs of a 2-stage pipeline: stage 0 computes a forward fragment
// and sends the activation to stage 1, which receives it.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}

// CHECK-LABEL: func.func @stage0
// CHECK-SAME: dist.place = #dist.place<@pipe, pipe = 0>
// CHECK-SAME: dist.schedule = {microbatches = 1 : i64, schedule = "1f1b"}
// CHECK: %[[H:.*]] = dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<F, stage = 0, microbatch = 0> origin ["stage0"] (%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>):
// CHECK-NEXT: %[[P:.*]] = train.matmul %[[X]], %[[W]]
// CHECK-NEXT: dist.yield %[[P]] : tensor<4x8xf32>
// CHECK: dist.send %[[H]] to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<4x8xf32>
func.func @stage0(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>)
    attributes {dist.place = #dist.place<@pipe, pipe = 0>,
                dist.schedule = {schedule = "1f1b", microbatches = 1}} {
  %h = dist.fragment on #dist.place<@pipe, pipe = 0>
      unit #dist.unit<F, stage = 0, microbatch = 0> origin ["stage0"] (%x, %w)
      : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8x8xf32>):
    %p = train.matmul %xa, %wa : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    dist.yield %p : tensor<4x8xf32>
  }
  dist.send %h to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @stage1
// CHECK: %[[R:.*]] = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<4x8xf32>
// CHECK: dist.fragment on #dist.place<@pipe, pipe = 1> unit #dist.unit<U, stage = 1, microbatch = 0> (%[[R]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @stage1() -> tensor<4x8xf32>
    attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  %h = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<4x8xf32>
  %r = dist.fragment on #dist.place<@pipe, pipe = 1>
      unit #dist.unit<U, stage = 1, microbatch = 0> (%h)
      : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    dist.yield %a : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// A place fixing one axis of a 2-D mesh (a pipeline stage's data-parallel
// group), a place fixing none (the whole mesh), quoted axis names, and a
// fragment without unit or results.
dist.mesh @grid {axes = ["pipe", "data"], shape = array<i64: 2, 2>}

// CHECK-LABEL: func.func @places
// CHECK: dist.fragment on #dist.place<@grid, pipe = 1, data = 0> (%{{.*}}) : (tensor<2xf32>) -> () {
// CHECK: dist.fragment on #dist.place<@grid> () : () -> tensor<2xf32>
// CHECK: dist.send %{{.*}} to #dist.place<@grid, pipe = 0> channel = 7
// CHECK: dist.recv from #dist.place<@grid, pipe = 1> channel = 8 : tensor<2xf32>
func.func @places(%a: tensor<2xf32>) -> tensor<2xf32> {
  dist.fragment on #dist.place<@grid, pipe = 1, data = 0> (%a) : (tensor<2xf32>) -> () {
  ^bb0(%b: tensor<2xf32>):
    dist.yield
  }
  %c = dist.fragment on #dist.place<@grid> () : () -> tensor<2xf32> {
    %z = arith.constant dense<0.0> : tensor<2xf32>
    dist.yield %z : tensor<2xf32>
  }
  dist.send %c to #dist.place<@grid, pipe = 0> channel = 7 : tensor<2xf32>
  %d = dist.recv from #dist.place<@grid, "pipe" = 1> channel = 8 : tensor<2xf32>
  return %d : tensor<2xf32>
}

// -----

// A block of a global array: a parameter server's uneven row shard and a
// worker's block of the batch.
// CHECK-LABEL: func.func @blocks
// CHECK-SAME: dist.block = #dist.block<offsets = [3, 0], shape = [5, 64]>
// CHECK-SAME: dist.block = #dist.block<offsets = [16], shape = [32]>
// CHECK-SAME: -> (tensor<2x64xf32> {dist.block = #dist.block<offsets = [3, 0], shape = [5, 64]>})
dist.mesh @cluster {axes = ["task"], shape = array<i64: 4>}
func.func @blocks(%w: tensor<2x64xf32> {dist.block = #dist.block<offsets = [3, 0], shape = [5, 64]>},
                  %y: tensor<16xi32> {dist.block = #dist.block<offsets = [16], shape = [32]>})
    -> (tensor<2x64xf32> {dist.block = #dist.block<offsets = [3, 0], shape = [5, 64]>})
    attributes {dist.place = #dist.place<@cluster, task = 1>} {
  return %w : tensor<2x64xf32>
}

// -----

// A server that applies each worker's request as it arrives: one case per
// worker (its gradient in, the new value back), the value carried from
// case to case; a worker's copy of a variable the server holds.
// CHECK-LABEL: func.func @serve
// CHECK: %[[R:.*]] = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>] channels [0, 1] count 2 (%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK: ^bb0(%[[V:.*]]: tensor<4xf32>):
// CHECK: %[[G:.*]] = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
// CHECK: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 0> (%[[V]], %[[G]])
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 1> channel = 2 : tensor<4xf32>
// CHECK: dist.yield %{{.*}} : tensor<4xf32>
// CHECK: }, {
// CHECK: dist.recv from #dist.place<@cluster, task = 2> channel = 1 : tensor<4xf32>
// CHECK: unit #dist.unit<U, stage = 0, microbatch = 1>
// CHECK: return %[[R]]
// CHECK-LABEL: func.func @cached
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {dist.cache, train.name = "w", train.role = #train.role<param>})
// CHECK-SAME: -> (tensor<4xf32> {dist.cache, train.name = "w", train.role = #train.role<param>})
dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @serve(%w: tensor<4xf32>) -> tensor<4xf32>
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
func.func @cached(%w: tensor<4xf32> {dist.cache, train.name = "w", train.role = #train.role<param>})
    -> (tensor<4xf32> {dist.cache, train.name = "w", train.role = #train.role<param>})
    attributes {dist.place = #dist.place<@cluster, task = 1>} {
  return %w : tensor<4xf32>
}
