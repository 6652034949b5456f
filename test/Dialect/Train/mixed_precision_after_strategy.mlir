// train-mixed-precision after an SPMD strategy gives the program it gives
// before it (canonicalized, CSE'd): the collectives carry values in their
// precision, a gradient sum that float32 updates read sums float32 values
// unscaled before it, and the finiteness of split gradients is summed
// over their axes.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %examples/mlp_adam.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-mirrored=replicas=2 --canonicalize --cse -o %t/mirrored.before.mlir
// RUN: dist-opt %examples/mlp_adam.mlir --dist-mirrored=replicas=2 --train-mixed-precision="compute=f16 loss-scale=dynamic" --canonicalize --cse -o %t/mirrored.after.mlir
// RUN: diff %t/mirrored.before.mlir %t/mirrored.after.mlir
// RUN: dist-opt %examples/transformer_block.mlir --train-mixed-precision="compute=bf16" --dist-tensor-parallel=size=2 --canonicalize --cse -o %t/tp.before.mlir
// RUN: dist-opt %examples/transformer_block.mlir --dist-tensor-parallel=size=2 --train-mixed-precision="compute=bf16" --canonicalize --cse -o %t/tp.after.mlir
// RUN: diff %t/tp.before.mlir %t/tp.after.mlir
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=static" --dist-hybrid="dp=2 tp=2" --canonicalize --cse -o %t/hybrid.before.mlir
// RUN: dist-opt %examples/mlp.mlir --dist-hybrid="dp=2 tp=2" --train-mixed-precision="compute=f16 loss-scale=static" --canonicalize --cse -o %t/hybrid.after.mlir
// RUN: diff %t/hybrid.before.mlir %t/hybrid.after.mlir
// RUN: dist-opt %examples/transformer_block.mlir --train-mixed-precision="compute=bf16" --dist-zero="stage=2 replicas=2" --canonicalize --cse -o %t/zero2.before.mlir
// RUN: dist-opt %examples/transformer_block.mlir --dist-zero="stage=2 replicas=2" --train-mixed-precision="compute=bf16" --canonicalize --cse -o %t/zero2.after.mlir
// RUN: diff %t/zero2.before.mlir %t/zero2.after.mlir
// An embedding table split over the model axis: its gradient, a
// scatter-add into a slice of zeros, is still the seed's linear image.
// RUN: dist-opt %examples/embedding_classifier.mlir --train-mixed-precision="compute=f16 loss-scale=static" --dist-tensor-parallel=size=2 --canonicalize --cse -o %t/embedding.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/embedding_classifier.mlir --dist-tensor-parallel=size=2 --train-mixed-precision="compute=f16 loss-scale=static" --canonicalize --cse -o %t/embedding.after.mlir 2>%t/remarks.txt
// RUN: diff %t/embedding.before.mlir %t/embedding.after.mlir

// ZeRO-1 with dynamic scaling: each device's part of a gradient is
// unscaled in float32 before the reduce-scatter, the updates read the
// shards, and the shards' finiteness is all-reduced over the data axis
// before the skip selects.
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=1 replicas=2" --train-mixed-precision="compute=f16 loss-scale=dynamic" | FileCheck %s --check-prefix=ZERO
// ZERO-LABEL: func.func @train_step(
// ZERO-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.init = 6.553600e+04 : f64, train.name = "loss_scale", train.role = #train.role<opt_state>}
// ZERO-SAME: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.name = "loss_scale", train.role = #train.role<opt_state>}
// ZERO: %[[INV:.*]] = train.div %{{.*}}, %[[SCALE]]
// ZERO: %[[DW2:.*]] = train.matmul %{{.*}} {transpose_lhs} : (tensor<32x10xf16>, tensor<32x128xf16>) -> tensor<10x128xf16>
// ZERO-NEXT: %[[DW2F:.*]] = train.convert %[[DW2]] : (tensor<10x128xf16>) -> tensor<10x128xf32>
// ZERO-NEXT: %[[DW2U:.*]] = train.mul %[[DW2F]], %[[INV]]
// ZERO: %[[RS:.*]]:4 = dist.reduce_scatter %[[DW2U]], {{.*}} : tensor<10x128xf32>, tensor<10xf32>, tensor<128x784xf32>, tensor<128xf32>
// ZERO: %[[Z:.*]] = train.mul %[[RS]]#0, %{{.*}} : (tensor<5x128xf32>, tensor<f32>)
// ZERO-NEXT: train.reduce %[[Z]]
// ZERO: %[[PART:.*]] = train.add
// ZERO-NEXT: %[[PART2:.*]] = train.add %[[PART]],
// ZERO-NEXT: %[[PART3:.*]] = train.add %[[PART2]],
// ZERO-NEXT: %[[ALL:.*]] = dist.all_reduce %[[PART3]] on @mesh axes = ["data"] : tensor<f32>
// ZERO-NEXT: %[[OK:.*]] = train.compare %[[ALL]], %[[ALL]] {direction = #train.compare_direction<eq>}
// ZERO: train.select %[[OK]],

// ZeRO-3 gathers a mixed step's 16-bit weights: the copy is made on the
// shard and gathered in 16 bits, in either order (the float32 gather goes).
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=bf16" --dist-zero="stage=3 replicas=2" | FileCheck %s --check-prefix=ZERO3
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=3 replicas=2" --train-mixed-precision="compute=bf16" | FileCheck %s --check-prefix=ZERO3
// ZERO3-NOT: dist.all_gather {{.*}}xf32>
// ZERO3: %[[W:.*]] = train.convert %arg0 : (tensor<64x784xf32>) -> tensor<64x784xbf16>
// ZERO3: dist.all_gather %[[W]] on @mesh axes = ["data"] gather_dim = 0 : tensor<64x784xbf16> -> tensor<128x784xbf16>
// ZERO3-NOT: dist.all_gather {{.*}}xf32>
// ZERO3: return

// Placing strategies (dist-pipeline, dist-parameter-server) keep the module
// they placed (`dist.placement`); the pass rewrites it and places it again
// with the recorded pipeline: the same text as the other order, with no
// clean-up, also from a file a separate run wrote.
// RUN: dist-opt %examples/transformer_stack.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=4 schedule=1f1b" -o %t/pipe.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/transformer_stack.mlir --dist-pipeline="stages=2 microbatches=4 schedule=1f1b" -o %t/pipe.placed.mlir 2>%t/remarks.txt
// RUN: dist-opt %t/pipe.placed.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" -o %t/pipe.after.mlir 2>%t/remarks.txt
// RUN: diff %t/pipe.before.mlir %t/pipe.after.mlir
// RUN: FileCheck %s --check-prefix=PIPE --input-file=%t/pipe.after.mlir
// PIPE: func.func @train_step_pipe0(
// PIPE-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// PIPE: func.func @train_step_pipe1(
// PIPE: module @placement_source attributes {dist.placement = {fingerprint = "{{[0-9a-f]+}}", pipeline = "builtin.module(dist-pipeline{dp=1 microbatches=4 schedule=1f1b stages=2 tp=1 virtual-stages=1 zero=0})"}} {
// PIPE-NEXT: func.func @train_step(
// PIPE-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// RUN: dist-opt %examples/transformer_stack.mlir --train-mixed-precision="compute=bf16" --dist-pipeline="stages=2 virtual-stages=2 microbatches=4 schedule=interleaved" -o %t/interleaved.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/transformer_stack.mlir --dist-pipeline="stages=2 virtual-stages=2 microbatches=4 schedule=interleaved" --train-mixed-precision="compute=bf16" -o %t/interleaved.after.mlir 2>%t/remarks.txt
// RUN: diff %t/interleaved.before.mlir %t/interleaved.after.mlir
// RUN: dist-opt %examples/mlp_adam.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=4 schedule=zb-h1 dp=2 zero=1" -o %t/zbh1.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp_adam.mlir --dist-pipeline="stages=2 microbatches=4 schedule=zb-h1 dp=2 zero=1" --train-mixed-precision="compute=f16 loss-scale=dynamic" -o %t/zbh1.after.mlir 2>%t/remarks.txt
// RUN: diff %t/zbh1.before.mlir %t/zbh1.after.mlir
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=static" --dist-pipeline="stages=2 microbatches=2 schedule=gpipe tp=2" -o %t/pipetp.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp.mlir --dist-pipeline="stages=2 microbatches=2 schedule=gpipe tp=2" --train-mixed-precision="compute=f16 loss-scale=static" -o %t/pipetp.after.mlir 2>%t/remarks.txt
// RUN: diff %t/pipetp.before.mlir %t/pipetp.after.mlir
// dist-hybrid with pp > 1 runs passes after dist-pipeline (bucketing,
// compression): the whole strategy places the rewrite again.
// RUN: dist-opt %examples/mlp_adam.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-hybrid="pp=2 dp=2 zero=1 microbatches=2" -o %t/hybridpp.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp_adam.mlir --dist-hybrid="pp=2 dp=2 zero=1 microbatches=2" --train-mixed-precision="compute=f16 loss-scale=dynamic" -o %t/hybridpp.after.mlir 2>%t/remarks.txt
// RUN: diff %t/hybridpp.before.mlir %t/hybridpp.after.mlir
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=bf16" --dist-hybrid="pp=2 dp=2 microbatches=2 grad-dtype=bf16" -o %t/hybridbf16.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp.mlir --dist-hybrid="pp=2 dp=2 microbatches=2 grad-dtype=bf16" --train-mixed-precision="compute=bf16" -o %t/hybridbf16.after.mlir 2>%t/remarks.txt
// RUN: diff %t/hybridbf16.before.mlir %t/hybridbf16.after.mlir
// The evaluation function, kept single-device by the strategy, is
// rewritten with the step.
// RUN: dist-opt %examples/digits_mlp.mlir --train-derive-eval --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=2" -o %t/eval.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/digits_mlp.mlir --train-derive-eval --dist-pipeline="stages=2 microbatches=2" --train-mixed-precision="compute=f16 loss-scale=dynamic" -o %t/eval.after.mlir 2>%t/remarks.txt
// RUN: diff %t/eval.before.mlir %t/eval.after.mlir
// RUN: dist-opt %examples/mlp_adam.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-parameter-server="ps=2 workers=2 partitioner=fixed shards=2" -o %t/ps.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp_adam.mlir --dist-parameter-server="ps=2 workers=2 partitioner=fixed shards=2" --train-mixed-precision="compute=f16 loss-scale=dynamic" -o %t/ps.after.mlir 2>%t/remarks.txt
// RUN: diff %t/ps.before.mlir %t/ps.after.mlir
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=bf16" --dist-parameter-server="ps=1 workers=2 mode=async" -o %t/async.before.mlir 2>%t/remarks.txt
// RUN: dist-opt %examples/mlp.mlir --dist-parameter-server="ps=1 workers=2 mode=async" --train-mixed-precision="compute=bf16" -o %t/async.after.mlir 2>%t/remarks.txt
// RUN: diff %t/async.before.mlir %t/async.after.mlir

// Reports of placed programs leave the kept module out.
// RUN: dist-opt %t/pipe.placed.mlir --dist-cost-report -o %t/report.mlir 2>&1 | FileCheck %s --check-prefix=COST
// COST: cost of @train_step_pipe0 per rank
// COST: cost of @train_step_pipe1 per rank
// COST-NOT: cost of @train_step per rank
// RUN: dist-opt %t/pipe.placed.mlir --train-summary -o %t/summary.mlir 2>&1 | FileCheck %s --check-prefix=SUMMARY
// SUMMARY: training step @train_step_pipe0
// SUMMARY: training step @train_step_pipe1
// SUMMARY-NOT: training step @train_step{{$}}

// Refused: programs a later pass changed, a placing pipeline that does not
// parse.
// RUN: not dist-opt %t/pipe.placed.mlir --canonicalize --train-mixed-precision="compute=bf16" -o %t/changed.mlir 2>&1 | FileCheck %s --check-prefix=CHANGED
// CHANGED: error: train-mixed-precision: the placed programs or their source changed after 'builtin.module(dist-pipeline{dp=1 microbatches=4 schedule=1f1b stages=2 tp=1 virtual-stages=1 zero=0})' wrote them: run train-mixed-precision before the passes that ran after it
// RUN: sed '/module @placement_source/,$ s/func.func @train_step(/func.func @edited(/' %t/pipe.placed.mlir > %t/edited.mlir
// RUN: not dist-opt %t/edited.mlir --train-mixed-precision="compute=bf16" -o %t/edited.out.mlir 2>&1 | FileCheck %s --check-prefix=CHANGED
// RUN: sed 's/builtin.module(dist-pipeline{/builtin.module(dist-pipelin{/' %t/pipe.placed.mlir > %t/unknown.mlir
// RUN: not dist-opt %t/unknown.mlir --train-mixed-precision="compute=bf16" -o %t/unknown.out.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: train-mixed-precision: cannot read the placing pipeline 'builtin.module(dist-pipelin{dp=1 microbatches=4 schedule=1f1b stages=2 tp=1 virtual-stages=1 zero=0})' (a pipeline on 'builtin.module'): {{.*}}error: 'dist-pipelin' does not refer to a registered pass or pass pipeline{{$}}
