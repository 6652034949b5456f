// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128})" | FileCheck %s
// RUN: dist-opt %s -split-input-file --pass-pipeline="builtin.module(dist-map-to-gpu{block-size=128 group-products=false})" | FileCheck %s --check-prefix=OFF

// Two independent f32 products (a strided view of a weight; a batch of A's
// times a transposed B) are one distopt_matmul_group_f32 call of a 2-row
// table (distopt/Runtime/ProductGroup.h) the host writes: each row the
// call's scalars (batch, m, n, k, transA, transB, batchedA, batchedB), then
// A, B and C as the address of the first element (aligned pointer + offset
// in bytes), sizes r-2 and r-1, strides r-2 and r-3 (0 at rank 2). The
// free of the input both read follows the grouped call.
// CHECK-LABEL: func.func @independent
// CHECK-NOT:     call @distopt_matmul_f32
// CHECK:         %[[TABLE:.*]] = memref.alloc() : memref<2x23xi64>
// CHECK:         memref.store %c1_i64, %[[TABLE]][%c0{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}]
// CHECK:         memref.store %c8_i64, %[[TABLE]][%c0{{(_[0-9]+)?}}, %c3{{(_[0-9]+)?}}]
// CHECK:         %{{.*}}, %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[VIEW:.*]] : memref<8x4xf32, strided<[4, 1], offset: 32>>
// CHECK:         %[[POINTER:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK:         %[[BYTES:.*]] = arith.muli %[[OFFSET]], %c4{{(_[0-9]+)?}} : index
// CHECK:         %[[ADDRESS:.*]] = arith.addi %[[POINTER]], %[[BYTES]] : index
// CHECK:         %[[WORD:.*]] = arith.index_cast %[[ADDRESS]] : index to i64
// CHECK:         memref.store %[[WORD]], %[[TABLE]][%c0{{(_[0-9]+)?}}, %c13{{(_[0-9]+)?}}]
// CHECK:         memref.store %{{.*}}, %[[TABLE]][%c0{{(_[0-9]+)?}}, %c17{{(_[0-9]+)?}}]
// CHECK:         memref.store %c8_i64, %[[TABLE]][%c1{{(_[0-9]+)?}}, %c3{{(_[0-9]+)?}}]
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}:3, %[[STRIDES:.*]]:3 = memref.extract_strided_metadata %arg3 : memref<2x4x4xf32>
// CHECK:         %[[BATCH_STRIDE:.*]] = arith.index_cast %[[STRIDES]]#0 : index to i64
// CHECK:         memref.store %[[BATCH_STRIDE]], %[[TABLE]][%c1{{(_[0-9]+)?}}, %c22{{(_[0-9]+)?}}]
// CHECK:         %[[ROWS:.*]] = memref.cast %[[TABLE]] : memref<2x23xi64> to memref<?x23xi64>
// CHECK:         call @distopt_matmul_group_f32(%[[ROWS]]) : (memref<?x23xi64>) -> ()
// CHECK:         memref.dealloc %[[TABLE]]
// CHECK:         memref.dealloc %alloc : memref<4x8xf32>
// CHECK-NOT:     call @distopt_matmul
// CHECK:         func.func private @distopt_matmul_group_f32(memref<?x23xi64>) attributes {distopt.sync_buffers, llvm.emit_c_interface}
// OFF-LABEL: func.func @independent
// OFF-COUNT-2:   call @distopt_matmul_f32(
// OFF-NOT:       distopt_matmul_group_f32
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @independent(%w: memref<16x4xf32>, %bx: memref<2x4x8xf32>, %c: memref<4x4xf32>, %bc: memref<2x4x4xf32>) {
  %x = memref.alloc() : memref<4x8xf32>
  %f = arith.constant 1.0 : f32
  linalg.fill ins(%f : f32) outs(%x : memref<4x8xf32>)
  %one = arith.constant 1 : i64
  %two = arith.constant 2 : i64
  %four = arith.constant 4 : i64
  %eight = arith.constant 8 : i64
  %no = arith.constant 0 : i32
  %yes = arith.constant 1 : i32
  %wv = memref.subview %w[8, 0] [8, 4] [1, 1] : memref<16x4xf32> to memref<8x4xf32, strided<[4, 1], offset: 32>>
  %ux = memref.cast %x : memref<4x8xf32> to memref<*xf32>
  %uw = memref.cast %wv : memref<8x4xf32, strided<[4, 1], offset: 32>> to memref<*xf32>
  %uc = memref.cast %c : memref<4x4xf32> to memref<*xf32>
  %ubx = memref.cast %bx : memref<2x4x8xf32> to memref<*xf32>
  %ubc = memref.cast %bc : memref<2x4x4xf32> to memref<*xf32>
  call @distopt_matmul_f32(%ux, %uw, %uc, %one, %four, %four, %eight, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  call @distopt_matmul_f32(%ubx, %ux, %ubc, %two, %four, %four, %eight, %no, %yes, %yes, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  memref.dealloc %x : memref<4x8xf32>
  return
}

// -----

// A product of the other's result is a level later: two calls, no group.
// CHECK-LABEL: func.func @dependent
// OFF-LABEL: func.func @dependent
// CHECK-NOT:     distopt_matmul_group_f32
// CHECK-COUNT-2: call @distopt_matmul_f32(
// CHECK-NOT:     distopt_matmul_group_f32
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @dependent(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>, %d: memref<4x4xf32>) {
  %ua = memref.cast %a : memref<4x4xf32> to memref<*xf32>
  %ub = memref.cast %b : memref<4x4xf32> to memref<*xf32>
  %uc = memref.cast %c : memref<4x4xf32> to memref<*xf32>
  %ud = memref.cast %d : memref<4x4xf32> to memref<*xf32>
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %no = arith.constant 0 : i32
  call @distopt_matmul_f32(%ua, %ub, %uc, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  call @distopt_matmul_f32(%uc, %ub, %ud, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  return
}

// -----

// 16-bit products group by element type (a mixed precision step's bf16
// layers): the two bf16 products of the level are one
// distopt_matmul_group_bf16 call; the f32 product beside them, the only
// one of its type, stays its own call.
// CHECK-LABEL: func.func @bf16
// CHECK-NOT:     call @distopt_matmul_bf16(
// CHECK:         call @distopt_matmul_f32(
// CHECK:         call @distopt_matmul_group_bf16(%{{.*}}) : (memref<?x23xi64>) -> ()
// CHECK-NOT:     call @distopt_matmul_bf16(
// CHECK:         return
// CHECK:         func.func private @distopt_matmul_group_bf16(memref<?x23xi64>) attributes {distopt.sync_buffers, llvm.emit_c_interface}
// OFF-LABEL:     func.func @bf16
// OFF-COUNT-2:   call @distopt_matmul_bf16(
// OFF-NOT:       distopt_matmul_group_bf16
func.func private @distopt_matmul_bf16(memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @bf16(%a: memref<4x4xbf16>, %b: memref<4x4xbf16>, %c: memref<4x4xbf16>, %d: memref<4x4xbf16>, %x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  %ua = memref.cast %a : memref<4x4xbf16> to memref<*xbf16>
  %ub = memref.cast %b : memref<4x4xbf16> to memref<*xbf16>
  %uc = memref.cast %c : memref<4x4xbf16> to memref<*xbf16>
  %ud = memref.cast %d : memref<4x4xbf16> to memref<*xbf16>
  %ux = memref.cast %x : memref<4x4xf32> to memref<*xf32>
  %uy = memref.cast %y : memref<4x4xf32> to memref<*xf32>
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %no = arith.constant 0 : i32
  call @distopt_matmul_bf16(%ua, %ub, %uc, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  call @distopt_matmul_bf16(%ua, %ub, %ud, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xbf16>, memref<*xbf16>, memref<*xbf16>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  call @distopt_matmul_f32(%ux, %ux, %uy, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  return
}

// -----

// One cast as both operands of a product (x times its transpose, after
// CSE), grouped with another product of x: both calls and the cast go,
// each erased once.
// CHECK-LABEL: func.func @one_cast_twice
// CHECK-NOT:     call @distopt_matmul_f32
// CHECK:         memref.alloc() : memref<2x23xi64>
// CHECK:         call @distopt_matmul_group_f32(
// CHECK-NOT:     memref.cast %arg0 : memref<4x4xf32> to memref<*xf32>
// CHECK:         return
func.func private @distopt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32)
func.func @one_cast_twice(%x: memref<4x4xf32>, %w: memref<4x4xf32>, %c: memref<4x4xf32>, %d: memref<4x4xf32>) {
  %ux = memref.cast %x : memref<4x4xf32> to memref<*xf32>
  %uw = memref.cast %w : memref<4x4xf32> to memref<*xf32>
  %uc = memref.cast %c : memref<4x4xf32> to memref<*xf32>
  %ud = memref.cast %d : memref<4x4xf32> to memref<*xf32>
  %one = arith.constant 1 : i64
  %four = arith.constant 4 : i64
  %no = arith.constant 0 : i32
  %yes = arith.constant 1 : i32
  call @distopt_matmul_f32(%ux, %ux, %uc, %one, %four, %four, %four, %no, %yes, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  call @distopt_matmul_f32(%ux, %uw, %ud, %one, %four, %four, %four, %no, %no, %no, %no) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i32, i32, i32, i32) -> ()
  return
}

// -----

// A grouped call already there (the pass run again) names its buffers only
// in its table: it stays after the op before it, which may write what the
// products read.
// CHECK-LABEL: func.func @grouped_already
// CHECK:         processor = block_x
// CHECK:         call @distopt_matmul_group_f32(%arg2)
// CHECK-NEXT:    return
func.func private @distopt_matmul_group_f32(memref<?x23xi64>)
func.func @grouped_already(%x: memref<16xf32>, %y: memref<16xf32>, %table: memref<?x23xi64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  call @distopt_matmul_group_f32(%table) : (memref<?x23xi64>) -> ()
  return
}
