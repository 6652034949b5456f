// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false})" | FileCheck %s

// Row groups: a reduction over a row's last loops runs a block per row, its
// threads combining strided parts, then each warp its parts by warp
// shuffles (gpu.subgroup_reduce) and every warp the warps' results from a
// scratch slot each; with fewer threads than a warp, the parts halve in a
// scratch buffer. The ops on the same rows around it share the launch,
// gpu.barrier between the stages.

// A row mean and the centred rows (a layer norm's first half) on 4 x 8
// rows of 32: one launch of 32 blocks of 32 threads. The fill, the sum,
// the scaling and the centring are stages; the sum is one warp's: its
// partial results combined by one gpu.subgroup_reduce, thread 0 adding
// the row's total to the output, no scratch and no barrier in it.
// CHECK-LABEL: func.func @centre
// CHECK-NOT:     distopt.block_scratch
// CHECK:         scf.parallel (%[[BX:.*]]) = (%{{.*}}) to (%c32{{.*}}) step
// CHECK:           scf.parallel (%[[TX:.*]]) = (%{{.*}}) to (%c32{{.*}}) step
// CHECK:             scf.for %{{.*}} = %[[TX]] to %{{.*}} step %[[C32:.*]] {
// CHECK:               memref.store %{{.*}}, %arg1[
// CHECK:             gpu.barrier
// CHECK:             %[[PART:.*]] = scf.for %[[P:.*]] = %[[TX]] to %{{.*}} step %[[C32]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:               memref.load %arg0[
// CHECK:               arith.addf
// CHECK:             %[[TOTAL:.*]] = gpu.subgroup_reduce add %[[PART]] : (f32) -> f32
// CHECK-NEXT:        %[[FIRST:.*]] = arith.cmpi eq, %[[TX]]
// CHECK-NEXT:        scf.if %[[FIRST]]
// CHECK:               %[[BEFORE:.*]] = memref.load %arg1[
// CHECK:               %[[SUM:.*]] = arith.addf %[[BEFORE]], %[[TOTAL]]
// CHECK:               memref.store %[[SUM]], %arg1[
// CHECK:             gpu.barrier
// CHECK:             arith.divf
// CHECK:             gpu.barrier
// CHECK:             arith.subf
// CHECK-NOT:         gpu.barrier
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @centre(%x: memref<4x8x32xf32>, %mean: memref<4x8xf32>, %out: memref<4x8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 32.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%mean : memref<4x8xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x8x32xf32>) outs(%mean : memref<4x8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      outs(%mean : memref<4x8xf32>) {
  ^bb0(%o: f32):
    %m = arith.divf %o, %n : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (i, j, k)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mean : memref<4x8x32xf32>, memref<4x8xf32>) outs(%out : memref<4x8x32xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %c = arith.subf %v, %m : f32
    linalg.yield %c : f32
  }
  return
}

// -----

// A max over rows of 200 with block-size 128: 128 threads (the power of two
// at most the block size), the maximum's neutral element to start from;
// each of the 4 warps' maximum to its slot of a 6 x 4 scratch buffer
// (lane 0), one barrier, then every warp the 4 slots by a cluster of 4
// lanes, thread 0 storing the row's maximum.
// CHECK-LABEL: func.func @row_max
// CHECK:         %[[SLOTS:.*]] = memref.alloc() {distopt.block_scratch} : memref<6x4xf32>
// CHECK:         scf.parallel (%[[BX:.*]]) =
// CHECK:           scf.parallel (%[[TX:.*]]) = (%{{.*}}) to (%c128
// CHECK:             arith.constant 0xFF800000 : f32
// CHECK:             %[[PART:.*]] = scf.for
// CHECK:               arith.maximumf
// CHECK:             %[[WARP_MAX:.*]] = gpu.subgroup_reduce maximumf %[[PART]] : (f32) -> f32
// CHECK:             %[[LANE:.*]] = affine.apply #{{.*}}(%[[TX]])
// CHECK:             %[[WARP:.*]] = affine.apply #{{.*}}(%[[TX]])
// CHECK:             %[[LEADER:.*]] = arith.cmpi eq, %[[LANE]]
// CHECK:             scf.if %[[LEADER]] {
// CHECK-NEXT:          memref.store %[[WARP_MAX]], %[[SLOTS]][%[[BX]], %[[WARP]]]
// CHECK:             gpu.barrier
// CHECK:             %[[SLOT:.*]] = affine.apply #{{.*}}(%[[TX]])
// CHECK:             %[[MINE:.*]] = memref.load %[[SLOTS]][%[[BX]], %[[SLOT]]]
// CHECK:             %[[MAX:.*]] = gpu.subgroup_reduce maximumf %[[MINE]] cluster(size = 4) : (f32) -> f32
// CHECK:             arith.cmpi eq, %[[TX]]
// CHECK:             scf.if
// CHECK:               arith.maximumf %{{.*}}, %[[MAX]]
// CHECK-NOT:         gpu.barrier
// CHECK:         memref.dealloc %[[SLOTS]]
// CHECK:         return
func.func @row_max(%x: memref<6x200xf32>, %m: memref<6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<6x200xf32>) outs(%m : memref<6xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.maximumf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A float64 row (wider than a shuffle's 32 bits) halves in the scratch
// buffer: 64 threads, 6 halvings (7 barriers), no warp reduction.
// CHECK-LABEL: func.func @row_sum_f64
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<3x64xf64>
// CHECK-NOT:     gpu.subgroup_reduce
// CHECK-COUNT-7: gpu.barrier
// CHECK-NOT:     gpu.barrier
// CHECK:         return
func.func @row_sum_f64(%x: memref<3x64xf64>, %s: memref<3xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x64xf64>) outs(%s : memref<3xf64>) {
  ^bb0(%v: f64, %acc: f64):
    %r = arith.addf %v, %acc : f64
    linalg.yield %r : f64
  }
  return
}

// -----

// What stays one point per thread: a column sum (its reduction is over the
// leading loop), a reduction whose body is not combine(f(x), acc), and an
// op that reads a row group's output at other rows (transposed), which
// runs after it in its own launch.
// CHECK-LABEL: func.func @not_rows
// CHECK-NOT:     gpu.barrier
// CHECK:         return
func.func @not_rows(%x: memref<8x16xf32>, %cols: memref<16xf32>, %rows: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%cols : memref<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x16xf32>) outs(%rows : memref<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.mulf %acc, %acc : f32
    %s = arith.addf %v, %t : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @other_rows
// CHECK:         scf.parallel
// CHECK:           gpu.barrier
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         scf.parallel
// CHECK-NOT:       gpu.barrier
// CHECK:           memref.load %arg1[
// CHECK:         return
func.func @other_rows(%x: memref<8x8xf32>, %s: memref<8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return
}

// -----

// A row group shares its level's launch with the independent ops: the row
// sums of 4 rows of 8 (a block each, 8 threads) and an update of 1000
// points (8 blocks of 128) are one launch of 12 blocks of 128 threads. The
// row group's blocks come first; its threads past 8 skip its work but
// reach the barriers of its later stages, which only its blocks enter.
// CHECK-LABEL: func.func @with_an_update
// CHECK:         %[[SCRATCH:.*]] = memref.alloc() {distopt.block_scratch} : memref<4x8xf32>
// CHECK:         scf.parallel (%[[BX:.*]]) = (%{{.*}}) to (%c12{{.*}}) step
// CHECK:           scf.parallel (%[[TX:.*]]) = (%{{.*}}) to (%c128{{.*}}) step
// CHECK:             %[[ROWS:.*]] = arith.cmpi ult, %[[BX]], %[[C4:.*]] : index
// CHECK:             scf.if %[[ROWS]] {
// CHECK:               %[[USED:.*]] = arith.cmpi ult, %[[TX]], %[[C8:.*]] : index
// CHECK:               scf.if %[[USED]] {
// CHECK:                 memref.store %{{.*}}, %[[SCRATCH]][%[[BX]], %[[TX]]]
// CHECK:             } else {
// CHECK:               memref.store %{{.*}}, %arg3[
// CHECK:             gpu.barrier
// CHECK:             arith.cmpi ult, %[[BX]], %[[C4]] : index
// CHECK:             arith.cmpi ult, %[[TX]], %[[C8]] : index
// CHECK-COUNT-3:     gpu.barrier
// CHECK:             memref.store %{{.*}}, %arg1[
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         memref.dealloc %[[SCRATCH]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @with_an_update(%x: memref<4x8xf32>, %sum: memref<4xf32>, %g: memref<1000xf32>, %p: memref<1000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%g : memref<1000xf32>) outs(%p : memref<1000xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.subf %b, %a : f32
    linalg.yield %s : f32
  }
  return
}
