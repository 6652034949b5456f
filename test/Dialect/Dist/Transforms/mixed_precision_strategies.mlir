// The strategies on a mixed-precision step (train-mixed-precision first):
// tensor parallelism splits the weights through their 16-bit casts, ZeRO-3
// shards the parameters behind the skip select of dynamic loss scaling and
// the finite flag's sum over split gradients is all-reduced, and the
// parameter server keeps every shard on one flag (the pipeline's and the
// parameter server's: pipeline_loss_scaling.mlir,
// parameter_server_loss_scaling.mlir).
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-tensor-parallel=size=2 2>&1 | FileCheck %s --check-prefix=TP
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-zero="stage=3 replicas=2" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=1 workers=2" 2>&1 | FileCheck %s --check-prefix=PS
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=static" --dist-pipeline="stages=2 microbatches=2" -o %t.static.mlir 2>&1 | FileCheck %s --check-prefix=STATIC --allow-empty

// Column-parallel fc1 and row-parallel fc2, as for the float32 step: each
// rank casts its half of the master weights; the row's partial logits and
// the finite flag's partial sum are all-reduced.
// TP-NOT: remark: tensor parallelism leaves parameter
// TP-LABEL: func.func @train_step
// TP-SAME: %arg0: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}model], []]>
// TP-SAME: %arg2: tensor<10x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], [model]]>
// TP: train.convert %arg0 : (tensor<64x784xf32>) -> tensor<64x784xf16>
// TP: train.convert %arg2 : (tensor<10x64xf32>) -> tensor<10x64xf16>
// TP: dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<64x10xf16>
// TP: %[[PARTIAL:.*]] = dist.all_reduce %{{.*}} on @mesh axes = ["model"] : tensor<f32>
// TP: %[[FINITE:.*]] = train.add %[[PARTIAL]], %{{.*}} : (tensor<f32>, tensor<f32>)
// TP: %[[FLAG:.*]] = train.compare %[[FINITE]], %[[FINITE]]
// TP: train.select %[[FLAG]], %new_param, %arg0 : (tensor<i1>, tensor<64x784xf32>, tensor<64x784xf32>)

// Every parameter and its state is sharded; the skip select keeps the old
// shard, no gather.
// ZERO-NOT: stays replicated
// ZERO-LABEL: func.func @train_step
// ZERO-SAME: %arg0: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}data], []]>
// ZERO-SAME: %arg4: tensor<64x784xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}data], []]>
// ZERO: train.select %{{.*}}, %new_param, %arg0 : (tensor<i1>, tensor<64x784xf32>, tensor<64x784xf32>)
// ZERO-NOT: dist.all_gather
// ZERO: return


// The server computes the flag and keeps the parameters on it.
// PS-NOT: error
// PS-LABEL: func.func @train_step_ps0
// PS: %[[FLAG:.*]] = train.compare %[[FINITE:.*]], %[[FINITE]] {direction = #train.compare_direction<eq>}
// PS: dist.yield %[[FLAG]],
// PS: train.select %{{.*}}, %new_param, %{{.*}} : (tensor<i1>, tensor<128x784xf32>, tensor<128x784xf32>)

// Static loss scaling skips nothing: the pipeline places it.
// STATIC-NOT: error
