// RUN: dist-opt %s -split-input-file --dist-conv-to-kernels | FileCheck %s

// The input gradients read train-to-linalg's flipped copies of their
// filters; bufferization put both copies in one buffer. Each call reads its
// own filter with the taps reversed (kind 3) and the copies are gone.
#flip = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 2, -d3 + 2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#spread = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @shared_copy_buffer
// CHECK-SAME: %[[G:[a-z0-9]+]]: memref<2x1x16x8x8xf32>, %[[W1:[a-z0-9]+]]: memref<16x16x3x3xf32>, %[[W2:[a-z0-9]+]]: memref<16x16x3x3xf32>
func.func @shared_copy_buffer(%g: memref<2x1x16x8x8xf32>, %w1: memref<16x16x3x3xf32>, %w2: memref<16x16x3x3xf32>) -> (memref<2x1x16x6x6xf32>, memref<2x1x16x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %o1 = memref.alloc() : memref<2x1x16x6x6xf32>
  %o2 = memref.alloc() : memref<2x1x16x6x6xf32>
  // CHECK-NOT: linalg.generic
  // CHECK: %[[V1:.*]] = memref.expand_shape %[[W1]] {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3]
  // CHECK: %[[F1:.*]] = memref.cast %[[V1]]
  // CHECK: %[[K1:.*]] = arith.constant 3 : i32
  // CHECK: call @distopt_conv2d_f32(%{{.*}}, %[[F1]], %{{.*}}, %[[K1]],
  // CHECK: %[[V2:.*]] = memref.expand_shape %[[W2]] {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3]
  // CHECK: %[[F2:.*]] = memref.cast %[[V2]]
  // CHECK: %[[K2:.*]] = arith.constant 3 : i32
  // CHECK: call @distopt_conv2d_f32(%{{.*}}, %[[F2]], %{{.*}}, %[[K2]],
  // CHECK-NOT: linalg.generic
  // CHECK-NOT: memref.alloc() : memref<16x16x3x3xf32>
  %copy = memref.alloc() : memref<16x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w1 : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %v1 = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%o1 : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v1 : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o1 : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w2 : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %v2 = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%o2 : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v2 : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o2 : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return %o1, %o2 : memref<2x1x16x6x6xf32>, memref<2x1x16x6x6xf32>
}

// -----

// The flipped copy is also returned: the call reads the copy (kind 1),
// which stays.
#flip = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 2, -d3 + 2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#spread = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @copy_read_elsewhere
func.func @copy_read_elsewhere(%g: memref<2x1x16x8x8xf32>, %w: memref<16x16x3x3xf32>) -> (memref<16x16x3x3xf32>, memref<2x1x16x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<2x1x16x6x6xf32>
  // CHECK: %[[COPY:.*]] = memref.alloc() : memref<16x16x3x3xf32>
  // CHECK: linalg.generic {{.*}} outs(%[[COPY]] : memref<16x16x3x3xf32>)
  // CHECK: %[[V:.*]] = memref.expand_shape %[[COPY]]
  // CHECK: %[[F:.*]] = memref.cast %[[V]]
  // CHECK: %[[K:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_conv2d_f32(%{{.*}}, %[[F]], %{{.*}}, %[[K]],
  // CHECK: return %[[COPY]],
  %copy = memref.alloc() : memref<16x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %v = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return %copy, %o : memref<16x16x3x3xf32>, memref<2x1x16x6x6xf32>
}

// -----

// The filter is overwritten between its flipped copy and the call: the
// call reads the copy (kind 1), which stays.
#flip = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 2, -d3 + 2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#spread = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @filter_written_after_copy
func.func @filter_written_after_copy(%g: memref<2x1x16x8x8xf32>, %w: memref<16x16x3x3xf32>) -> memref<2x1x16x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<2x1x16x6x6xf32>
  // CHECK: %[[COPY:.*]] = memref.alloc() : memref<16x16x3x3xf32>
  // CHECK: linalg.generic {{.*}} outs(%[[COPY]] : memref<16x16x3x3xf32>)
  // CHECK: %[[V:.*]] = memref.expand_shape %[[COPY]]
  // CHECK: %[[F:.*]] = memref.cast %[[V]]
  // CHECK: %[[K:.*]] = arith.constant 1 : i32
  // CHECK: call @distopt_conv2d_f32(%{{.*}}, %[[F]], %{{.*}}, %[[K]],
  %copy = memref.alloc() : memref<16x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %v = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%w : memref<16x16x3x3xf32>)
  linalg.fill ins(%zero : f32) outs(%o : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return %o : memref<2x1x16x6x6xf32>
}

// -----

// The second copy overwrites the buffer before the first call reads it:
// that call reads the second filter's copy, so both calls keep reading the
// buffer (kind 1) and the copies stay.
#flip = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 2, -d3 + 2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#spread = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#filter = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @copy_overwritten_before_call
// CHECK-COUNT-2: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: %[[K1:.*]] = arith.constant 1 : i32
// CHECK: call @distopt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[K1]],
// CHECK: %[[K2:.*]] = arith.constant 1 : i32
// CHECK: call @distopt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[K2]],
func.func @copy_overwritten_before_call(%g: memref<2x1x16x8x8xf32>, %w1: memref<16x16x3x3xf32>, %w2: memref<16x16x3x3xf32>) -> (memref<2x1x16x6x6xf32>, memref<2x1x16x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %o1 = memref.alloc() : memref<2x1x16x6x6xf32>
  %o2 = memref.alloc() : memref<2x1x16x6x6xf32>
  %copy = memref.alloc() : memref<16x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w1 : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %v1 = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.generic {indexing_maps = [#flip, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w2 : memref<16x16x3x3xf32>) outs(%copy : memref<16x16x3x3xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %v2 = memref.expand_shape %copy [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32> into memref<1x16x16x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%o1 : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v1 : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o1 : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%o2 : memref<2x1x16x6x6xf32>)
  linalg.generic {indexing_maps = [#spread, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %v2 : memref<2x1x16x8x8xf32>, memref<1x16x16x3x3xf32>) outs(%o2 : memref<2x1x16x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return %o1, %o2 : memref<2x1x16x6x6xf32>, memref<2x1x16x6x6xf32>
}
