// RUN: dist-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(dist-map-to-gpu))"
// RUN: not dist-opt %s --pass-pipeline="builtin.module(func.func(dist-map-to-gpu{block-size=2048}))" 2>&1 | FileCheck %s --check-prefix=BLOCK

// BLOCK: error: dist-map-to-gpu: block-size must be 1 to 1024, got 2048

func.func @dynamic(%a: memref<?xf32>, %b: memref<?xf32>) {
  // expected-error @below {{has a dynamic iteration space, which dist-map-to-gpu cannot map}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

func.func @tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{must run on buffers to be mapped to a GPU grid}}
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// An output written at a reduction loop's index (each element's points
// would race): refused, not mapped.
func.func @output_at_reduction(%x: memref<64x16xf32>, %c: memref<64xf32>) {
  // expected-error @below {{writes output #0 at the index of reduction loop d0, which dist-map-to-gpu cannot map (the parallel points would race on its elements)}}
  linalg.generic {indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (k)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x16xf32>) outs(%c : memref<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  return
}
