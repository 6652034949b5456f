// RUN: dist-opt %s -split-input-file --dist-propagate-sharding | FileCheck %s

// Megatron MLP on a 2-D mesh: the column-parallel matmul shards its result by
// batch and model, the row-parallel one leaves a partial sum over "model".
// CHECK-LABEL: func.func @matmul_chain_2d
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>}
// CHECK-SAME: %{{.*}}: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}model], []]>}
// CHECK-SAME: %{{.*}}: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [model]]>}
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>})
// CHECK: %[[H:.*]] = train.matmul %{{.*}}, %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], [model]]>], transpose_rhs}
// CHECK: %[[A:.*]] = train.relu %[[H]] {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], [model]]>]}
// CHECK: %[[Y:.*]] = train.matmul %[[A]], %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []], partial = [model]>], transpose_rhs}
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @matmul_chain_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                           %w1: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>},
                           %w2: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>}) -> tensor<8x16xf32> {
  %h = train.matmul %x, %w1 {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %a = train.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = train.matmul %a, %w2 {transpose_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A batch split flows through a chain of matmuls on a 1-D mesh; the
// unannotated weights are recorded as replicated.
// CHECK-LABEL: func.func @matmul_chain_batch
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>}
// CHECK-SAME: %{{.*}}: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>}
// CHECK-SAME: %{{.*}}: tensor<32x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>}
// CHECK-SAME: -> (tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>})
// CHECK: %[[H:.*]] = train.matmul {{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []]>]}
// CHECK: train.matmul %[[H]], %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []]>]}
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @matmul_chain_batch(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                              %w1: tensor<16x32xf32>, %w2: tensor<32x4xf32>) -> tensor<8x4xf32> {
  %h = train.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = train.matmul %h, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A sharded contraction dim is projected onto the other operand and makes
// the result partial; the consumer and the function result are not partial.
// CHECK-LABEL: func.func @contraction_partial
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>}
// CHECK-SAME: %{{.*}}: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>}
// CHECK-SAME: -> (tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>})
// CHECK: %[[Y:.*]] = train.matmul {{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}], []], partial = [data]>]}
// CHECK: train.relu %[[Y]] {dist.shardings = [#dist.sharding<@mesh, [{{\[}}], []]>]}
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @contraction_partial(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>},
                               %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = train.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %z = train.relu %y : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %z : tensor<8x32xf32>
}

// -----

// A sum over the sharded batch dim is partial; the returned value is
// recorded without the pending sum.
// CHECK-LABEL: func.func @reduce_partial
// CHECK-SAME: -> (tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>})
// CHECK: train.reduce {{.*}}dist.shardings = [#dist.sharding<@mesh, [{{\[}}]], partial = [data]>]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @reduce_partial(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<16xf32> {
  %y = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// A bias shares the sharded feature factor of the activation it is added to.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK-SAME: %{{.*}}: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>}
// CHECK: train.add {{.*}}dist.shardings = [#dist.sharding<@mesh, [{{\[}}], [data]]>]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @broadcast_operand(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>},
                             %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = train.add %x, %b : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A user annotation wins over a sharding inferred for the same factor: the
// add follows %b ("model"), not the inferred "data" of the relu.
// CHECK-LABEL: func.func @annotation_wins
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}model], []]>})
// CHECK: %[[A:.*]] = train.relu %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []]>]}
// CHECK: train.add %[[A]], %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}model], []]>]}
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @annotation_wins(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                           %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x16xf32> {
  %a = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = train.add %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// A dist.annotate reshards mid-graph: its users follow the annotation, the
// annotate op itself is kept for partitioning and gets no dist.shardings.
// CHECK-LABEL: func.func @annotate_op
// CHECK: %[[R:.*]] = train.relu %{{.*}} {dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []]>]}
// CHECK: %[[N:.*]] = dist.annotate %[[R]] {sharding = #dist.sharding<@mesh, [{{\[}}], [model]]>}
// CHECK: train.exp %[[N]] {dist.shardings = [#dist.sharding<@mesh, [{{\[}}], [model]]>]}
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @annotate_op(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<8x16xf32> {
  %r = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %n = dist.annotate %r {sharding = #dist.sharding<@mesh, [[], [model]]>} : tensor<8x16xf32>
  %e = train.exp %n : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %e : tensor<8x16xf32>
}

// -----

// A result annotation is kept even when the value is laid out otherwise.
// CHECK-LABEL: func.func @result_annotation
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], [model]]>})
// CHECK: train.matmul {{.*}}dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []], partial = [model]>]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @result_annotation(%x: tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>},
                             %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>}) {
  %y = train.matmul %x, %w {transpose_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A factor that needs replication (the softmax dim) drops its axes.
// CHECK-LABEL: func.func @need_replication
// CHECK: train.softmax {{.*}}dist.shardings = [#dist.sharding<@mesh, [{{\[}}data], []]>]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @need_replication(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>}) -> tensor<8x16xf32> {
  %y = train.softmax %x {dim = 1 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Values without any information are recorded as replicated.
// CHECK-LABEL: func.func @no_information
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>}
// CHECK: train.constant {{.*}}dist.shardings = [#dist.sharding<@mesh, []>]
// CHECK: train.mul {{.*}}dist.shardings = [#dist.sharding<@mesh, [{{\[}}], []]>]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @no_information(%x: tensor<8x16xf32>, %y: tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[data]]>}) -> tensor<8x16xf32> {
  %c = train.constant dense<2.000000e+00> : tensor<f32>
  %z = train.mul %x, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}

// -----

// A function without shardings is left alone.
// CHECK-LABEL: func.func @unsharded
// CHECK-NOT: dist.
// CHECK: return
func.func @unsharded(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An op without a sharding rule runs on whole values: propagation does not
// visit it and records it replicated.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @op_without_rule
func.func @op_without_rule(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<8x16xf32> {
  // CHECK: train.relu {{.*}}dist.shardings = [#dist.sharding<@mesh, {{\[\[}}data], []]>]
  %r = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: arith.negf {{.*}}dist.shardings = [#dist.sharding<@mesh, {{\[\[}}], []]>]
  %n = arith.negf %r : tensor<8x16xf32>
  return %n : tensor<8x16xf32>
}

// -----

// Information flows backward too: an annotation on a result reaches the ops
// before it, which were visited first with nothing known.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @backward_flow
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}data], []]>}
func.func @backward_flow(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: train.relu {{.*}}dist.shardings = [#dist.sharding<@mesh, {{\[\[}}data], []]>]
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %z = dist.annotate %y {sharding = #dist.sharding<@mesh, [[data], []]>} : tensor<8x16xf32>
  return %z : tensor<8x16xf32>
}

// -----

// An annotated factor claims its axis before an inferred one: the annotated
// weight keeps its column split and the inferred batch split gives way.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @annotation_claims_first
func.func @annotation_claims_first(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}, %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>}) -> tensor<8x32xf32> {
  %r = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: train.matmul {{.*}}dist.shardings = [#dist.sharding<@mesh, {{\[\[}}], [data]]>]
  %m = train.matmul %r, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}

// -----

// A replicated annotation does not conflict with a split one: the op runs
// split and takes a free local slice of the replicated operand (a parameter
// added to an input of the same shape under data parallelism).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @replicated_meets_split
func.func @replicated_meets_split(%x: tensor<16x4xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}, %p: tensor<16x4xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>}) -> tensor<16x4xf32> {
  // CHECK: train.add {{.*}}dist.shardings = [#dist.sharding<@mesh, {{\[\[}}data], []]>]
  %y = train.add %x, %p : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}
