// Every count option of the strategies is checked against what it counts
// (the batch, the step's ops, the devices a mesh may have) before anything
// is sized by it. Each run is limited in memory and time, so a count that
// slips through fails fast instead of growing to gigabytes (these grew to
// ~14 GB in 20 s or aborted with "LLVM ERROR: out of memory").

// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=2 microbatches=4294967297" 2>&1 | FileCheck %s --check-prefix=MICRO
// MICRO: strategy_option_bounds.mlir:[[# @LINE + 38]]:1: error: dist-pipeline: microbatches=4294967297 is more than 65536, the most parts a batch may be split into
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=2 microbatches=16" 2>&1 | FileCheck %s --check-prefix=MICRO-BATCH
// MICRO-BATCH: error: argument #1 'x' (input) has batch 8: dist-pipeline's microbatches=16 is more than 8, one sample per microbatch
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=2 microbatches=8 dp=2" 2>&1 | FileCheck %s --check-prefix=MICRO-DP
// MICRO-DP: error: argument #1 'x' (input) has batch 8: dist-pipeline's microbatches=8 is more than 4, one sample per microbatch on each of dp=2 replicas
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=4294967296" 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: error: dist-pipeline: stages=4294967296 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=40" 2>&1 | FileCheck %s --check-prefix=STAGES-OPS
// STAGES-OPS: error: dist-pipeline: stages=40 x virtual-stages=1 is more than 7, the ops of step 'train_step' (each stage takes a forward op)
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-pipeline="stages=2 virtual-stages=4294967296 schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: dist-pipeline: virtual-stages=4294967296 is more than 65536, the most model chunks a device may take
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-hybrid="pp=1000000" 2>&1 | FileCheck %s --check-prefix=HYBRID-PP
// HYBRID-PP: error: dist-hybrid: pp=1000000 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-hybrid="pp=2 dp=300 tp=300" 2>&1 | FileCheck %s --check-prefix=HYBRID-MESH
// HYBRID-MESH: error: dist-hybrid: hosts=1 x pp=2 x dp=300 x tp=300 is 180000 devices, more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-hybrid="hosts=-1 dp=2" 2>&1 | FileCheck %s --check-prefix=HYBRID-NEG
// HYBRID-NEG: error: dist-hybrid: hosts, dp and tp must be >= 1, got hosts=-1 dp=2 tp=1
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-mirrored="replicas=4294967296" 2>&1 | FileCheck %s --check-prefix=MIRRORED
// MIRRORED: strategy_option_bounds.mlir:[[# @LINE + 20]]:1: error: dist-annotate-mirrored: replicas=4294967296 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-mirrored="replicas=16" 2>&1 | FileCheck %s --check-prefix=MIRRORED-BATCH
// MIRRORED-BATCH: error: argument #1 'x' (input) has batch 8: dist-annotate-mirrored's replicas=16 is more than 8, one sample per replica
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-zero="stage=1 replicas=16" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: argument #1 'x' (input) has batch 8: dist-annotate-zero's replicas=16 is more than 8, one sample per replica
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-multi-worker-mirrored="hosts=4294967296 devices=4294967296" 2>&1 | FileCheck %s --check-prefix=MULTI
// MULTI: error: dist-annotate-multi-worker-mirrored: hosts=4294967296 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-multi-worker-mirrored="hosts=4 devices=4" 2>&1 | FileCheck %s --check-prefix=MULTI-BATCH
// MULTI-BATCH: error: argument #1 'x' (input) has batch 8: dist-annotate-multi-worker-mirrored's hosts x devices=16 is more than 8, one sample per replica
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-tensor-parallel="size=1000000000" 2>&1 | FileCheck %s --check-prefix=TP
// TP: error: mesh '@mesh': model=1000000000 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-parameter-server="ps=100000000 workers=1" 2>&1 | FileCheck %s --check-prefix=PS
// PS: error: dist-parameter-server: ps=100000000 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-parameter-server="ps=20 shards=1" 2>&1 | FileCheck %s --check-prefix=PS-ROWS
// PS-ROWS: error: dist-parameter-server: ps=20 is more than 8, the rows of the parameters of step 'train_step' (a server holds at least one row)
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-parameter-server="workers=4294967297" 2>&1 | FileCheck %s --check-prefix=PS-WORKERS
// PS-WORKERS: error: dist-parameter-server: workers=4294967297 is more than 65536, the most devices a mesh may have
// RUN: %if !sanitizer %{ ulimit -v 4000000 && %} not timeout 60 dist-opt %s --dist-parameter-server="workers=16" 2>&1 | FileCheck %s --check-prefix=PS-BATCH
// PS-BATCH: error: argument #1 'x' (input) has batch 8: dist-parameter-server's workers=16 is more than 8, one sample per worker

func.func @train_step(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %z = train.matmul %h, %v : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %z {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<f32>
  %gv = train.matmul %h, %z {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gw = train.matmul %x, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %vn, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
