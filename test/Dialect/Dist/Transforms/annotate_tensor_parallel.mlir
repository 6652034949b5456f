// Megatron on examples/transformer_block.mlir: q, k, v and fc1 are
// column-parallel (output rows split, with their biases), attn.out and fc2
// row-parallel (input columns split). The 16-class head stays replicated:
// the cost model finds that splitting it over its classes saves 12 FLOPs
// per byte it would move (it pays from 64), and a remark says so.
// RUN: dist-opt %examples/transformer_block.mlir --dist-annotate-tensor-parallel=size=2 2>&1 | FileCheck %s --check-prefix=HEAD
// HEAD: remark: tensor parallelism keeps head 'head.weight' replicated: splitting its 16 classes over 2 devices saves 12582912 FLOPs and 16384 bytes of state per rank but all-reduces 1060864 more bytes (it pays from 64 FLOPs per byte; force-vocab-parallel splits it)
// HEAD-NOT: remark
// HEAD-LABEL: func.func @train_step
// HEAD-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "mlp.fc1.weight"
// HEAD-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], []]>, train.name = "head.weight"
// HEAD-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}]]>, train.name = "head.bias"
// HEAD-NOT: train.classes
// HEAD-SAME: train.name = "labels"

// With force-vocab-parallel the head is column-parallel over the classes
// and its cross-entropy is rewritten into reductions over them (Megatron's
// vocabulary-parallel cross-entropy): the labels record the number of
// classes.
// RUN: dist-opt %examples/transformer_block.mlir --dist-annotate-tensor-parallel="size=2 force-vocab-parallel=true" 2>&1 | FileCheck %s --check-prefix=ANNOTATE
// ANNOTATE-NOT: remark
// ANNOTATE: dist.mesh @mesh {axes = ["model"], shape = array<i64: 2>}
// ANNOTATE-LABEL: func.func @train_step
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model]]>, train.name = "attn.q.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.k.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.v.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>, train.name = "attn.out.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}]]>, train.name = "attn.out.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "mlp.fc1.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model]]>, train.name = "mlp.fc1.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>, train.name = "mlp.fc2.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}]]>, train.name = "mlp.fc2.bias"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "head.weight"
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model]]>, train.name = "head.bias"
// ANNOTATE-SAME: tensor<8x128xi32> {train.classes = 16 : i64, train.name = "labels"
// The updated parameters are returned sharded like their arguments.
// ANNOTATE-SAME: -> (
// ANNOTATE-SAME: {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"

// The whole pipeline: exactly one all-reduce per block (attention, MLP) in
// the forward pass and one per block in the backward pass, over `model`, on
// the [b, s, h] activations, and nothing else (the replicated head needs
// none).
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=2 2>%t.err | FileCheck %s --check-prefix=TPHEAD
// TPHEAD-LABEL: func.func @train_step
// TPHEAD-COUNT-4: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<8x128x256xf32>
// TPHEAD-NOT: dist.

// With the head split (force-vocab-parallel) the logits stay split over the
// classes: the per-token maximum, then the sums of exponentials and of the
// target logits (one bucket) are all-reduced, and the head's input gradient
// once.
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=2 force-vocab-parallel=true" 2>%t.err | FileCheck %s --check-prefix=TP
// TP-LABEL: func.func @train_step
// TP-COUNT-2: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<8x128x256xf32>
// TP: %[[LOGITS:.*]] = train.add %{{.*}}, %{{.*}} : (tensor<8x128x8xf32>, tensor<8xf32>) -> tensor<8x128x8xf32>
// TP-NEXT: %[[LMAX:.*]] = train.reduce %[[LOGITS]] {dims = array<i64: 2>, keepdims, kind = #train.reduce_kind<max>}
// TP-NEXT: dist.all_reduce %[[LMAX]] on @mesh axes = ["model"] reduction = <max> : tensor<8x128x1xf32>
// TP: train.iota  {dim = 0 : i64} : () -> tensor<16xi32>
// TP-NEXT: dist.local_slice
// TP: dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["model"] : tensor<8x128x1xf32>, tensor<8x128x1xf32>
// TP-NOT: tensor<8x128x16xf32>
// TP-COUNT-3: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<8x128x256xf32>
// TP-NOT: dist.

// Traffic: 4 ring all-reduces of b*s*h fp32 values per layer, that is
// 2*(t-1)/t * 4*b*s*h * 4 bytes: 4194304 for t = 2 and 6291456 for t = 4
// (b = 8, s = 128, h = 256). With the head split, also the head's input
// gradient and 3 of b*s values for the loss: 2*(t-1)/t * (5*b*s*h +
// 3*b*s) * 4 bytes, 5255168 for t = 2 and 7882752 for t = 4.
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=2 --dist-cost-report=format=json -o %t.mlir 2>%t.err | FileCheck %s --check-prefix=HEADCOST2
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=4 --dist-cost-report=format=json -o %t.mlir 2>%t.err | FileCheck %s --check-prefix=HEADCOST4
// HEADCOST2: "collective_count": 4,
// HEADCOST2: "comm_bytes_per_rank": 4194304,
// HEADCOST4: "collective_count": 4,
// HEADCOST4: "comm_bytes_per_rank": 6291456,
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=2 force-vocab-parallel=true" --dist-cost-report=format=json -o %t.mlir 2>%t.err | FileCheck %s --check-prefix=COST2
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=4 force-vocab-parallel=true" --dist-cost-report=format=json -o %t.mlir 2>%t.err | FileCheck %s --check-prefix=COST4
// COST2: "collective_count": 7,
// COST2: "comm_bytes_per_rank": 5255168,
// COST4: "collective_count": 7,
// COST4: "comm_bytes_per_rank": 7882752,

// A head with a large vocabulary (512 classes over 16 features) keeps the
// split: it saves 323 FLOPs per byte it moves. The logits stay split and
// the cross-entropy is decomposed, with no remark.
// RUN: %python %distopt_src_root/scripts/gen_transformer_block.py --batch 2 --seq 8 --hidden 16 --heads 2 --ffn 32 --classes 512 -o %t.vocab.mlir
// RUN: dist-opt %t.vocab.mlir --dist-tensor-parallel=size=2 2>&1 | FileCheck %s --check-prefix=VOCAB
// VOCAB-NOT: remark
// VOCAB-LABEL: func.func @train_step
// VOCAB-SAME: tensor<256x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "head.weight"
// VOCAB-SAME: train.classes = 512 : i64, train.name = "labels"
// VOCAB: dist.all_reduce %{{.*}} on @mesh axes = ["model"] reduction = <max> : tensor<2x8x1xf32>
// VOCAB: dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["model"] : tensor<2x8x1xf32>, tensor<2x8x1xf32>
// VOCAB-NOT: tensor<2x8x512xf32>

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
// RUN: not dist-opt %distopt_src_root/test/Integration/Inputs/linear_step.mlir --dist-tensor-parallel=size=3 2>&1 | FileCheck %s --check-prefix=NOPAIR
// NOPAIR: remark: tensor parallelism leaves parameter 'fc.weight' replicated: its output dim 0 of size 4 does not divide over 3 devices
// NOPAIR: error: tensor parallelism finds nothing to split over 3 devices in training step 'train_step'

// Bad options are errors.
// RUN: not dist-opt %examples/mlp.mlir --dist-annotate-tensor-parallel=size=0 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=BADSIZE
// BADSIZE: error: dist-annotate-tensor-parallel: needs size >= 1, got 0

// Sequence parallelism: per block, the forward pass runs each layer norm on
// half of the tokens (the major token dim, 8x128x256 -> 4x128x256, so the
// [b * s, h] views of the weight gradients keep contiguous blocks) and
// all-gathers its output once for the column-parallel layers and their
// weight gradients, and reduce-scatters the row-parallel results; the
// backward pass all-gathers the gradient reaching each row-parallel layer
// (the residual keeps its split) and reduce-scatters the input gradients of
// the column-parallel layers (q, k and v summed first), so each layer norm's
// backward runs on the split tokens too: 2 all-gathers + 2 reduce-scatters
// each way; the vocabulary-parallel head reads the gathered tokens and its
// input gradient is reduce-scattered. No activation all-reduce remains:
// only the per-token values of the cross-entropy and the layer norms'
// parameter gradients (partial over the split tokens). (The head split
// by force-vocab-parallel.)
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=2 sequence-parallel=true force-vocab-parallel=true" 2>%t.err | FileCheck %s --check-prefix=SP
// SP-LABEL: func.func @train_step
// SP-NOT: dist.all_gather
// SP: %[[LN1:.*]], %[[MEAN1:.*]], %[[RSTD1:.*]] = train.layer_norm %{{.*}} : (tensor<4x128x256xf32>, tensor<256xf32>, tensor<256xf32>) -> (tensor<4x128x256xf32>, tensor<4x128xf32>, tensor<4x128xf32>)
// SP-NEXT: %[[G1:.*]] = dist.all_gather %[[LN1]] on @mesh axes = ["model"] gather_dim = 0 : tensor<4x128x256xf32> -> tensor<8x128x256xf32>
// SP-NEXT: train.matmul %[[G1]]
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [0] : tensor<8x128x256xf32> -> tensor<4x128x256xf32>
// SP: %[[LN2:.*]], %[[MEAN2:.*]], %[[RSTD2:.*]] = train.layer_norm %{{.*}} : (tensor<4x128x256xf32>,
// SP-NEXT: dist.all_gather %[[LN2]] on @mesh axes = ["model"] gather_dim = 0 : tensor<4x128x256xf32> -> tensor<8x128x256xf32>
// SP: dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [0] : tensor<8x128x256xf32> -> tensor<4x128x256xf32>
// SP-NEXT: train.add
// SP-NEXT: train.add
// SP-NEXT: %[[OUT:.*]] = dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 0 : tensor<4x128x256xf32> -> tensor<8x128x256xf32>
// SP-NEXT: train.matmul %[[OUT]]
// SP: dist.all_reduce %{{.*}} on @mesh axes = ["model"] reduction = <max> : tensor<8x128x1xf32>
// SP: dist.all_reduce %{{.*}}, %{{.*}} on @mesh axes = ["model"] : tensor<8x128x1xf32>, tensor<8x128x1xf32>
// SP: %[[DOUT:.*]] = dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [0] : tensor<8x128x256xf32> -> tensor<4x128x256xf32>
// SP-NEXT: dist.all_gather %[[DOUT]] on @mesh axes = ["model"] gather_dim = 0 : tensor<4x128x256xf32> -> tensor<8x128x256xf32>
// SP: %[[DLN2:.*]] = dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [0] : tensor<8x128x256xf32> -> tensor<4x128x256xf32>
// SP-NEXT: train.layer_norm_backward %[[DLN2]], %{{.*}}, %[[MEAN2]], %[[RSTD2]], %{{.*}} : (tensor<4x128x256xf32>, tensor<4x128x256xf32>, tensor<4x128xf32>, tensor<4x128xf32>,
// SP: dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 0 : tensor<4x128x256xf32> -> tensor<8x128x256xf32>
// SP: %[[DLN1:.*]] = dist.reduce_scatter %{{.*}} on @mesh axes = ["model"] scatter_dims = [0] : tensor<8x128x256xf32> -> tensor<4x128x256xf32>
// SP-NEXT: train.layer_norm_backward %[[DLN1]], %{{.*}}, %[[MEAN1]], %[[RSTD1]], %{{.*}} : (tensor<4x128x256xf32>,
// SP-NEXT: dist.all_reduce {{.*}} on @mesh axes = ["model"] : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
// SP-NOT: dist.all_gather
// SP-NOT: dist.reduce_scatter
// SP-NOT: dist.all_reduce

// The bytes: tensor parallelism's (COST2 above) plus the all-reduce of the
// four layer-norm parameter gradients, 2 * (T-1)/T * 4 * 256 * 4 = 4096.
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel="size=2 sequence-parallel=true force-vocab-parallel=true" --dist-cost-report=format=json -o %t.mlir 2>%t.err | FileCheck %s --check-prefix=SPCOST
// SPCOST: "collective_count": 13,
// SPCOST: "comm_bytes_per_rank": 5259264,

// The same on a GPT-like stack: the vocabulary-parallel embedding's partial
// lookup is reduce-scattered (not all-reduced) and the gradient reaching
// its backward all-gathered, so the token ids stay whole.
// RUN: %python %distopt_src_root/bench/gen_gpt.py --layers 2 --hidden 16 --heads 2 --seq 8 --batch 2 --vocab 32 -o %t.gptsp.mlir
// RUN: dist-opt %t.gptsp.mlir --dist-tensor-parallel="size=2 sequence-parallel=true" 2>%t.err | FileCheck %s --check-prefix=GPTSP
// GPTSP-LABEL: func.func @train_step
// GPTSP-SAME: %{{.*}}: tensor<2x8xi32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], []]>, train.name = "tokens"
// GPTSP: %[[E:.*]] = train.gather
// GPTSP-NEXT: dist.reduce_scatter %[[E]] on @mesh axes = ["model"] scatter_dims = [0] : tensor<2x8x16xf32> -> tensor<1x8x16xf32>
// GPTSP-COUNT-4: train.layer_norm %{{.*}} : (tensor<1x8x16xf32>,
// GPTSP: train.layer_norm %{{.*}} : (tensor<1x8x16xf32>,
// GPTSP-COUNT-5: train.layer_norm_backward %{{.*}} : (tensor<1x8x16xf32>,
// GPTSP: %[[D:.*]] = dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 0 : tensor<1x8x16xf32> -> tensor<2x8x16xf32>
// GPTSP: train.scatter_add %{{.*}}, %{{.*}}, %[[D]]
// GPTSP-NOT: dist.all_reduce %{{[^,]*}} on @mesh axes = ["model"] : tensor<2x8x16xf32>

// A table tied to a head whose split meets neither a contraction nor a
// cross-entropy (a softmax needs the classes whole): the head's output is
// gathered, and a remark says where.
// RUN: dist-opt %distopt_src_root/test/Integration/Inputs/tied_softmax_step.mlir --dist-tensor-parallel=size=2 2>&1 >%t.out | FileCheck %s --check-prefix=TIEDSTOP
// TIEDSTOP: remark: tensor parallelism gathers the output of the split parameter 'emb.weight' here: the split of its dim 0 stops: 'train.softmax' at {{.*}} needs the split dim whole

// Regression (difftest seed 1001): sequence parallelism on a step whose q,
// k and v input gradients are summed crashed while following the sums.
// The embedding table is tied to the LM head: one vocabulary split serves
// the lookup and the head (no all-gather of the table or of the logits),
// the cross-entropy reduces over the split classes, and the embedding's
// backward scatters the gathered gradient into the local rows.
// RUN: dist-opt %distopt_src_root/test/Fuzz/regressions/sp-gradient-sum-iteration.mlir --dist-tensor-parallel="size=2 sequence-parallel=true" 2>%t.err | FileCheck %s --check-prefix=SPSUM
// SPSUM-NOT: dist.all_gather %arg0
// SPSUM: dist.all_reduce %{{.*}} on @mesh axes = ["model"] reduction = <max> : tensor<8x8x1xf32>
// SPSUM-NOT: dist.all_gather %arg0
// SPSUM: dist.all_gather %{{.*}} on @mesh axes = ["model"] gather_dim = 0 : tensor<4x8x24xf32> -> tensor<8x8x24xf32>
// SPSUM: train.scatter_add %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x24xf32>, tensor<8x8xi64>, tensor<8x8x24xf32>, index) -> tensor<4x24xf32>
// SPSUM-NOT: tensor<8x8x8xf32>

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
