// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// layer_norm over the last dim of a rank-3 input: statistics are [b, s].
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<8x128x512xf32>, %[[G:.*]]: tensor<512xf32>, %[[B:.*]]: tensor<512xf32>)
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[RSTD:.*]] = train.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<8x128x512xf32>, tensor<512xf32>, tensor<512xf32>) -> (tensor<8x128x512xf32>, tensor<8x128xf32>, tensor<8x128xf32>)
// CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
func.func @layer_norm(%x: tensor<8x128x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> (tensor<8x128x512xf32>, tensor<8x128xf32>, tensor<8x128xf32>) {
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<8x128x512xf32>, tensor<512xf32>, tensor<512xf32>) -> (tensor<8x128x512xf32>, tensor<8x128xf32>, tensor<8x128xf32>)
  return %y, %mean, %rstd : tensor<8x128x512xf32>, tensor<8x128xf32>, tensor<8x128xf32>
}

// -----

// layer_norm over the two trailing dims: weights are [s, h], statistics [b].
// CHECK-LABEL: func.func @layer_norm_two_dims
// CHECK: train.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x128x512xbf16>, tensor<128x512xbf16>, tensor<128x512xbf16>) -> (tensor<8x128x512xbf16>, tensor<8xbf16>, tensor<8xbf16>)
func.func @layer_norm_two_dims(%x: tensor<8x128x512xbf16>, %g: tensor<128x512xbf16>, %b: tensor<128x512xbf16>) -> tensor<8xbf16> {
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<8x128x512xbf16>, tensor<128x512xbf16>, tensor<128x512xbf16>) -> (tensor<8x128x512xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  return %mean : tensor<8xbf16>
}

// -----

// layer_norm over every dim (axis 0): scalar statistics, custom epsilon.
// CHECK-LABEL: func.func @layer_norm_all_dims
// CHECK: train.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64, epsilon = 1.000000e-03 : f64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<f32>, tensor<f32>)
func.func @layer_norm_all_dims(%x: tensor<4x16xf32>, %g: tensor<4x16xf32>, %b: tensor<4x16xf32>) -> tensor<f32> {
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 0 : i64, epsilon = 1.0e-3 : f64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<f32>, tensor<f32>)
  return %rstd : tensor<f32>
}

// -----

// The default epsilon (1e-5) is not printed when written explicitly.
// CHECK-LABEL: func.func @layer_norm_default_epsilon
// CHECK: train.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>)
func.func @layer_norm_default_epsilon(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<4x16xf32>
}

// -----

// layer_norm_backward on a rank-2 input: weight and bias gradients have the weight's type.
// CHECK-LABEL: func.func @layer_norm_backward
// CHECK-SAME: (%[[DY:.*]]: tensor<4x16xf32>, %[[X:.*]]: tensor<4x16xf32>, %[[MEAN:.*]]: tensor<4xf32>, %[[RSTD:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<16xf32>)
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = train.layer_norm_backward %[[DY]], %[[X]], %[[MEAN]], %[[RSTD]], %[[G]] {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK: return %[[DX]], %[[DG]], %[[DB]]
func.func @layer_norm_backward(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %dx, %dg, %db : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// layer_norm_backward of @layer_norm_two_dims (rank 3, axis 1).
// CHECK-LABEL: func.func @layer_norm_backward_two_dims
// CHECK: train.layer_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x128x512xbf16>, tensor<8x128x512xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<128x512xbf16>) -> (tensor<8x128x512xbf16>, tensor<128x512xbf16>, tensor<128x512xbf16>)
func.func @layer_norm_backward_two_dims(%dy: tensor<8x128x512xbf16>, %x: tensor<8x128x512xbf16>, %mean: tensor<8xbf16>, %rstd: tensor<8xbf16>, %g: tensor<128x512xbf16>) -> tensor<128x512xbf16> {
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 1 : i64} : (tensor<8x128x512xbf16>, tensor<8x128x512xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<128x512xbf16>) -> (tensor<8x128x512xbf16>, tensor<128x512xbf16>, tensor<128x512xbf16>)
  return %dg : tensor<128x512xbf16>
}

// -----

// layer_norm_backward with axis 0 takes scalar statistics.
// CHECK-LABEL: func.func @layer_norm_backward_all_dims
// CHECK: train.layer_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x16xf16>, tensor<4x16xf16>, tensor<f16>, tensor<f16>, tensor<4x16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>)
func.func @layer_norm_backward_all_dims(%dy: tensor<4x16xf16>, %x: tensor<4x16xf16>, %mean: tensor<f16>, %rstd: tensor<f16>, %g: tensor<4x16xf16>) -> tensor<4x16xf16> {
  %dx, %dg, %db = train.layer_norm_backward %dy, %x, %mean, %rstd, %g {axis = 0 : i64} : (tensor<4x16xf16>, tensor<4x16xf16>, tensor<f16>, tensor<f16>, tensor<4x16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>)
  return %dx : tensor<4x16xf16>
}

// -----

// batch_norm on a rank-2 input [n, c]: per-channel statistics [c].
// CHECK-LABEL: func.func @batch_norm_rank2
// CHECK-SAME: (%[[X:.*]]: tensor<32x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[VAR:.*]] = train.batch_norm %[[X]], %[[G]], %[[B]] : (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK: return %[[Y]], %[[MEAN]], %[[VAR]]
func.func @batch_norm_rank2(%x: tensor<32x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %y, %mean, %var : tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// batch_norm on an NCHW input with a custom epsilon.
// CHECK-LABEL: func.func @batch_norm_rank4
// CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>)
func.func @batch_norm_rank4(%x: tensor<8x3x5x5xbf16>, %g: tensor<3xbf16>, %b: tensor<3xbf16>) -> tensor<8x3x5x5xbf16> {
  %y, %mean, %var = train.batch_norm %x, %g, %b {epsilon = 1.0e-3 : f64} : (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  return %y : tensor<8x3x5x5xbf16>
}

// -----

// batch_norm on a rank-3 (NCL) input.
// CHECK-LABEL: func.func @batch_norm_rank3
// CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x6x10xf64>, tensor<6xf64>, tensor<6xf64>) -> (tensor<4x6x10xf64>, tensor<6xf64>, tensor<6xf64>)
func.func @batch_norm_rank3(%x: tensor<4x6x10xf64>, %g: tensor<6xf64>, %b: tensor<6xf64>) -> tensor<6xf64> {
  %y, %mean, %var = train.batch_norm %x, %g, %b : (tensor<4x6x10xf64>, tensor<6xf64>, tensor<6xf64>) -> (tensor<4x6x10xf64>, tensor<6xf64>, tensor<6xf64>)
  return %var : tensor<6xf64>
}

// -----

// batch_norm_backward on a rank-2 input.
// CHECK-LABEL: func.func @batch_norm_backward_rank2
// CHECK-SAME: (%[[DY:.*]]: tensor<32x16xf32>, %[[X:.*]]: tensor<32x16xf32>, %[[MEAN:.*]]: tensor<16xf32>, %[[VAR:.*]]: tensor<16xf32>, %[[G:.*]]: tensor<16xf32>)
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = train.batch_norm_backward %[[DY]], %[[X]], %[[MEAN]], %[[VAR]], %[[G]] : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK: return %[[DX]], %[[DG]], %[[DB]]
func.func @batch_norm_backward_rank2(%dy: tensor<32x16xf32>, %x: tensor<32x16xf32>, %mean: tensor<16xf32>, %var: tensor<16xf32>, %g: tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %dx, %dg, %db : tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// batch_norm_backward of @batch_norm_rank4 with the same epsilon.
// CHECK-LABEL: func.func @batch_norm_backward_rank4
// CHECK: train.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<8x3x5x5xbf16>, tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>)
func.func @batch_norm_backward_rank4(%dy: tensor<8x3x5x5xbf16>, %x: tensor<8x3x5x5xbf16>, %mean: tensor<3xbf16>, %var: tensor<3xbf16>, %g: tensor<3xbf16>) -> tensor<8x3x5x5xbf16> {
  %dx, %dg, %db = train.batch_norm_backward %dy, %x, %mean, %var, %g {epsilon = 1.0e-3 : f64} : (tensor<8x3x5x5xbf16>, tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<8x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  return %dx : tensor<8x3x5x5xbf16>
}
