// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false fuse-pointwise=false})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 vector-access=false fuse-pointwise=false max-argument-bytes=100})" | FileCheck %s --check-prefix=SMALL

// Horizontal mapping: independent ops in one nest, each a range of its
// blocks; ops that conflict in later nests, by level. (Without
// fuse-pointwise, which would make some of these pointwise chains one op:
// map_to_gpu_pointwise.mlir.)

// Two updates of each of two parameters (the momentum, then the parameter
// reading it), as an optimizer writes them: the two momenta are
// independent (level 0), so are the two parameters (level 1): two nests of
// 8 + 3 blocks, not four; the first parameter's update moves after the
// second momentum's.
// CHECK-LABEL: func.func @updates
// CHECK:         scf.parallel (%[[BX:.*]]) = (%{{.*}}) to (%[[C11:.*]]) step
// CHECK:           %[[M1:.*]] = arith.cmpi ult, %[[BX]], %[[C8:.*]] : index
// CHECK:           scf.if %[[M1]] {
// CHECK:             memref.store %{{.*}}, %arg2[
// CHECK:           } else {
// CHECK:             affine.apply #{{.*}}(%[[BX]])
// CHECK:             memref.store %{{.*}}, %arg3[
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c11{{.*}}) step
// CHECK:             memref.store %{{.*}}, %arg0[
// CHECK:             memref.store %{{.*}}, %arg1[
// CHECK-NOT:     scf.parallel
// CHECK:         return
// With at most 100 bytes of kernel arguments per launch, each op alone.
// SMALL-LABEL: func.func @updates
// SMALL-COUNT-4: processor = block_x
// SMALL-NOT:     processor = block_x
// SMALL:         return
func.func @updates(%p1: memref<1000xf32>, %p2: memref<300xf32>, %m1: memref<1000xf32>, %m2: memref<300xf32>,
                   %g1: memref<1000xf32>, %g2: memref<300xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%g1 : memref<1000xf32>) outs(%m1 : memref<1000xf32>) {
  ^bb0(%g: f32, %m: f32):
    %s = arith.addf %g, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%m1 : memref<1000xf32>) outs(%p1 : memref<1000xf32>) {
  ^bb0(%m: f32, %p: f32):
    %s = arith.subf %p, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%g2 : memref<300xf32>) outs(%m2 : memref<300xf32>) {
  ^bb0(%g: f32, %m: f32):
    %s = arith.addf %g, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%m2 : memref<300xf32>) outs(%p2 : memref<300xf32>) {
  ^bb0(%m: f32, %p: f32):
    %s = arith.subf %p, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A temporary: allocated before its first writer, freed after its last
// reader in the new order. The ops nothing later depends on (the reader,
// the independent op that came after the free) wait for the last level and
// share its launch.
// CHECK-LABEL: func.func @temporary
// CHECK:         %[[T:.*]] = memref.alloc() : memref<256xf32>
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %[[T]][
// CHECK:         scf.parallel
// CHECK:           memref.load %[[T]][
// CHECK:           memref.store %{{.*}}, %arg1[
// CHECK:           memref.store %{{.*}}, %arg2[
// CHECK:         memref.dealloc %[[T]] : memref<256xf32>
// CHECK-NEXT:    return
func.func @temporary(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<256xf32>) {
  %t = memref.alloc() : memref<256xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<256xf32>) outs(%t : memref<256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%t : memref<256xf32>) outs(%b : memref<256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }
  memref.dealloc %t : memref<256xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<256xf32>) outs(%c : memref<256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product's library call is scheduled too: the copy of its output comes
// after it, a level later; the independent fill, which nothing depends on,
// joins the copy's launch.
// CHECK-LABEL: func.func @around_a_product
// CHECK:         call @distopt_matmul_f32
// CHECK:         scf.parallel
// CHECK:           memref.load %arg2[
// CHECK:           memref.store %{{.*}}, %arg3[
// CHECK-NOT:     scf.parallel
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @around_a_product(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>, %d: memref<16xf32>, %e: memref<4x4xf32>) {
  %ua = memref.cast %a : memref<4x4xf32> to memref<*xf32>
  %ub = memref.cast %b : memref<4x4xf32> to memref<*xf32>
  %uc = memref.cast %c : memref<4x4xf32> to memref<*xf32>
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %no = arith.constant 0 : i32
  call @distopt_matmul_f32(%ua, %ub, %uc, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%e : memref<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      outs(%d : memref<16xf32>) {
  ^bb0(%o: f32):
    %z = arith.constant 0.0 : f32
    linalg.yield %z : f32
  }
  return
}

// -----

// A product reads its A and B and writes only its C: the two products of
// one input (q and k of a layer) are one level, one grouped call; a
// product that overwrites their input waits for both, a level later with
// the copies of their outputs (its library call first, then the copies'
// one launch).
// CHECK-LABEL: func.func @products_of_one_input
// CHECK:         memref.alloc() : memref<2x23xi64>
// CHECK-NOT:     scf.parallel
// CHECK:         call @distopt_matmul_group_f32(
// CHECK-NOT:     scf.parallel
// CHECK:         call @distopt_matmul_f32(
// CHECK:         scf.parallel
// CHECK:           memref.load %arg3[
// CHECK:           memref.load %arg4[
// CHECK-NOT:     scf.parallel
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @products_of_one_input(%x: memref<4x4xf32>, %wq: memref<4x4xf32>, %wk: memref<4x4xf32>, %q: memref<4x4xf32>, %k: memref<4x4xf32>, %cq: memref<4x4xf32>, %ck: memref<4x4xf32>) {
  %ux = memref.cast %x : memref<4x4xf32> to memref<*xf32>
  %uwq = memref.cast %wq : memref<4x4xf32> to memref<*xf32>
  %uwk = memref.cast %wk : memref<4x4xf32> to memref<*xf32>
  %uq = memref.cast %q : memref<4x4xf32> to memref<*xf32>
  %uk = memref.cast %k : memref<4x4xf32> to memref<*xf32>
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %no = arith.constant 0 : i32
  call @distopt_matmul_f32(%ux, %uwq, %uq, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%q : memref<4x4xf32>) outs(%cq : memref<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  call @distopt_matmul_f32(%ux, %uwk, %uk, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%k : memref<4x4xf32>) outs(%ck : memref<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  // (Writes %x, which both products above read: after them.)
  call @distopt_matmul_f32(%uq, %uk, %ux, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  return
}

// -----

// A part's arguments are distinct when every call passes distinct
// buffers: its two independent ops share a nest. @aliased is called with
// one buffer as both arguments: its ops stay apart (the second reads what
// the first wrote).
// CHECK-LABEL: func.func private @distinct
// CHECK:         scf.parallel
// CHECK:           scf.if
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func private @aliased
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         return
func.func private @distinct(%x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%x : memref<8xf32>) {
  ^bb0(%o: f32):
    %one = arith.constant 1.0 : f32
    linalg.yield %one : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%y : memref<8xf32>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}
func.func private @aliased(%x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%x : memref<8xf32>) {
  ^bb0(%o: f32):
    %one = arith.constant 1.0 : f32
    linalg.yield %one : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%y : memref<8xf32>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}
func.func @step(%a: memref<8xf32>, %b: memref<8xf32>) {
  call @distinct(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  call @aliased(%a, %a) : (memref<8xf32>, memref<8xf32>) -> ()
  return
}
