// The driver of mlp_step_mirrored.mlir, appended to the partitioned step
// (its local shapes exist only then): global inputs, each rank's batch
// slice, the step, and rank 0 printing the replicated results.
func.func private @printMemrefF32(memref<*xf32>)
func.func private @distrt_mlir_init()
func.func private @distrt_mlir_finalize()
func.func private @distrt_mlir_rank() -> i64

func.func @print(%t: tensor<*xf32>) {
  %m = bufferization.to_buffer %t : tensor<*xf32> to memref<*xf32>
  call @printMemrefF32(%m) : (memref<*xf32>) -> ()
  return
}

// The inputs; mlp_step_reference.py holds the same numbers.
func.func @main() {
  %w1 = arith.constant dense<[[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9], [0.05, -0.15, 0.25], [0.35, 0.45, -0.55]]> : tensor<5x3xf32>
  %b1 = arith.constant dense<[0.01, -0.02, 0.03, -0.04, 0.05]> : tensor<5xf32>
  %w2 = arith.constant dense<[[0.2, -0.1, 0.4, 0.3, -0.5], [-0.3, 0.6, -0.2, 0.1, 0.7]]> : tensor<2x5xf32>
  %b2 = arith.constant dense<[0.1, -0.1]> : tensor<2xf32>
  %m = arith.constant dense<[[0.01, 0.02, 0.03], [0.04, 0.05, 0.06], [0.07, 0.08, 0.09], [0.1, 0.11, 0.12], [0.13, 0.14, 0.15]]> : tensor<5x3xf32>
  %x = arith.constant dense<[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5], [-1.0, 0.0, 2.0], [2.0, 1.0, 0.5]]> : tensor<4x3xf32>
  %y = arith.constant dense<[0, 1, 1, 0]> : tensor<4xi32>
  %lr = arith.constant dense<0.5> : tensor<f32>
  call @distrt_mlir_init() : () -> ()
  // This rank's half of the global batch, as dist-run feeds it.
  %xl = dist.local_slice %x on @mesh axes = ["data"] dim = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  %yl = dist.local_slice %y on @mesh axes = ["data"] dim = 0 : tensor<4xi32> -> tensor<2xi32>
  %r:6 = call @train_step(%w1, %b1, %w2, %b2, %m, %xl, %yl, %lr) : (tensor<5x3xf32>, tensor<5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<2x3xf32>, tensor<2xi32>, tensor<f32>) -> (tensor<5x3xf32>, tensor<5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<f32>)
  // Every rank holds the same replicated results; rank 0 prints them.
  %rank = call @distrt_mlir_rank() : () -> i64
  %c0 = arith.constant 0 : i64
  %first = arith.cmpi eq, %rank, %c0 : i64
  scf.if %first {
    %p0 = tensor.cast %r#5 : tensor<f32> to tensor<*xf32>
    func.call @print(%p0) : (tensor<*xf32>) -> ()
    %p1 = tensor.cast %r#0 : tensor<5x3xf32> to tensor<*xf32>
    func.call @print(%p1) : (tensor<*xf32>) -> ()
    %p2 = tensor.cast %r#1 : tensor<5xf32> to tensor<*xf32>
    func.call @print(%p2) : (tensor<*xf32>) -> ()
    %p3 = tensor.cast %r#2 : tensor<2x5xf32> to tensor<*xf32>
    func.call @print(%p3) : (tensor<*xf32>) -> ()
    %p4 = tensor.cast %r#3 : tensor<2xf32> to tensor<*xf32>
    func.call @print(%p4) : (tensor<*xf32>) -> ()
    %p5 = tensor.cast %r#4 : tensor<5x3xf32> to tensor<*xf32>
    func.call @print(%p5) : (tensor<*xf32>) -> ()
  }
  call @distrt_mlir_finalize() : () -> ()
  return
}
