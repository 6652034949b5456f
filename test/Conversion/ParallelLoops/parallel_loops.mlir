// RUN: dist-opt %s --split-input-file --dist-parallel-loops | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-parallel-loops=min-iterations=0 | FileCheck %s --check-prefix=SERIAL
// RUN: dist-opt %s --split-input-file --dist-parallel-loops --convert-scf-to-openmp --canonicalize | FileCheck %s --check-prefix=OMP

// A large elementwise op (1024 x 256 = 262144 iterations): the outermost
// loop runs on the team, the inner one stays a serial loop (which LLVM
// vectorizes).
// CHECK-LABEL: func.func @large_elementwise
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: scf.for %[[J:.*]] =
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NOT: scf.parallel
// SERIAL-LABEL: func.func @large_elementwise
// SERIAL-NOT: scf.parallel
// SERIAL: scf.for
// SERIAL: scf.for
// OMP-LABEL: func.func @large_elementwise
// OMP: omp.parallel {
// OMP-NEXT: omp.wsloop {
// OMP-NEXT: omp.loop_nest (%[[I:.*]]) : index = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// OMP-NOT: memref.alloca_scope
// OMP: scf.for
// OMP: arith.addf
// OMP: omp.yield
// OMP: omp.terminator
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @large_elementwise(%a: memref<1024x256xf32>, %b: memref<1024x256xf32>, %c: memref<1024x256xf32>) {
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<1024x256xf32>, memref<1024x256xf32>) outs(%c : memref<1024x256xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Too small (64 x 256 = 16384 iterations): the fork would cost more than
// the split saves.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// OMP-LABEL: func.func @small
// OMP-NOT: omp.parallel
func.func @small(%a: memref<64x256xf32>, %c: memref<64x256xf32>) {
  linalg.copy ins(%a : memref<64x256xf32>) outs(%c : memref<64x256xf32>)
  return
}

// -----

// A row reduction (layer norm's mean): the rows are split over the team,
// each row's sum is a serial inner loop that carries the row's sum in a
// register (loaded once before, stored once after), its addition marked
// reassociative so that LLVM vectorizes it.
// CHECK-LABEL: func.func @row_sums
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[INIT:.*]] = memref.load %{{.*}}[%[[I]]] : memref<1024xf32>
// CHECK-NEXT: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT: %[[X:.*]] = memref.load
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[ACC]] fastmath<reassoc> : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK: memref.store %[[SUM]], %{{.*}}[%[[I]]] : memref<1024xf32>
// CHECK-NOT: scf.parallel
// OMP-LABEL: func.func @row_sums
// OMP: omp.wsloop
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @row_sums(%a: memref<1024x256xf32>, %c: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<1024x256xf32>) outs(%c : memref<1024xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The outermost iterator is a reduction (a bias gradient summed over the
// rows): threads would race on the output, so the nest stays serial. The
// innermost loop walks the columns (parallel): LLVM vectorizes it across
// the outputs as it is, nothing is carried.
// CHECK-LABEL: func.func @column_sums
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK-NOT: fastmath
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @column_sums(%a: memref<1024x256xf32>, %c: memref<256xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<1024x256xf32>) outs(%c : memref<256xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A dynamic loop range: the iterations are unknown, the nest stays serial.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: scf.parallel
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic(%a: memref<?x256xf32>, %c: memref<?x256xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x256xf32>) outs(%c : memref<?x256xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// An op already inside a parallel loop is not forked again.
// CHECK-LABEL: func.func @nested
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
func.func @nested(%a: memref<4x1024x256xf32>, %c: memref<4x1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %s = memref.subview %a[%i, 0, 0] [1, 1024, 256] [1, 1, 1] : memref<4x1024x256xf32> to memref<1024x256xf32, strided<[256, 1], offset: ?>>
    %t = memref.subview %c[%i, 0, 0] [1, 1024, 256] [1, 1, 1] : memref<4x1024x256xf32> to memref<1024x256xf32, strided<[256, 1], offset: ?>>
    linalg.copy ins(%s : memref<1024x256xf32, strided<[256, 1], offset: ?>>) outs(%t : memref<1024x256xf32, strided<[256, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// Two outputs (a sum and a sum of squares over the rows' last dim): both
// carried; a max reduction's combiner is marked reassociative too. An
// output read twice in the body (here: by a comparison and the select)
// is still one load before the loop.
// CHECK-LABEL: func.func @two_outputs
// CHECK: scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}}) -> (f32, f32)
// CHECK: arith.addf %{{.*}}, %[[A]] fastmath<reassoc>
// CHECK: arith.maximumf %{{.*}}, %[[B]] fastmath<reassoc>
// CHECK: scf.yield
// CHECK-COUNT-2: memref.store
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @two_outputs(%a: memref<8x16xf32>, %s: memref<8xf32>, %m: memref<8xf32>) {
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x16xf32>) outs(%s, %m : memref<8xf32>, memref<8xf32>) {
  ^bb0(%x: f32, %acc: f32, %best: f32):
    %sum = arith.addf %x, %acc : f32
    %max = arith.maximumf %x, %best : f32
    linalg.yield %sum, %max : f32, f32
  }
  return
}

// -----

// A full reduction into a 0-d buffer (a loss): the innermost loop carries
// the scalar.
// CHECK-LABEL: func.func @full_sum
// CHECK: scf.for
// CHECK-NEXT: memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT: scf.for {{.*}} iter_args
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> ()>
func.func @full_sum(%a: memref<8x16xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<8x16xf32>) outs(%s : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sum = arith.addf %x, %acc : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// A batch norm's statistic (sum over n, h, w per channel; the outermost
// iterator a reduction): the channel loop moves outermost and runs on the
// team, the (n, h, w) loops stay in their order inside, w carried.
// CHECK-LABEL: func.func @channel_sums
// CHECK: scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%c16)
// CHECK-NEXT: scf.for %[[N:.*]] = %{{.*}} to %c8
// CHECK-NEXT: scf.for %[[H:.*]] = %{{.*}} to %c16
// CHECK-NEXT: memref.load %{{.*}}[%[[C]]] : memref<16xf32>
// CHECK-NEXT: scf.for %[[W:.*]] = %{{.*}} to %c16 {{.*}} iter_args
// CHECK-NEXT: memref.load %{{.*}}[%[[N]], %[[C]], %[[H]], %[[W]]] : memref<8x16x16x16xf32>
// Without the team, the loops keep the op's order (n outermost).
// SERIAL-LABEL: func.func @channel_sums
// SERIAL-NOT: scf.parallel
// SERIAL: scf.for %{{.*}} = %{{.*}} to %c8
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @channel_sums(%a: memref<8x16x16x16xf32>, %s: memref<16xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%a : memref<8x16x16x16xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sum = arith.addf %x, %acc : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// An update of a grouped conv filter ([1 group, 256, 64, 3, 3]): the group
// loop of one iteration would leave the team one iteration to split; the
// filters' loop moves outermost instead (the unit loop keeps its place
// among the others), and the innermost loop is unchanged.
// CHECK-LABEL: func.func @unit_outer_loop
// CHECK: scf.parallel (%[[F:.*]]) = (%{{.*}}) to (%c256)
// CHECK-NEXT: scf.for %[[G:.*]] = %{{.*}} to %c1
// CHECK-NEXT: scf.for %[[C:.*]] = %{{.*}} to %c64
// CHECK-NEXT: scf.for %[[KH:.*]] = %{{.*}} to %c3
// CHECK-NEXT: scf.for %[[KW:.*]] = %{{.*}} to %c3
// CHECK-NEXT: memref.load %{{.*}}[%[[G]], %[[F]], %[[C]], %[[KH]], %[[KW]]]
// SERIAL-LABEL: func.func @unit_outer_loop
// SERIAL-NOT: scf.parallel
// SERIAL: scf.for %{{.*}} = %{{.*}} to %c1
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @unit_outer_loop(%p: memref<1x256x64x3x3xf32>, %g: memref<1x256x64x3x3xf32>) {
  linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%g : memref<1x256x64x3x3xf32>) outs(%p : memref<1x256x64x3x3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %d = arith.subf %acc, %x : f32
    linalg.yield %d : f32
  }
  return
}
