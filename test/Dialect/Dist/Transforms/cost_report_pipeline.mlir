// RUN: dist-opt %s --dist-pipeline="stages=4 microbatches=8 schedule=gpipe" --dist-cost-report -o %t.out 2>%t.err | FileCheck %s --check-prefix=GPIPE
// RUN: dist-opt %s --dist-pipeline="stages=4 microbatches=8 schedule=1f1b" --dist-cost-report -o %t.out 2>%t.err | FileCheck %s --check-prefix=1F1B
// RUN: dist-opt %s --dist-pipeline="stages=4 microbatches=8 schedule=interleaved virtual-stages=2" --dist-cost-report -o %t.out 2>%t.err | FileCheck %s --check-prefix=INTERLEAVED
// RUN: dist-opt %s --dist-pipeline="stages=4 microbatches=8 schedule=zb-h1" --dist-cost-report -o %t.out 2>%t.err | FileCheck %s --check-prefix=ZB
// RUN: dist-opt %s --dist-pipeline="stages=4 microbatches=8 schedule=1f1b" --dist-cost-report=format=json -o %t.out 2>%t.err | FileCheck %s --check-prefix=JSON

// The pipeline section of the cost report on balanced stages: 8 equal
// layers (2048 x 2048 matrix products on a batch of 64, the bias at the
// front gives stage 0 an input gradient like the others) cut by the cost
// model into 4 stages of 2 layers, 8 microbatches. The bubble is what
// theory says within the 1% of the stages' small differences (the loss, the
// bias): (P-1)/M = 3/8 = 0.375 for GPipe and 1F1B, (P-1)/(V*M) = 3/16 =
// 0.1875 for interleaved with V = 2, lower for ZB-H1. GPipe keeps every
// microbatch's activations alive on every device; 1F1B at most P - r on
// device r (interleaved more, ZB-H1 as 1F1B).

// GPIPE: pipeline: gpipe, 4 stages on 4 devices, 8 microbatches
// GPIPE: stage device forward ms backward ms weight ms   stash bytes / mb
// GPIPE-NEXT: 0      0      {{[0-9.]+}} {{[0-9.]+}}         -             131072
// GPIPE-NEXT: 1      1      {{[0-9.]+}} {{[0-9.]+}}         -             131072
// GPIPE-NEXT: 2      2      {{[0-9.]+}} {{[0-9.]+}}         -             131072
// GPIPE-NEXT: 3      3      {{[0-9.]+}} {{[0-9.]+}}         -             131072
// GPIPE: device  busy ms  microbatches alive activation bytes p2p bytes sent
// GPIPE-NEXT: 0 {{.*}} 8 1048576 524288
// GPIPE-NEXT: 1 {{.*}} 8 1048576 1048576
// GPIPE-NEXT: 2 {{.*}} 8 1048576 1048576
// GPIPE-NEXT: 3 {{.*}} 8 1048576 524288
// GPIPE-NEXT: bubble 0.38

// 1F1B: pipeline: 1f1b, 4 stages on 4 devices, 8 microbatches
// 1F1B: microbatches alive
// 1F1B-NEXT: 0 {{.*}} 4 524288 524288
// 1F1B-NEXT: 1 {{.*}} 3 393216 1048576
// 1F1B-NEXT: 2 {{.*}} 2 262144 1048576
// 1F1B-NEXT: 3 {{.*}} 1 131072 524288
// 1F1B-NEXT: bubble 0.37

// INTERLEAVED: pipeline: interleaved, 8 stages on 4 devices, 8 microbatches
// INTERLEAVED: bubble 0.19

// ZB: pipeline: zb-h1, 4 stages on 4 devices, 8 microbatches
// ZB: stage device forward ms backward ms weight ms
// ZB-NEXT: 0 0 {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}}
// ZB: microbatches alive
// ZB-NEXT: 0 {{.*}} 4 524288
// ZB: bubble 0.2

// JSON: "pipeline": {
// JSON: "bubble_fraction": 0.37
// JSON: "devices": 4,
// JSON: "microbatches": 8,
// JSON: "per_device": [
// JSON: "activation_bytes": 524288,
// JSON: "microbatches_in_flight": 4,
// JSON: "send_bytes": 524288
// JSON: "schedule": "1f1b",
// JSON: "stages": [
// JSON: "stash_bytes_per_microbatch": 131072
func.func @chain(
    %b: tensor<2048xf32> {train.role = #train.role<param>, train.name = "b"},
    %w0: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w0"},
    %w1: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w1"},
    %w2: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w2"},
    %w3: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w3"},
    %w4: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w4"},
    %w5: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w5"},
    %w6: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w6"},
    %w7: tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w7"},
    %x: tensor<64x2048xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2048xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w0"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w1"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w2"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w3"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w4"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w5"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w6"},
        tensor<2048x2048xf32> {train.role = #train.role<param>, train.name = "w7"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h0 = train.add %x, %b : (tensor<64x2048xf32>, tensor<2048xf32>) -> tensor<64x2048xf32>
  %h1 = train.matmul %h0, %w0 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h2 = train.matmul %h1, %w1 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h3 = train.matmul %h2, %w2 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h4 = train.matmul %h3, %w3 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h5 = train.matmul %h4, %w4 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h6 = train.matmul %h5, %w5 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h7 = train.matmul %h6, %w6 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %h8 = train.matmul %h7, %w7 : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %l = train.reduce %h8 {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<64x2048xf32>) -> tensor<f32>
  %one = train.constant dense<1.0> : tensor<64x2048xf32>
  %g7 = train.matmul %h7, %one {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d7 = train.matmul %one, %w7 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g6 = train.matmul %h6, %d7 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d6 = train.matmul %d7, %w6 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g5 = train.matmul %h5, %d6 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d5 = train.matmul %d6, %w5 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g4 = train.matmul %h4, %d5 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d4 = train.matmul %d5, %w4 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g3 = train.matmul %h3, %d4 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d3 = train.matmul %d4, %w3 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g2 = train.matmul %h2, %d3 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d2 = train.matmul %d3, %w2 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g1 = train.matmul %h1, %d2 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d1 = train.matmul %d2, %w1 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %g0 = train.matmul %h0, %d1 {transpose_lhs} : (tensor<64x2048xf32>, tensor<64x2048xf32>) -> tensor<2048x2048xf32>
  %d0 = train.matmul %d1, %w0 {transpose_rhs} : (tensor<64x2048xf32>, tensor<2048x2048xf32>) -> tensor<64x2048xf32>
  %gb = train.reduce %d0 {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<64x2048xf32>) -> tensor<2048xf32>
  %nb = train.sgd %b, %gb, %lr : (tensor<2048xf32>, tensor<2048xf32>, tensor<f32>) -> tensor<2048xf32>
  %n0 = train.sgd %w0, %g0, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n1 = train.sgd %w1, %g1, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n2 = train.sgd %w2, %g2, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n3 = train.sgd %w3, %g3, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n4 = train.sgd %w4, %g4, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n5 = train.sgd %w5, %g5, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n6 = train.sgd %w6, %g6, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  %n7 = train.sgd %w7, %g7, %lr : (tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  return %nb, %n0, %n1, %n2, %n3, %n4, %n5, %n6, %n7, %l : tensor<2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<2048x2048xf32>, tensor<f32>
}
