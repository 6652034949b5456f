// RUN: dist-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(dist-split-barriers))" | FileCheck %s

// A thread loop's stages as sibling loops over the same range; the index
// arithmetic a later stage shares with an earlier one is recomputed in it.
// CHECK-LABEL: func.func @stages
// CHECK:         scf.parallel (%[[BX:.*]]) =
// CHECK:           scf.parallel (%[[T1:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:             %[[I1:.*]] = arith.addi %[[T1]], %[[BX]]
// CHECK:             memref.store %{{.*}}, %arg1[%[[I1]]]
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:           scf.parallel (%[[T2:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:             %[[I2:.*]] = arith.addi %[[T2]], %[[BX]]
// CHECK:             memref.load %arg1[%[[I2]]]
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK-NOT:     gpu.barrier
func.func @stages(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%bx) = (%c0) to (%c2) step (%c1) {
    scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
      %i = arith.addi %tx, %bx : index
      %v = memref.load %a[%i] : memref<64xf32>
      memref.store %v, %b[%i] : memref<64xf32>
      gpu.barrier
      %w = memref.load %b[%i] : memref<64xf32>
      memref.store %w, %a[%i] : memref<64xf32>
      scf.reduce
    } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @loaded_across(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    // expected-error @below {{'memref.load' op is used across a gpu.barrier of a thread loop and is not pure to recompute}}
    %v = memref.load %a[%tx] : memref<64xf32>
    gpu.barrier
    memref.store %v, %a[%tx] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// A barrier under a member's guard: the if split into one per stage on the
// same condition, the pure index arithmetic of its first stage recomputed
// in the second; the else region's stages pair with the then region's.
// CHECK-LABEL: func.func @guarded
// CHECK:         scf.parallel (%[[T1:.*]]) =
// CHECK:           scf.if %arg1 {
// CHECK:             %[[I1:.*]] = arith.addi %[[T1]], %[[T1]]
// CHECK:             memref.store %{{.*}}, %arg0[%[[I1]]]
// CHECK:           } else {
// CHECK:             memref.store %{{.*}}, %arg0[%[[T1]]]
// CHECK:           }
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         scf.parallel (%[[T2:.*]]) =
// CHECK:           scf.if %arg1 {
// CHECK:             %[[I2:.*]] = arith.addi %[[T2]], %[[T2]]
// CHECK:             memref.load %arg0[%[[I2]]]
// CHECK-NOT:       else
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         scf.parallel (%[[T3:.*]]) =
// CHECK:           scf.if %arg1 {
// CHECK-NEXT:      } else {
// CHECK:             memref.load %arg0[%[[T3]]]
// CHECK-NOT:     gpu.barrier
func.func @guarded(%a: memref<64xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    scf.if %c {
      %i = arith.addi %tx, %tx : index
      memref.store %f, %a[%i] : memref<64xf32>
      gpu.barrier
      %v = memref.load %a[%i] : memref<64xf32>
      memref.store %v, %a[%tx] : memref<64xf32>
    } else {
      memref.store %f, %a[%tx] : memref<64xf32>
      gpu.barrier
      gpu.barrier
      %v = memref.load %a[%tx] : memref<64xf32>
      memref.store %v, %a[%c0] : memref<64xf32>
    }
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// A warp reduction on the CPU: each lane's value to its block's row of an
// exchange buffer, a barrier, then the cluster's slots combined pairwise,
// neighbours first (the GPU's butterfly order: xor 1, then 2).
// CHECK-LABEL: func.func @warp_sum
// CHECK:         %[[EX:.*]] = memref.alloc() : memref<2x8xf32>
// CHECK:         scf.parallel (%[[BX:.*]]) =
// CHECK:           scf.parallel (%[[T1:.*]]) =
// CHECK:             %[[V:.*]] = memref.load %arg0[%[[T1]]]
// CHECK:             memref.store %[[V]], %[[EX]][%[[BX]], %[[T1]]]
// CHECK:           scf.parallel (%[[T2:.*]]) =
// CHECK:             %[[L0:.*]] = affine.apply #[[M0:.*]](%[[T2]])
// CHECK:             %[[X0:.*]] = memref.load %[[EX]][%[[BX]], %[[L0]]]
// CHECK:             %[[X1:.*]] = memref.load %[[EX]][%[[BX]], %{{.*}}]
// CHECK:             %[[X2:.*]] = memref.load %[[EX]][%[[BX]], %{{.*}}]
// CHECK:             %[[X3:.*]] = memref.load %[[EX]][%[[BX]], %{{.*}}]
// CHECK:             %[[S01:.*]] = arith.addf %[[X0]], %[[X1]]
// CHECK:             %[[S23:.*]] = arith.addf %[[X2]], %[[X3]]
// CHECK:             %[[S:.*]] = arith.addf %[[S01]], %[[S23]]
// CHECK:             memref.store %[[S]], %arg1[%[[T2]]]
// CHECK:         memref.dealloc %[[EX]]
// CHECK-NOT:     gpu.barrier
// CHECK-NOT:     gpu.subgroup_reduce
func.func @warp_sum(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%bx) = (%c0) to (%c2) step (%c1) {
    scf.parallel (%tx) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %a[%tx] : memref<8xf32>
      %s = gpu.subgroup_reduce add %v cluster(size = 4) : (f32) -> f32
      memref.store %s, %b[%tx] : memref<8xf32>
      scf.reduce
    } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @in_a_loop(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    scf.for %i = %c0 to %c32 step %c1 {
      // expected-error @below {{'gpu.barrier' op is inside a loop or region of a thread loop other than an scf.if, so its stages cannot run one after the other}}
      gpu.barrier
    }
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @if_with_results(%a: memref<64xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    // expected-error @below {{'scf.if' op yields values and holds a gpu.barrier of a thread loop, so its stages cannot run one after the other}}
    %r = scf.if %c -> f32 {
      gpu.barrier
      scf.yield %f : f32
    } else {
      scf.yield %f : f32
    }
    memref.store %r, %a[%tx] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @loaded_across_in_guard(%a: memref<64xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    scf.if %c {
      // expected-error @below {{'memref.load' op is used across a gpu.barrier of a thread loop and is not pure to recompute}}
      %v = memref.load %a[%tx] : memref<64xf32>
      gpu.barrier
      memref.store %v, %a[%tx] : memref<64xf32>
    }
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @vector_reduction(%a: memref<32xvector<2xf32>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    %v = memref.load %a[%tx] : memref<32xvector<2xf32>>
    // expected-error @below {{'gpu.subgroup_reduce' op has no CPU form: only scalar reductions of consecutive lanes are emulated}}
    %s = gpu.subgroup_reduce add %v : (vector<2xf32>) -> vector<2xf32>
    memref.store %s, %a[%tx] : memref<32xvector<2xf32>>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @dynamic_threads(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%tx) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%tx] : memref<?xf32>
    // expected-error @below {{'gpu.subgroup_reduce' op is in a thread loop whose range is not a constant from 0 by 1}}
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %s, %a[%tx] : memref<?xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

func.func @outside(%v: f32, %a: memref<f32>) {
  // expected-error @below {{'gpu.subgroup_reduce' op is not in a thread loop, so its lanes have no CPU form}}
  %s = gpu.subgroup_reduce add %v : (f32) -> f32
  memref.store %s, %a[] : memref<f32>
  return
}

// -----

func.func @barrier_outside() {
  // expected-error @below {{'gpu.barrier' op is not in a thread loop, so its stages cannot run one after the other}}
  gpu.barrier
  return
}
