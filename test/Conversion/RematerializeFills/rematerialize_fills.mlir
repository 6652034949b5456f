// RUN: dist-opt %s --split-input-file --dist-rematerialize-fills | FileCheck %s

// Two paddings of one CSE'd zero fill: each gets its own fill, made before
// the producer of the slice it pads, and the padded values' later readers
// read them from the padded buffers.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @paddings
func.func @paddings(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<6x6xf32>, tensor<6x6xf32>, tensor<4x4xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e6 = tensor.empty() : tensor<6x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e6 : tensor<6x6xf32>) -> tensor<6x6xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<6x6xf32>
  // CHECK-NEXT: %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<6x6xf32>)
  // CHECK-NEXT: %[[G:.*]] = linalg.generic
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  // CHECK: %[[P:.*]] = tensor.insert_slice %[[G]] into %[[Z1]][1, 1] [4, 4] [1, 1]
  // CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %[[P]][1, 1] [4, 4] [1, 1]
  %p = tensor.insert_slice %g into %z[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
  // CHECK: %[[E2:.*]] = tensor.empty() : tensor<6x6xf32>
  // CHECK-NEXT: %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<6x6xf32>)
  // CHECK-NEXT: %[[H:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4x4xf32>)
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  // CHECK: %[[Q:.*]] = tensor.insert_slice %[[H]] into %[[Z2]][1, 1] [4, 4] [1, 1]
  %q = tensor.insert_slice %h into %z[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
  // CHECK: return %[[P]], %[[Q]], %[[S]]
  return %p, %q, %g : tensor<6x6xf32>, tensor<6x6xf32>, tensor<4x4xf32>
}

// -----

// Zeroed accumulators: each reduction gets its own fill, right before it;
// a read-only use keeps the original fill.
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @accumulators
func.func @accumulators(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0.0 : f32
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
  // CHECK-NEXT: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4xf32>)
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // CHECK: %[[Z1:.*]] = linalg.fill
  // CHECK-NEXT: linalg.generic {{.*}} outs(%[[Z1]] : tensor<4xf32>)
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  // CHECK: %[[Z2:.*]] = linalg.fill
  // CHECK-NEXT: linalg.generic {{.*}} outs(%[[Z2]] : tensor<4xf32>)
  %t = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  // CHECK: return %{{.*}}, %{{.*}}, %[[Z]]
  return %s, %t, %z : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A padding inside a loop of a slice produced outside: its fill goes
// right before the insert_slice (inside the loop).
// CHECK-LABEL: func.func @in_loop
func.func @in_loop(%a: tensor<4x4xf32>, %n: index) -> tensor<6x6xf32> {
  %c0 = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %e6 = tensor.empty() : tensor<6x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e6 : tensor<6x6xf32>) -> tensor<6x6xf32>
  // CHECK: scf.for
  // CHECK-NEXT: tensor.empty
  // CHECK-NEXT: %[[Z:.*]] = linalg.fill
  // CHECK-NEXT: tensor.insert_slice %{{.*}} into %[[Z]]
  %r = scf.for %i = %i0 to %n step %i1 iter_args(%acc = %z) -> tensor<6x6xf32> {
    %p = tensor.insert_slice %a into %z[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
    scf.yield %p : tensor<6x6xf32>
  }
  return %r : tensor<6x6xf32>
}

// -----

// A gradient spread out by strides (not a padding): its later readers keep
// reading it, not a strided view of the spread tensor.
// CHECK-LABEL: func.func @spread
func.func @spread(%g: tensor<2x2xf32>) -> (tensor<4x4xf32>, tensor<2x2xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = tensor.insert_slice %g into %z[0, 0] [2, 2] [2, 2] : tensor<2x2xf32> into tensor<4x4xf32>
  // CHECK-NOT: tensor.extract_slice
  // CHECK: %[[N:.*]] = arith.negf %arg0
  %n = arith.negf %g : tensor<2x2xf32>
  return %s, %n : tensor<4x4xf32>, tensor<2x2xf32>
}

// -----

// A scalar empty tensor CSE merged, the init of two independent scalar
// ops (two Adam updates' bias corrections) and of a fill: each
// destination use gets its own empty, so bufferization gives each its own
// buffer and the ops do not wait for one another (dist-map-to-gpu then
// launches the updates together). A larger shared empty stays shared.
#s = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar_empties
// CHECK:         %[[E0:.+]] = tensor.empty() : tensor<f32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<f32>)
// CHECK:         %[[E1:.+]] = tensor.empty() : tensor<f32>
// CHECK:         %[[E2:.+]] = tensor.empty() : tensor<f32>
// CHECK:         linalg.generic {{.*}} outs(%[[E1]], %[[E2]] : tensor<f32>, tensor<f32>)
// CHECK:         %[[E3:.+]] = tensor.empty() : tensor<f32>
// CHECK:         %[[E4:.+]] = tensor.empty() : tensor<f32>
// CHECK:         linalg.generic {{.*}} outs(%[[E3]], %[[E4]] : tensor<f32>, tensor<f32>)
// CHECK:         %[[WIDE:.+]] = tensor.empty() : tensor<4xf32>
// CHECK-NOT:     tensor.empty
// CHECK:         linalg.generic {{.*}} outs(%[[WIDE]] : tensor<4xf32>)
// CHECK:         linalg.generic {{.*}} outs(%[[WIDE]] : tensor<4xf32>)
func.func @scalar_empties(%t0: tensor<f32>, %t1: tensor<f32>, %v: tensor<4xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant 0.9 : f32
  %e = tensor.empty() : tensor<f32>
  %zero = linalg.fill ins(%c : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %a:2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%t0 : tensor<f32>) outs(%e, %e : tensor<f32>, tensor<f32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %p = math.powf %c, %in : f32
    linalg.yield %p, %p : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %b:2 = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%t1 : tensor<f32>) outs(%e, %e : tensor<f32>, tensor<f32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %p = math.powf %c, %in : f32
    linalg.yield %p, %p : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %w = tensor.empty() : tensor<4xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf32>) outs(%w : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf32>) outs(%w : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %y = arith.mulf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %zero, %a#0, %a#1, %b#0, %b#1, %x, %z : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
