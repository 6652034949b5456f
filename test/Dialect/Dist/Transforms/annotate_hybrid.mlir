// dp=2 x tp=2 on the transformer block: a 2-D mesh, the batch split over
// `data`, Megatron over `model`; the block's four activation all-reduces run
// over `model` on the local batch of 4, the gradients are reduced over
// `data` (in buckets). The 16-class head stays replicated (splitting it
// over its classes would add three all-reduces over `model` and save
// little: a remark says so).
// RUN: dist-opt %examples/transformer_block.mlir --dist-hybrid="dp=2 tp=2" 2>&1 | FileCheck %s --check-prefix=HYBRID
// HYBRID: remark: tensor parallelism keeps head 'head.weight' replicated
// HYBRID: dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
// HYBRID-LABEL: func.func @train_step
// HYBRID-SAME: tensor<128x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"
// HYBRID-SAME: tensor<4x128x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}data], [], []]>, train.name = "x"
// HYBRID-COUNT-2: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<4x128x256xf32>
// HYBRID-NOT: axes = ["model"] reduction = <max>
// HYBRID: dist.all_reduce {{.*}} on @mesh axes = ["data"]
// HYBRID: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<4x128x256xf32>
// HYBRID: dist.all_reduce {{.*}} on @mesh axes = ["data"]
// HYBRID: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<4x128x256xf32>
// HYBRID: dist.all_reduce {{.*}} on @mesh axes = ["data"]
// HYBRID-NOT: axes = ["model"]

// With ZeRO over `data`, a Megatron weight's optimizer state is split over
// both axes; stage 3 also splits the parameter and gathers it over `data`.
// RUN: dist-opt %examples/transformer_block.mlir --dist-hybrid="dp=2 tp=2 zero=1" 2>%t.err | FileCheck %s --check-prefix=ZERO1
// ZERO1-LABEL: func.func @train_step
// ZERO1-SAME: tensor<128x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>, train.name = "attn.q.weight"
// ZERO1-SAME: tensor<64x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model, data], []]>, train.name = "attn.q.weight.exp_avg"
// ZERO1: dist.all_gather %{{.*}} on @mesh axes = ["data"] gather_dim = 0 : tensor<64x256xf32> -> tensor<128x256xf32>
// RUN: dist-opt %examples/transformer_block.mlir --dist-hybrid="dp=2 tp=2 zero=3" 2>%t.err | FileCheck %s --check-prefix=ZERO3
// ZERO3-LABEL: func.func @train_step
// ZERO3-SAME: tensor<64x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model, data], []]>, train.name = "attn.q.weight"
// ZERO3: dist.all_gather %{{.*}} on @mesh axes = ["data"] gather_dim = 0 : tensor<64x256xf32> -> tensor<128x256xf32>
// ZERO3: dist.reduce_scatter {{.*}} on @mesh axes = ["data"] scatter_dims = [{{.*}}] : {{.*}}tensor<128x256xf32>{{.*}} -> {{.*}}tensor<64x256xf32>

// Parameters tensor parallelism leaves whole (here all of them: tp = 1)
// stay whole at the boundary under ZeRO-1/2: the update runs on this rank's
// slice (reduce-scattered gradient) and is all-gathered into the returned
// parameter, which keeps its argument's type; the step contract holds. (They
// once came back split over `data` and the runner kept the old values.)
// RUN: dist-opt %distopt_src_root/test/Integration/Inputs/linear_step.mlir --dist-hybrid="dp=2 tp=1 zero=1" 2>%t.err | FileCheck %s --check-prefix=WHOLE
// RUN: dist-opt %distopt_src_root/test/Integration/Inputs/linear_step.mlir --dist-hybrid="dp=2 tp=1 zero=2" 2>%t.err | FileCheck %s --check-prefix=WHOLE
// RUN: dist-opt %distopt_src_root/test/Integration/Inputs/linear_step.mlir --dist-hybrid="hosts=2 dp=1 tp=1 zero=1" 2>%t.err | FileCheck %s --check-prefix=WHOLE
// WHOLE-LABEL: func.func @train_step
// WHOLE-SAME: -> (tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], []]>, train.name = "fc.weight"
// WHOLE-SAME: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}]]>, train.name = "fc.bias"
// WHOLE: dist.reduce_scatter
// WHOLE: train.sgd {{.*}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// WHOLE: dist.all_gather {{.*}} : tensor<2x8xf32> -> tensor<4x8xf32>

// Bad options are errors of one line, without the module.
// RUN: not dist-opt %examples/mlp.mlir --dist-annotate-hybrid="dp=2 tp=2 zero=4" -o %t.out 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: dist-annotate-hybrid: needs hosts >= 1, dp >= 1, tp >= 1 and zero 0, 1, 2 or 3, got hosts 1, dp 2, tp 2 and zero 4
// RUN: not dist-opt %examples/mlp.mlir --dist-hybrid= -o %t.out 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: dist-hybrid: set pp, dp and/or tp (and hosts): the mesh has one device
// EMPTY-NOT: func.func

// Across hosts the mesh is 3-D: hosts x data x model. The batch splits over
// hosts and data, Megatron's all-reduces stay within `model`, and each
// gradient bucket is reduce-scattered within the host (`data`), all-reduced
// across hosts and all-gathered back.
// RUN: dist-opt %examples/transformer_block.mlir --dist-hybrid="hosts=2 dp=2 tp=2" 2>%t.err | FileCheck %s --check-prefix=THREED
// THREED: dist.mesh @mesh {axes = ["hosts", "data", "model"], host_axes = ["hosts"], shape = array<i64: 2, 2, 2>}
// THREED-LABEL: func.func @train_step
// THREED-SAME: tensor<2x128x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}hosts, data], [], []]>, train.name = "x"
// THREED-COUNT-2: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<2x128x256xf32>
// THREED-NOT: reduction = <max>
// THREED: %[[S:.*]]:2 = dist.reduce_scatter {{.*}} on @mesh axes = ["data"]
// THREED: dist.all_reduce {{.*}}%[[S]]#0{{.*}} on @mesh axes = ["hosts"]
// THREED: dist.all_gather {{.*}} on @mesh axes = ["data"]
// THREED-NOT: axes = ["hosts", "data"]
