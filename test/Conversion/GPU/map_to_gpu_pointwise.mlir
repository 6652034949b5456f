// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false fuse-pointwise=false})" | FileCheck %s --check-prefix=OFF

// A bias add, then an activation of the sum added into what its output
// holds, the sum kept (an argument: the backward reads it): one op, so one
// launch, storing both; the activation takes the sum the thread just
// computed. The free of the add's input, between the two, follows the
// fused launch.
// CHECK-LABEL: func.func @bias_then_activation
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK-DAG:         %[[X:.*]] = memref.load %alloc[
// CHECK-DAG:         %[[B:.*]] = memref.load %arg0[
// CHECK-DAG:         %[[OLD:.*]] = memref.load %arg2[
// CHECK-NOT:         memref.load
// CHECK:             %[[SUM:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK:             %[[T:.*]] = math.tanh %[[SUM]] : f32
// CHECK:             %[[Y:.*]] = arith.addf %[[T]], %[[OLD]] : f32
// CHECK:             memref.store %[[SUM]], %arg1[
// CHECK:             memref.store %[[Y]], %arg2[
// CHECK:         processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         memref.dealloc %alloc
// CHECK-NEXT:    return
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
  memref.dealloc %x : memref<4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.tanh %a : f32
    %m = arith.addf %s, %o : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A chain of three (a bias add, its activation, a scaling of that), an
// input both of the last two read through one map loaded once: one op.
// CHECK-LABEL: func.func @chain
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK-COUNT-2:     memref.load
// CHECK-NOT:         memref.load
// CHECK:             memref.store
// CHECK:             memref.store
// CHECK:             memref.store
// CHECK:         processor = block_x
// CHECK-NOT:     scf.parallel
func.func @chain(%x: memref<64xf32>, %s: memref<64xf32>, %h: memref<64xf32>, %t: memref<64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%h : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%h, %s : memref<64xf32>, memref<64xf32>) outs(%t : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = math.tanh %a : f32
    %q = arith.mulf %r, %b : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%t, %s : memref<64xf32>, memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  }
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
