// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false})" | FileCheck %s --check-prefix=OFF

// A bias add scaled by a per-row factor over 64 x 256 points: each thread
// 4 consecutive ones (4096 threads: 32 blocks of 128), the input, the
// bias and the output loaded and stored as vector<4xf32> when all three
// start at 16-byte multiples (checked in the kernel); the row's factor,
// the same at the 4 points, read once as a scalar; element by element in
// the other branch.
// CHECK:       #[[$TIMES4:map[0-9]*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-LABEL: func.func @bias_add
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C32]]) step
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C128]]) step
// CHECK:             %[[FIRST:.*]] = affine.apply #[[$TIMES4]](
// CHECK:             %[[IJ:.*]]:2 = affine.delinearize_index %[[FIRST]] into (64, 256)
// CHECK:             memref.extract_aligned_pointer_as_index %arg2
// CHECK:             arith.andi %{{.*}}, %c15
// CHECK:             memref.extract_aligned_pointer_as_index %arg0
// CHECK-NOT:         memref.extract_aligned_pointer_as_index %arg1
// CHECK:             memref.extract_aligned_pointer_as_index %arg3
// CHECK:             %[[ALIGNED:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:             scf.if %[[ALIGNED]] {
// CHECK:               %[[X:.*]] = vector.load %arg2[%[[IJ]]#0, %[[IJ]]#1] {alignment = 16 : i64} : memref<64x256xf32>, vector<4xf32>
// CHECK-COUNT-4:       vector.extract %[[X]][{{[0-3]}}]
// CHECK:               %[[B:.*]] = vector.load %arg0[%[[IJ]]#1] {alignment = 16 : i64} : memref<256xf32>, vector<4xf32>
// CHECK-COUNT-4:       vector.extract %[[B]][{{[0-3]}}]
// CHECK:               %[[F:.*]] = memref.load %arg1[%[[IJ]]#0]
// CHECK-NOT:           memref.load
// CHECK-COUNT-4:       arith.mulf %{{.*}}, %[[F]] : f32
// CHECK:               %[[Y:.*]] = vector.from_elements
// CHECK:               vector.store %[[Y]], %arg3[%[[IJ]]#0, %[[IJ]]#1] {alignment = 16 : i64} : memref<64x256xf32>, vector<4xf32>
// CHECK:             } else {
// CHECK-NOT:           vector.
// CHECK-COUNT-9:       memref.load
// CHECK-NOT:           memref.load
// CHECK-COUNT-4:       memref.store %{{.*}}, %arg3[
// CHECK:             }
// CHECK:         processor = block_x
// OFF-LABEL: func.func @bias_add
// OFF:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c128{{.*}}) step
// OFF-NOT:     vector.
// OFF:         processor = block_x
func.func @bias_add(%bias: memref<256xf32>, %scale: memref<64xf32>, %x: memref<64x256xf32>, %y: memref<64x256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias, %scale : memref<64x256xf32>, memref<256xf32>, memref<64xf32>) outs(%y : memref<64x256xf32>) {
  ^bb0(%a: f32, %b: f32, %f: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.mulf %s, %f : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A view at a static offset: its start (the base address plus 3 x 4
// bytes) is part of the check, so a view off the 16-byte grid takes the
// element-by-element branch at run time.
// CHECK-LABEL: func.func @offset_view
// CHECK:         %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<64xf32, strided<[1], offset: 3>>
// CHECK:         %[[START:.*]] = arith.addi %[[BASE]], %c12
// CHECK:         arith.andi %[[START]], %c15
// CHECK:         vector.load
// CHECK:         vector.store
func.func @offset_view(%x: memref<67xf32>, %y: memref<64xf32>) {
  %v = memref.subview %x[3] [64] [1] : memref<67xf32> to memref<64xf32, strided<[1], offset: 3>>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v : memref<64xf32, strided<[1], offset: 3>>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// What keeps one point per thread: a last loop of an odd number of points
// (a row of 9), a transposed read (the last loop not the buffer's last
// dimension), a reduction, a strided view (the last stride 2), and an
// output not indexed by the last loop.
// CHECK-LABEL: func.func @scalar_only
// CHECK-NOT:     vector.
// CHECK:         return
func.func @scalar_only(%a: memref<8x9xf32>, %b: memref<8x9xf32>,
                       %t: memref<16x16xf32>, %u: memref<16x16xf32>,
                       %r: memref<16xf32>, %s: memref<32xf32>, %w: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x9xf32>) outs(%b : memref<8x9xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<16x16xf32>) outs(%u : memref<16x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%u : memref<16x16xf32>) outs(%r : memref<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  }
  %v = memref.subview %s[0] [16] [2] : memref<32xf32> to memref<16xf32, strided<[2]>>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%v : memref<16xf32, strided<[2]>>) outs(%w : memref<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// The width is what fills 16 bytes with the widest element the last loop
// walks, halved until it divides the row: a bf16 scaling 8 points per
// thread (vector<8xbf16>, 16-byte aligned), a bf16 input widened to a
// float32 output 4 (the bf16 load 8 bytes), a float32 row of 10 points 2
// (8-byte vectors), a float64 one 2.
// CHECK-LABEL: func.func @widths
// CHECK:         vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<16x64xbf16>, vector<8xbf16>
// CHECK:         vector.store %{{.*}}, %arg1[{{.*}}] {alignment = 16 : i64} : memref<16x64xbf16>, vector<8xbf16>
// CHECK:         vector.load %arg0[{{.*}}] {alignment = 8 : i64} : memref<16x64xbf16>, vector<4xbf16>
// CHECK:         vector.store %{{.*}}, %arg2[{{.*}}] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// CHECK:         vector.load %arg3[{{.*}}] {alignment = 8 : i64} : memref<8x10xf32>, vector<2xf32>
// CHECK:         vector.load %arg5[{{.*}}] {alignment = 16 : i64} : memref<32xf64>, vector<2xf64>
// CHECK:         return
func.func @widths(%h: memref<16x64xbf16>, %g: memref<16x64xbf16>, %f: memref<16x64xf32>,
                  %a: memref<8x10xf32>, %b: memref<8x10xf32>, %d: memref<32xf64>, %e: memref<32xf64>) {
  %two = arith.constant 2.0 : bf16
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<16x64xbf16>) outs(%g : memref<16x64xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %y = arith.mulf %x, %two : bf16
    linalg.yield %y : bf16
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<16x64xbf16>) outs(%f : memref<16x64xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %y = arith.extf %x : bf16 to f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x10xf32>) outs(%b : memref<8x10xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%d : memref<32xf64>) outs(%e : memref<32xf64>) {
  ^bb0(%x: f64, %o: f64):
    %y = arith.negf %x : f64
    linalg.yield %y : f64
  }
  return
}
