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
