// End-to-end strategy pipelines on the examples. Each block checks what the
// strategy must produce, not the whole output.

// RUN: dist-opt %examples/mlp.mlir --pass-pipeline='builtin.module(dist-annotate-mirrored{replicas=4},dist-propagate-sharding,dist-partition)' | FileCheck %s --check-prefix=UNBUCKETED
// RUN: dist-opt %examples/mlp.mlir --pass-pipeline='builtin.module(dist-mirrored{replicas=4})' | FileCheck %s --check-prefix=MIRRORED
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=4 first-bucket-mb=0.001" | FileCheck %s --check-prefix=FIRST
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=4 bucket-mb=0.3 first-bucket-mb=0.001" | FileCheck %s --check-prefix=SMALL
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=1 replicas=4" | FileCheck %s --check-prefix=ZERO2
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=2 replicas=4" | FileCheck %s --check-prefix=ZERO2
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=3 replicas=4" | FileCheck %s --check-prefix=ZERO3
// RUN: dist-opt %examples/mlp.mlir --dist-multi-worker-mirrored="hosts=2 devices=4" | FileCheck %s --check-prefix=MULTI
// RUN: dist-opt %examples/transformer_block.mlir --dist-mirrored=replicas=4 | FileCheck %s --check-prefix=TRANSFORMER

// MirroredStrategy before bucketing: each replica runs a quarter of the batch
// (16 of 64 rows) on whole parameters; the loss and its gradient are scaled
// by 1/4 (global mean); every gradient is all-reduced once, right before its
// update, and the loss once before it is returned.
// UNBUCKETED-LABEL: func.func @train_step
// UNBUCKETED-SAME: (%[[W1:[^:]+]]: tensor<128x784xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// UNBUCKETED-SAME: %[[B1:[^:]+]]: tensor<128xf32>
// UNBUCKETED-SAME: %[[W2:[^:]+]]: tensor<10x128xf32>
// UNBUCKETED-SAME: %[[B2:[^:]+]]: tensor<10xf32>
// UNBUCKETED-SAME: %[[X:[^:]+]]: tensor<16x784xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// UNBUCKETED-SAME: %[[Y:[^:]+]]: tensor<16xi32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>
// UNBUCKETED-SAME: attributes {dist.partitioned}
// UNBUCKETED-NOT: dist.
// UNBUCKETED: %[[CE:.*]] = train.cross_entropy %{{.*}}, %[[Y]] : (tensor<16x10xf32>, tensor<16xi32>) -> tensor<f32>
// UNBUCKETED-NEXT: %[[Q:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// UNBUCKETED-NEXT: %[[LOSS:.*]] = arith.mulf %[[CE]], %[[Q]] : tensor<f32>
// UNBUCKETED: %[[DL:.*]] = train.cross_entropy_backward %{{.*}}, %{{.*}}, %[[Y]] : (tensor<f32>, tensor<16x10xf32>, tensor<16xi32>) -> tensor<16x10xf32>
// UNBUCKETED-NEXT: %[[Q2:.*]] = arith.constant dense<2.500000e-01> : tensor<16x10xf32>
// UNBUCKETED-NEXT: %{{.*}} = arith.mulf %[[DL]], %[[Q2]] : tensor<16x10xf32>
// UNBUCKETED-NOT: dist.
// UNBUCKETED: %[[DW1:.*]] = train.matmul %{{.*}}, %[[X]] {transpose_lhs} : (tensor<16x128xf32>, tensor<16x784xf32>) -> tensor<128x784xf32>
// UNBUCKETED-NOT: dist.
// UNBUCKETED: %[[G1:.*]] = dist.all_reduce %[[DW1]] on @mesh axes = ["data"] : tensor<128x784xf32>
// UNBUCKETED-NEXT: train.sgd %[[W1]], %[[G1]],
// UNBUCKETED-NEXT: %[[G2:.*]] = dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<128xf32>
// UNBUCKETED-NEXT: train.sgd %[[B1]], %[[G2]],
// UNBUCKETED-NEXT: %[[G3:.*]] = dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<10x128xf32>
// UNBUCKETED-NEXT: train.sgd %[[W2]], %[[G3]],
// UNBUCKETED-NEXT: %[[G4:.*]] = dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<10xf32>
// UNBUCKETED-NEXT: train.sgd %[[B2]], %[[G4]],
// UNBUCKETED-NEXT: %[[L:.*]] = dist.all_reduce %[[LOSS]] on @mesh axes = ["data"] : tensor<f32>
// UNBUCKETED-NEXT: return {{.*}}, %[[L]] :

// The full MirroredStrategy pipeline: with the default buckets (first
// 1 MiB, then 25 MiB) the 0.39 MiB of gradients and the loss are one
// all-reduce, issued when the last gradient is ready.
// MIRRORED-LABEL: func.func @train_step
// MIRRORED-SAME: (%[[W1:[^:]+]]: tensor<128x784xf32>
// MIRRORED-SAME: %[[B1:[^:]+]]: tensor<128xf32>
// MIRRORED-SAME: %[[W2:[^:]+]]: tensor<10x128xf32>
// MIRRORED-SAME: %[[B2:[^:]+]]: tensor<10xf32>
// MIRRORED-NOT: dist.all_reduce
// MIRRORED: %[[LOSS:.*]] = arith.mulf %{{.*}}, %{{.*}} : tensor<f32>
// MIRRORED-NOT: dist.all_reduce
// MIRRORED: %[[R:.*]]:5 = dist.all_reduce %[[LOSS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<10x128xf32>, tensor<10xf32>, tensor<128x784xf32>, tensor<128xf32>
// MIRRORED-NEXT: train.sgd %[[W1]], %[[R]]#3,
// MIRRORED-NEXT: train.sgd %[[B1]], %[[R]]#4,
// MIRRORED-NEXT: train.sgd %[[W2]], %[[R]]#1,
// MIRRORED-NEXT: train.sgd %[[B2]], %[[R]]#2,
// MIRRORED-NEXT: return {{.*}}, %[[R]]#0 :

// A 0.001 MiB first bucket holds only the loss: two all-reduces.
// FIRST-LABEL: func.func @train_step
// FIRST: %[[LOSS:.*]] = arith.mulf %{{.*}}, %{{.*}} : tensor<f32>
// FIRST-NEXT: %{{.*}} = dist.all_reduce %[[LOSS]] on @mesh axes = ["data"] : tensor<f32>
// FIRST-NOT: dist.all_reduce
// FIRST: %{{.*}}:4 = dist.all_reduce %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<10x128xf32>, tensor<10xf32>, tensor<128x784xf32>, tensor<128xf32>
// FIRST-NOT: dist.all_reduce
// FIRST: return

// 0.3 MiB buckets: the loss, the fc2 gradients, the 0.38 MiB fc1.weight
// gradient alone and the fc1.bias gradient are four all-reduces.
// SMALL-LABEL: func.func @train_step
// SMALL: dist.all_reduce %{{[^,]*}} on @mesh axes = ["data"] : tensor<f32>{{$}}
// SMALL-NOT: dist.all_reduce
// SMALL: dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<10x128xf32>, tensor<10xf32>{{$}}
// SMALL-NOT: dist.all_reduce
// SMALL: dist.all_reduce %{{[^,]*}} on @mesh axes = ["data"] : tensor<128x784xf32>{{$}}
// SMALL-NOT: dist.all_reduce
// SMALL: dist.all_reduce %{{[^,]*}} on @mesh axes = ["data"] : tensor<128xf32>{{$}}
// SMALL-NOT: dist.all_reduce
// SMALL: return

// ZeRO-1 moves what data parallelism moves: the gradients are
// reduce-scattered (not all-reduced and sliced) and the updated shards
// all-gathered, so it gives the program of ZeRO-2 below.

// ZeRO-2: the sharded gradients are reduce-scattered instead, in one bucket
// (fc2.weight splits its dim 1: 10 rows do not divide); only the loss
// and the replicated fc2.bias gradient are all-reduced.
// ZERO2-LABEL: func.func @train_step
// ZERO2-SAME: (%[[W1:[^:]+]]: tensor<128x784xf32>
// ZERO2-SAME: %[[B1:[^:]+]]: tensor<128xf32>
// ZERO2-SAME: %[[W2:[^:]+]]: tensor<10x128xf32>
// ZERO2-SAME: %[[B2:[^:]+]]: tensor<10xf32>
// ZERO2: %[[R:.*]]:2 = dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<10xf32>
// ZERO2-NOT: dist.all_reduce
// ZERO2: %[[G:.*]]:3 = dist.reduce_scatter %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] scatter_dims = [1, 0, 0] : tensor<10x128xf32>, tensor<128x784xf32>, tensor<128xf32> -> tensor<10x32xf32>, tensor<32x784xf32>, tensor<32xf32>
// ZERO2-NOT: dist.reduce_scatter
// ZERO2-NEXT: %[[P1:.*]] = dist.local_slice %[[W1]] on @mesh axes = ["data"] dim = 0 : tensor<128x784xf32> -> tensor<32x784xf32>
// ZERO2-NEXT: %[[N1:.*]], %{{.*}} = train.sgd %[[P1]], %[[G]]#1,
// ZERO2-NEXT: %[[P2:.*]] = dist.local_slice %[[B1]] on @mesh axes = ["data"] dim = 0 : tensor<128xf32> -> tensor<32xf32>
// ZERO2-NEXT: %[[N2:.*]], %{{.*}} = train.sgd %[[P2]], %[[G]]#2,
// ZERO2-NEXT: %[[P3:.*]] = dist.local_slice %[[W2]] on @mesh axes = ["data"] dim = 1 : tensor<10x128xf32> -> tensor<10x32xf32>
// ZERO2-NEXT: %[[N3:.*]], %{{.*}} = train.sgd %[[P3]], %[[G]]#0,
// ZERO2-NEXT: %[[N4:.*]], %{{.*}} = train.sgd %[[B2]], %[[R]]#1,
// ZERO2-NEXT: %[[F1:.*]] = dist.all_gather %[[N1]] on @mesh axes = ["data"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
// ZERO2-NEXT: %[[F2:.*]] = dist.all_gather %[[N2]] on @mesh axes = ["data"] gather_dim = 0 : tensor<32xf32> -> tensor<128xf32>
// ZERO2-NEXT: %[[F3:.*]] = dist.all_gather %[[N3]] on @mesh axes = ["data"] gather_dim = 1 : tensor<10x32xf32> -> tensor<10x128xf32>
// ZERO2-NEXT: return %[[F1]], %[[F2]], %[[F3]], %[[N4]], {{.*}}, %[[R]]#0 :

// ZeRO-3: parameters are sharded arguments and results; each is gathered
// whole before its forward use (and fc2.weight again before its backward
// use); gradients are reduce-scattered in one bucket and the new shards
// returned as is.
// ZERO3-LABEL: func.func @train_step
// ZERO3-SAME: (%[[W1:[^:]+]]: tensor<32x784xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// ZERO3-SAME: %[[B1:[^:]+]]: tensor<32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>
// ZERO3-SAME: %[[W2:[^:]+]]: tensor<10x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// ZERO3-SAME: %[[B2:[^:]+]]: tensor<10xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>
// ZERO3-SAME: %[[X:[^:]+]]: tensor<16x784xf32>
// ZERO3-SAME: -> (tensor<32x784xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// ZERO3-SAME: tensor<32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>
// ZERO3-SAME: tensor<10x32xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// ZERO3: %[[FW1:.*]] = dist.all_gather %[[W1]] on @mesh axes = ["data"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
// ZERO3-NEXT: train.matmul %[[X]], %[[FW1]] {transpose_rhs} : (tensor<16x784xf32>, tensor<128x784xf32>) -> tensor<16x128xf32>
// ZERO3-NEXT: %[[FB1:.*]] = dist.all_gather %[[B1]] on @mesh axes = ["data"] gather_dim = 0 : tensor<32xf32> -> tensor<128xf32>
// ZERO3-NEXT: train.add %{{.*}}, %[[FB1]]
// ZERO3: %[[FW2:.*]] = dist.all_gather %[[W2]] on @mesh axes = ["data"] gather_dim = 1 : tensor<10x32xf32> -> tensor<10x128xf32>
// ZERO3-NEXT: train.matmul %{{.*}}, %[[FW2]] {transpose_rhs}
// ZERO3: %[[BW2:.*]] = dist.all_gather %[[W2]] on @mesh axes = ["data"] gather_dim = 1 : tensor<10x32xf32> -> tensor<10x128xf32>
// ZERO3-NEXT: train.matmul %{{.*}}, %[[BW2]] : (tensor<16x10xf32>, tensor<10x128xf32>) -> tensor<16x128xf32>
// ZERO3: %[[G:.*]]:3 = dist.reduce_scatter %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] scatter_dims = [1, 0, 0] : tensor<10x128xf32>, tensor<128x784xf32>, tensor<128xf32> -> tensor<10x32xf32>, tensor<32x784xf32>, tensor<32xf32>
// ZERO3-NEXT: %[[N1:.*]], %{{.*}} = train.sgd %[[W1]], %[[G]]#1,
// ZERO3-NEXT: %[[N2:.*]], %{{.*}} = train.sgd %[[B1]], %[[G]]#2,
// ZERO3-NEXT: %[[N3:.*]], %{{.*}} = train.sgd %[[W2]], %[[G]]#0,
// ZERO3-NEXT: %[[N4:.*]], %{{.*}} = train.sgd %[[B2]], %{{.*}}#1,
// ZERO3-NOT: dist.all_gather
// ZERO3: return %[[N1]], %[[N2]], %[[N3]], %[[N4]],

// MultiWorkerMirroredStrategy on 2 hosts x 4 devices: 8 rows per device,
// loss scaled by 1/8; the gradient bucket is reduce-scattered within each
// host, all-reduced across hosts and all-gathered within the host (the
// scalar loss and the 10-element fc2.bias gradient, which do not split over
// 4 devices, are all-reduced within the host instead).
// MULTI-LABEL: func.func @train_step
// MULTI-SAME: (%[[W1:[^:]+]]: tensor<128x784xf32>
// MULTI-SAME: %[[B1:[^:]+]]: tensor<128xf32>
// MULTI-SAME: %[[W2:[^:]+]]: tensor<10x128xf32>
// MULTI-SAME: %[[B2:[^:]+]]: tensor<10xf32>
// MULTI-SAME: tensor<8x784xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}hosts, devices], []]>
// MULTI: %[[Q:.*]] = arith.constant dense<1.250000e-01> : tensor<f32>
// MULTI-NEXT: %[[LOSS:.*]] = arith.mulf %{{.*}}, %[[Q]] : tensor<f32>
// MULTI: %[[S:.*]]:3 = dist.reduce_scatter %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["devices"] scatter_dims = [1, 0, 0] : tensor<10x128xf32>, tensor<128x784xf32>, tensor<128xf32> -> tensor<10x32xf32>, tensor<32x784xf32>, tensor<32xf32>
// MULTI-NEXT: %[[W:.*]]:2 = dist.all_reduce %[[LOSS]], %{{.*}} on @mesh axes = ["devices"] : tensor<f32>, tensor<10xf32>
// MULTI-NEXT: %[[R:.*]]:5 = dist.all_reduce %[[W]]#0, %[[S]]#0, %[[W]]#1, %[[S]]#1, %[[S]]#2 on @mesh axes = ["hosts"] : tensor<f32>, tensor<10x32xf32>, tensor<10xf32>, tensor<32x784xf32>, tensor<32xf32>
// MULTI-NEXT: %[[GW2:.*]] = dist.all_gather %[[R]]#1 on @mesh axes = ["devices"] gather_dim = 1 : tensor<10x32xf32> -> tensor<10x128xf32>
// MULTI-NEXT: %[[GW1:.*]] = dist.all_gather %[[R]]#3 on @mesh axes = ["devices"] gather_dim = 0 : tensor<32x784xf32> -> tensor<128x784xf32>
// MULTI-NEXT: %[[GB1:.*]] = dist.all_gather %[[R]]#4 on @mesh axes = ["devices"] gather_dim = 0 : tensor<32xf32> -> tensor<128xf32>
// MULTI-NEXT: train.sgd %[[W1]], %[[GW1]],
// MULTI-NEXT: train.sgd %[[B1]], %[[GB1]],
// MULTI-NEXT: train.sgd %[[W2]], %[[GW2]],
// MULTI-NEXT: train.sgd %[[B2]], %[[R]]#2,
// MULTI-NEXT: return {{.*}}, %[[R]]#0 :

// The transformer block under MirroredStrategy: 2 of the 8 sequences per
// replica; its 18 gradients and the loss fill two buckets (the first, 1 MiB,
// closes before the 1 MiB mlp.fc2.weight gradient).
// TRANSFORMER-LABEL: func.func @train_step
// TRANSFORMER-SAME: tensor<2x128x256xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], [], []]>
// TRANSFORMER-NOT: dist.all_reduce
// TRANSFORMER: dist.all_reduce %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<16x256xf32>, tensor<16xf32>{{$}}
// TRANSFORMER-NOT: dist.all_reduce
// TRANSFORMER: %{{.*}}:16 = dist.all_reduce
// TRANSFORMER-NOT: dist.all_reduce
// TRANSFORMER: return
