// RUN: dist-opt %s --dist-strided-copies-to-loops | FileCheck %s

// A copy into (or out of) a strided buffer becomes a linalg.copy (loops
// LLVM vectorizes); a copy between contiguous buffers, even at an offset,
// stays a memref.copy (one memcpy).
// CHECK-LABEL: func.func @copies
func.func @copies(%block: memref<2x4x8xf32>, %all: memref<2x12x8xf32>, %a: memref<16xf32>, %b: memref<16xf32>) {
  // CHECK: %[[S:.*]] = memref.subview
  // CHECK: linalg.copy ins(%{{.*}} : memref<2x4x8xf32>) outs(%[[S]] : memref<2x4x8xf32, strided<[96, 8, 1], offset: 32>>)
  // CHECK-NOT: memref.copy %{{.*}}, %[[S]]
  // CHECK: memref.copy %{{.*}}, %{{.*}} : memref<16xf32> to memref<16xf32>
  %s = memref.subview %all[0, 4, 0] [2, 4, 8] [1, 1, 1] : memref<2x12x8xf32> to memref<2x4x8xf32, strided<[96, 8, 1], offset: 32>>
  memref.copy %block, %s : memref<2x4x8xf32> to memref<2x4x8xf32, strided<[96, 8, 1], offset: 32>>
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  return
}
