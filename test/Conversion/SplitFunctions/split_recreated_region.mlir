// RUN: dist-opt %s --dist-split-functions=ops-per-function=2 | FileCheck %s

// A recreated op with a region (a linalg.generic computed from constants
// alone) read by a later part: the part clones it with its body, and the
// values of that body are no arguments of the call (they were, and the
// call read a value of the erased original: a crash in the verifier).
// CHECK-LABEL: func.func private @region_part0
// CHECK-SAME:      (%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         return
// CHECK-LABEL: func.func private @region_part1
// CHECK-SAME:      (%[[B:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[G:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK:           linalg.yield
// CHECK:         %[[D:.*]] = arith.subf %[[B]], %[[X]]
// CHECK:         arith.mulf %[[D]], %[[G]]
// CHECK-LABEL: func.func @region
// CHECK-SAME:      (%[[ARG:.*]]: tensor<4xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         %[[P0:.*]] = call @region_part0(%[[ARG]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[P1:.*]] = call @region_part1(%[[P0]], %[[ARG]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK:         return %[[P1]]
func.func @region(%x: tensor<4xf32> {train.role = #train.role<param>}) -> tensor<4xf32> {
  %c = arith.constant dense<2.0> : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %a = arith.addf %x, %x : tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  %d = arith.subf %b, %x : tensor<4xf32>
  %f = arith.mulf %d, %g : tensor<4xf32>
  return %f : tensor<4xf32>
}
