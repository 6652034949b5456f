// A module with no gradient reduction gets a warning (nothing to do).
// RUN: dist-opt %s --dist-compress-gradients=dtype=bf16 -verify-diagnostics
// A dtype that is not a 16-bit float is an error at the step.
// RUN: not dist-opt %s --dist-compress-gradients=dtype=f8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: compress_gradients_invalid.mlir:[[# @LINE + 15]]:1: error: dist-compress-gradients: dtype='f8' is not a 16-bit float type: use bf16 or f16
// The strategies' grad-dtype option: a bad value, and a hybrid with no data
// axis, are errors before anything runs.
// RUN: not dist-opt %s --dist-mirrored="replicas=2 grad-dtype=f8" 2>&1 | FileCheck %s --check-prefix=MIRRORED
// MIRRORED: error: dist-mirrored: grad-dtype='f8' is not one of f32, bf16, f16
// RUN: not dist-opt %s --dist-multi-worker-mirrored="hosts=2 devices=1 grad-dtype=fp16" 2>&1 | FileCheck %s --check-prefix=MULTI
// MULTI: error: dist-multi-worker-mirrored: grad-dtype='fp16' is not one of f32, bf16, f16
// RUN: not dist-opt %s --dist-zero="stage=2 replicas=2 grad-dtype=i16" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-zero: grad-dtype='i16' is not one of f32, bf16, f16
// RUN: not dist-opt %s --dist-hybrid="tp=2 grad-dtype=bf16" 2>&1 | FileCheck %s --check-prefix=NO-DATA
// NO-DATA: error: dist-hybrid: grad-dtype=bf16 compresses the data-parallel gradient reductions, but hosts=1 dp=1 has no data axis
// RUN: not dist-opt %s --dist-hybrid="dp=2 grad-dtype=e5m2" 2>&1 | FileCheck %s --check-prefix=HYBRID
// HYBRID: error: dist-hybrid: grad-dtype='e5m2' is not one of f32, bf16, f16

// expected-warning @+1 {{dist-compress-gradients: no float32 gradient is reduced across devices: nothing to compress}}
func.func @train_step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
                      %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
                      %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %g = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %l = train.reduce %g {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %nw = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %nw, %l : tensor<4xf32>, tensor<f32>
}
