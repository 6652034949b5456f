// RUN: dist-opt %s -split-input-file --dist-split-functions=ops-per-function=2 | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-split-functions=ops-per-function=0 | FileCheck %s --check-prefix=WHOLE

// Parts of two ops each; what a later part reads is returned, what a part
// reads from before it is an argument, constants are recreated.
// CHECK-LABEL: func.func private @step_part0
// CHECK-SAME:      (%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME:      attributes {distopt.sync_buffers, passthrough = ["noinline"]}
// CHECK:         %[[C:.*]] = arith.constant dense<2.000000e+00>
// CHECK:         %[[A:.*]] = arith.addf %[[X]], %[[C]]
// CHECK:         %[[B:.*]] = arith.mulf %[[A]], %[[A]]
// CHECK:         return %[[B]]
// CHECK-LABEL: func.func private @step_part1
// CHECK-SAME:      (%[[B1:.*]]: tensor<4xf32>, %[[X1:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK:         arith.constant dense<2.000000e+00>
// CHECK:         %[[D:.*]] = arith.subf %[[B1]], %[[X1]]
// CHECK:         %[[E:.*]] = arith.mulf %[[D]],
// CHECK:         return %[[D]], %[[E]]
// CHECK-LABEL: func.func private @step_part2
// CHECK-LABEL: func.func @step
// CHECK-SAME:      (%[[ARG:.*]]: tensor<4xf32> {train.role = #train.role<param>})
// CHECK-NOT:     arith.constant
// CHECK:         %[[P0:.*]] = call @step_part0(%[[ARG]])
// CHECK:         %[[P1:.*]]:2 = call @step_part1(%[[P0]], %[[ARG]])
// CHECK:         %[[P2:.*]] = call @step_part2(%[[P1]]#1, %[[P1]]#0)
// CHECK:         return %[[P2]], %[[P1]]#0
// WHOLE-LABEL: func.func @step
// WHOLE-NOT:   call
// WHOLE:       return
func.func @step(%x: tensor<4xf32> {train.role = #train.role<param>})
    -> (tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant dense<2.0> : tensor<4xf32>
  %a = arith.addf %x, %c : tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  %d = arith.subf %b, %x : tensor<4xf32>
  %e = arith.mulf %d, %c : tensor<4xf32>
  %f = arith.addf %e, %d : tensor<4xf32>
  %g = arith.mulf %f, %f : tensor<4xf32>
  return %g, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// No cut while a buffer or a nonblocking collective's request is live:
// the start and its wait stay in one part.
func.func private @start(memref<*xf32>) -> i64
func.func private @wait(i64, index) attributes {distopt.sync_buffers}
// CHECK-LABEL: func.func private @collective_part0
// CHECK:         arith.addf
// CHECK:         arith.mulf
// CHECK:         return
// CHECK-LABEL: func.func private @collective_part1
// CHECK:         bufferization.to_buffer
// CHECK:         call @start
// CHECK:         arith.addf
// CHECK:         arith.mulf
// CHECK:         call @wait
// CHECK:         return
// CHECK-LABEL: func.func @collective
// CHECK-COUNT-2: call @collective_part
// CHECK-NOT:     call
func.func @collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = arith.addf %x, %x : tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  %buffer = bufferization.to_buffer %b : tensor<4xf32> to memref<4xf32>
  %unranked = memref.cast %buffer : memref<4xf32> to memref<*xf32>
  %request = call @start(%unranked) : (memref<*xf32>) -> i64
  %c = arith.addf %b, %b : tensor<4xf32>
  %d = arith.mulf %c, %c : tensor<4xf32>
  %address = memref.extract_aligned_pointer_as_index %buffer : memref<4xf32> -> index
  call @wait(%request, %address) : (i64, index) -> ()
  return %d : tensor<4xf32>
}

// -----

// A function of several blocks stays whole.
// CHECK-LABEL: func.func @blocks
// CHECK-NOT:     call
func.func @blocks(%x: tensor<4xf32>, %p: i1) -> tensor<4xf32> {
  %a = arith.addf %x, %x : tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  cf.cond_br %p, ^bb1, ^bb2
^bb1:
  %c = arith.addf %b, %b : tensor<4xf32>
  return %c : tensor<4xf32>
^bb2:
  return %b : tensor<4xf32>
}

// -----

// A product stays with the zero fill of its output (one sgemm call for
// dist-matmul-to-blas); empty tensors are recreated, not passed.
// CHECK-LABEL: func.func private @product_part0
// CHECK-NOT:     linalg.fill
// CHECK:         return
// CHECK-LABEL: func.func private @product_part1
// CHECK-SAME:      (%{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK:         tensor.empty
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK:         return
// CHECK-LABEL: func.func @product
// CHECK-NOT:     tensor.empty
// CHECK-COUNT-2: call @product_part
func.func @product(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %x = arith.addf %a, %a : tensor<4x4xf32>
  %y = arith.mulf %x, %x : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%y, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// -----

// One zero fill read by products in two parts (as CSE leaves it) is
// recomputed in each, so the cut between them stays possible.
// CHECK-LABEL: func.func private @shared_part0
// CHECK:         tensor.empty
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK-LABEL: func.func private @shared_part1
// CHECK:         tensor.empty
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK-LABEL: func.func @shared
// CHECK-NOT:     linalg.fill
// CHECK-COUNT-2: call @shared_part
func.func @shared(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %n = linalg.matmul ins(%m, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m, %n : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A static slice (a padded value's interior) read by a later part: that
// part takes the whole padded tensor and slices it again (a slice crossing
// as an argument would be copied into a buffer of its own by
// bufferization). The part computing the slice's source slices it right
// after the source.
// CHECK-LABEL: func.func private @slices_part0
// CHECK-SAME:      (%[[X:.*]]: tensor<4x4xf32>) -> (tensor<6x6xf32>, tensor<4x4xf32>)
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK-NEXT:    %[[P:.*]] = tensor.insert_slice %[[X]] into %[[Z]][1, 1] [4, 4] [1, 1]
// CHECK-NEXT:    %[[S:.*]] = tensor.extract_slice %[[P]][1, 1] [4, 4] [1, 1]
// CHECK-NEXT:    %[[B:.*]] = arith.mulf %[[S]], %[[S]]
// CHECK-NEXT:    return %[[P]], %[[B]]
// CHECK-LABEL: func.func private @slices_part1
// CHECK-SAME:      (%[[B1:.*]]: tensor<4x4xf32>, %[[P1:.*]]: tensor<6x6xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %[[S1:.*]] = tensor.extract_slice %[[P1]][1, 1] [4, 4] [1, 1]
// CHECK-NEXT:    %[[C:.*]] = arith.subf %[[S1]], %[[B1]]
// CHECK-LABEL: func.func @slices
// CHECK-NOT:     tensor.extract_slice
// CHECK:         %[[R0:.*]]:2 = call @slices_part0
// CHECK:         call @slices_part1(%[[R0]]#1, %[[R0]]#0)
func.func @slices(%x: tensor<4x4xf32> {train.role = #train.role<param>})
    -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<6x6xf32>) -> tensor<6x6xf32>
  %p = tensor.insert_slice %x into %z[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
  %s = tensor.extract_slice %p[1, 1] [4, 4] [1, 1] : tensor<6x6xf32> to tensor<4x4xf32>
  %b = arith.mulf %s, %s : tensor<4x4xf32>
  %c = arith.subf %s, %b : tensor<4x4xf32>
  %d = arith.mulf %c, %c : tensor<4x4xf32>
  return %d : tensor<4x4xf32>
}

// -----

// A static reshape (a convolution's grouped view) read by a later part is
// made again there from the tensor it reshapes, which the part takes (the
// tensor and its view both crossing, bufferization cloned the second
// result: it aliases the first). A reshape the function returns (an update
// made on a grouped view of a parameter) stays in the part computing its
// source, where its inverse folds away.
// CHECK-LABEL: func.func private @reshapes_part0
// CHECK-SAME:      (%[[X:.*]]: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    %[[A:.*]] = arith.addf %[[X]], %[[X]]
// CHECK-NEXT:    %[[G:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [1, 4, 4]
// CHECK-NEXT:    %[[B:.*]] = arith.mulf %[[G]], %[[G]]
// CHECK-NEXT:    %[[BC:.*]] = tensor.collapse_shape %[[B]] {{\[}}[0, 1], [2]]
// CHECK-NEXT:    return %[[A]], %[[BC]]
// CHECK-LABEL: func.func private @reshapes_part1
// CHECK-SAME:      (%[[BC1:.*]]: tensor<4x4xf32>, %[[A1:.*]]: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %[[G1:.*]] = tensor.expand_shape %[[A1]] {{\[}}[0, 1], [2]] output_shape [1, 4, 4]
// CHECK-NEXT:    %[[C:.*]] = arith.subf %[[G1]], %[[G1]]
// CHECK-NEXT:    %[[CC:.*]] = tensor.collapse_shape %[[C]]
// CHECK-NEXT:    %[[D:.*]] = arith.addf %[[CC]], %[[BC1]]
// CHECK-NEXT:    return %[[D]]
// CHECK-LABEL: func.func @reshapes
// CHECK-NOT:     tensor.expand_shape
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         %[[R0:.*]]:2 = call @reshapes_part0
// CHECK-NEXT:    %[[R1:.*]] = call @reshapes_part1(%[[R0]]#1, %[[R0]]#0)
// CHECK-NEXT:    return %[[R1]], %[[R0]]#1
func.func @reshapes(%x: tensor<4x4xf32> {train.role = #train.role<param>})
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = arith.addf %x, %x : tensor<4x4xf32>
  %g = tensor.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 4] : tensor<4x4xf32> into tensor<1x4x4xf32>
  %b = arith.mulf %g, %g : tensor<1x4x4xf32>
  %bc = tensor.collapse_shape %b [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %c = arith.subf %g, %g : tensor<1x4x4xf32>
  %cc = tensor.collapse_shape %c [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %d = arith.addf %cc, %bc : tensor<4x4xf32>
  return %d, %bc : tensor<4x4xf32>, tensor<4x4xf32>
}
