// The MPI backend's 16-bit float reductions (compressed gradients): sums,
// maxima and minima of bf16 and f16 over 2 processes, each pair added in
// f32 and rounded once to the 16-bit type (nearest even), checked on rank
// 0's results. Column 0: 1 + 2^-8 is a tie in bf16 (rounds to 1), exact
// in f16; column 1: 1 + 1.5 * 2^-8 rounds up to 1 + 2^-7 in bf16, exact in
// f16; columns 2, 3: exact sums, maxima and minima.
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
  %x = arith.constant dense<[[1.0, 1.0, -2.0, 3.0], [0.00390625, 0.005859375, 5.0, -1.0]]> : tensor<2x4xf32>
  // Rank r holds row r.
  %row = dist.local_slice %x on @mesh axes = ["x"] dim = 0 : tensor<2x4xf32> -> tensor<1x4xf32>
  %b = train.convert %row : (tensor<1x4xf32>) -> tensor<1x4xbf16>
  %h = train.convert %row : (tensor<1x4xf32>) -> tensor<1x4xf16>
  %s0, %s1, %s2 = dist.all_reduce %b, %b, %b on @mesh axes = ["x"] : tensor<1x4xbf16>, tensor<1x4xbf16>, tensor<1x4xbf16>
  %bm = dist.all_reduce %b on @mesh axes = ["x"] reduction = <max> : tensor<1x4xbf16>
  %bn = dist.all_reduce %b on @mesh axes = ["x"] reduction = <min> : tensor<1x4xbf16>
  %hs = dist.all_reduce %h on @mesh axes = ["x"] : tensor<1x4xf16>
  %hm = dist.all_reduce %h on @mesh axes = ["x"] reduction = <max> : tensor<1x4xf16>
  %hn = dist.all_reduce %h on @mesh axes = ["x"] reduction = <min> : tensor<1x4xf16>
  // Rank r keeps columns 2r, 2r+1 of the bf16 sum.
  %brs = dist.reduce_scatter %b on @mesh axes = ["x"] scatter_dims = [1] : tensor<1x4xbf16> -> tensor<1x2xbf16>
  %rank = func.call @distrt_mlir_rank() : () -> i64
  %c0 = arith.constant 0 : i64
  %first = arith.cmpi eq, %rank, %c0 : i64
  scf.if %first {
    // A bucket of three bf16 sums, then bf16 max and min.
    // CHECK-COUNT-3: {{\[}}[1,   1.00781,   3,   2]]
    // CHECK: {{\[}}[1,   1,   5,   3]]
    // CHECK: {{\[}}[0.00390625,   0.00585938,   -2,   -1]]
    func.call @show4(%s0) : (tensor<1x4xbf16>) -> ()
    func.call @show4(%s1) : (tensor<1x4xbf16>) -> ()
    func.call @show4(%s2) : (tensor<1x4xbf16>) -> ()
    func.call @show4(%bm) : (tensor<1x4xbf16>) -> ()
    func.call @show4(%bn) : (tensor<1x4xbf16>) -> ()
    // f16 sum, max and min.
    // CHECK: {{\[}}[1.00391,   1.00586,   3,   2]]
    // CHECK: {{\[}}[1,   1,   5,   3]]
    // CHECK: {{\[}}[0.00390625,   0.00585938,   -2,   -1]]
    func.call @show4h(%hs) : (tensor<1x4xf16>) -> ()
    func.call @show4h(%hm) : (tensor<1x4xf16>) -> ()
    func.call @show4h(%hn) : (tensor<1x4xf16>) -> ()
    // Rank 0's half of the bf16 reduce-scatter.
    // CHECK: {{\[}}[1,   1.00781]]
    %w = train.convert %brs : (tensor<1x2xbf16>) -> tensor<1x2xf32>
    %p = tensor.cast %w : tensor<1x2xf32> to tensor<*xf32>
    func.call @print(%p) : (tensor<*xf32>) -> ()
  }
  func.call @distrt_mlir_finalize() : () -> ()
  return
}

func.func @show4(%t: tensor<1x4xbf16>) {
  %w = train.convert %t : (tensor<1x4xbf16>) -> tensor<1x4xf32>
  %p = tensor.cast %w : tensor<1x4xf32> to tensor<*xf32>
  func.call @print(%p) : (tensor<*xf32>) -> ()
  return
}

func.func @show4h(%t: tensor<1x4xf16>) {
  %w = train.convert %t : (tensor<1x4xf16>) -> tensor<1x4xf32>
  %p = tensor.cast %w : tensor<1x4xf32> to tensor<*xf32>
  func.call @print(%p) : (tensor<*xf32>) -> ()
  return
}
