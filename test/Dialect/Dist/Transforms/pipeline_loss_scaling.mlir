// Dynamic loss scaling under dist-pipeline (train-mixed-precision first):
// the loss's stage holds the loss scale, scales the seed and sends the
// scale's reciprocal back with the gradients; each stage sums its
// gradients' finiteness in an update unit of its own that runs before its
// updates, the partial sums flow to the later stage, which sends the flag
// back; every stage then keeps or updates its parameters on that flag.
// The programs record the precision, which runners read.
// RUN: sed 's/{transpose_rhs} : (tensor<64x128xf32>, tensor<10x128xf32>)/{transpose_rhs, train.stage = 1} : (tensor<64x128xf32>, tensor<10x128xf32>)/' %examples/mlp.mlir | dist-opt --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=2" 2>%t.remarks | FileCheck %s
// Interleaved and zero-bubble schedules and data-parallel stages with
// ZeRO place the same units (the verifier finds no deadlock).
// RUN: sed 's/{transpose_rhs} : (tensor<64x128xf32>, tensor<10x128xf32>)/{transpose_rhs, train.stage = 1} : (tensor<64x128xf32>, tensor<10x128xf32>)/' %examples/mlp.mlir | dist-opt --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=2 schedule=zb-h1" 2>%t.remarks | FileCheck %s --check-prefix=FLAG
// RUN: sed 's/{transpose_rhs} : (tensor<64x128xf32>, tensor<10x128xf32>)/{transpose_rhs, train.stage = 1} : (tensor<64x128xf32>, tensor<10x128xf32>)/' %examples/mlp.mlir | dist-opt --train-mixed-precision="compute=f16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=2 dp=2 zero=1" 2>%t.remarks | FileCheck %s --check-prefix=FLAG
// RUN: dist-opt %examples/transformer_stack.mlir --train-mixed-precision="compute=bf16 loss-scale=dynamic" --dist-pipeline="stages=2 microbatches=2 virtual-stages=2 schedule=interleaved" 2>%t.remarks | FileCheck %s --check-prefix=FLAG

// CHECK-LABEL: func.func @train_step_pipe0(
// CHECK-NOT: loss_scale
// CHECK-SAME: train.mixed_precision = "compute=f16 loss-scale=dynamic
// CHECK: unit #dist.unit<B, stage = 0, microbatch = 1>
// CHECK: %[[RECIP:.*]] = dist.recv from #dist.place<@pipe, pipe = 1> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[GATE:.*]]:3 = dist.fragment {{.*}} unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}(%{{.*}}, %[[RECIP]],
// CHECK: train.reduce
// CHECK: dist.yield
// CHECK: dist.send %[[GATE]]#2 to #dist.place<@pipe, pipe = 1> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[FINITE:.*]] = dist.recv from #dist.place<@pipe, pipe = 1> channel = {{[0-9]+}} : tensor<i1>
// CHECK: dist.fragment {{.*}} unit #dist.unit<U, stage = 0, microbatch = 0> {{.*}}%[[FINITE]])
// CHECK: %[[NEW:.*]], %{{.*}} = train.sgd
// CHECK: train.select %{{.*}}, %[[NEW]], %
// CHECK: return

// CHECK-LABEL: func.func @train_step_pipe1(
// CHECK-SAME: "loss_scale"
// CHECK: unit #dist.unit<B, stage = 1, microbatch = 0>
// CHECK: train.div
// CHECK: dist.send %{{.*}} to #dist.place<@pipe, pipe = 0> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[PARTIAL:.*]] = dist.recv from #dist.place<@pipe, pipe = 0> channel = {{[0-9]+}} : tensor<f32>
// CHECK: %[[GATE1:.*]]:3 = dist.fragment {{.*}} unit #dist.unit<U, stage = 1, microbatch = 0> {{.*}}%[[PARTIAL]])
// CHECK: train.compare
// CHECK: dist.send %[[GATE1]]#2 to #dist.place<@pipe, pipe = 0> channel = {{[0-9]+}} : tensor<i1>
// CHECK: dist.fragment {{.*}} unit #dist.unit<U, stage = 1, microbatch = 0>
// CHECK: return

// FLAG: func.func @train_step_pipe0(
// FLAG: dist.recv from #dist.place<@pipe{{.*}}pipe = 1{{.*}} : tensor<i1>
// FLAG: unit #dist.unit<U, stage = 0, microbatch = 0>
// FLAG: func.func @train_step_pipe1(
// FLAG-SAME: "loss_scale"
// FLAG: dist.send %{{.*}} to #dist.place<@pipe{{.*}}pipe = 0{{.*}} : tensor<i1>
