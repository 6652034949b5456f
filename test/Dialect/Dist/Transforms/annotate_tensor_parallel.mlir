// Megatron on examples/transformer_block.mlir: q, k, v and fc1 are
// column-parallel (output rows split, with their biases), attn.out and fc2
// row-parallel (input columns split); the head feeds cross_entropy, which
// needs the class dim whole, so it stays replicated with a remark.
// RUN: dist-opt %examples/transformer_block.mlir --dist-annotate-tensor-parallel=size=2 2>&1 | FileCheck %s --check-prefix=ANNOTATE
// ANNOTATE: remark: tensor parallelism leaves parameter 'head.weight' replicated: the split of its output dim 0 stops: 'train.cross_entropy' at {{.*}} needs the split dim whole
// ANNOTATE: dist.mesh @mesh {axes = ["model"], shape = array<i64: 2>}
// ANNOTATE-LABEL: func.func @train_step
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model]]>, train.name = "attn.q.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.k.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.v.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>, train.name = "attn.out.weight"
// ANNOTATE-SAME: {train.name = "attn.out.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "mlp.fc1.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model]]>, train.name = "mlp.fc1.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>, train.name = "mlp.fc2.weight"
// ANNOTATE-SAME: {train.name = "mlp.fc2.bias"
// ANNOTATE-SAME: {train.name = "head.weight"
// The updated parameters are returned sharded like their arguments.
// ANNOTATE-SAME: -> (
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"

// The whole pipeline: exactly one all-reduce per block (attention, MLP) in
// the forward pass and one per block in the backward pass, over `model`, on
// the [b, s, h] activations; nothing else communicates.
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=2 2>/dev/null | FileCheck %s --check-prefix=TP
// TP-LABEL: func.func @train_step
// TP-COUNT-4: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<8x128x256xf32>
// TP-NOT: dist.

// Traffic per layer: 4 ring all-reduces of b*s*h fp32 values, that is
// 8*b*s*h*(t-1)/t * 4 bytes: 4194304 for t = 2 and 6291456 for t = 4
// (b = 8, s = 128, h = 256).
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=2 --dist-cost-report=format=json -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=COST2
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=4 --dist-cost-report=format=json -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=COST4
// COST2: "collective_count": 4,
// COST2: "comm_bytes_per_rank": 4194304,
// COST4: "collective_count": 4,
// COST4: "comm_bytes_per_rank": 6291456,

// The MLP example: fc1 column-parallel, fc2 row-parallel; one all-reduce of
// the logits in forward; the backward pass needs none (no input gradient).
// RUN: dist-opt %examples/mlp.mlir --dist-tensor-parallel=size=2 | FileCheck %s --check-prefix=MLP
// MLP-LABEL: func.func @train_step
// MLP-SAME: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "fc1.weight"
// MLP-SAME: tensor<10x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>, train.name = "fc2.weight"
// MLP: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<64x10xf32>
// MLP-NOT: dist.

// A weight whose output does not divide stays replicated, with a remark; a
// step with nothing left to split is an error (not a program that runs the
// same computation on every device of a 3-device mesh).
// RUN: not dist-opt %examples/mlp.mlir --dist-annotate-tensor-parallel=size=3 -o %t.nodiv.mlir 2>&1 | FileCheck %s --check-prefix=NODIV
// RUN: not test -e %t.nodiv.mlir
// NODIV: remark: tensor parallelism leaves parameter 'fc1.weight' replicated: its output dim 0 of size 128 does not divide over 3 devices
// NODIV: mlp.mlir:7:1: error: tensor parallelism finds nothing to split over 3 devices in training step 'train_step'
// RUN: not dist-opt %distopt_src_root/test/Integration/Inputs/linear_step.mlir --dist-tensor-parallel=size=4 2>&1 | FileCheck %s --check-prefix=NOPAIR
// NOPAIR: remark: tensor parallelism leaves parameter 'fc.weight' replicated
// NOPAIR: error: tensor parallelism finds nothing to split over 4 devices in training step 'train_step'

// Bad options are errors.
// RUN: not dist-opt %examples/mlp.mlir --dist-annotate-tensor-parallel=size=0 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADSIZE
// BADSIZE: error: dist-annotate-tensor-parallel: needs size >= 1, got 0

// Sequence parallelism: per block, the forward pass reduce-scatters the
// row-parallel results along the sequence dim (8x128x256 -> 8x64x256) and
// all-gathers the column-parallel inputs; the backward pass all-gathers the
// gradient reaching each row-parallel layer once for its uses and
// reduce-scatters the input gradients of the column-parallel layers (the q,
// k and v partial sums added first: one reduce-scatter). No activation
// all-reduce remains: only the bucket of layer-norm / head gradients
// (partial over the token split) is all-reduced.
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=2 sequence-parallel=true" 2>/dev/null | FileCheck %s --check-prefix=SP
// SP-LABEL: func.func @train_step
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [1] : tensor<8x128x256xf32> -> tensor<8x64x256xf32>
// SP: dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 1 : tensor<8x64x256xf32> -> tensor<8x128x256xf32>
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [1] : tensor<8x128x256xf32> -> tensor<8x64x256xf32>
// SP: dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 1 : tensor<8x64x256xf32> -> tensor<8x128x256xf32>
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [1] : tensor<8x128x256xf32> -> tensor<8x64x256xf32>
// SP: dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 1 : tensor<8x64x256xf32> -> tensor<8x128x256xf32>
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [1] : tensor<8x128x256xf32> -> tensor<8x64x256xf32>
// SP-NOT: dist.reduce_scatter
// SP-NOT: dist.all_reduce %{{[^,]*}} on @mesh axes = ["model"] : tensor<8x128x256xf32>
// SP: dist.all_reduce {{.*}} on @mesh axes = ["model"] : tensor<f32>, tensor<16xf32>
// SP-NOT: tensor<8x128x256xf32>

// A GPT-like model (bench/gen_gpt.py, 2 layers): the token embedding is
// vocabulary-parallel (rows split; the lookup's partial result all-reduced
// once, its gradient scattered into the local rows only); the learned
// position embedding is added by broadcasting and stays replicated, with a
// remark. One all-reduce for the embedding plus four per layer.
// RUN: %python %distopt_src_root/bench/gen_gpt.py --layers 2 --hidden 16 --heads 2 --seq 8 --batch 2 --vocab 32 -o %t.gpt.mlir
// RUN: dist-opt %t.gpt.mlir --dist-tensor-parallel=size=2 2>&1 | FileCheck %s --check-prefix=GPT
// GPT: remark: tensor parallelism leaves parameter 'wpe.weight' replicated: it is neither the weight of a contraction nor reduced over alone
// GPT-LABEL: func.func @train_step
// GPT-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "wte.weight"
// GPT: %[[OFF:.*]] = dist.shard_offset on @mesh axes = ["model"] size = 32 : index
// GPT-NEXT: %[[E:.*]] = train.gather %{{.*}}, %{{.*}}, %[[OFF]] : (tensor<16x16xf32>, tensor<2x8xi32>, index) -> tensor<2x8x16xf32>
// GPT-NEXT: dist.all_reduce %[[E]] on @mesh axes = ["model"] : tensor<2x8x16xf32>
// GPT-COUNT-8: dist.all_reduce %{{[^,]*}} on @mesh axes = ["model"] : tensor<2x8x16xf32>
// GPT: %[[BOFF:.*]] = dist.shard_offset on @mesh axes = ["model"] size = 32 : index
// GPT-NEXT: train.scatter_add %{{.*}}, %{{.*}}, %{{.*}}, %[[BOFF]] : (tensor<16x16xf32>, tensor<2x8xi32>, tensor<2x8x16xf32>, index) -> tensor<16x16xf32>
