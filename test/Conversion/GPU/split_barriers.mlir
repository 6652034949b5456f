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

func.func @nested(%a: memref<64xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%tx) = (%c0) to (%c32) step (%c1) {
    scf.if %c {
      // expected-error @below {{'gpu.barrier' op is not at the top of a thread loop's body, so its stages cannot run one after the other}}
      gpu.barrier
    }
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}
