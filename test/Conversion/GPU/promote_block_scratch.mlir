// RUN: dist-opt %s -split-input-file --dist-promote-block-scratch | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-promote-block-scratch="max-shared-bytes=1024" | FileCheck %s --check-prefix=SMALL
// RUN: not dist-opt %s --dist-promote-block-scratch="max-shared-bytes=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// Each buffer that stays says why (a remark at its allocation).
// RUN: dist-opt %s -split-input-file --dist-promote-block-scratch -verify-diagnostics -o %t.mlir
// RUN: dist-opt %s -split-input-file --dist-promote-block-scratch="max-shared-bytes=1024" 2>&1 -o %t.small.mlir | FileCheck %s --check-prefix=SMALLWHY
// SMALLWHY: remark: block scratch stays in device memory: its row of 512 bytes would take the launch's shared memory past max-shared-bytes=1024
// The row groups and column reductions dist-map-to-gpu builds, as kernels:
// their scratch rows in shared memory, and the PTX declares it.
// RUN: dist-opt %S/map_to_gpu_rows.mlir -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128},convert-parallel-loops-to-gpu,dist-promote-block-scratch)" | FileCheck %s --check-prefix=ROWS
// RUN: dist-opt %S/map_to_gpu_columns.mlir -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=256},convert-parallel-loops-to-gpu,dist-promote-block-scratch)" | FileCheck %s --check-prefix=ROWS
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa" | FileCheck %s --check-prefix=PTX

// BAD: error: dist-promote-block-scratch: max-shared-bytes=-1 is negative

// ROWS-NOT: distopt.block_scratch
// ROWS: gpu.launch {{.*}} workgroup(%{{.*}} : memref<{{[0-9]+}}x{{f32|f64}}, #gpu.address_space<workgroup>>)
// ROWS-NOT: distopt.block_scratch

// (The layer norms' and softmax's warps combine by butterfly shuffles.)
// PTX-DAG: .shared .align {{[0-9]+}} .b8 __wg_{{[a-z_0-9]+}}[{{[0-9]+}}];
// PTX-DAG: ld.shared.b32
// PTX-DAG: bar.sync
// PTX-DAG: shfl.sync.bfly.b32

// A softmax row's sum: each block's row of the scratch its shared memory
// (128 floats), every access without the row index, the buffer gone. An
// unmarked buffer stays.
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT:     memref.alloc() {distopt.block_scratch}
// CHECK:         %[[OTHER:.*]] = memref.alloc() : memref<64x128xf32>
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in {{.*}} workgroup(%[[ROW:.*]] : memref<128xf32, #gpu.address_space<workgroup>>)
// CHECK:           memref.store %{{.*}}, %[[ROW]][%[[TX]]] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.store %{{.*}}, %[[OTHER]][%[[BX]], %[[TX]]] : memref<64x128xf32>
// CHECK:           gpu.barrier
// CHECK:           memref.load %[[ROW]][%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK:           gpu.terminator
// CHECK:         memref.dealloc %[[OTHER]]
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @row_sum(%x: memref<64x128xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %s = memref.alloc() {distopt.block_scratch} : memref<64x128xf32>
  %o = memref.alloc() : memref<64x128xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c64, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx, %tx] : memref<64x128xf32>
    memref.store %v, %s[%bx, %tx] : memref<64x128xf32>
    memref.store %v, %o[%bx, %tx] : memref<64x128xf32>
    gpu.barrier
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      %t = memref.load %s[%bx, %c0] : memref<64x128xf32>
      memref.store %t, %out[%bx] : memref<64xf32>
    }
    gpu.terminator
  }
  memref.dealloc %s : memref<64x128xf32>
  memref.dealloc %o : memref<64x128xf32>
  return
}

// -----

// Marked buffers that stay in device memory: one two launches use, one
// handed to a call, one of a single dimension (no row to drop). Within
// 1024 bytes (SMALL) a launch takes its first buffer of 512 bytes, and
// then one more, not the third.
// CHECK-LABEL: func.func @stays
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<128xf32>
// CHECK-NOT:     memref.alloc() {distopt.block_scratch}
// CHECK:         gpu.launch {{.*}} workgroup({{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>)
// SMALL-LABEL: func.func @stays
// SMALL-COUNT-4: memref.alloc() {distopt.block_scratch}
// SMALL:         gpu.launch {{.*}} workgroup({{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<128xf32, #gpu.address_space<workgroup>>)
// SMALL-NEXT:    memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// SMALL-NEXT:    memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// SMALL-NEXT:    memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x128xf32>
func.func private @keep(memref<4x128xf32>)
func.func @stays(%v: f32) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  // expected-remark @below {{block scratch stays in device memory: used outside one gpu.launch}}
  %twice = memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
  // expected-remark @below {{block scratch stays in device memory: used by 'func.call', not only loaded and stored}}
  %called = memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
  // expected-remark @below {{block scratch stays in device memory: not a static buffer of rows in the default memory space}}
  %flat = memref.alloc() {distopt.block_scratch} : memref<128xf32>
  %a = memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
  %b = memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
  %c = memref.alloc() {distopt.block_scratch} : memref<4x128xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %v, %a[%bx, %tx] : memref<4x128xf32>
    memref.store %v, %b[%bx, %tx] : memref<4x128xf32>
    memref.store %v, %c[%bx, %tx] : memref<4x128xf32>
    memref.store %v, %twice[%bx, %tx] : memref<4x128xf32>
    memref.store %v, %called[%bx, %tx] : memref<4x128xf32>
    memref.store %v, %flat[%tx] : memref<128xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %v, %twice[%bx, %tx] : memref<4x128xf32>
    gpu.terminator
  }
  call @keep(%called) : (memref<4x128xf32>) -> ()
  return
}
