// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 inline-scalars=false})" | FileCheck %s --check-prefix=OFF

// A step count plus one, its bias correction from it, and an update that
// reads the correction: the update recomputes both from the old count (one
// launch); the new count, written to an argument (the caller's), still is,
// in the same launch; the count's and the correction's allocations are
// gone with the ops that wrote them.
// CHECK-LABEL: func.func @update
// CHECK-NOT:     memref.alloc
// CHECK:         scf.parallel
// CHECK:           scf.if
// CHECK:             memref.load %arg0[]
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}}, %arg1[]
// CHECK:           } else {
// CHECK:             memref.load %arg0[]
// CHECK:             arith.addf
// CHECK:             math.powf
// CHECK:             memref.store %{{.*}}, %arg3[
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     memref.alloc
// CHECK:         return
// OFF-LABEL: func.func @update
// OFF-COUNT-3: processor = block_x
// OFF-NOT:     processor = block_x
#scalar = affine_map<() -> ()>
#id = affine_map<(i) -> (i)>
#bcast = affine_map<(i) -> ()>
func.func @update(%step: memref<f32>, %newStep: memref<f32>, %p: memref<1000xf32>, %newP: memref<1000xf32>) {
  %one = arith.constant 1.0 : f32
  %beta = arith.constant 0.9 : f32
  %t = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%step : memref<f32>) outs(%t : memref<f32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.addf %s, %one : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%t : memref<f32>) outs(%newStep : memref<f32>) {
  ^bb0(%s: f32, %o: f32):
    linalg.yield %s : f32
  }
  %c = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%t : memref<f32>) outs(%c : memref<f32>) {
  ^bb0(%s: f32, %o: f32):
    %pow = math.powf %beta, %s : f32
    %corr = arith.subf %one, %pow : f32
    linalg.yield %corr : f32
  }
  linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel"]}
      ins(%p, %c : memref<1000xf32>, memref<f32>) outs(%newP : memref<1000xf32>) {
  ^bb0(%x: f32, %k: f32, %o: f32):
    %y = arith.divf %x, %k : f32
    linalg.yield %y : f32
  }
  memref.dealloc %c : memref<f32>
  memref.dealloc %t : memref<f32>
  return
}

// -----

// Not inlined: something between the scalar op and its reader writes the
// scalar op's input (the reader must see the value from before), or the
// scalar op works in place (its output is its input).
// OFF-LABEL: func.func @overwritten_between
// CHECK-LABEL: func.func @overwritten_between
// CHECK:         %[[T:.*]] = memref.alloc() : memref<f32>
// CHECK:         processor = block_x
// CHECK:         memref.load %[[T]][]
// CHECK:         processor = block_x
// CHECK-NOT:     processor = block_x
// CHECK-LABEL: func.func @in_place
// CHECK:         arith.addf
// CHECK:         processor = block_x
// CHECK-NOT:     arith.addf
// CHECK:         arith.mulf
// CHECK:         processor = block_x
// CHECK-NOT:     processor = block_x
#scalar = affine_map<() -> ()>
#id = affine_map<(i) -> (i)>
#bcast = affine_map<(i) -> ()>
func.func @overwritten_between(%a: memref<f32>, %x: memref<16xf32>, %y: memref<16xf32>) {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%a : memref<f32>) outs(%t : memref<f32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.addf %s, %one : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#scalar], iterator_types = []}
      outs(%a : memref<f32>) {
  ^bb0(%o: f32):
    linalg.yield %one : f32
  }
  linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel"]}
      ins(%x, %t : memref<16xf32>, memref<f32>) outs(%y : memref<16xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %r = arith.mulf %v, %k : f32
    linalg.yield %r : f32
  }
  memref.dealloc %t : memref<f32>
  return
}
func.func @in_place(%a: memref<f32>, %x: memref<16xf32>, %y: memref<16xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%a : memref<f32>) outs(%a : memref<f32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.addf %s, %one : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel"]}
      ins(%x, %a : memref<16xf32>, memref<f32>) outs(%y : memref<16xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %r = arith.mulf %v, %k : f32
    linalg.yield %r : f32
  }
  return
}
