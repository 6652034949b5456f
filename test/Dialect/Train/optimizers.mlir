// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// Plain SGD: no momentum buffer, one result of the param's type; default attributes are not printed.
// CHECK-LABEL: func.func @sgd_plain
// CHECK-SAME: (%[[W:.*]]: tensor<128x784xf32>, %[[G:.*]]: tensor<128x784xf32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[NEW:.*]] = train.sgd %[[W]], %[[G]], %[[LR]] : (tensor<128x784xf32>, tensor<128x784xf32>, tensor<f32>) -> tensor<128x784xf32>
// CHECK: return %[[NEW]]
func.func @sgd_plain(%w: tensor<128x784xf32>, %g: tensor<128x784xf32>, %lr: tensor<f32>) -> tensor<128x784xf32> {
  %new = train.sgd %w, %g, %lr : (tensor<128x784xf32>, tensor<128x784xf32>, tensor<f32>) -> tensor<128x784xf32>
  return %new : tensor<128x784xf32>
}

// -----

// Explicit zero momentum and weight decay equal the defaults and are elided.
// CHECK-LABEL: func.func @sgd_explicit_defaults
// CHECK-SAME: (%[[W:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[NEW:.*]] = train.sgd %[[W]], %[[G]], %[[LR]] : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: return %[[NEW]]
func.func @sgd_explicit_defaults(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
  %new = train.sgd %w, %g, %lr {momentum = 0.0, weight_decay = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %new : tensor<4xf32>
}

// -----

// SGD with momentum takes a buffer and returns the new param and the new buffer.
// CHECK-LABEL: func.func @sgd_momentum
// CHECK-SAME: (%[[W:.*]]: tensor<10x128xf32>, %[[G:.*]]: tensor<10x128xf32>, %[[LR:.*]]: tensor<f32>, %[[M:.*]]: tensor<10x128xf32>)
// CHECK: %[[NEW:.*]], %[[BUF:.*]] = train.sgd %[[W]], %[[G]], %[[LR]], %[[M]] {momentum = 9.000000e-01 : f64} : (tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>, tensor<10x128xf32>) -> (tensor<10x128xf32>, tensor<10x128xf32>)
// CHECK: return %[[NEW]], %[[BUF]]
func.func @sgd_momentum(%w: tensor<10x128xf32>, %g: tensor<10x128xf32>, %lr: tensor<f32>, %m: tensor<10x128xf32>) -> (tensor<10x128xf32>, tensor<10x128xf32>) {
  %new, %buf = train.sgd %w, %g, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<10x128xf32>, tensor<10x128xf32>, tensor<f32>, tensor<10x128xf32>) -> (tensor<10x128xf32>, tensor<10x128xf32>)
  return %new, %buf : tensor<10x128xf32>, tensor<10x128xf32>
}

// -----

// Nesterov momentum.
// CHECK-LABEL: func.func @sgd_nesterov
// CHECK-SAME: (%[[W:.*]]: tensor<64xf32>, %[[G:.*]]: tensor<64xf32>, %[[LR:.*]]: tensor<f32>, %[[M:.*]]: tensor<64xf32>)
// CHECK: %[[NEW:.*]], %[[BUF:.*]] = train.sgd %[[W]], %[[G]], %[[LR]], %[[M]] {momentum = 9.000000e-01 : f64, nesterov} : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
// CHECK: return %[[NEW]], %[[BUF]]
func.func @sgd_nesterov(%w: tensor<64xf32>, %g: tensor<64xf32>, %lr: tensor<f32>, %m: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %new, %buf = train.sgd %w, %g, %lr, %m {momentum = 0.9, nesterov} : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
  return %new, %buf : tensor<64xf32>, tensor<64xf32>
}

// -----

// Weight decay without momentum.
// CHECK-LABEL: func.func @sgd_weight_decay
// CHECK-SAME: (%[[W:.*]]: tensor<8x8xf64>, %[[G:.*]]: tensor<8x8xf64>, %[[LR:.*]]: tensor<f64>)
// CHECK: %[[NEW:.*]] = train.sgd %[[W]], %[[G]], %[[LR]] {weight_decay = 5.000000e-04 : f64} : (tensor<8x8xf64>, tensor<8x8xf64>, tensor<f64>) -> tensor<8x8xf64>
// CHECK: return %[[NEW]]
func.func @sgd_weight_decay(%w: tensor<8x8xf64>, %g: tensor<8x8xf64>, %lr: tensor<f64>) -> tensor<8x8xf64> {
  %new = train.sgd %w, %g, %lr {weight_decay = 5.000000e-04} : (tensor<8x8xf64>, tensor<8x8xf64>, tensor<f64>) -> tensor<8x8xf64>
  return %new : tensor<8x8xf64>
}

// -----

// Momentum, Nesterov and weight decay together on a bf16 param with an f32 learning rate.
// CHECK-LABEL: func.func @sgd_all_options_bf16
// CHECK-SAME: (%[[W:.*]]: tensor<4x4xbf16>, %[[G:.*]]: tensor<4x4xbf16>, %[[LR:.*]]: tensor<f32>, %[[M:.*]]: tensor<4x4xbf16>)
// CHECK: %[[NEW:.*]], %[[BUF:.*]] = train.sgd %[[W]], %[[G]], %[[LR]], %[[M]]
// CHECK-SAME: {momentum = 5.000000e-01 : f64, nesterov, weight_decay = 1.250000e-01 : f64}
// CHECK-SAME: : (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<f32>, tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>)
// CHECK: return %[[NEW]], %[[BUF]]
func.func @sgd_all_options_bf16(%w: tensor<4x4xbf16>, %g: tensor<4x4xbf16>, %lr: tensor<f32>, %m: tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %new, %buf = train.sgd %w, %g, %lr, %m {momentum = 0.5, nesterov, weight_decay = 0.125} : (tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<f32>, tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>)
  return %new, %buf : tensor<4x4xbf16>, tensor<4x4xbf16>
}

// -----

// SGD of a scalar f16 param.
// CHECK-LABEL: func.func @sgd_scalar_f16
// CHECK-SAME: (%[[W:.*]]: tensor<f16>, %[[G:.*]]: tensor<f16>, %[[LR:.*]]: tensor<f16>)
// CHECK: %[[NEW:.*]] = train.sgd %[[W]], %[[G]], %[[LR]] : (tensor<f16>, tensor<f16>, tensor<f16>) -> tensor<f16>
// CHECK: return %[[NEW]]
func.func @sgd_scalar_f16(%w: tensor<f16>, %g: tensor<f16>, %lr: tensor<f16>) -> tensor<f16> {
  %new = train.sgd %w, %g, %lr : (tensor<f16>, tensor<f16>, tensor<f16>) -> tensor<f16>
  return %new : tensor<f16>
}

// -----

// Adam with default hyper-parameters and an integer (i64) step: four results, the step keeps its type.
// CHECK-LABEL: func.func @adam_defaults_i64_step
// CHECK-SAME: (%[[W:.*]]: tensor<8x4xf32>, %[[G:.*]]: tensor<8x4xf32>, %[[M:.*]]: tensor<8x4xf32>, %[[V:.*]]: tensor<8x4xf32>, %[[STEP:.*]]: tensor<i64>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[P:.*]], %[[M1:.*]], %[[V1:.*]], %[[S1:.*]] = train.adam %[[W]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]] : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>)
// CHECK: return %[[P]], %[[M1]], %[[V1]], %[[S1]]
func.func @adam_defaults_i64_step(%w: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>, %step: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>) {
  %p, %m1, %v1, %s1 = train.adam %w, %g, %m, %v, %step, %lr : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>)
  return %p, %m1, %v1, %s1 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<i64>
}

// -----

// Adam with every hyper-parameter set, an i32 step and L2 weight decay.
// CHECK-LABEL: func.func @adam_all_attributes_i32_step
// CHECK-SAME: (%[[W:.*]]: tensor<16xf32>, %[[G:.*]]: tensor<16xf32>, %[[M:.*]]: tensor<16xf32>, %[[V:.*]]: tensor<16xf32>, %[[STEP:.*]]: tensor<i32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[P:.*]], %[[M1:.*]], %[[V1:.*]], %[[S1:.*]] = train.adam %[[W]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]]
// CHECK-SAME: {beta1 = 5.000000e-01 : f64, beta2 = 7.500000e-01 : f64, epsilon = 7.812500e-03 : f64, weight_decay = 1.000000e-02 : f64}
// CHECK-SAME: : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>)
// CHECK: return %[[P]], %[[M1]], %[[V1]], %[[S1]]
func.func @adam_all_attributes_i32_step(%w: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %step: tensor<i32>, %lr: tensor<f32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>) {
  %p, %m1, %v1, %s1 = train.adam %w, %g, %m, %v, %step, %lr {beta1 = 0.5, beta2 = 0.75, epsilon = 0.0078125, weight_decay = 0.01} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>)
  return %p, %m1, %v1, %s1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>
}

// -----

// beta1 = beta2 = 0 is the lower end of [0, 1).
// CHECK-LABEL: func.func @adam_zero_betas
// CHECK: train.adam
// CHECK-SAME: {beta1 = 0.000000e+00 : f64, beta2 = 0.000000e+00 : f64}
func.func @adam_zero_betas(%w: tensor<4xf32>, %g: tensor<4xf32>, %step: tensor<i64>, %lr: tensor<f32>) {
  %p, %m1, %v1, %s1 = train.adam %w, %g, %g, %g, %step, %lr {beta1 = 0.0, beta2 = 0.0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// AdamW with a float (f32) step on bf16 params; the default weight_decay 0.01 is elided.
// CHECK-LABEL: func.func @adamw_float_step_bf16
// CHECK-SAME: (%[[W:.*]]: tensor<2x3xbf16>, %[[G:.*]]: tensor<2x3xbf16>, %[[M:.*]]: tensor<2x3xbf16>, %[[V:.*]]: tensor<2x3xbf16>, %[[STEP:.*]]: tensor<f32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[P:.*]], %[[M1:.*]], %[[V1:.*]], %[[S1:.*]] = train.adamw %[[W]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]] : (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>, tensor<f32>) -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>)
// CHECK: return %[[P]], %[[M1]], %[[V1]], %[[S1]]
func.func @adamw_float_step_bf16(%w: tensor<2x3xbf16>, %g: tensor<2x3xbf16>, %m: tensor<2x3xbf16>, %v: tensor<2x3xbf16>, %step: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>) {
  %p, %m1, %v1, %s1 = train.adamw %w, %g, %m, %v, %step, %lr {weight_decay = 0.01} : (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>, tensor<f32>) -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>)
  return %p, %m1, %v1, %s1 : tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>
}

// -----

// AdamW with an integer (i64) step, weight decay 0 (printed: not the default) and custom betas.
// CHECK-LABEL: func.func @adamw_integer_step
// CHECK-SAME: (%[[W:.*]]: tensor<32x32xf32>, %[[G:.*]]: tensor<32x32xf32>, %[[M:.*]]: tensor<32x32xf32>, %[[V:.*]]: tensor<32x32xf32>, %[[STEP:.*]]: tensor<i64>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[P:.*]], %[[M1:.*]], %[[V1:.*]], %[[S1:.*]] = train.adamw %[[W]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]]
// CHECK-SAME: {beta2 = 9.687500e-01 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK-SAME: : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>, tensor<f32>) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>)
// CHECK: return %[[P]], %[[M1]], %[[V1]], %[[S1]]
func.func @adamw_integer_step(%w: tensor<32x32xf32>, %g: tensor<32x32xf32>, %m: tensor<32x32xf32>, %v: tensor<32x32xf32>, %step: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>) {
  %p, %m1, %v1, %s1 = train.adamw %w, %g, %m, %v, %step, %lr {beta1 = 0.9, beta2 = 0.96875, weight_decay = 0.0} : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>, tensor<f32>) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>)
  return %p, %m1, %v1, %s1 : tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<i64>
}

// -----

// AdamW on f64 params with an f64 step and a scalar param.
// CHECK-LABEL: func.func @adamw_scalar_f64
// CHECK-SAME: (%[[W:.*]]: tensor<f64>, %[[STEP:.*]]: tensor<f64>, %[[LR:.*]]: tensor<f64>)
// CHECK: %[[P:.*]], %[[M1:.*]], %[[V1:.*]], %[[S1:.*]] = train.adamw %[[W]], %[[W]], %[[W]], %[[W]], %[[STEP]], %[[LR]] {weight_decay = 1.000000e-01 : f64} : (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>)
// CHECK: return %[[P]], %[[S1]]
func.func @adamw_scalar_f64(%w: tensor<f64>, %step: tensor<f64>, %lr: tensor<f64>) -> (tensor<f64>, tensor<f64>) {
  %p, %m1, %v1, %s1 = train.adamw %w, %w, %w, %w, %step, %lr {weight_decay = 0.1} : (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>)
  return %p, %s1 : tensor<f64>, tensor<f64>
}
