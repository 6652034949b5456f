// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(dist-map-to-gpu{block-size=128 vector-access=false row-reductions=false}))" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(dist-map-to-gpu{block-size=128 vector-access=false horizontal=false row-reductions=false}))" | FileCheck %s --check-prefix=ALONE

// An elementwise op of 1000 points: 8 blocks of 128 threads, the last block
// guarded; a thread's point split row-major into the op's indices; the
// output is not read (the body ignores it).
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[C1000:.*]] = arith.constant 1000 : index
// CHECK:         scf.parallel (%[[BX:.*]]) = (%[[C0]]) to (%[[C8]]) step (%[[C1]]) {
// CHECK:           scf.parallel (%[[TX:.*]]) = (%[[C0]]) to (%[[C128]]) step (%[[C1]]) {
// CHECK:             %[[P:.*]] = affine.apply #{{.*}}(%[[BX]], %[[TX]])
// CHECK:             %[[IN:.*]] = arith.cmpi ult, %[[P]], %[[C1000]] : index
// CHECK:             scf.if %[[IN]] {
// CHECK:               %[[IJ:.*]]:2 = affine.delinearize_index %[[P]] into (40, 25)
// CHECK:               %[[A:.*]] = memref.load %{{.*}}[%[[IJ]]#0, %[[IJ]]#1] : memref<40x25xf32>
// CHECK:               %[[B:.*]] = memref.load %{{.*}}[%[[IJ]]#1] : memref<25xf32>
// CHECK:               %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK:               memref.store %[[S]], %{{.*}}[%[[IJ]]#0, %[[IJ]]#1] : memref<40x25xf32>
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK-NOT:     linalg.
func.func @elementwise(%a: memref<40x25xf32>, %b: memref<25xf32>, %c: memref<40x25xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<40x25xf32>, memref<25xf32>) outs(%c : memref<40x25xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row sum: one thread per row (64 points: one block of 64 threads, no
// guard), the row's output loaded once, carried through the reduction
// loop over the columns and stored once.
// CHECK-LABEL: func.func @row_sum
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[C10:.*]] = arith.constant 10 : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C64]]) step
// CHECK-NOT:         scf.if
// CHECK:             %[[ROW:.*]] = affine.apply
// CHECK:             %[[INIT:.*]] = memref.load %[[OUT:.*]][%[[ROW]]] : memref<64xf32>
// CHECK:             %[[SUM:.*]] = scf.for %[[J:.*]] = %{{.*}} to %[[C10]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK:               %[[X:.*]] = memref.load %{{.*}}[%[[ROW]], %[[J]]] : memref<64x10xf32>
// CHECK:               %[[NEXT:.*]] = arith.addf %[[X]], %[[ACC]] : f32
// CHECK:               scf.yield %[[NEXT]] : f32
// CHECK:             memref.store %[[SUM]], %[[OUT]][%[[ROW]]] : memref<64xf32>
func.func @row_sum(%a: memref<64x10xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<64x10xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A full sum into a 0-d buffer: one thread, two reduction loops; a fill and
// a copy (named ops and memref.copy) become nests too, and linalg.index
// reads the point's indices.
// CHECK-LABEL: func.func @named_and_scalar
// The sum reads the fill's output: the fill first, alone; the sum, the copy
// and the index op (on which nothing depends) share the next launch, 3
// blocks of 12 threads (the largest op's points), a block each, branching
// on the block index.
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK:         scf.parallel (%[[BX:.*]]) = (%{{.*}}) to (%c3{{.*}}) step
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%c12{{.*}}) step
// CHECK:             %[[FIRST:.*]] = arith.cmpi ult, %[[BX]], %{{.*}} : index
// CHECK:             scf.if %[[FIRST]] {
// CHECK:               %[[INIT:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:               scf.for
// CHECK:                 scf.for
// CHECK:               memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK:             } else {
// CHECK:               scf.if
// CHECK:                 %[[IJ:.*]]:2 = affine.delinearize_index %{{.*}} into (3, 4)
// CHECK:                 %[[V:.*]] = memref.load %{{.*}}[%[[IJ]]#0, %[[IJ]]#1] : memref<3x4xf32, strided<[8, 1]>>
// CHECK:                 memref.store %[[V]], %{{.*}}[%[[IJ]]#0, %[[IJ]]#1] : memref<3x4xf32>
// CHECK:               } else {
// CHECK:                 %[[IJ2:.*]]:2 = affine.delinearize_index
// CHECK:                 %[[I:.*]] = arith.index_cast %[[IJ2]]#1 : index to i64
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-NOT:     linalg.
// CHECK-NOT:     memref.copy
// Each op alone without horizontal: four nests, in order.
// ALONE-LABEL: func.func @named_and_scalar
// ALONE:         scf.parallel
// ALONE:           memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// ALONE:         scf.parallel
// ALONE:           scf.for
// ALONE:         scf.parallel
// ALONE:           memref.load %{{.*}} : memref<3x4xf32, strided<[8, 1]>>
// ALONE:         scf.parallel
// ALONE:           arith.index_cast
// ALONE-NOT:     scf.parallel
// ALONE:         return
func.func @named_and_scalar(%a: memref<3x8xf32>, %s: memref<f32>, %c: memref<3x4xf32>, %d: memref<3x4xi64>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<3x8xf32>) outs(%s : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %t = arith.addf %x, %acc : f32
    linalg.yield %t : f32
  }
  %view = memref.subview %a[0, 0] [3, 4] [1, 1] : memref<3x8xf32> to memref<3x4xf32, strided<[8, 1]>>
  memref.copy %view, %c : memref<3x4xf32, strided<[8, 1]>> to memref<3x4xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%d : memref<3x4xi64>) {
  ^bb0(%out: i64):
    %j = linalg.index 1 : index
    %v = arith.index_cast %j : index to i64
    linalg.yield %v : i64
  }
  return
}

// -----

// An assertion in a body (a gather's index check) goes under an scf.if of
// its failure, which convert-parallel-loops-to-gpu takes into the kernel
// (a bare cf.assert made it leave the nest on the host).
// CHECK-LABEL: func.func @assertion
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             %[[OK:.*]] = arith.cmpi sge
// CHECK:             %[[FAILS:.*]] = arith.xori %[[OK]], %true : i1
// CHECK:             scf.if %[[FAILS]] {
// CHECK-NEXT:          cf.assert %[[OK]], "index out of range"
// CHECK-NEXT:        }
func.func @assertion(%ids: memref<4xi32>, %out: memref<4xi32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%ids : memref<4xi32>) outs(%out : memref<4xi32>) {
  ^bb0(%id: i32, %o: i32):
    %zero = arith.constant 0 : i32
    %ok = arith.cmpi sge, %id, %zero : i32
    cf.assert %ok, "index out of range"
    linalg.yield %id : i32
  }
  return
}
