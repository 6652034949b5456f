// Bad PowerSGD options and strategies it does not apply to are errors
// before or while the pipeline runs; a step with nothing worth compressing
// gets a warning.
// RUN: not dist-opt %s --dist-mirrored="replicas=2 compression=powersgd powersgd-rank=0" 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: error: dist-mirrored: powersgd-rank=0 must be at least 1
// RUN: not dist-opt %s --dist-mirrored="replicas=2 compression=topk" 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: error: dist-mirrored: compression='topk' is not one of none, powersgd
// RUN: not dist-opt %s --dist-powersgd=rank=0 2>&1 | FileCheck %s --check-prefix=PASS-RANK
// PASS-RANK: powersgd_invalid.mlir:[[# @LINE + 20]]:1: error: dist-powersgd: rank=0 must be at least 1
// RUN: not dist-opt %s --dist-hybrid="tp=2 compression=powersgd" 2>&1 | FileCheck %s --check-prefix=NO-DATA
// NO-DATA: error: dist-hybrid: compression=powersgd compresses the data-parallel gradient reductions, but hosts=1 dp=1 has no data axis
// RUN: not dist-opt %s --dist-hybrid="dp=2 tp=2 compression=powersgd" 2>&1 | FileCheck %s --check-prefix=HYBRID
// HYBRID: error: dist-hybrid: compression=powersgd compresses all-reduced gradients of data parallelism alone; not with tp, pp or zero (got tp=2 pp=1 zero=0)
// ZeRO reduce-scatters the gradients: an error at the reduction.
// RUN: not dist-opt %s --dist-zero="stage=2 replicas=2 compression=powersgd" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-powersgd: this gradient is reduce-scattered (ZeRO stage 2 or 3); PowerSGD compresses all-reduced gradients
// The 8x16 weight is too small for rank 4 ((8 + 16) * 4 * 2 >= 128): a
// warning, and the step is the plain mirrored one.
// RUN: dist-opt %s --dist-mirrored="replicas=2 compression=powersgd powersgd-rank=4" 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL: warning: dist-powersgd: no all-reduced gradient matrix is large enough to compress at rank=4: every gradient is all-reduced whole
// SMALL-NOT: powersgd.q
// SMALL: dist.all_reduce
// A second run finds the gradient compressed already: nothing more to do.
// RUN: dist-opt %s --dist-mirrored="replicas=2" -o %t.mlir
// RUN: dist-opt %t.mlir --dist-powersgd --dist-powersgd 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: warning: dist-powersgd: no all-reduced gradient matrix is large enough to compress at rank=1
// TWICE-COUNT-2: train.name = "w.powersgd.q"

func.func @train_step(
    %w: tensor<8x16xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<4x16xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x16xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %l = train.reduce %y {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x8xf32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<4x8xf32>
  %g = train.matmul %one, %x {transpose_lhs} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %nw = train.sgd %w, %g, %lr : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  return %nw, %l : tensor<8x16xf32>, tensor<f32>
}
