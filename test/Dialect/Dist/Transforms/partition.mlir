// RUN: dist-opt %s -split-input-file --dist-partition | FileCheck %s

// A partial matmul result that a replicated consumer needs whole is
// all-reduced (1-D mesh): contraction dim split, local shapes 8x4 and 4x32.
// CHECK-LABEL: func.func @all_reduce_1d
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32> {{.*}}, %[[W:.*]]: tensor<4x32xf32> {{.*}}) -> (tensor<8x32xf32>
// CHECK-SAME: attributes {dist.partitioned}
// CHECK: %[[Y:.*]] = train.matmul %[[X]], %[[W]] : (tensor<8x4xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[Y]] on @mesh axes = ["data"] : tensor<8x32xf32>
// CHECK: %[[Z:.*]] = train.relu %[[S]] : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK: return %[[Z]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @all_reduce_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>},
                         %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>}) {
  %y = train.matmul %x, %w {dist.shardings = [#dist.sharding<@mesh, [[], []], partial = [data]>]} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %z = train.relu %y {dist.shardings = [#dist.sharding<@mesh, [[], []]>]} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %z : tensor<8x32xf32>
}

// -----

// Megatron MLP on a 2-D mesh: batch over "data", hidden over "model"; the
// row-parallel matmul's partial sum is all-reduced over "model" only.
// CHECK-LABEL: func.func @all_reduce_2d
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32> {{.*}}, %[[W1:.*]]: tensor<8x16xf32> {{.*}}, %[[W2:.*]]: tensor<16x8xf32> {{.*}}) -> (tensor<4x16xf32>
// CHECK: %[[H:.*]] = train.matmul %[[X]], %[[W1]] {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK: %[[A:.*]] = train.relu %[[H]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[Y:.*]] = train.matmul %[[A]], %[[W2]] {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[Y]] on @mesh axes = ["model"] : tensor<4x16xf32>
// CHECK-NOT: dist.
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @all_reduce_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                         %w1: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>},
                         %w2: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %h = train.matmul %x, %w1 {dist.shardings = [#dist.sharding<@mesh, [[data], [model]]>], transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %a = train.relu %h {dist.shardings = [#dist.sharding<@mesh, [[data], [model]]>]} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = train.matmul %a, %w2 {dist.shardings = [#dist.sharding<@mesh, [[data], []], partial = [model]>], transpose_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A partial sum returned split along a dim is reduce-scattered (1-D mesh).
// CHECK-LABEL: func.func @reduce_scatter_1d
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<4xf32>
// CHECK: %[[Y:.*]] = train.reduce %[[X]] {{.*}} : (tensor<2x16xf32>) -> tensor<16xf32>
// CHECK: %[[S:.*]] = dist.reduce_scatter %[[Y]] on @mesh axes = ["data"] scatter_dims = [0] : tensor<16xf32> -> tensor<4xf32>
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @reduce_scatter_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[data]]>}) {
  %y = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>, dist.shardings = [#dist.sharding<@mesh, [[]], partial = [data]>]} : (tensor<8x16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// On a 2-D mesh the "model" partial sum is scattered along dim 1 while the
// batch stays split over "data".
// CHECK-LABEL: func.func @reduce_scatter_2d
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32> {{.*}}, %[[W:.*]]: tensor<16x8xf32> {{.*}}) -> (tensor<4x4xf32>
// CHECK: %[[Y:.*]] = train.matmul %[[A]], %[[W]] {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[S:.*]] = dist.reduce_scatter %[[Y]] on @mesh axes = ["model"] scatter_dims = [1] : tensor<4x16xf32> -> tensor<4x4xf32>
// CHECK-NOT: dist.all_reduce
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @reduce_scatter_2d(%a: tensor<8x32xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>},
                             %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>}) {
  %y = train.matmul %a, %w {dist.shardings = [#dist.sharding<@mesh, [[data], []], partial = [model]>], transpose_rhs} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A batch-split value returned replicated is all-gathered (1-D mesh).
// CHECK-LABEL: func.func @all_gather_1d
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<8x16xf32>
// CHECK: %[[Y:.*]] = train.relu %[[X]] : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[Y]] on @mesh axes = ["data"] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK: return %[[G]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @all_gather_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A dim split over both axes of a 2-D mesh is gathered over both at once.
// CHECK-LABEL: func.func @all_gather_2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x16xf32> {{.*}}) -> (tensor<8x16xf32>
// CHECK: %[[Y:.*]] = train.relu %[[X]] : (tensor<1x16xf32>) -> tensor<1x16xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[Y]] on @mesh axes = ["data", "model"] gather_dim = 0 : tensor<1x16xf32> -> tensor<8x16xf32>
// CHECK: return %[[G]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @all_gather_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data, model], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[data, model], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An op that needs its dim whole (softmax) gathers only the axis on it.
// CHECK-LABEL: func.func @all_gather_need_replication
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {{.*}}) -> (tensor<4x16xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[X]] on @mesh axes = ["model"] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>
// CHECK: %[[Y:.*]] = train.softmax %[[G]] {dim = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @all_gather_need_replication(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %y = train.softmax %x {dim = 1 : i64, dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A max over the split batch is each device's max, then one all-reduce with
// max of the [16] result (it once all-gathered the whole [8, 16] input).
// CHECK-LABEL: func.func @all_gather_reduce_max
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<16xf32>
// CHECK-NOT: dist.all_gather
// CHECK: %[[L:.*]] = train.reduce %[[X]] {{.*}}kind = #train.reduce_kind<max>{{.*}} : (tensor<2x16xf32>) -> tensor<16xf32>
// CHECK: %[[Y:.*]] = dist.all_reduce %[[L]] on @mesh axes = ["data"] reduction = <max> : tensor<16xf32>
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @all_gather_reduce_max(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[]]>}) {
  %y = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<max>, dist.shardings = [#dist.sharding<@mesh, [[]]>]} : (tensor<8x16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// Moving the split from dim 0 to dim 1 is one all-to-all (1-D mesh).
// CHECK-LABEL: func.func @all_to_all_1d
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<8x4xf32>
// CHECK: %[[Y:.*]] = train.relu %[[X]] : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK: %[[T:.*]] = dist.all_to_all %[[Y]] on @mesh axes = ["data"] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// CHECK: return %[[T]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @all_to_all_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// On a 2-D mesh only the "model" axis moves, from dim 1 to the minor end of
// dim 0 ([[data], [model]] -> [[data, model], []]).
// CHECK-LABEL: func.func @all_to_all_2d
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {{.*}}) -> (tensor<1x16xf32>
// CHECK: %[[Y:.*]] = train.relu %[[X]] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[T:.*]] = dist.all_to_all %[[Y]] on @mesh axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<4x4xf32> -> tensor<1x16xf32>
// CHECK: return %[[T]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @all_to_all_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data, model], []]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[data], [model]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A replicated value an op needs split is sliced locally (1-D mesh).
// CHECK-LABEL: func.func @local_slice_1d
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {{.*}}) -> (tensor<8x4xf32>
// CHECK: %[[S:.*]] = dist.local_slice %[[X]] on @mesh axes = ["data"] dim = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK: %[[Y:.*]] = train.relu %[[S]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @local_slice_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[], [data]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A dist.annotate onto other axes of a 2-D mesh gathers "data" and slices
// "model"; the annotate op disappears.
// CHECK-LABEL: func.func @annotate_2d
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32> {{.*}}) -> (tensor<8x4xf32>
// CHECK-NOT: dist.annotate
// CHECK: %[[G:.*]] = dist.all_gather %[[X]] on @mesh axes = ["data"] gather_dim = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK: %[[S:.*]] = dist.local_slice %[[G]] on @mesh axes = ["model"] dim = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK: %[[Y:.*]] = train.relu %[[S]] : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @annotate_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>}) {
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[], [model]]>} : tensor<8x16xf32>
  %y = train.relu %a {dist.shardings = [#dist.sharding<@mesh, [[], [model]]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A mean over the split batch: each shard averages its 2 rows, is scaled by
// 1/4 and summed, which is the mean over all 8 rows.
// CHECK-LABEL: func.func @mean_1d
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<16xf32>
// CHECK: %[[M:.*]] = train.reduce %[[X]] {{.*}}kind = #train.reduce_kind<mean>{{.*}} : (tensor<2x16xf32>) -> tensor<16xf32>
// CHECK: %[[C:.*]] = arith.constant dense<2.500000e-01> : tensor<16xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[M]], %[[C]] : tensor<16xf32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[P]] on @mesh axes = ["data"] : tensor<16xf32>
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @mean_1d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[]]>}) {
  %y = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<mean>, dist.shardings = [#dist.sharding<@mesh, [[]], partial = [data]>]} : (tensor<8x16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// A mean over both dims split over both axes of a 2-D mesh scales by 1/8.
// CHECK-LABEL: func.func @mean_2d
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {{.*}}) -> (tensor<f32>
// CHECK: %[[M:.*]] = train.reduce %[[X]] {{.*}} : (tensor<4x4xf32>) -> tensor<f32>
// CHECK: %[[C:.*]] = arith.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[P:.*]] = arith.mulf %[[M]], %[[C]] : tensor<f32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[P]] on @mesh axes = ["data", "model"] : tensor<f32>
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @mean_2d(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [model]]>})
    -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>}) {
  %y = train.reduce %x {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>, dist.shardings = [#dist.sharding<@mesh, [], partial = [data, model]>]} : (tensor<8x16xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// The cross-entropy loss over a split batch is the global mean (scaled by
// 1/4, all-reduced) and its gradient is scaled by 1/4 and stays split.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<2x10xf32> {{.*}}, %[[T:.*]]: tensor<2xi32> {{.*}}) -> (tensor<f32> {{.*}}, tensor<2x10xf32>
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[L]], %[[T]] : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
// CHECK: %[[C:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[SCALED:.*]] = arith.mulf %[[LOSS]], %[[C]] : tensor<f32>
// CHECK: %[[DL:.*]] = train.cross_entropy_backward %{{.*}}, %[[L]], %[[T]] : (tensor<f32>, tensor<2x10xf32>, tensor<2xi32>) -> tensor<2x10xf32>
// CHECK: %[[C2:.*]] = arith.constant dense<2.500000e-01> : tensor<2x10xf32>
// CHECK: %[[DLS:.*]] = arith.mulf %[[DL]], %[[C2]] : tensor<2x10xf32>
// CHECK: %[[MEAN:.*]] = dist.all_reduce %[[SCALED]] on @mesh axes = ["data"] : tensor<f32>
// CHECK-NOT: dist.all_reduce
// CHECK: return %[[MEAN]], %[[DLS]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @cross_entropy(%l: tensor<8x10xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                         %t: tensor<8xi32> {dist.sharding = #dist.sharding<@mesh, [[data]]>})
    -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>}, tensor<8x10xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %loss = train.cross_entropy %l, %t {dist.shardings = [#dist.sharding<@mesh, [], partial = [data]>]} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
  %one = train.constant {dist.shardings = [#dist.sharding<@mesh, []>]} dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %l, %t {dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<f32>, tensor<8x10xf32>, tensor<8xi32>) -> tensor<8x10xf32>
  return %loss, %dl : tensor<f32>, tensor<8x10xf32>
}

// -----

// An already partitioned function (local types) is left alone.
// CHECK-LABEL: func.func @partitioned
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<2x16xf32>
// CHECK-NEXT: %[[Y:.*]] = train.relu %[[X]] : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: return %[[Y]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @partitioned(%x: tensor<2x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<2x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) attributes {dist.partitioned} {
  %y = train.relu %x : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// A function without shardings is left alone.
// CHECK-LABEL: func.func @unsharded
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT: %[[Y:.*]] = train.relu %[[X]] : (tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @unsharded(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An op without a sharding rule runs on whole values: its operand is
// gathered and its result sliced back to the recorded sharding.
// CHECK-LABEL: func.func @no_rule
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32> {{.*}}) -> (tensor<2x16xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[X]] on @mesh axes = ["data"] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK: %[[N:.*]] = arith.negf %[[G]] : tensor<8x16xf32>
// CHECK: %[[S:.*]] = dist.local_slice %[[N]] on @mesh axes = ["data"] dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK: return %[[S]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @no_rule(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %n = arith.negf %x : tensor<8x16xf32>
  return %n : tensor<8x16xf32>
}

// -----

// A value nothing reads is not communicated: the all-gather its annotation
// asks for (and the dead op) are dropped, where they once stayed until a
// --canonicalize.
// CHECK-LABEL: func.func @dead_resharding
// CHECK-NOT: dist.all_gather
// CHECK-NOT: train.relu
// CHECK: return
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @dead_resharding(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %whole = dist.annotate %x {sharding = #dist.sharding<@mesh, [[], []]>} : tensor<8x16xf32>
  %dead = train.relu %whole : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %x : tensor<8x16xf32>
}

// -----

// A slice of the feature dim (a rotation's first half) with the batch dim
// split: the batch passes, and on a shard the slice's limit along it is
// the shard's size (it once kept the global 6 and failed to verify).
// CHECK-LABEL: func.func @slice_split_batch
// CHECK: train.slice %{{.*}} {limit = array<i64: 3, 4>, start = array<i64: 0, 1>} : (tensor<3x4xf32>) -> tensor<3x3xf32>
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @slice_split_batch(%x: tensor<6x4xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<6x3xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) {
  %s = train.slice %x {start = array<i64: 0, 1>, limit = array<i64: 6, 4>, dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<6x4xf32>) -> tensor<6x3xf32>
  return %s : tensor<6x3xf32>
}
