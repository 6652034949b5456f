// RUN: dist-opt %s -split-input-file --dist-overlap-collectives | FileCheck %s

// Each collective starts where it was and is waited for right before its
// first user, so the ops in between overlap the communication.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @overlap
func.func @overlap(%g: tensor<8x4xf32>, %h: tensor<8xf32>, %w: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<2x4xf32>, tensor<32xf32>) {
  // CHECK: %[[F:.*]] = dist.all_reduce_start %{{.*}} on @mesh axes = ["data"] : tensor<8x4xf32> -> !dist.future<tensor<8x4xf32>>
  // CHECK-NEXT: %[[S:.*]] = dist.reduce_scatter_start %{{.*}} on @mesh axes = ["data"] scatter_dims = [0] : tensor<8x4xf32> -> !dist.future<tensor<2x4xf32>>
  // CHECK-NEXT: %[[A:.*]] = dist.all_gather_start %{{.*}} on @mesh axes = ["data"] gather_dim = 0 : tensor<8xf32> -> !dist.future<tensor<32xf32>>
  // CHECK-NEXT: %[[X:.*]] = train.exp
  // CHECK-NEXT: %[[Y:.*]] = train.neg %[[X]]
  // CHECK-NEXT: %[[R:.*]] = dist.wait %[[F]] : !dist.future<tensor<8x4xf32>>
  // CHECK-NEXT: train.add %[[R]], %[[Y]]
  // CHECK-NEXT: %[[RS:.*]] = dist.wait %[[S]] : !dist.future<tensor<2x4xf32>>
  // CHECK-NEXT: %[[RA:.*]] = dist.wait %[[A]] : !dist.future<tensor<32xf32>>
  // CHECK-NEXT: return %{{.*}}, %[[RS]], %[[RA]]
  %r = dist.all_reduce %g on @mesh axes = ["data"] : tensor<8x4xf32>
  %s = dist.reduce_scatter %g on @mesh axes = ["data"] scatter_dims = [0] : tensor<8x4xf32> -> tensor<2x4xf32>
  %a = dist.all_gather %h on @mesh axes = ["data"] gather_dim = 0 : tensor<8xf32> -> tensor<32xf32>
  %x = train.exp %w : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = train.neg %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %z = train.add %r, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %z, %s, %a : tensor<8x4xf32>, tensor<2x4xf32>, tensor<32xf32>
}

// -----

// On a data-parallel step the first gradient bucket (the head's gradients
// and the loss) is waited for only at the end: the whole rest of the
// backward pass overlaps it. The cost report counts started collectives.
// RUN: dist-opt %examples/transformer_block.mlir --dist-mirrored=replicas=4 --dist-overlap-collectives | FileCheck %s --check-prefix=STEP
// RUN: dist-opt %examples/transformer_block.mlir --dist-mirrored=replicas=4 --dist-overlap-collectives --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=COST
// STEP-LABEL: func.func @train_step
// STEP: %[[FIRST:.*]]:3 = dist.all_reduce_start %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<16x256xf32>, tensor<16xf32>
// STEP-COUNT-20: train.
// STEP: %[[REST:.*]]:16 = dist.all_reduce_start
// STEP: dist.wait %[[REST]]#0
// STEP: dist.wait %[[FIRST]]#0, %[[FIRST]]#1, %[[FIRST]]#2
// STEP-NOT: dist.all_reduce
// COST: "collective_count": 2,
