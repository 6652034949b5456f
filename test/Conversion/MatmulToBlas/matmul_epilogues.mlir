// RUN: dist-opt %s --split-input-file --dist-matmul-epilogues | FileCheck %s

// A feed-forward layer's up projection: the product, its bias into the
// pre-activation the backward keeps, GELU (tanh) of that: one call that
// writes both; the product's own buffer goes.
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @up
// CHECK-NOT: memref.alloc() : memref<64x32xf32>
// CHECK: %[[D:.*]] = memref.cast %arg3 : memref<64x32xf32> to memref<*xf32>
// CHECK: %[[BIAS:.*]] = memref.cast %arg2 : memref<32xf32> to memref<*xf32>
// CHECK: %[[R:.*]] = memref.cast %arg3 : memref<64x32xf32> to memref<*xf32>
// CHECK: %[[P:.*]] = memref.cast %arg4 : memref<64x32xf32> to memref<*xf32>
// CHECK: call @distopt_matmul_epilogue_f32(%{{.*}}, %{{.*}}, %[[D]], %[[BIAS]], %[[R]], %[[P]], %c64_i64, %c32_i64, %c16_i64, %c0_i32, %c1_i32, %c2_i32)
// CHECK-NOT: linalg.generic
// CHECK-NOT: distopt_matmul_f32
// CHECK: return
// It writes D and P only (dist-map-to-gpu's scheduler reads that).
// CHECK: func.func private @distopt_matmul_epilogue_f32({{.*}}) attributes {{{.*}}distopt.written_operands = array<i64: 2, 5>
func.func @up(%x: memref<64x16xf32>, %w: memref<32x16xf32>, %b: memref<32xf32>, %act: memref<64x32xf32>, %pre: memref<64x32xf32>) {
  %c1 = arith.constant 1 : i64
  %c64 = arith.constant 64 : i64
  %c32 = arith.constant 32 : i64
  %c16 = arith.constant 16 : i64
  %f = arith.constant 0 : i32
  %t = arith.constant 1 : i32
  %h = memref.alloc() {alignment = 64 : i64} : memref<64x32xf32>
  %xu = memref.cast %x : memref<64x16xf32> to memref<*xf32>
  %wu = memref.cast %w : memref<32x16xf32> to memref<*xf32>
  %hu = memref.cast %h : memref<64x32xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %wu, %hu, %c1, %c64, %c32, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%h, %b : memref<64x32xf32>, memref<32xf32>) outs(%pre : memref<64x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %h : memref<64x32xf32>
  %c12 = arith.constant 0.044715 : f32
  %c11 = arith.constant 0.797884583 : f32
  %c10 = arith.constant 0.5 : f32
  %c9 = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]} ins(%pre : memref<64x32xf32>) outs(%act : memref<64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.mulf %1, %c12 : f32
    %3 = arith.addf %in, %2 : f32
    %4 = arith.mulf %3, %c11 : f32
    %5 = math.tanh %4 : f32
    %6 = arith.mulf %in, %c10 : f32
    %7 = arith.addf %5, %c9 : f32
    %8 = arith.mulf %6, %7 : f32
    linalg.yield %8 : f32
  }
  return
}
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {llvm.emit_c_interface, distopt.sync_buffers}

// -----

// The down projection: the bias and the residual added to the product
// (flags 1); and a bias added in place into the product's own buffer,
// which stays.
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @down
// CHECK: call @distopt_matmul_epilogue_f32({{.*}}, %c1_i32{{(_[0-9]+)?}}) :
// CHECK: %[[L:.*]] = memref.alloc() : memref<64x8xf32>
// CHECK: %[[LU:.*]] = memref.cast %[[L]] : memref<64x8xf32> to memref<*xf32>
// CHECK: call @distopt_matmul_epilogue_f32(%{{.*}}, %{{.*}}, %[[LU]], {{.*}}, %c0_i32{{(_[0-9]+)?}}) :
// CHECK-NOT: linalg.generic
// CHECK: return %[[L]]
func.func @down(%x: memref<64x16xf32>, %w: memref<32x16xf32>, %b: memref<32xf32>, %res: memref<64x32xf32>, %out: memref<64x32xf32>, %w2: memref<8x16xf32>, %b2: memref<8xf32>) -> memref<64x8xf32> {
  %c1 = arith.constant 1 : i64
  %c64 = arith.constant 64 : i64
  %c32 = arith.constant 32 : i64
  %c16 = arith.constant 16 : i64
  %c8 = arith.constant 8 : i64
  %f = arith.constant 0 : i32
  %t = arith.constant 1 : i32
  %h = memref.alloc() : memref<64x32xf32>
  %xu = memref.cast %x : memref<64x16xf32> to memref<*xf32>
  %wu = memref.cast %w : memref<32x16xf32> to memref<*xf32>
  %hu = memref.cast %h : memref<64x32xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %wu, %hu, %c1, %c64, %c32, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%res, %h, %b : memref<64x32xf32>, memref<64x32xf32>, memref<32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%r: f32, %in: f32, %bias: f32, %o: f32):
    %0 = arith.addf %in, %bias : f32
    %1 = arith.addf %r, %0 : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %h : memref<64x32xf32>
  %l = memref.alloc() : memref<64x8xf32>
  %w2u = memref.cast %w2 : memref<8x16xf32> to memref<*xf32>
  %lu = memref.cast %l : memref<64x8xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %w2u, %lu, %c1, %c64, %c8, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%l, %b2 : memref<64x8xf32>, memref<8xf32>) outs(%l : memref<64x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  return %l : memref<64x8xf32>
}
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {llvm.emit_c_interface, distopt.sync_buffers}

// -----

// Left alone: the product read again after the addition; a body that
// multiplies; columns not a multiple of 8; a write to the bias between
// the call and the addition.
#row = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @others
// CHECK-NOT: distopt_matmul_epilogue_f32
// CHECK-COUNT-4: call @distopt_matmul_f32
// CHECK-NOT: distopt_matmul_epilogue_f32
func.func @others(%x: memref<64x16xf32>, %w: memref<32x16xf32>, %b: memref<32xf32>, %out: memref<64x32xf32>, %w6: memref<12x16xf32>, %b6: memref<12xf32>, %out6: memref<64x12xf32>) -> memref<64x32xf32> {
  %c1 = arith.constant 1 : i64
  %c64 = arith.constant 64 : i64
  %c32 = arith.constant 32 : i64
  %c16 = arith.constant 16 : i64
  %c12 = arith.constant 12 : i64
  %f = arith.constant 0 : i32
  %t = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %xu = memref.cast %x : memref<64x16xf32> to memref<*xf32>
  %wu = memref.cast %w : memref<32x16xf32> to memref<*xf32>
  %h = memref.alloc() : memref<64x32xf32>
  %hu = memref.cast %h : memref<64x32xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %wu, %hu, %c1, %c64, %c32, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%h, %b : memref<64x32xf32>, memref<32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  %g = memref.alloc() : memref<64x32xf32>
  %gu = memref.cast %g : memref<64x32xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %wu, %gu, %c1, %c64, %c32, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%g, %b : memref<64x32xf32>, memref<32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %0 = arith.mulf %in, %bias : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %g : memref<64x32xf32>
  %e = memref.alloc() : memref<64x12xf32>
  %w6u = memref.cast %w6 : memref<12x16xf32> to memref<*xf32>
  %eu = memref.cast %e : memref<64x12xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %w6u, %eu, %c1, %c64, %c12, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%e, %b6 : memref<64x12xf32>, memref<12xf32>) outs(%out6 : memref<64x12xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %e : memref<64x12xf32>
  %k = memref.alloc() : memref<64x32xf32>
  %ku = memref.cast %k : memref<64x32xf32> to memref<*xf32>
  call @distopt_matmul_f32(%xu, %wu, %ku, %c1, %c64, %c32, %c16, %f, %t, %f, %f) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  linalg.fill ins(%zero : f32) outs(%b : memref<32xf32>)
  linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "parallel"]} ins(%k, %b : memref<64x32xf32>, memref<32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %k : memref<64x32xf32>
  return %h : memref<64x32xf32>
}
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) attributes {llvm.emit_c_interface, distopt.sync_buffers}
