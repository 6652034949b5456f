// RUN: dist-opt %examples/embedding_classifier.mlir --dist-parameter-server="ps=2 workers=2 partitioner=fixed" | FileCheck %s
// RUN: dist-opt %examples/mlp.mlir --dist-parameter-server="ps=2 workers=2" | FileCheck %s --check-prefix=MINSIZE
// RUN: dist-opt %examples/mlp.mlir --dist-parameter-server="ps=2 workers=2 min-shard-bytes=100000" | FileCheck %s --check-prefix=SPLIT
// RUN: dist-opt %s --dist-parameter-server="ps=1 workers=2" | FileCheck %s --check-prefix=SCALE
// RUN: not dist-opt %examples/mlp.mlir --dist-parameter-server="ps=0" 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not dist-opt %examples/mlp.mlir --dist-parameter-server="ps=2 shards=3" 2>&1 | FileCheck %s --check-prefix=SHARDS
// RUN: not dist-opt %examples/mlp.mlir --dist-parameter-server="workers=3" 2>&1 | FileCheck %s --check-prefix=BATCH

// The embedding classifier (a 4096 x 16 table, ids [32, 4]) on 2 servers
// and 2 workers, every variable split into 2 row shards placed round
// robin. The table is looked up on the servers: each worker sends its ids
// to both, each server gathers its rows (zeros for the others' rows) and
// only the looked-up rows' gradients come back, scatter-added into the
// shard. fc.weight (5 rows) is split 3 + 2 and pulled whole.
// CHECK: dist.mesh @cluster {axes = ["task"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @train_step_ps0(
// CHECK-SAME: tensor<3x64xf32> {dist.block = #dist.block<offsets = [0, 0], shape = [5, 64]>, train.name = "fc.weight"
// CHECK-SAME: tensor<2048x16xf32> {dist.block = #dist.block<offsets = [0, 0], shape = [4096, 16]>, train.name = "emb.weight"
// CHECK-SAME: dist.place = #dist.place<@cluster, task = 0>
// CHECK-SAME: dist.schedule = {mode = "sync", ps = 2 : i64, role = "ps", strategy = "parameter_server", workers = 2 : i64}
// Pull: fc.weight's shard to both workers; the table is not pulled.
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<3x64xf32>
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<3x64xf32>
// CHECK-NOT: tensor<2048x16xf32>
// Lookups for worker 0, then worker 1.
// CHECK: %[[IDS0:.*]] = dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<16x4xi32>
// CHECK: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<F, stage = 0, microbatch = 0>
// CHECK: train.gather %{{.*}}, %{{.*}}, %c0 : (tensor<2048x16xf32>, tensor<16x4xi32>, index) -> tensor<16x4x16xf32>
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: dist.recv from #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<16x4xi32>
// CHECK: unit #dist.unit<F, stage = 0, microbatch = 1>
// Push: the rows' gradients and the gradient shards from each worker.
// CHECK: dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: dist.recv from #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: dist.recv from #dist.place<@cluster, task = 2> channel = {{[0-9]+}} : tensor<3x64xf32>
// CHECK: dist.recv from #dist.place<@cluster, task = 3> channel = {{[0-9]+}} : tensor<3x64xf32>
// CHECK: dist.fragment on #dist.place<@cluster, task = 0> unit #dist.unit<U, stage = 0, microbatch = 0>
// CHECK: %[[Z:.*]] = train.constant dense<0.000000e+00> : tensor<2048x16xf32>
// CHECK: %[[S0:.*]] = train.scatter_add %[[Z]], %{{.*}}, %{{.*}}, %c0{{.*}} : (tensor<2048x16xf32>, tensor<16x4xi32>, tensor<16x4x16xf32>, index) -> tensor<2048x16xf32>
// CHECK: %[[S1:.*]] = train.scatter_add %[[S0]], %{{.*}}, %{{.*}}, %c0
// CHECK: train.add %{{.*}}, %{{.*}} : (tensor<3x64xf32>, tensor<3x64xf32>) -> tensor<3x64xf32>
// CHECK: train.sgd %{{.*}}, %[[S1]], {{.*}} -> (tensor<2048x16xf32>, tensor<2048x16xf32>)
// The loss: the workers' parts, summed on server 0.
// CHECK: return {{.*}} : {{.*}}tensor<f32>
// CHECK-LABEL: func.func @train_step_ps1(
// CHECK-SAME: tensor<2x64xf32> {dist.block = #dist.block<offsets = [3, 0], shape = [5, 64]>, train.name = "fc.weight"
// CHECK-SAME: tensor<2048x16xf32> {dist.block = #dist.block<offsets = [2048, 0], shape = [4096, 16]>, train.name = "emb.weight"
// CHECK: train.gather %{{.*}}, %{{.*}}, %c2048 :
// CHECK-NOT: tensor<f32> {train.name = "loss"
// Worker 0 takes the first 16 samples; worker 1 the next.
// CHECK-LABEL: func.func @train_step_worker0(
// CHECK-SAME: tensor<16x4xi32> {dist.block = #dist.block<offsets = [0, 0], shape = [32, 4]>, train.name = "ids"
// CHECK-SAME: tensor<16xi32> {dist.block = #dist.block<offsets = [0], shape = [32]>, train.name = "y"
// CHECK-SAME: dist.place = #dist.place<@cluster, task = 2>
// CHECK: dist.send %arg0 to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<16x4xi32>
// CHECK: %[[R0:.*]] = dist.recv from #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: %[[R1:.*]] = dist.recv from #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: dist.fragment on #dist.place<@cluster, task = 2> unit #dist.unit<F, stage = 0, microbatch = 0> origin ["train_step"] (%[[R0]], %[[R1]],
// CHECK: train.add %{{.*}}, %{{.*}} : (tensor<16x4x16xf32>, tensor<16x4x16xf32>)
// CHECK: train.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<3x64xf32>, tensor<2x64xf32>) -> tensor<5x64xf32>
// CHECK: unit #dist.unit<B, stage = 0, microbatch = 0>
// CHECK-NOT: train.scatter_add
// CHECK: train.slice %{{.*}} {limit = array<i64: 3, 64>, start = array<i64: 0, 0>}
// CHECK: train.slice %{{.*}} {limit = array<i64: 5, 64>, start = array<i64: 3, 0>}
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 0> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: dist.send %{{.*}} to #dist.place<@cluster, task = 1> channel = {{[0-9]+}} : tensor<16x4x16xf32>
// CHECK: return
// CHECK-LABEL: func.func @train_step_worker1(
// CHECK-SAME: dist.block = #dist.block<offsets = [16, 0], shape = [32, 4]>

// min-size (TF's default, 256 KiB): fc1.weight (401 KB) makes one shard;
// variables go round robin, each with its momentum.
// MINSIZE-LABEL: func.func @train_step_ps0(
// MINSIZE-SAME: tensor<128x784xf32> {train.name = "fc1.weight"
// MINSIZE-SAME: tensor<10x128xf32> {train.name = "fc2.weight"
// MINSIZE-SAME: tensor<128x784xf32> {train.name = "fc1.weight.momentum_buffer"
// MINSIZE-NOT: dist.block
// MINSIZE-LABEL: func.func @train_step_ps1(
// MINSIZE-SAME: tensor<128xf32> {train.name = "fc1.bias"
// MINSIZE-SAME: tensor<10xf32> {train.name = "fc2.bias"

// With 100 KB shards fc1.weight splits into 4, at most ps = 2.
// SPLIT-LABEL: func.func @train_step_ps0(
// SPLIT-SAME: tensor<64x784xf32> {dist.block = #dist.block<offsets = [0, 0], shape = [128, 784]>, train.name = "fc1.weight"
// SPLIT-LABEL: func.func @train_step_ps1(
// SPLIT-SAME: tensor<64x784xf32> {dist.block = #dist.block<offsets = [64, 0], shape = [128, 784]>, train.name = "fc1.weight"

// An elementwise op on a summed gradient (a scaling) runs on the server,
// before the optimizer.
// SCALE-LABEL: func.func @train_step_ps0(
// SCALE: unit #dist.unit<U, stage = 0, microbatch = 0>
// SCALE: %[[G:.*]] = train.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// SCALE: %[[H:.*]] = train.constant dense<5.000000e-01> : tensor<f32>
// SCALE: %[[S:.*]] = train.mul %[[G]], %[[H]]
// SCALE: train.sgd %{{.*}}, %[[S]], %{{.*}}
// SCALE-LABEL: func.func @train_step_worker0(
// SCALE-NOT: train.mul
// SCALE: return

// OPTIONS: error: dist-parameter-server: needs ps >= 1, workers >= 1, shards >= 0, min-shard-bytes >= 1, partitioner=min-size|fixed and mode=sync|async, got ps=0 workers=1 shards=0 min-shard-bytes=262144 partitioner=min-size mode=sync
// SHARDS: error: dist-parameter-server: shards=3 is more than ps=2: each server holds at most one shard of a variable
// BATCH: mlp.mlir:16:5: error: argument #8 'x' (input) has batch 64, which does not split into 3 workers: use a worker count that divides it
func.func @train_step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<8x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %dw = train.matmul %dl, %x {transpose_lhs} : (tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %half = train.constant dense<5.000000e-01> : tensor<f32>
  %scaled = train.mul %dw, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %w_n = train.sgd %w, %scaled, %lr : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %w_n, %loss : tensor<4x8xf32>, tensor<f32>
}
