// RUN: dist-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(gpu.module(dist-lower-warp-reductions))" | FileCheck %s

// A warp's sum as butterfly shuffles at lane offsets 1, 2, 4, 8, 16 over the
// 32 lanes, each step combining the lane's value with its partner's; a
// cluster of 4 lanes stops after 2; a bf16 value travels in the low half
// of a 32-bit shuffle.
// CHECK-LABEL: gpu.func @sums
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : i32
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : i32
// CHECK-DAG:     %[[W:.*]] = arith.constant 32 : i32
// CHECK:         %[[X1:.*]], %{{.*}} = gpu.shuffle xor %arg0, %[[C1]], %[[W]] : f32
// CHECK:         %[[S1:.*]] = arith.addf %arg0, %[[X1]] : f32
// CHECK:         %[[X2:.*]], %{{.*}} = gpu.shuffle xor %[[S1]], %[[C2]], %[[W]] : f32
// CHECK:         %[[S2:.*]] = arith.addf %[[S1]], %[[X2]] : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %[[C4]], %[[W]] : f32
// CHECK:         gpu.shuffle xor %{{.*}}, %[[C8]], %[[W]] : f32
// CHECK:         %[[X16:.*]], %{{.*}} = gpu.shuffle xor %{{.*}}, %[[C16]], %[[W]] : f32
// CHECK:         %[[SUM:.*]] = arith.addf %{{.*}}, %[[X16]] : f32
// CHECK:         %[[Y1:.*]], %{{.*}} = gpu.shuffle xor %arg0, %[[C1]], %[[W]] : f32
// CHECK:         %[[M1:.*]] = arith.maximumf %arg0, %[[Y1]] : f32
// CHECK:         %[[Y2:.*]], %{{.*}} = gpu.shuffle xor %[[M1]], %[[C2]], %[[W]] : f32
// CHECK:         %[[MAX:.*]] = arith.maximumf %[[M1]], %[[Y2]] : f32
// CHECK-NOT:     gpu.shuffle xor %[[MAX]]
// CHECK:         %[[BITS:.*]] = arith.bitcast %arg1 : bf16 to i16
// CHECK:         %[[WIDE:.*]] = arith.extui %[[BITS]] : i16 to i32
// CHECK:         gpu.shuffle xor %[[WIDE]], %[[C1]], %[[W]] : i32
// CHECK-COUNT-4: gpu.shuffle xor %{{.*}} : i32
// CHECK-NOT:     gpu.subgroup_reduce
// CHECK:         memref.store %[[SUM]]
// CHECK:         memref.store %[[MAX]]
gpu.module @kernels {
  gpu.func @sums(%v: f32, %h: bf16, %o: memref<2xf32>, %p: memref<bf16>) kernel {
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    %m = gpu.subgroup_reduce maximumf %v cluster(size = 4) : (f32) -> f32
    %b = gpu.subgroup_reduce add %h : (bf16) -> bf16
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    memref.store %s, %o[%c0] : memref<2xf32>
    memref.store %m, %o[%c1] : memref<2xf32>
    memref.store %b, %p[] : memref<bf16>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @wide(%v: f64, %o: memref<f64>) kernel {
    // expected-error @below {{'gpu.subgroup_reduce' op has no warp-shuffle lowering (a value of more than 32 bits per element, or an unsupported cluster)}}
    %s = gpu.subgroup_reduce add %v : (f64) -> f64
    memref.store %s, %o[] : memref<f64>
    gpu.return
  }
}
