// Executes a tiny two-layer MLP training step (forward, backward, SGD with
// momentum 0.9) lowered by dist-lower-cpu and JIT-run by mlir-runner, and
// checks the loss, the updated parameters and the momentum buffers against
// an independent NumPy computation of the same step (relative 1e-5).
// RUN: dist-opt %s --dist-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so,%mlir_lib_dir/libmlir_runner_utils.so,%cpu_lib > %t.out
// RUN: %python %S/mlp_step_reference.py %t.out
// The same with the matrix products as loops and libm's exp and log.
// RUN: dist-opt %s --dist-lower-cpu="blas=false approximate-math=false" -o %t.loops.mlir
// RUN: FileCheck %s --check-prefix=LOOPS < %t.loops.mlir
// LOOPS-NOT: distopt_matmul_f32
// LOOPS-DAG: llvm.intr.exp
// LOOPS-DAG: llvm.intr.log
// RUN: mlir-runner %t.loops.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so,%mlir_lib_dir/libmlir_runner_utils.so > %t.loops.out
// RUN: %python %S/mlp_step_reference.py %t.loops.out

func.func @train_step(
    %w1: tensor<5x3xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
    %b1: tensor<5xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
    %w2: tensor<2x5xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
    %b2: tensor<2xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
    %m_w1: tensor<5x3xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
    %x: tensor<4x3xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<5x3xf32> {train.role = #train.role<param>, train.name = "fc1.weight"},
        tensor<5xf32> {train.role = #train.role<param>, train.name = "fc1.bias"},
        tensor<2x5xf32> {train.role = #train.role<param>, train.name = "fc2.weight"},
        tensor<2xf32> {train.role = #train.role<param>, train.name = "fc2.bias"},
        tensor<5x3xf32> {train.role = #train.role<opt_state>, train.name = "fc1.weight.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xw1 = train.matmul %x, %w1 {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  %z1 = train.add %xw1, %b1 : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %h = train.relu %z1 : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %hw2 = train.matmul %h, %w2 {transpose_rhs} : (tensor<4x5xf32>, tensor<2x5xf32>) -> tensor<4x2xf32>
  %logits = train.add %hw2, %b2 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x2xf32>, tensor<4xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<4x2xf32>, tensor<4xi32>) -> tensor<4x2xf32>
  %dw2 = train.matmul %dlogits, %h {transpose_lhs} : (tensor<4x2xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  %db2 = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4x2xf32>) -> tensor<2xf32>
  %dh = train.matmul %dlogits, %w2 : (tensor<4x2xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %active = train.compare %z1, %zero {direction = #train.compare_direction<gt>} : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xi1>
  %dz1 = train.select %active, %dh, %zero : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  %dw1 = train.matmul %dz1, %x {transpose_lhs} : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %db1 = train.reduce %dz1 {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4x5xf32>) -> tensor<5xf32>
  %w1n, %m_w1n = train.sgd %w1, %dw1, %lr, %m_w1 {momentum = 9.000000e-01 : f64} : (tensor<5x3xf32>, tensor<5x3xf32>, tensor<f32>, tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>)
  %b1n = train.sgd %b1, %db1, %lr {weight_decay = 1.000000e-02 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  %w2n = train.sgd %w2, %dw2, %lr : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %b2n = train.sgd %b2, %db2, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %w1n, %b1n, %w2n, %b2n, %m_w1n, %loss : tensor<5x3xf32>, tensor<5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<f32>
}

func.func private @printMemrefF32(memref<*xf32>)

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
  %r:6 = call @train_step(%w1, %b1, %w2, %b2, %m, %x, %y, %lr) : (tensor<5x3xf32>, tensor<5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<4x3xf32>, tensor<4xi32>, tensor<f32>) -> (tensor<5x3xf32>, tensor<5xf32>, tensor<2x5xf32>, tensor<2xf32>, tensor<5x3xf32>, tensor<f32>)
  %p0 = tensor.cast %r#5 : tensor<f32> to tensor<*xf32>
  call @print(%p0) : (tensor<*xf32>) -> ()
  %p1 = tensor.cast %r#0 : tensor<5x3xf32> to tensor<*xf32>
  call @print(%p1) : (tensor<*xf32>) -> ()
  %p2 = tensor.cast %r#1 : tensor<5xf32> to tensor<*xf32>
  call @print(%p2) : (tensor<*xf32>) -> ()
  %p3 = tensor.cast %r#2 : tensor<2x5xf32> to tensor<*xf32>
  call @print(%p3) : (tensor<*xf32>) -> ()
  %p4 = tensor.cast %r#3 : tensor<2xf32> to tensor<*xf32>
  call @print(%p4) : (tensor<*xf32>) -> ()
  %p5 = tensor.cast %r#4 : tensor<5x3xf32> to tensor<*xf32>
  call @print(%p5) : (tensor<*xf32>) -> ()
  return
}
