// RUN: dist-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dist-allocate-returned-shapes))" | FileCheck %s

// A buffer returned through an expand_shape (a filter gradient computed
// as a product) or a collapse_shape is allocated in the returned shape;
// its writers see it through the inverse reshape.
// CHECK-LABEL: func.func private @part
// CHECK-NEXT: %[[F:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x4x3x3xf32>
// CHECK-NEXT: %[[G:.*]] = memref.collapse_shape %[[F]] {{\[}}[0], [1, 2, 3]] : memref<8x4x3x3xf32> into memref<8x36xf32>
// CHECK-NEXT: %[[V:.*]] = memref.alloc() : memref<4x6xf32>
// CHECK-NEXT: %[[W:.*]] = memref.expand_shape %[[V]] {{\[}}[0, 1], [2]] output_shape [2, 2, 6] : memref<4x6xf32> into memref<2x2x6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[G]] : memref<8x36xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[W]] : memref<2x2x6xf32>)
// CHECK: return %[[F]], %[[V]] : memref<8x4x3x3xf32>, memref<4x6xf32>
func.func private @part(%x: f32) -> (memref<8x4x3x3xf32>, memref<4x6xf32>) {
  %g = memref.alloc() {alignment = 64 : i64} : memref<8x36xf32>
  %w = memref.alloc() : memref<2x2x6xf32>
  linalg.fill ins(%x : f32) outs(%g : memref<8x36xf32>)
  linalg.fill ins(%x : f32) outs(%w : memref<2x2x6xf32>)
  %f = memref.expand_shape %g [[0], [1, 2, 3]] output_shape [8, 4, 3, 3] : memref<8x36xf32> into memref<8x4x3x3xf32>
  %v = memref.collapse_shape %w [[0, 1], [2]] : memref<2x2x6xf32> into memref<4x6xf32>
  return %f, %v : memref<8x4x3x3xf32>, memref<4x6xf32>
}

// -----

// Left alone: a freed buffer, a view of an argument, a dynamic buffer, a
// reshape of a buffer made in another block.
// CHECK-LABEL: func.func private @others
// CHECK: %[[A:.*]] = memref.alloc() : memref<2x6xf32>
// CHECK: memref.expand_shape %[[A]]
// CHECK: memref.expand_shape %arg0
// CHECK: %[[D:.*]] = memref.alloc(%arg1) : memref<?x6xf32>
// CHECK: memref.expand_shape %[[D]]
// CHECK-NOT: memref.collapse_shape
func.func private @others(%arg: memref<2x6xf32>, %n: index, %c: i1) -> (memref<2x2x3xf32>, memref<2x2x3xf32>, memref<?x2x3xf32>, memref<2x2x3xf32>) {
  %a = memref.alloc() : memref<2x6xf32>
  %ea = memref.expand_shape %a [[0], [1, 2]] output_shape [2, 2, 3] : memref<2x6xf32> into memref<2x2x3xf32>
  memref.dealloc %a : memref<2x6xf32>
  %eb = memref.expand_shape %arg [[0], [1, 2]] output_shape [2, 2, 3] : memref<2x6xf32> into memref<2x2x3xf32>
  %d = memref.alloc(%n) : memref<?x6xf32>
  %ed = memref.expand_shape %d [[0], [1, 2]] output_shape [%n, 2, 3] : memref<?x6xf32> into memref<?x2x3xf32>
  %o = scf.if %c -> memref<2x6xf32> {
    %b = memref.alloc() : memref<2x6xf32>
    scf.yield %b : memref<2x6xf32>
  } else {
    scf.yield %arg : memref<2x6xf32>
  }
  %eo = memref.expand_shape %o [[0], [1, 2]] output_shape [2, 2, 3] : memref<2x6xf32> into memref<2x2x3xf32>
  return %ea, %eb, %ed, %eo : memref<2x2x3xf32>, memref<2x2x3xf32>, memref<?x2x3xf32>, memref<2x2x3xf32>
}
