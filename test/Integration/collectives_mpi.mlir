// The lowered collectives between 2 processes, checked on rank 0's results:
// an all-to-all that moves a split from rows to columns, a broadcast from
// rank 1, a reduce-scatter along dim 1 and an all-gather along dim 1.
// REQUIRES: mpi
// RUN: dist-opt %s --dist-to-runtime --dist-lower-cpu -o %t.ll.mlir
// RUN: %mpirun -np 2 mlir-runner %t.ll.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so,%mlir_lib_dir/libmlir_runner_utils.so,%distrt_lib | FileCheck %s

dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}

func.func private @printMemrefF32(memref<*xf32>)
func.func private @distrt_mlir_init()
func.func private @distrt_mlir_finalize()
func.func private @distrt_mlir_rank() -> i64

func.func @print(%t: tensor<*xf32>) {
  %m = bufferization.to_buffer %t : tensor<*xf32> to memref<*xf32>
  func.call @printMemrefF32(%m) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  func.call @distrt_mlir_init() : () -> ()
  %x = arith.constant dense<[[0.0, 1.0], [10.0, 11.0], [20.0, 21.0], [30.0, 31.0]]> : tensor<4x2xf32>
  // Rank r holds rows 2r, 2r+1.
  %rows = dist.local_slice %x on @mesh axes = ["x"] dim = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  // Split by rows -> split by columns: rank r gets column r of x.
  %cols = dist.all_to_all %rows on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<2x2xf32> -> tensor<4x1xf32>
  // Rank 1's rows, everywhere.
  %b = dist.broadcast %rows on @mesh axes = ["x"] root = 1 : tensor<2x2xf32>
  // Sum of both ranks' rows, each keeping its column.
  %rs = dist.reduce_scatter %rows on @mesh axes = ["x"] scatter_dims = [1] : tensor<2x2xf32> -> tensor<2x1xf32>
  // The columns back together: x whole again.
  %g = dist.all_gather %cols on @mesh axes = ["x"] gather_dim = 1 : tensor<4x1xf32> -> tensor<4x2xf32>
  %rank = func.call @distrt_mlir_rank() : () -> i64
  %c0 = arith.constant 0 : i64
  %first = arith.cmpi eq, %rank, %c0 : i64
  scf.if %first {
    // CHECK: sizes = [4, 1]
    // CHECK-NEXT: [0],
    // CHECK-NEXT: [10],
    // CHECK-NEXT: [20],
    // CHECK-NEXT: [30]]
    %p0 = tensor.cast %cols : tensor<4x1xf32> to tensor<*xf32>
    func.call @print(%p0) : (tensor<*xf32>) -> ()
    // CHECK: sizes = [2, 2]
    // CHECK-NEXT: {{\[}}[20,   21],
    // CHECK-NEXT: [30,   31]]
    %p1 = tensor.cast %b : tensor<2x2xf32> to tensor<*xf32>
    func.call @print(%p1) : (tensor<*xf32>) -> ()
    // CHECK: sizes = [2, 1]
    // CHECK-NEXT: {{\[}}[20],
    // CHECK-NEXT: [40]]
    %p2 = tensor.cast %rs : tensor<2x1xf32> to tensor<*xf32>
    func.call @print(%p2) : (tensor<*xf32>) -> ()
    // CHECK: sizes = [4, 2]
    // CHECK-NEXT: {{\[}}[0,   1],
    // CHECK-NEXT: [10,   11],
    // CHECK-NEXT: [20,   21],
    // CHECK-NEXT: [30,   31]]
    %p3 = tensor.cast %g : tensor<4x2xf32> to tensor<*xf32>
    func.call @print(%p3) : (tensor<*xf32>) -> ()
  }
  func.call @distrt_mlir_finalize() : () -> ()
  return
}
