// RUN: dist-opt %s -split-input-file | dist-opt -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// A 1-D mesh with only the required attributes.
// CHECK-LABEL: dist.mesh @mesh_1d
// CHECK-SAME: {axes = ["data"], shape = array<i64: 8>}
dist.mesh @mesh_1d {axes = ["data"], shape = array<i64: 8>}

// -----

// A 2-D hosts x devices mesh with its full topology (attributes print sorted).
// CHECK-LABEL: dist.mesh @mesh_topology
// CHECK-SAME: {axes = ["hosts", "devices"], bandwidths = [2.500000e+01, 3.000000e+02], host_axes = ["hosts"], latencies = [1.000000e+01, 1.500000e+00], shape = array<i64: 2, 4>}
dist.mesh @mesh_topology {axes = ["hosts", "devices"], shape = array<i64: 2, 4>,
                          host_axes = ["hosts"], bandwidths = [25.0, 300.0],
                          latencies = [10.0, 1.5]}

// -----

// Each topology attribute is optional on its own; size-1 axes are allowed.
// CHECK-LABEL: dist.mesh @mesh_latencies_only
// CHECK-SAME: {axes = ["pipe", "data", "model"], latencies = [5.000000e+00, 2.000000e+00, 1.000000e+00], shape = array<i64: 1, 2, 4>}
// CHECK-LABEL: dist.mesh @mesh_host_axes_only
// CHECK-SAME: {axes = ["x", "y"], host_axes = [], shape = array<i64: 2, 2>}
dist.mesh @mesh_latencies_only {axes = ["pipe", "data", "model"],
                                shape = array<i64: 1, 2, 4>,
                                latencies = [5.0, 2.0, 1.0]}
dist.mesh @mesh_host_axes_only {axes = ["x", "y"], shape = array<i64: 2, 2>,
                                host_axes = []}

// -----

// A device count just below the int64 limit (2^32 x (2^31 - 1)) still verifies.
// CHECK-LABEL: dist.mesh @mesh_huge
// CHECK-SAME: {axes = ["x", "y"], shape = array<i64: 4294967296, 2147483647>}
dist.mesh @mesh_huge {axes = ["x", "y"], shape = array<i64: 4294967296, 2147483647>}

// -----

// Argument and result shardings: split dims (several axes on one dim), a
// replicated result and a pending partial sum.
// CHECK: dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
// CHECK-LABEL: func.func @func_shardings
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[hosts, devices], []]>},
// CHECK-SAME: %[[B:.*]]: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[devices]]>},
// CHECK-SAME: %[[C:.*]]: tensor<4xf32>)
// CHECK-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], []]>},
// CHECK-SAME: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[devices]], partial = [hosts]>})
// CHECK: return %[[A]], %[[B]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @func_shardings(
    %a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[hosts, devices], []]>},
    %b: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[devices]]>},
    %c: tensor<4xf32>)
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>},
        tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[devices]], partial = [hosts]>}) {
  return %a, %b : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// Axis names may be written as strings; non-identifier names stay quoted.
// CHECK-LABEL: func.func private @quoted_axes
// CHECK-SAME: (tensor<4x6xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}["data-parallel"], [model]], partial = ["2nd"]>})
dist.mesh @mesh {axes = ["data-parallel", "model", "2nd"], shape = array<i64: 4, 3, 2>}
func.func private @quoted_axes(
    tensor<4x6xf32> {dist.sharding = #dist.sharding<@mesh, [["data-parallel"], ["model"]], partial = ["2nd"]>})

// -----

// A sharding on a rank-0 tensor (no dims), replicated or partial.
// CHECK-LABEL: func.func private @scalar_shardings
// CHECK-SAME: (tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>})
// CHECK-SAME: -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, [], partial = [x]>})
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func private @scalar_shardings(tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>})
    -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, [], partial = [x]>})

// -----

// A partitioned function has local types (8x3 of a global 8x12 split over 4
// devices), so its shardings are not checked for divisibility.
// CHECK-LABEL: func.func @partitioned
// CHECK-SAME: (%[[A:.*]]: tensor<8x3xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [x]]>})
// CHECK-SAME: attributes {dist.partitioned}
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @partitioned(%a: tensor<8x3xf32> {dist.sharding = #dist.sharding<@mesh, [[], [x]]>})
    attributes {dist.partitioned} {
  return
}

// -----

// dist.annotate pins a sharding on a value.
// CHECK-LABEL: func.func @annotate
// CHECK-SAME: (%[[W0:.*]]: tensor<512x2048xf32>)
// CHECK: %[[W:.*]] = dist.annotate %[[W0]] {sharding = #dist.sharding<@mesh, {{\[}}[], [model]]>} : tensor<512x2048xf32>
// CHECK: return %[[W]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @annotate(%w0: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %w = dist.annotate %w0 {sharding = #dist.sharding<@mesh, [[], [model]]>} : tensor<512x2048xf32>
  return %w : tensor<512x2048xf32>
}

// -----

// dist.annotate with a partial sharding, and a fully replicated one.
// CHECK-LABEL: func.func @annotate_partial
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[P:.*]] = dist.annotate %[[X]] {sharding = #dist.sharding<@mesh, {{\[}}[data], []], partial = [model]>} : tensor<8x16xf32>
// CHECK: %[[R:.*]] = dist.annotate %[[P]] {sharding = #dist.sharding<@mesh, {{\[}}[], []]>} : tensor<8x16xf32>
// CHECK: return %[[R]]
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @annotate_partial(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %p = dist.annotate %x {sharding = #dist.sharding<@mesh, [[data], []], partial = [model]>} : tensor<8x16xf32>
  %r = dist.annotate %p {sharding = #dist.sharding<@mesh, [[], []]>} : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// all_reduce defaults to sum, which is not printed.
// CHECK-LABEL: func.func @all_reduce_sum
// CHECK-SAME: (%[[G:.*]]: tensor<512x128xf32>)
// CHECK: %[[R0:.*]] = dist.all_reduce %[[G]] on @mesh axes = ["data"] : tensor<512x128xf32>
// CHECK: %[[R1:.*]] = dist.all_reduce %[[R0]] on @mesh axes = ["data"] : tensor<512x128xf32>
// CHECK: return %[[R1]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 8>}
func.func @all_reduce_sum(%g: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r0 = dist.all_reduce %g on @mesh axes = ["data"] : tensor<512x128xf32>
  %r1 = dist.all_reduce %r0 on @mesh axes = ["data"] reduction = <sum> : tensor<512x128xf32>
  return %r1 : tensor<512x128xf32>
}

// -----

// A variadic all_reduce (one gradient bucket) with max, then min over two axes.
// CHECK-LABEL: func.func @all_reduce_bucket
// CHECK-SAME: (%[[A:.*]]: tensor<512x128xf32>, %[[B:.*]]: tensor<128xf32>, %[[C:.*]]: tensor<i32>)
// CHECK: %[[M:.*]]:3 = dist.all_reduce %[[A]], %[[B]], %[[C]] on @mesh axes = ["data"] reduction = <max> : tensor<512x128xf32>, tensor<128xf32>, tensor<i32>
// CHECK: %[[N:.*]] = dist.all_reduce %[[M]]#1 on @mesh axes = ["hosts", "data"] reduction = <min> : tensor<128xf32>
// CHECK: return %[[M]]#0, %[[N]], %[[M]]#2
dist.mesh @mesh {axes = ["hosts", "data"], shape = array<i64: 2, 4>}
func.func @all_reduce_bucket(%a: tensor<512x128xf32>, %b: tensor<128xf32>, %c: tensor<i32>)
    -> (tensor<512x128xf32>, tensor<128xf32>, tensor<i32>) {
  %m:3 = dist.all_reduce %a, %b, %c on @mesh axes = ["data"] reduction = <max> : tensor<512x128xf32>, tensor<128xf32>, tensor<i32>
  %n = dist.all_reduce %m#1 on @mesh axes = ["hosts", "data"] reduction = <min> : tensor<128xf32>
  return %m#0, %n, %m#2 : tensor<512x128xf32>, tensor<128xf32>, tensor<i32>
}

// -----

// reduce_scatter divides scatter_dim by the group size (4 x 2 = 8 here).
// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%[[X:.*]]: tensor<16x32xf32>)
// CHECK: %[[S:.*]] = dist.reduce_scatter %[[X]] on @mesh axes = ["devices", "hosts"] scatter_dims = [0] : tensor<16x32xf32> -> tensor<2x32xf32>
// CHECK: %[[T:.*]] = dist.reduce_scatter %[[X]] on @mesh axes = ["devices"] scatter_dims = [1] reduction = <max> : tensor<16x32xf32> -> tensor<16x8xf32>
// CHECK: return %[[S]], %[[T]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @reduce_scatter(%x: tensor<16x32xf32>) -> (tensor<2x32xf32>, tensor<16x8xf32>) {
  %s = dist.reduce_scatter %x on @mesh axes = ["devices", "hosts"] scatter_dims = [0] : tensor<16x32xf32> -> tensor<2x32xf32>
  %t = dist.reduce_scatter %x on @mesh axes = ["devices"] scatter_dims = [1] reduction = <max> : tensor<16x32xf32> -> tensor<16x8xf32>
  return %s, %t : tensor<2x32xf32>, tensor<16x8xf32>
}

// -----

// all_gather multiplies gather_dim by the group size; other dims may be dynamic.
// CHECK-LABEL: func.func @all_gather
// CHECK-SAME: (%[[X:.*]]: tensor<2x32xf32>, %[[Y:.*]]: tensor<?x3xbf16>)
// CHECK: %[[G:.*]] = dist.all_gather %[[X]] on @mesh axes = ["devices"] gather_dim = 0 : tensor<2x32xf32> -> tensor<8x32xf32>
// CHECK: %[[H:.*]] = dist.all_gather %[[Y]] on @mesh axes = ["hosts", "devices"] gather_dim = 1 : tensor<?x3xbf16> -> tensor<?x24xbf16>
// CHECK: return %[[G]], %[[H]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @all_gather(%x: tensor<2x32xf32>, %y: tensor<?x3xbf16>) -> (tensor<8x32xf32>, tensor<?x24xbf16>) {
  %g = dist.all_gather %x on @mesh axes = ["devices"] gather_dim = 0 : tensor<2x32xf32> -> tensor<8x32xf32>
  %h = dist.all_gather %y on @mesh axes = ["hosts", "devices"] gather_dim = 1 : tensor<?x3xbf16> -> tensor<?x24xbf16>
  return %g, %h : tensor<8x32xf32>, tensor<?x24xbf16>
}

// -----

// all_to_all divides split_dim and multiplies concat_dim by the group size.
// CHECK-LABEL: func.func @all_to_all
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x5xf32>)
// CHECK: %[[Y:.*]] = dist.all_to_all %[[X]] on @mesh axes = ["model"] split_dim = 1 concat_dim = 0 : tensor<2x16x5xf32> -> tensor<8x4x5xf32>
// CHECK: %[[Z:.*]] = dist.all_to_all %[[Y]] on @mesh axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<8x4x5xf32> -> tensor<2x16x5xf32>
// CHECK: return %[[Z]]
dist.mesh @mesh {axes = ["model"], shape = array<i64: 4>}
func.func @all_to_all(%x: tensor<2x16x5xf32>) -> tensor<2x16x5xf32> {
  %y = dist.all_to_all %x on @mesh axes = ["model"] split_dim = 1 concat_dim = 0 : tensor<2x16x5xf32> -> tensor<8x4x5xf32>
  %z = dist.all_to_all %y on @mesh axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<8x4x5xf32> -> tensor<2x16x5xf32>
  return %z : tensor<2x16x5xf32>
}

// -----

// A dynamic scattered, gathered, split, concatenated or sliced dim stays
// dynamic and is not checked for divisibility (3 does not divide over 4).
// CHECK-LABEL: func.func @dynamic_collective_dims
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>, %[[Y:.*]]: tensor<8x?xf32>)
// CHECK: %[[RS:.*]] = dist.reduce_scatter %[[X]] on @mesh axes = ["x"] scatter_dims = [0] : tensor<?x3xf32> -> tensor<?x3xf32>
// CHECK: %[[AG:.*]] = dist.all_gather %[[X]] on @mesh axes = ["x"] gather_dim = 0 : tensor<?x3xf32> -> tensor<?x3xf32>
// CHECK: %[[S:.*]] = dist.all_to_all %[[Y]] on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x?xf32> -> tensor<32x?xf32>
// CHECK: %[[C:.*]] = dist.all_to_all %[[Y]] on @mesh axes = ["x"] split_dim = 0 concat_dim = 1 : tensor<8x?xf32> -> tensor<2x?xf32>
// CHECK: %[[L:.*]] = dist.local_slice %[[Y]] on @mesh axes = ["x"] dim = 1 : tensor<8x?xf32> -> tensor<8x?xf32>
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @dynamic_collective_dims(%x: tensor<?x3xf32>, %y: tensor<8x?xf32>) {
  %rs = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [0] : tensor<?x3xf32> -> tensor<?x3xf32>
  %ag = dist.all_gather %x on @mesh axes = ["x"] gather_dim = 0 : tensor<?x3xf32> -> tensor<?x3xf32>
  %s = dist.all_to_all %y on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x?xf32> -> tensor<32x?xf32>
  %c = dist.all_to_all %y on @mesh axes = ["x"] split_dim = 0 concat_dim = 1 : tensor<8x?xf32> -> tensor<2x?xf32>
  %l = dist.local_slice %y on @mesh axes = ["x"] dim = 1 : tensor<8x?xf32> -> tensor<8x?xf32>
  return
}

// -----

// broadcast from the first and the last device of a 2 x 4 group.
// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[B0:.*]] = dist.broadcast %[[X]] on @mesh axes = ["hosts"] root = 0 : tensor<8x16xf32>
// CHECK: %[[B1:.*]] = dist.broadcast %[[B0]] on @mesh axes = ["hosts", "devices"] root = 7 : tensor<8x16xf32>
// CHECK: return %[[B1]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @broadcast(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %b0 = dist.broadcast %x on @mesh axes = ["hosts"] root = 0 : tensor<8x16xf32>
  %b1 = dist.broadcast %b0 on @mesh axes = ["hosts", "devices"] root = 7 : tensor<8x16xf32>
  return %b1 : tensor<8x16xf32>
}

// -----

// local_slice keeps this device's slice along dim.
// CHECK-LABEL: func.func @local_slice
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[S:.*]] = dist.local_slice %[[X]] on @mesh axes = ["hosts"] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK: %[[T:.*]] = dist.local_slice %[[S]] on @mesh axes = ["devices"] dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK: return %[[T]]
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>}
func.func @local_slice(%x: tensor<8x16xf32>) -> tensor<2x8xf32> {
  %s = dist.local_slice %x on @mesh axes = ["hosts"] dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %t = dist.local_slice %s on @mesh axes = ["devices"] dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
  return %t : tensor<2x8xf32>
}

// -----

// Propagation records result shardings on train ops as dist.shardings, one per
// result (a single-result matmul and a three-result layer_norm).
// CHECK-LABEL: func.func @train_op_shardings
// CHECK-SAME: (%[[X:.*]]: tensor<8x512xf32>, %[[W:.*]]: tensor<2048x512xf32>, %[[G:.*]]: tensor<2048xf32>, %[[B:.*]]: tensor<2048xf32>)
// CHECK: %[[H:.*]] = train.matmul %[[X]], %[[W]] {dist.shardings = [#dist.sharding<@mesh, {{\[}}[data], []]>], transpose_rhs} : (tensor<8x512xf32>, tensor<2048x512xf32>) -> tensor<8x2048xf32>
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = train.layer_norm %[[H]], %[[G]], %[[B]] {axis = 1 : i64, dist.shardings = [#dist.sharding<@mesh, {{\[}}[data], []]>, #dist.sharding<@mesh, {{\[}}[data]]>, #dist.sharding<@mesh, {{\[}}[]], partial = [data]>]} : (tensor<8x2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> (tensor<8x2048xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: return %[[Y]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @train_op_shardings(%x: tensor<8x512xf32>, %w: tensor<2048x512xf32>, %g: tensor<2048xf32>, %b: tensor<2048xf32>) -> tensor<8x2048xf32> {
  %h = train.matmul %x, %w {dist.shardings = [#dist.sharding<@mesh, [[data], []]>], transpose_rhs} : (tensor<8x512xf32>, tensor<2048x512xf32>) -> tensor<8x2048xf32>
  %y, %mean, %rstd = train.layer_norm %h, %g, %b {axis = 1 : i64, dist.shardings = [#dist.sharding<@mesh, [[data], []]>, #dist.sharding<@mesh, [[data]]>, #dist.sharding<@mesh, [[]], partial = [data]>]} : (tensor<8x2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> (tensor<8x2048xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y : tensor<8x2048xf32>
}

// -----

// An op with no results takes an empty dist.shardings.
// CHECK-LABEL: func.func @no_result_shardings
// CHECK: return {dist.shardings = []}
func.func @no_result_shardings() {
  return {dist.shardings = []}
}

// -----

// Mesh references resolve to the nearest symbol table: here a nested module.
// CHECK-LABEL: module @inner
// CHECK: dist.mesh @mesh
// CHECK-LABEL: func.func @nested_mesh
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[x]]>})
// CHECK: %[[A:.*]] = dist.annotate %[[X]] {sharding = #dist.sharding<@mesh, {{\[}}[x]]>} : tensor<4xf32>
// CHECK: %[[R:.*]] = dist.all_reduce %[[A]] on @mesh axes = ["x"] : tensor<4xf32>
// CHECK: return %[[R]]
module @inner {
  dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
  func.func @nested_mesh(%x: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [[x]]>}) -> tensor<4xf32> {
    %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[x]]>} : tensor<4xf32>
    %r = dist.all_reduce %a on @mesh axes = ["x"] : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// shard_offset names the start of this device's shard of a split dim.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
// CHECK-LABEL: func.func @shard_offset
func.func @shard_offset() -> (index, index) {
  // CHECK: dist.shard_offset on @mesh axes = ["model"] size = 1024 : index
  %a = dist.shard_offset on @mesh axes = ["model"] size = 1024 : index
  // CHECK: dist.shard_offset on @mesh axes = ["data", "model"] size = 64 : index
  %b = dist.shard_offset on @mesh axes = ["data", "model"] size = 64 : index
  return %a, %b : index, index
}

// -----

// The asynchronous forms: start returns futures, wait their tensors.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @async_collectives
func.func @async_collectives(%a: tensor<8x4xf32>, %b: tensor<16xf32>) -> (tensor<8x4xf32>, tensor<2x4xf32>, tensor<64xf32>) {
  // CHECK: %[[F0:.*]] = dist.all_reduce_start %{{.*}} on @mesh axes = ["data"] reduction = <max> : tensor<8x4xf32> -> !dist.future<tensor<8x4xf32>>
  %f0 = dist.all_reduce_start %a on @mesh axes = ["data"] reduction = <max> : tensor<8x4xf32> -> !dist.future<tensor<8x4xf32>>
  // CHECK: %[[F1:.*]] = dist.reduce_scatter_start %{{.*}} on @mesh axes = ["data"] scatter_dims = [0] : tensor<8x4xf32> -> !dist.future<tensor<2x4xf32>>
  %f1 = dist.reduce_scatter_start %a on @mesh axes = ["data"] scatter_dims = [0] : tensor<8x4xf32> -> !dist.future<tensor<2x4xf32>>
  // CHECK: %[[F2:.*]] = dist.all_gather_start %{{.*}} on @mesh axes = ["data"] gather_dim = 0 : tensor<16xf32> -> !dist.future<tensor<64xf32>>
  %f2 = dist.all_gather_start %b on @mesh axes = ["data"] gather_dim = 0 : tensor<16xf32> -> !dist.future<tensor<64xf32>>
  // CHECK: %[[R:.*]]:3 = dist.wait %[[F0]], %[[F1]], %[[F2]] : !dist.future<tensor<8x4xf32>>, !dist.future<tensor<2x4xf32>>, !dist.future<tensor<64xf32>>
  %r0, %r1, %r2 = dist.wait %f0, %f1, %f2 : !dist.future<tensor<8x4xf32>>, !dist.future<tensor<2x4xf32>>, !dist.future<tensor<64xf32>>
  return %r0, %r1, %r2 : tensor<8x4xf32>, tensor<2x4xf32>, tensor<64xf32>
}
