// RUN: dist-opt %s -split-input-file | FileCheck %s
// RUN: dist-opt %s -split-input-file -mlir-print-op-generic | dist-opt -split-input-file | FileCheck %s

// cross_entropy of [batch, classes] logits with i32 labels is a scalar.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[LOGITS:.*]]: tensor<64x10xf32>, %[[LABELS:.*]]: tensor<64xi32>)
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<64x10xf32>, tensor<64xi32>) -> tensor<f32>
// CHECK: return %[[LOSS]]
func.func @cross_entropy(%logits: tensor<64x10xf32>, %labels: tensor<64xi32>) -> tensor<f32> {
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// cross_entropy of rank-3 (language model) bf16 logits with i64 labels is a bf16 scalar.
// CHECK-LABEL: func.func @cross_entropy_rank3
// CHECK-SAME: (%[[LOGITS:.*]]: tensor<8x128x1000xbf16>, %[[LABELS:.*]]: tensor<8x128xi64>)
// CHECK: train.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<8x128x1000xbf16>, tensor<8x128xi64>) -> tensor<bf16>
func.func @cross_entropy_rank3(%logits: tensor<8x128x1000xbf16>, %labels: tensor<8x128xi64>) -> tensor<bf16> {
  %loss = train.cross_entropy %logits, %labels : (tensor<8x128x1000xbf16>, tensor<8x128xi64>) -> tensor<bf16>
  return %loss : tensor<bf16>
}

// -----

// cross_entropy with i64 labels on rank-2 f16 logits.
// CHECK-LABEL: func.func @cross_entropy_i64
// CHECK: train.cross_entropy %{{.*}}, %{{.*}} : (tensor<32x5xf16>, tensor<32xi64>) -> tensor<f16>
func.func @cross_entropy_i64(%logits: tensor<32x5xf16>, %labels: tensor<32xi64>) -> tensor<f16> {
  %loss = train.cross_entropy %logits, %labels : (tensor<32x5xf16>, tensor<32xi64>) -> tensor<f16>
  return %loss : tensor<f16>
}

// -----

// cross_entropy_backward returns a gradient of the logits' type.
// CHECK-LABEL: func.func @cross_entropy_backward
// CHECK-SAME: (%[[DL:.*]]: tensor<f32>, %[[LOGITS:.*]]: tensor<64x10xf32>, %[[LABELS:.*]]: tensor<64xi32>)
// CHECK: %[[R:.*]] = train.cross_entropy_backward %[[DL]], %[[LOGITS]], %[[LABELS]] : (tensor<f32>, tensor<64x10xf32>, tensor<64xi32>) -> tensor<64x10xf32>
// CHECK: return %[[R]]
func.func @cross_entropy_backward(%dl: tensor<f32>, %logits: tensor<64x10xf32>, %labels: tensor<64xi32>) -> tensor<64x10xf32> {
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<64x10xf32>, tensor<64xi32>) -> tensor<64x10xf32>
  return %r : tensor<64x10xf32>
}

// -----

// cross_entropy_backward of rank-3 logits with i64 labels.
// CHECK-LABEL: func.func @cross_entropy_backward_rank3
// CHECK: train.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : (tensor<bf16>, tensor<8x128x1000xbf16>, tensor<8x128xi64>) -> tensor<8x128x1000xbf16>
func.func @cross_entropy_backward_rank3(%dl: tensor<bf16>, %logits: tensor<8x128x1000xbf16>, %labels: tensor<8x128xi64>) -> tensor<8x128x1000xbf16> {
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<bf16>, tensor<8x128x1000xbf16>, tensor<8x128xi64>) -> tensor<8x128x1000xbf16>
  return %r : tensor<8x128x1000xbf16>
}

// -----

// cross_entropy_backward of rank-3 f32 logits with i32 labels.
// CHECK-LABEL: func.func @cross_entropy_backward_rank3_i32
// CHECK: train.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<4x16x32xf32>, tensor<4x16xi32>) -> tensor<4x16x32xf32>
func.func @cross_entropy_backward_rank3_i32(%dl: tensor<f32>, %logits: tensor<4x16x32xf32>, %labels: tensor<4x16xi32>) -> tensor<4x16x32xf32> {
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<4x16x32xf32>, tensor<4x16xi32>) -> tensor<4x16x32xf32>
  return %r : tensor<4x16x32xf32>
}

// -----

// The forward and backward ops chained as in a training step.
// CHECK-LABEL: func.func @cross_entropy_step
// CHECK-SAME: (%[[LOGITS:.*]]: tensor<16x3xf32>, %[[LABELS:.*]]: tensor<16xi64>)
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<16x3xf32>, tensor<16xi64>) -> tensor<f32>
// CHECK: %[[ONE:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[GRAD:.*]] = train.cross_entropy_backward %[[ONE]], %[[LOGITS]], %[[LABELS]] : (tensor<f32>, tensor<16x3xf32>, tensor<16xi64>) -> tensor<16x3xf32>
// CHECK: return %[[LOSS]], %[[GRAD]]
func.func @cross_entropy_step(%logits: tensor<16x3xf32>, %labels: tensor<16xi64>) -> (tensor<f32>, tensor<16x3xf32>) {
  %loss = train.cross_entropy %logits, %labels : (tensor<16x3xf32>, tensor<16xi64>) -> tensor<f32>
  %one = train.constant dense<1.0> : tensor<f32>
  %grad = train.cross_entropy_backward %one, %logits, %labels : (tensor<f32>, tensor<16x3xf32>, tensor<16xi64>) -> tensor<16x3xf32>
  return %loss, %grad : tensor<f32>, tensor<16x3xf32>
}
