// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 fuse-pointwise=false})" | FileCheck %s --check-prefix=OFF

// A bias add, then an activation of the sum that also reads the add's
// input, the sum kept (an argument: the backward reads it): one op, so one
// launch, storing both; the activation takes the sum the thread just
// computed, and the input both read is loaded once. The free of the
// add's input between them follows the fused launch.
// CHECK-LABEL: func.func @bias_then_activation
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             %[[X:.*]] = memref.load %alloc[
// CHECK:             %[[B:.*]] = memref.load %arg0[
// CHECK-NOT:         memref.load
// CHECK:             %[[SUM:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK:             %[[T:.*]] = math.tanh %[[SUM]] : f32
// CHECK:             %[[Y:.*]] = arith.mulf %[[T]], %[[X]] : f32
// CHECK:             memref.store %[[SUM]], %arg1[
// CHECK:             memref.store %[[Y]], %arg2[
// CHECK:         processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         memref.dealloc %alloc
// OFF-LABEL: func.func @bias_then_activation
// OFF-COUNT-2:   processor = block_x
func.func private @produce(memref<4x8xf32>)
func.func @bias_then_activation(%bias: memref<8xf32>, %h: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %x = memref.alloc() : memref<4x8xf32>
  call @produce(%x) : (memref<4x8xf32>) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : memref<4x8xf32>, memref<8xf32>) outs(%h : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = math.tanh %a : f32
    %m = arith.mulf %s, %b : f32
    linalg.yield %m : f32
  }
  memref.dealloc %t : memref<4x8xf32>
  memref.dealloc %x : memref<4x8xf32>
  return
}

// -----

// The consumer reads the sum transposed (another thread's element): two
// launches.
// CHECK-LABEL: func.func @transposed
// CHECK-COUNT-2: processor = block_x
func.func @transposed(%x: memref<8x8xf32>, %h: memref<8x8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%h : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.tanh %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The consumer overwrites the producer's input, which the producer reads
// transposed (another thread's element: a fused op would race): two
// launches.
// CHECK-LABEL: func.func @overwrites_input
// CHECK-COUNT-2: processor = block_x
func.func @overwrites_input(%x: memref<8x8xf32>, %h: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%h : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<8x8xf32>) outs(%x : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.tanh %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The consumer reads another buffer the producer writes (through a map of
// its own): two launches.
// CHECK-LABEL: func.func @reads_other_output
// CHECK-COUNT-2: processor = block_x
func.func @reads_other_output(%x: memref<8x8xf32>, %h: memref<8x8xf32>, %g: memref<8x8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%h, %g : memref<8x8xf32>, memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s, %a : f32, f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h, %g : memref<8x8xf32>, memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}
