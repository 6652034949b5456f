// The same tiny MLP step as mlp_step_cpu.mlir, distributed by
// --dist-mirrored (and below ZeRO-2) over 2 ranks (each gets half of the batch; the gradients
// and the loss are all-reduced through libdistrt over MPI), lowered with
// dist-to-runtime and dist-lower-cpu and run under mpirun: the replicated
// results must equal the single-device NumPy step (relative 1e-5).
// REQUIRES: mpi
// RUN: dist-opt %s --dist-mirrored=replicas=2 -o %t.step.mlir
// RUN: %python %S/Inputs/append_to_module.py %t.step.mlir %S/Inputs/mlp_step_mirrored_main.mlir > %t.all.mlir
// RUN: dist-opt %t.all.mlir --dist-to-runtime --dist-lower-cpu -o %t.ll.mlir
// RUN: %mpirun -np 2 mlir-runner %t.ll.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so,%mlir_lib_dir/libmlir_runner_utils.so,%distrt_lib,%cpu_lib > %t.out
// RUN: %python %S/mlp_step_reference.py %t.out

// ZeRO stage 2 on the same step: fc2's gradients are reduce-scattered, its
// update runs on each rank's half and is all-gathered back (fc1's dims do
// not divide over 2 and stay replicated, with a remark).
// RUN: dist-opt %s --dist-zero="stage=2 replicas=2" -o %t.zero.mlir 2>/dev/null
// RUN: %python %S/Inputs/append_to_module.py %t.zero.mlir %S/Inputs/mlp_step_mirrored_main.mlir > %t.zero.all.mlir
// RUN: dist-opt %t.zero.all.mlir --dist-to-runtime --dist-lower-cpu -o %t.zero.ll.mlir
// RUN: %mpirun -np 2 mlir-runner %t.zero.ll.mlir -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_c_runner_utils.so,%mlir_lib_dir/libmlir_runner_utils.so,%distrt_lib,%cpu_lib > %t.zero.out
// RUN: %python %S/mlp_step_reference.py %t.zero.out

dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}

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
