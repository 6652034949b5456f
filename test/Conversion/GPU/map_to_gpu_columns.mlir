// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=256 vector-access=false})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=256 vector-access=false column-reductions=false})" | FileCheck %s --check-prefix=OFF

// Column reductions: a reduction over loops before a parallel one runs in
// two stages in each block: a block per tile of up to 32 output elements,
// lanes each combining a strided part, their partial results halved in a
// scratch buffer, the first lane's total combined into the output.

// A bias gradient of 256 columns over 8 x 128 rows: 8 blocks of 32 columns
// x 8 lanes (256 threads), each lane adding every 8th of the 1024 rows
// from 0; 3 halvings (lanes 4, 2, 1 above added in), then lane 0 adds the
// total to what the output held.
// CHECK:       #map = affine_map<(d0, d1) -> (d0 * 32 + d1 mod 32)>
// CHECK:       #map1 = affine_map<(d0, d1) -> (d1 floordiv 32)>
// CHECK-LABEL: func.func @bias_grad
// CHECK:         %[[SCRATCH:.*]] = memref.alloc() {distopt.block_scratch} : memref<8x256xf32>
// CHECK:         scf.parallel (%[[BX:.*]]) = (%{{.*}}) to (%c8{{.*}}) step
// CHECK:           scf.parallel (%[[TX:.*]]) = (%{{.*}}) to (%c256{{.*}}) step
// CHECK:             %[[J:.*]] = affine.apply #map(%[[BX]], %[[TX]])
// CHECK:             %[[L:.*]] = affine.apply #map1(%[[BX]], %[[TX]])
// CHECK:             %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:             %[[PART:.*]] = scf.for %[[R:.*]] = %[[L]] to %c1024 step %c8 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK:               %[[RS:.*]]:2 = affine.delinearize_index %[[R]] into (8, 128)
// CHECK:               %[[V:.*]] = memref.load %arg0[%[[RS]]#0, %[[RS]]#1, %[[J]]]
// CHECK:               arith.addf %[[ACC]], %[[V]]
// CHECK:             memref.store %[[PART]], %[[SCRATCH]][%[[BX]], %[[TX]]]
// CHECK:             gpu.barrier
// CHECK:             arith.cmpi ult, %{{.*}}, %c4
// CHECK:             arith.addi %[[TX]], %c128
// CHECK:             gpu.barrier
// CHECK:             arith.cmpi ult, %{{.*}}, %c2
// CHECK:             arith.addi %[[TX]], %c64
// CHECK:             gpu.barrier
// CHECK:             arith.cmpi ult, %{{.*}}, %c1
// CHECK:             arith.addi %[[TX]], %c32
// CHECK:             gpu.barrier
// CHECK:             %[[J2:.*]] = affine.apply #map(%[[BX]], %[[TX]])
// CHECK:             %[[L2:.*]] = affine.apply #map1(%[[BX]], %[[TX]])
// CHECK:             arith.cmpi eq, %[[L2]], %c0
// CHECK:             scf.if
// CHECK:               %[[TOTAL:.*]] = memref.load %[[SCRATCH]][%[[BX]], %[[TX]]]
// CHECK:               %[[BEFORE:.*]] = memref.load %arg1[%[[J2]]]
// CHECK:               %[[SUM:.*]] = arith.addf %[[BEFORE]], %[[TOTAL]]
// CHECK:               memref.store %[[SUM]], %arg1[%[[J2]]]
// CHECK-NOT:         gpu.barrier
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         memref.dealloc %[[SCRATCH]]
// CHECK:         return
// Without column-reductions: a thread per column, its 1024 rows in turn.
// OFF-LABEL:   func.func @bias_grad
// OFF-NOT:       gpu.barrier
// OFF:           scf.for
// OFF:           scf.for
// OFF-NOT:       gpu.barrier
// OFF:           return
func.func @bias_grad(%x: memref<8x128x256xf32>, %db: memref<256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, j) -> (b, s, j)>, affine_map<(b, s, j) -> (j)>],
                  iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : memref<8x128x256xf32>) outs(%db : memref<256xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 40 columns of 64 rows: 2 blocks of 32 columns, the columns past 40 of the
// second skipping every stage (and reaching each barrier); 8 lanes
// (256 / 32). A product in the body (a norm weight's gradient, dy * xhat)
// is the combined value. A maximum starts from its neutral element.
// CHECK-LABEL: func.func @ragged
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<2x256xf32>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c2{{.*}}) step
// CHECK:           %[[J:.*]] = affine.apply
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[J]], %c40
// CHECK:           scf.if %[[IN]] {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c64 step %c8
// CHECK:               arith.mulf
// CHECK:               arith.addf
// CHECK-COUNT-4:   gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK:         return
func.func @ragged(%dy: memref<64x40xf32>, %xhat: memref<64x40xf32>, %dw: memref<40xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%dy, %xhat : memref<64x40xf32>, memref<64x40xf32>) outs(%dw : memref<40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 10 columns of a column maximum over 100 rows (reduction loop in the
// middle): one block of 10 columns x 16 lanes (160 threads: the largest
// power of two with 10 x lanes <= 256), from -inf, 4 halvings.
// CHECK-LABEL: func.func @middle_max
// CHECK:         memref.alloc() {distopt.block_scratch} : memref<1x160xf32>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{.*}}) step
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%c160{{.*}}) step
// CHECK:             arith.constant 0xFF800000 : f32
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c100 step %c16
// CHECK:               arith.maximumf
// CHECK-COUNT-5:     gpu.barrier
// CHECK-NOT:         gpu.barrier
// CHECK:         return
func.func @middle_max(%x: memref<2x100x5xf32>, %m: memref<2x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<2x100x5xf32>) outs(%m : memref<2x5xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.maximumf %v, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two bias gradients and an independent elementwise op share one launch:
// 8 + 1 column blocks, then the op's 4 blocks of points (its 1024 points
// over 256 threads), the column members' barriers at the top of the
// thread loop.
// CHECK-LABEL: func.func @shared_launch
// CHECK-COUNT-2: memref.alloc() {distopt.block_scratch} : memref<{{[0-9]+}}x256xf32>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c13{{.*}}) step
// CHECK-COUNT-1:   scf.parallel
// CHECK:           arith.negf
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @shared_launch(%x: memref<1024x256xf32>, %y: memref<1024x32xf32>, %z: memref<1024xf32>,
                         %dx: memref<256xf32>, %dy: memref<32xf32>, %nz: memref<1024xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1024x256xf32>) outs(%dx : memref<256xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, j) -> (b, j)>, affine_map<(b, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<1024x32xf32>) outs(%dy : memref<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%z : memref<1024xf32>) outs(%nz : memref<1024xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// What stays one point per thread: fewer than 32 points per column and a
// body that is not combine(f(x), acc).
// CHECK-LABEL: func.func @not_columns
// CHECK-NOT:     gpu.barrier
// CHECK:         return
func.func @not_columns(%short: memref<16x64xf32>, %x: memref<64x16xf32>, %c: memref<64xf32>, %d: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%short : memref<16x64xf32>) outs(%c : memref<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x16xf32>) outs(%d : memref<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.mulf %acc, %acc : f32
    %s = arith.addf %v, %t : f32
    linalg.yield %s : f32
  }
  return
}
