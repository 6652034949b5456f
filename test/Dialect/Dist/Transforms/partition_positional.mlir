// RUN: dist-opt %s -split-input-file --dist-propagate-sharding --dist-partition | FileCheck %s

// Ops whose result depends on global positions learn where their shard
// starts: dropout with a batch-split operand gets the offset of its rows
// (and 0 for the whole dim) plus the global shape, so every shard draws the
// single-device mask.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @dropout_batch
// CHECK-SAME: %[[X:.*]]: tensor<2x16xf32> {{.*}}, %[[SEED:.*]]: tensor<i64>
func.func @dropout_batch(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}, %seed: tensor<i64>) -> tensor<8x16xf32> {
  // CHECK: %[[ROW:.*]] = dist.shard_offset on @mesh axes = ["data"] size = 8 : index
  // CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
  // CHECK-NEXT: train.dropout %[[X]], %[[SEED]], %[[ROW]], %[[ZERO]] {global_shape = array<i64: 8, 16>, rate = 1.000000e-01 : f64} : (tensor<2x16xf32>, tensor<i64>, index, index) -> tensor<2x16xf32>
  %y = train.dropout %x, %seed {rate = 1.000000e-01 : f64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A replicated dropout keeps its whole-tensor form.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @dropout_replicated
func.func @dropout_replicated(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>}, %seed: tensor<i64>) -> tensor<8x16xf32> {
  // CHECK-NOT: dist.shard_offset
  // CHECK: train.dropout %{{.*}}, %{{.*}} {rate = 1.000000e-01 : f64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  %y = train.dropout %x, %seed {rate = 1.000000e-01 : f64} : (tensor<8x16xf32>, tensor<i64>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A vocabulary-split embedding table: the lookup gets its first row, reads
// zeros for ids it does not own, and its partial result is all-reduced.
dist.mesh @mesh {axes = ["model"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @vocab_gather
func.func @vocab_gather(%table: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}, %ids: tensor<2x8xi32>) -> tensor<2x8x16xf32> {
  // CHECK: %[[OFF:.*]] = dist.shard_offset on @mesh axes = ["model"] size = 32 : index
  // CHECK-NEXT: %[[E:.*]] = train.gather %{{.*}}, %{{.*}}, %[[OFF]] : (tensor<8x16xf32>, tensor<2x8xi32>, index) -> tensor<2x8x16xf32>
  // CHECK-NEXT: %[[R:.*]] = dist.all_reduce %[[E]] on @mesh axes = ["model"] : tensor<2x8x16xf32>
  // CHECK-NEXT: return %[[R]]
  %e = train.gather %table, %ids : (tensor<32x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  return %e : tensor<2x8x16xf32>
}

// -----

// Its gradient: each shard adds only the updates of its own rows.
dist.mesh @mesh {axes = ["model"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @vocab_scatter_add
func.func @vocab_scatter_add(%init: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}, %ids: tensor<2x8xi32>, %upd: tensor<2x8x16xf32>) -> tensor<32x16xf32> {
  // CHECK: %[[OFF:.*]] = dist.shard_offset on @mesh axes = ["model"] size = 32 : index
  // CHECK-NEXT: train.scatter_add %{{.*}}, %{{.*}}, %{{.*}}, %[[OFF]] : (tensor<8x16xf32>, tensor<2x8xi32>, tensor<2x8x16xf32>, index) -> tensor<8x16xf32>
  // CHECK-NOT: dist.
  %t = train.scatter_add %init, %ids, %upd : (tensor<32x16xf32>, tensor<2x8xi32>, tensor<2x8x16xf32>) -> tensor<32x16xf32>
  return %t : tensor<32x16xf32>
}
