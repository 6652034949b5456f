// RUN: dist-opt %s -split-input-file --dist-bucket-collectives | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: dist-opt %s -split-input-file --dist-bucket-collectives="bucket-mb=0.01 first-bucket-mb=0.01" | FileCheck %s --check-prefixes=CHECK,SMALL
// RUN: dist-opt %s -split-input-file --dist-bucket-collectives="bucket-mb=0.01 first-bucket-mb=0.004" | FileCheck %s --check-prefixes=CHECK,FIRST
// RUN: dist-opt %s -split-input-file --dist-bucket-collectives="bucket-mb=0.001 first-bucket-mb=0.001" | FileCheck %s --check-prefixes=CHECK,TINY

// Five 4 KiB gradients, in the order they are produced: one bucket by
// default (25 MiB, first 1 MiB); two per 10 KiB bucket; a 4 KiB first bucket
// takes one; 1 KiB buckets leave every tensor alone.
// CHECK-LABEL: func.func @capacity
// CHECK-SAME: (%[[A:[^:]+]]: tensor<1024xf32>, %[[B:[^:]+]]: tensor<1024xf32>, %[[C:[^:]+]]: tensor<1024xf32>, %[[D:[^:]+]]: tensor<1024xf32>, %[[E:[^:]+]]: tensor<1024xf32>)
// DEFAULT: %[[GA:.*]] = train.exp %[[A]]
// DEFAULT: %[[GE:.*]] = train.exp %[[E]]
// DEFAULT-NEXT: %[[R:.*]]:5 = dist.all_reduce %[[GA]], %{{.*}}, %{{.*}}, %{{.*}}, %[[GE]] on @mesh axes = ["data"] : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>
// DEFAULT-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4
// SMALL: %[[GA:.*]] = train.exp %[[A]]
// SMALL-NEXT: %[[GB:.*]] = train.exp %[[B]]
// SMALL-NEXT: %[[R0:.*]]:2 = dist.all_reduce %[[GA]], %[[GB]] on @mesh axes = ["data"] : tensor<1024xf32>, tensor<1024xf32>
// SMALL-NEXT: %[[GC:.*]] = train.exp %[[C]]
// SMALL-NEXT: %[[GD:.*]] = train.exp %[[D]]
// SMALL-NEXT: %[[R1:.*]]:2 = dist.all_reduce %[[GC]], %[[GD]] on @mesh axes = ["data"] : tensor<1024xf32>, tensor<1024xf32>
// SMALL-NEXT: %[[GE:.*]] = train.exp %[[E]]
// SMALL-NEXT: %[[R2:.*]] = dist.all_reduce %[[GE]] on @mesh axes = ["data"] : tensor<1024xf32>
// SMALL-NEXT: return %[[R0]]#0, %[[R0]]#1, %[[R1]]#0, %[[R1]]#1, %[[R2]]
// FIRST: %[[GA:.*]] = train.exp %[[A]]
// FIRST-NEXT: %[[R0:.*]] = dist.all_reduce %[[GA]] on @mesh axes = ["data"] : tensor<1024xf32>
// FIRST-NEXT: %[[GB:.*]] = train.exp %[[B]]
// FIRST-NEXT: %[[GC:.*]] = train.exp %[[C]]
// FIRST-NEXT: %[[R1:.*]]:2 = dist.all_reduce %[[GB]], %[[GC]] on @mesh axes = ["data"] : tensor<1024xf32>, tensor<1024xf32>
// FIRST-NEXT: %[[GD:.*]] = train.exp %[[D]]
// FIRST-NEXT: %[[GE:.*]] = train.exp %[[E]]
// FIRST-NEXT: %[[R2:.*]]:2 = dist.all_reduce %[[GD]], %[[GE]] on @mesh axes = ["data"] : tensor<1024xf32>, tensor<1024xf32>
// FIRST-NEXT: return %[[R0]], %[[R1]]#0, %[[R1]]#1, %[[R2]]#0, %[[R2]]#1
// TINY-COUNT-5: dist.all_reduce %{{[^,]*}} on @mesh axes = ["data"] : tensor<1024xf32>{{$}}
// TINY-NOT: dist.all_reduce
// TINY: return
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @capacity(%a: tensor<1024xf32>, %b: tensor<1024xf32>, %c: tensor<1024xf32>, %d: tensor<1024xf32>, %e: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>) {
  %ga = train.exp %a : (tensor<1024xf32>) -> tensor<1024xf32>
  %gb = train.exp %b : (tensor<1024xf32>) -> tensor<1024xf32>
  %gc = train.exp %c : (tensor<1024xf32>) -> tensor<1024xf32>
  %gd = train.exp %d : (tensor<1024xf32>) -> tensor<1024xf32>
  %ge = train.exp %e : (tensor<1024xf32>) -> tensor<1024xf32>
  %ra = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<1024xf32>
  %rb = dist.all_reduce %gb on @mesh axes = ["data"] : tensor<1024xf32>
  %rc = dist.all_reduce %gc on @mesh axes = ["data"] : tensor<1024xf32>
  %rd = dist.all_reduce %gd on @mesh axes = ["data"] : tensor<1024xf32>
  %re = dist.all_reduce %ge on @mesh axes = ["data"] : tensor<1024xf32>
  return %ra, %rb, %rc, %rd, %re : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>
}

// -----

// A tensor larger than a bucket gets a bucket of its own (16 KiB against
// 10 KiB buckets); by default all three fit in the first bucket.
// CHECK-LABEL: func.func @oversized
// DEFAULT: %[[GA:.*]] = train.exp
// DEFAULT-NEXT: %[[GB:.*]] = train.exp
// DEFAULT-NEXT: %[[GC:.*]] = train.exp
// DEFAULT-NEXT: dist.all_reduce %[[GA]], %[[GB]], %[[GC]] on @mesh axes = ["data"] : tensor<16xf32>, tensor<4096xf32>, tensor<16xf32>
// SMALL-COUNT-3: dist.all_reduce %{{[^,]*}} on @mesh axes = ["data"] : tensor<{{16|4096}}xf32>{{$}}
// SMALL-NOT: dist.all_reduce
// SMALL: return
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @oversized(%a: tensor<16xf32>, %b: tensor<4096xf32>, %c: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<4096xf32>, tensor<16xf32>) {
  %ga = train.exp %a : (tensor<16xf32>) -> tensor<16xf32>
  %gb = train.exp %b : (tensor<4096xf32>) -> tensor<4096xf32>
  %gc = train.exp %c : (tensor<16xf32>) -> tensor<16xf32>
  %ra = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<16xf32>
  %rb = dist.all_reduce %gb on @mesh axes = ["data"] : tensor<4096xf32>
  %rc = dist.all_reduce %gc on @mesh axes = ["data"] : tensor<16xf32>
  return %ra, %rb, %rc : tensor<16xf32>, tensor<4096xf32>, tensor<16xf32>
}

// -----

// Each all-reduce first moves up to where its gradient is ready; the fused
// op sits where the last member was and a user of an earlier member moves
// after it.
// CHECK-LABEL: func.func @hoist_and_move_users
// CHECK: %[[GA:.*]] = train.exp
// CHECK: %[[GB:.*]] = train.exp
// CHECK: %[[U:.*]] = train.relu %[[GB]]
// DEFAULT-NEXT: %[[R:.*]]:2 = dist.all_reduce %[[GA]], %[[U]] on @mesh axes = ["data"] : tensor<16xf32>, tensor<16xf32>
// DEFAULT-NEXT: %[[V:.*]] = train.neg %[[R]]#0
// DEFAULT-NEXT: return %[[V]], %[[R]]#1
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @hoist_and_move_users(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %ga = train.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %gb = train.exp %y : (tensor<16xf32>) -> tensor<16xf32>
  %u = train.relu %gb : (tensor<16xf32>) -> tensor<16xf32>
  %ra = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<16xf32>
  %v = train.neg %ra : (tensor<16xf32>) -> tensor<16xf32>
  %rb = dist.all_reduce %u on @mesh axes = ["data"] : tensor<16xf32>
  return %v, %rb : tensor<16xf32>, tensor<16xf32>
}

// -----

// An all-reduce whose input depends on an earlier one's result starts a new
// bucket.
// CHECK-LABEL: func.func @dependent
// CHECK: %[[GA:.*]] = train.exp
// CHECK-NEXT: %[[RA:.*]] = dist.all_reduce %[[GA]] on @mesh axes = ["data"] : tensor<16xf32>
// CHECK-NEXT: %[[H:.*]] = train.relu %[[RA]]
// CHECK-NEXT: %[[RB:.*]] = dist.all_reduce %[[H]] on @mesh axes = ["data"] : tensor<16xf32>
// CHECK-NEXT: return %[[RA]], %[[RB]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @dependent(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %ga = train.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %ra = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<16xf32>
  %h = train.relu %ra : (tensor<16xf32>) -> tensor<16xf32>
  %rb = dist.all_reduce %h on @mesh axes = ["data"] : tensor<16xf32>
  return %ra, %rb : tensor<16xf32>, tensor<16xf32>
}

// -----

// Only consecutive all-reduces with the same mesh, axes and reduction fuse.
// CHECK-LABEL: func.func @groups
// CHECK: %[[GA:.*]] = train.exp
// CHECK-NEXT: %[[GB:.*]] = train.exp
// DEFAULT-NEXT: dist.all_reduce %[[GA]], %[[GB]] on @mesh axes = ["data"] : tensor<16xf32>, tensor<16xf32>
// DEFAULT-NEXT: %[[GC:.*]] = train.exp
// DEFAULT-NEXT: dist.all_reduce %[[GC]] on @mesh axes = ["model"] : tensor<16xf32>
// DEFAULT-NEXT: %[[GD:.*]] = train.exp
// DEFAULT-NEXT: dist.all_reduce %[[GD]] on @mesh axes = ["data"] reduction = <max> : tensor<16xf32>
// DEFAULT-NEXT: %[[GE:.*]] = train.exp
// DEFAULT-NEXT: dist.all_reduce %[[GE]] on @mesh axes = ["data"] : tensor<16xf32>
// DEFAULT-NEXT: return
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
func.func @groups(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>, %d: tensor<16xf32>, %e: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %ga = train.exp %a : (tensor<16xf32>) -> tensor<16xf32>
  %gb = train.exp %b : (tensor<16xf32>) -> tensor<16xf32>
  %gc = train.exp %c : (tensor<16xf32>) -> tensor<16xf32>
  %gd = train.exp %d : (tensor<16xf32>) -> tensor<16xf32>
  %ge = train.exp %e : (tensor<16xf32>) -> tensor<16xf32>
  %ra = dist.all_reduce %ga on @mesh axes = ["data"] : tensor<16xf32>
  %rb = dist.all_reduce %gb on @mesh axes = ["data"] : tensor<16xf32>
  %rc = dist.all_reduce %gc on @mesh axes = ["model"] : tensor<16xf32>
  %rd = dist.all_reduce %gd on @mesh axes = ["data"] reduction = <max> : tensor<16xf32>
  %re = dist.all_reduce %ge on @mesh axes = ["data"] : tensor<16xf32>
  return %ra, %rb, %rc, %rd, %re : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A single all-reduce is left as it is.
// CHECK-LABEL: func.func @single
// CHECK: %[[G:.*]] = train.exp
// CHECK-NEXT: %[[R:.*]] = dist.all_reduce %[[G]] on @mesh axes = ["data"] : tensor<16xf32>
// CHECK-NEXT: return %[[R]]
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @single(%x: tensor<16xf32>) -> tensor<16xf32> {
  %g = train.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %r = dist.all_reduce %g on @mesh axes = ["data"] : tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// All-reduces of block arguments keep their program order in the bucket.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @keeps_order_at_one_point
func.func @keeps_order_at_one_point(%a: tensor<8xf32>, %b: tensor<4xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  // DEFAULT: dist.all_reduce %arg0, %arg1 on @mesh axes = ["data"] : tensor<8xf32>, tensor<4xf32>
  // SMALL: dist.all_reduce %arg0, %arg1 on @mesh axes = ["data"] : tensor<8xf32>, tensor<4xf32>
  // FIRST: dist.all_reduce %arg0, %arg1 on @mesh axes = ["data"] : tensor<8xf32>, tensor<4xf32>
  // TINY: dist.all_reduce %arg0, %arg1 on @mesh axes = ["data"] : tensor<8xf32>, tensor<4xf32>
  %ra = dist.all_reduce %a on @mesh axes = ["data"] : tensor<8xf32>
  %rb = dist.all_reduce %b on @mesh axes = ["data"] : tensor<4xf32>
  return %ra, %rb : tensor<8xf32>, tensor<4xf32>
}

// -----

// Reduce-scatters (ZeRO gradients) are bucketed like all-reduces, each input
// keeping its scatter dim; all-reduces and reduce-scatters never share a
// bucket.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @reduce_scatter_bucket
func.func @reduce_scatter_bucket(%a: tensor<8x4xf32>, %b: tensor<2x8xf32>, %c: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x2xf32>, tensor<4xf32>) {
  // DEFAULT: %[[S:.*]]:2 = dist.reduce_scatter %arg0, %arg1 on @mesh axes = ["data"] scatter_dims = [0, 1] : tensor<8x4xf32>, tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x2xf32>
  // DEFAULT: dist.all_reduce %arg2
  %ra = dist.reduce_scatter %a on @mesh axes = ["data"] scatter_dims = [0] : tensor<8x4xf32> -> tensor<2x4xf32>
  %rc = dist.all_reduce %c on @mesh axes = ["data"] : tensor<4xf32>
  %rb = dist.reduce_scatter %b on @mesh axes = ["data"] scatter_dims = [1] : tensor<2x8xf32> -> tensor<2x2xf32>
  return %ra, %rb, %rc : tensor<2x4xf32>, tensor<2x2xf32>, tensor<4xf32>
}
