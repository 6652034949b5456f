// RUN: dist-opt %s -split-input-file --dist-name-train-ops --mlir-print-debuginfo | FileCheck %s --check-prefix=NAME
// RUN: dist-opt %s -split-input-file --dist-profile-ops | FileCheck %s

// Tensors only: no op works on buffers, the table is empty.
// CHECK: module attributes {distopt.profile = []}

// dist-name-train-ops: each train op's location names the op (an op
// already named keeps its name); other ops keep theirs.
// NAME-LABEL: func.func @named
// NAME: train.relu %{{.*}} loc(#[[RELU:.*]])
// NAME: arith.addf {{.*}} loc(#[[ADD:.*]])
// NAME: train.exp %{{.*}} loc(#[[EXP:.*]])
// NAME-DAG: #[[RELU]] = loc("train.relu"(
// NAME-DAG: #[[EXP]] = loc("mine")
// NAME-NOT: loc("arith.addf"
func.func @named(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = train.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %a = arith.addf %r, %r : tensor<4xf32>
  %e = train.exp %a : (tensor<4xf32>) -> tensor<4xf32> loc("mine"(unknown))
  return %e : tensor<4xf32>
}

// -----

// dist-profile-ops: the ops that do work (a linalg op, a copy, a call of an
// external function, a loop) between begin and end calls naming their
// site; views, allocations, constants and calls of functions with a body
// (whose own ops are bracketed) are not. The table: the family from the
// location's name (else the callee or the op), the FLOPs (float arith per
// iteration x iterations: 2 x 4 x 8 x 16 for the product) and the bytes
// of the buffers (each once); a linalg op's loop ranges.
// CHECK: module attributes {distopt.profile = [{bytes = 896 : i64, family = "train.matmul", flops = 1024 : i64, loops = array<i64: 4, 16, 8>},
// CHECK-SAME: {bytes = 512 : i64, family = "memref.copy", flops = 0 : i64},
// CHECK-SAME: {bytes = 0 : i64, family = "sgemm_like", flops = 0 : i64},
// CHECK-SAME: {bytes = 0 : i64, family = "train.relu", flops = 0 : i64},
// CHECK-SAME: {bytes = 32 : i64, family = "linalg.fill", flops = 0 : i64, loops = array<i64: 8>}]}
// CHECK-LABEL: func.func @step
// CHECK: memref.alloc
// CHECK-NEXT: %[[S0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @distrt_profile_begin(%[[S0]]) : (i64) -> ()
// CHECK-NEXT: linalg.generic
// CHECK: call @distrt_profile_end(%[[S0]]) : (i64) -> ()
// CHECK: %[[S1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @distrt_profile_begin(%[[S1]])
// CHECK-NEXT: memref.copy
// CHECK-NEXT: call @distrt_profile_end(%[[S1]])
// CHECK: call @distrt_profile_begin
// CHECK-NEXT: call @sgemm_like
// CHECK-NEXT: call @distrt_profile_end
// CHECK: call @distrt_profile_begin
// CHECK-NEXT: scf.for
// CHECK: call @distrt_profile_end
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: call @helper
// CHECK-NEXT: return
// CHECK-LABEL: func.func @helper
// CHECK: call @distrt_profile_begin
// CHECK-NEXT: linalg.fill
// CHECK: func.func private @distrt_profile_begin(i64)
// CHECK: func.func private @distrt_profile_end(i64)
func.func private @sgemm_like(memref<4x16xf32>)
func.func @step(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %out: memref<4x16xf32>) {
  %c = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } loc("train.matmul"(unknown))
  memref.copy %c, %out : memref<4x16xf32> to memref<4x16xf32>
  call @sgemm_like(%out) : (memref<4x16xf32>) -> ()
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %c[%i, %c0] : memref<4x16xf32>
    memref.store %v, %out[%i, %c0] : memref<4x16xf32>
  } loc(fused["train.relu"(unknown), "other"(unknown)])
  memref.dealloc %c : memref<4x16xf32>
  call @helper() : () -> ()
  return
}
func.func @helper() {
  %z = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<8xf32>
  linalg.fill ins(%z : f32) outs(%m : memref<8xf32>)
  memref.dealloc %m : memref<8xf32>
  return
}
