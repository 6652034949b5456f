// Dynamic loss scaling under dist-parameter-server (train-mixed-precision
// first, mode=sync): server 0 holds the loss scale and its growth tracker,
// which the workers pull the scale of (the seed); worker 0 sends the
// scale's reciprocal to every server, which unscales its summed gradients.
// Each server sums its gradients' finiteness in an update fragment of its
// own (the gate) before its update; the other servers send their parts to
// server 0, which adds them, computes the flag and sends it back; every
// server then keeps or updates its shards on that flag, and server 0
// updates the scale. The programs record the precision, which runners read.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=2 workers=2" | FileCheck %s
// Every variable split into two shards: each server's part is its
// shards' (the reduction of a shard); AdamW's step counts are kept with
// their parameter's shards.
// RUN: dist-opt %examples/mlp_adam.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=2 workers=2 shards=2 min-shard-bytes=16" | FileCheck %s --check-prefix=SHARDED
// One server computes the flag alone, sends nothing.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=1 workers=2" | FileCheck %s --check-prefix=ONE
// A step of one parameter: the scale's reciprocal is read by that one
// gradient's unscaling alone, yet it stays with the workers (only server 0
// holds the scale; it crashed when it was taken for a gradient op).
// RUN: dist-opt %s --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=1 workers=2" | FileCheck %s --check-prefix=SINGLE
// Its parameter that the step does not change, returned through the skip
// select, split over two servers: each returns its own shard (server 0
// returned the whole: the step contract failed).
// RUN: dist-opt %s --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=2 workers=2 partitioner=fixed" | FileCheck %s --check-prefix=UNCHANGED
// mode=async applies each worker's gradients as they arrive: no one
// step's gradients decide a skip, refused naming what to use instead.
// RUN: not dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=2 workers=2 mode=async" 2>&1 | FileCheck %s --check-prefix=ASYNC

// CHECK-LABEL: func.func @train_step_ps0(
// CHECK-SAME: %[[SCALE:arg[0-9]+]]: tensor<f32> {train.init = 6.553600e+04 : f64, train.name = "loss_scale"
// CHECK-SAME: %[[TRACKER:arg[0-9]+]]: tensor<f32> {train.name = "loss_scale.growth_tracker"
// CHECK-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// The scale to the workers (the tracker stays).
// CHECK: dist.send %[[SCALE]] to #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<f32>
// CHECK: dist.send %[[SCALE]] to #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<f32>
// CHECK-NOT: dist.send %[[TRACKER]]
// The loss's parts from both workers, the reciprocal from worker 0, then
// server 1's part.
// CHECK: dist.recv from #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[RECIP:.*]] = dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[PART1:.*]] = dist.recv from #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[GATE:.*]]:4 = dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}(%{{.*}}, %[[RECIP]], %[[PART1]])
// CHECK: ^bb0({{.*}}, %[[R:.*]]: tensor<f32>, %[[P1:.*]]: tensor<f32>):
// CHECK: %[[UNSCALED:.*]] = train.mul %{{.*}}, %[[R]] : (tensor<10x128xf32>, tensor<f32>)
// CHECK: %[[ZERO:.*]] = train.mul %[[UNSCALED]], %{{.*}} : (tensor<10x128xf32>, tensor<f32>)
// CHECK: %[[FC2:.*]] = train.reduce %[[ZERO]] {dims = array<i64: 0, 1>
// CHECK: %[[FC1:.*]] = train.reduce %{{.*}} {dims = array<i64: 0, 1>
// CHECK: %[[MINE:.*]] = train.add %[[FC2]], %[[FC1]]
// CHECK: %[[ALL:.*]] = train.add %[[MINE]], %[[P1]]
// CHECK: %[[FLAG:.*]] = train.compare %[[ALL]], %[[ALL]] {direction = #train.compare_direction<eq>}
// CHECK: dist.yield %[[FLAG]],
// CHECK: dist.send %[[GATE]]#0 to #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<i1>
// CHECK: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}(%[[GATE]]#0,
// CHECK: ^bb0(%[[F:.*]]: tensor<i1>,
// CHECK: %[[NEW:.*]], %{{.*}} = train.sgd
// CHECK: train.select %[[F]], %[[NEW]], %
// The scale's growth or backoff on the flag.
// CHECK: train.select %[[F]], %{{.*}}, %{{.*}} : (tensor<i1>, tensor<f32>, tensor<f32>)
// CHECK: return

// CHECK-LABEL: func.func @train_step_ps1(
// CHECK-NOT: loss_scale
// CHECK-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// CHECK: %[[RECIP:.*]] = dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[GATE:.*]]:3 = dist.fragment on #dist.place<@cluster, task = 1> unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}%[[RECIP]])
// CHECK: train.reduce
// CHECK: %[[PART:.*]] = train.add
// CHECK: dist.yield %[[PART]],
// CHECK: dist.send %[[GATE]]#0 to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[FLAG:.*]] = dist.recv from #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<i1>
// CHECK: dist.fragment on #dist.place<@cluster, task = 1> unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}(%[[FLAG]],
// CHECK: train.sgd
// CHECK: train.select
// CHECK: return

// Worker 0 pulls the scale, scales the seed, sends the reciprocal to both
// servers.
// CHECK-LABEL: func.func @train_step_worker0(
// CHECK-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// CHECK: %[[SCALE:.*]] = dist.recv from #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[B:.*]]:5 = dist.fragment {{.*}} unit #dist.unit<B, stage = 0, microbatch = 0> {{.*}}(%[[SCALE]],
// CHECK: train.div
// CHECK: dist.send %[[B]]#0 to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<f32>
// CHECK: dist.send %[[B]]#0 to #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<f32>
// Worker 1's backward yields its four gradients only: the reciprocal it
// computes goes nowhere (it yielded it as well).
// CHECK-LABEL: func.func @train_step_worker1(
// CHECK: %{{.*}}:4 = dist.fragment {{.*}} unit #dist.unit<B, stage = 0, microbatch = 1>
// CHECK-NOT: dist.send {{.*}} to #dist.place<@cluster, task = 1> {{.*}} : tensor<f32>
// CHECK: return

// SHARDED-LABEL: func.func @train_step_ps0(
// SHARDED-SAME: tensor<64x784xf32> {dist.block = #dist.block<offsets = [0, 0], shape = [128, 784]>, train.name = "fc1.weight"
// SHARDED: %[[PART1:.*]] = dist.recv from #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<f32>
// SHARDED: train.reduce %{{.*}} {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<64x784xf32>) -> tensor<f32>
// SHARDED: train.compare
// SHARDED: %{{.*}}, %[[STEP:new_step.*]] = train.adamw {{.*}} : (tensor<64x784xf32>,
// SHARDED: train.select %{{.*}}, %[[STEP]], %{{.*}} : (tensor<i1>, tensor<f32>, tensor<f32>)
// SHARDED-LABEL: func.func @train_step_ps1(
// SHARDED-SAME: tensor<64x784xf32> {dist.block = #dist.block<offsets = [64, 0], shape = [128, 784]>, train.name = "fc1.weight"
// SHARDED: train.reduce %{{.*}} {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<64x784xf32>) -> tensor<f32>
// SHARDED: dist.send %{{.*}} to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<f32>
// SHARDED: dist.recv from #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<i1>
// SHARDED: train.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i1>, tensor<64x784xf32>, tensor<64x784xf32>)

// ONE-LABEL: func.func @train_step_ps0(
// ONE-NOT: dist.{{send|recv}} {{.*}}: tensor<i1>
// ONE: %[[GATE:.*]]:6 = dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U
// ONE: train.compare %{{.*}} {direction = #train.compare_direction<eq>}
// ONE-NOT: dist.{{send|recv}} {{.*}}: tensor<i1>
// ONE: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, {{.*}}(%[[GATE]]#0,
// ONE-NOT: dist.{{send|recv}} {{.*}}: tensor<i1>
// ONE: return

// ASYNC: error: result #0 'fc1.weight' (param) is kept when a gradient is not finite (dynamic loss scaling, train-mixed-precision loss-scale=dynamic): dist-parameter-server mode=async applies each worker's gradients as they arrive, so no one step's gradients decide whether to skip the update; use mode=sync with dynamic loss scaling, or loss-scale=static (or compute=bf16 loss-scale=none) with mode=async

// SINGLE-LABEL: func.func @train_step_ps0(
// SINGLE: dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<f32>
// SINGLE: %[[RECIP:.*]] = dist.recv from #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<f32>
// SINGLE: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, {{.*}}%[[RECIP]])
// SINGLE-NOT: train.div
// SINGLE: train.mul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<f32>)
// SINGLE: train.compare
// SINGLE-LABEL: func.func @train_step_worker0(
// UNCHANGED-LABEL: func.func @train_step_ps0(
// UNCHANGED-SAME: %[[U0:.*]]: tensor<2xf32> {dist.block = #dist.block<offsets = [0], shape = [4]>, train.name = "unused.weight"
// UNCHANGED-SAME: -> (tensor<2x8xf32> {dist.block = #dist.block<offsets = [0, 0], shape = [4, 8]>, train.name = "fc.weight", train.role = #train.role<param>}, tensor<2xf32> {dist.block = #dist.block<offsets = [0], shape = [4]>, train.name = "unused.weight"
// UNCHANGED: train.select %{{.*}}, %[[KEPT:.*]], %[[KEPT]] : (tensor<i1>, tensor<2xf32>, tensor<2xf32>)
// UNCHANGED-LABEL: func.func @train_step_ps1(
// UNCHANGED-SAME: tensor<2xf32> {dist.block = #dist.block<offsets = [2], shape = [4]>, train.name = "unused.weight"
// UNCHANGED-SAME: -> (tensor<2x8xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 8]>, train.name = "fc.weight", train.role = #train.role<param>}, tensor<2xf32> {dist.block = #dist.block<offsets = [2], shape = [4]>, train.name = "unused.weight"
// UNCHANGED: train.select %{{.*}}, %[[KEPT:.*]], %[[KEPT]] : (tensor<i1>, tensor<2xf32>, tensor<2xf32>)
// SINGLE: train.div
// SINGLE: dist.send %{{.*}} to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<f32>
func.func @train_step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %u: tensor<4xf32> {train.role = #train.role<param>, train.name = "unused.weight"},
    %x: tensor<4x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "unused.weight"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x4xf32>, tensor<4xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<4x4xf32>, tensor<4xi32>) -> tensor<4x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %wn = train.sgd %w, %dw, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %wn, %u, %loss : tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
