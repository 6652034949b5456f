// RUN: dist-opt %s -split-input-file --train-decompose-cross-entropy -verify-diagnostics | FileCheck %s

// The loss and its gradient share the maximum, the exponentials and their
// sum; the target logit is picked by comparing a class iota with the
// labels; the labels record the number of classes.
// CHECK-LABEL: func.func @loss_and_gradient
// CHECK-SAME: %[[L:[^:]*]]: tensor<2x3x8xf32>
// CHECK-SAME: %[[Y:[^:]*]]: tensor<2x3xi32> {train.classes = 8 : i64
// CHECK-NEXT: %[[M:.*]] = train.reduce %[[L]] {dims = array<i64: 2>, keepdims, kind = #train.reduce_kind<max>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[Z:.*]] = train.sub %[[L]], %[[M]] : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[E:.*]] = train.exp %[[Z]]
// CHECK-NEXT: %[[S:.*]] = train.reduce %[[E]] {dims = array<i64: 2>, keepdims, kind = #train.reduce_kind<sum>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[YC:.*]] = train.reshape %[[Y]] : (tensor<2x3xi32>) -> tensor<2x3x1xi32>
// CHECK-NEXT: %[[I:.*]] = train.iota {dim = 0 : i64} : () -> tensor<8xi32>
// CHECK-NEXT: %[[T:.*]] = train.compare %[[I]], %[[YC]] {direction = #train.compare_direction<eq>} : (tensor<8xi32>, tensor<2x3x1xi32>) -> tensor<2x3x8xi1>
// CHECK-NEXT: %[[ZERO:.*]] = train.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[P:.*]] = train.select %[[T]], %[[Z]], %[[ZERO]]
// CHECK-NEXT: %[[TZ:.*]] = train.reduce %[[P]] {dims = array<i64: 2>, keepdims, kind = #train.reduce_kind<sum>}
// CHECK-NEXT: %[[LS:.*]] = train.log %[[S]]
// CHECK-NEXT: %[[PER:.*]] = train.sub %[[LS]], %[[TZ]]
// CHECK-NEXT: %[[LOSS:.*]] = train.reduce %[[PER]] {dims = array<i64: 0, 1, 2>, kind = #train.reduce_kind<mean>} : (tensor<2x3x1xf32>) -> tensor<f32>
// CHECK: %[[G:.*]] = train.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[SM:.*]] = train.div %[[E]], %[[S]]
// CHECK-NEXT: %[[ONE:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[SM1:.*]] = train.sub %[[SM]], %[[ONE]]
// CHECK-NEXT: %[[D:.*]] = train.select %[[T]], %[[SM1]], %[[SM]]
// The gradient of a mean over 6 labels.
// CHECK-NEXT: %[[INV:.*]] = train.constant dense<0.166666672> : tensor<f32>
// CHECK-NEXT: %[[SCALE:.*]] = train.mul %[[G]], %[[INV]]
// CHECK-NEXT: %[[GRAD:.*]] = train.mul %[[D]], %[[SCALE]] : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
// CHECK-NOT: cross_entropy
// CHECK: return %[[LOSS]], %[[GRAD]]
func.func @loss_and_gradient(%logits: tensor<2x3x8xf32>, %labels: tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3x8xf32>) {
  %loss = train.cross_entropy %logits, %labels : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
  %g = train.constant dense<2.0> : tensor<f32>
  %d = train.cross_entropy_backward %g, %logits, %labels : (tensor<f32>, tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
  return %loss, %d : tensor<f32>, tensor<2x3x8xf32>
}

// -----

// 16-bit logits are computed on in f32; the loss and the gradient are
// converted back. i64 labels get an i64 iota.
// CHECK-LABEL: func.func @bf16_logits
// CHECK: %[[W:.*]] = train.convert %{{.*}} : (tensor<4x6xbf16>) -> tensor<4x6xf32>
// CHECK-NEXT: train.reduce %[[W]] {dims = array<i64: 1>, keepdims, kind = #train.reduce_kind<max>}
// CHECK: train.iota {dim = 0 : i64} : () -> tensor<6xi64>
// CHECK: %[[L:.*]] = train.reduce %{{.*}} {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<4x1xf32>) -> tensor<f32>
// CHECK-NEXT: train.convert %[[L]] : (tensor<f32>) -> tensor<bf16>
// CHECK: train.convert %{{.*}} : (tensor<bf16>) -> tensor<f32>
// CHECK: %[[G:.*]] = train.mul %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK-NEXT: train.convert %[[G]] : (tensor<4x6xf32>) -> tensor<4x6xbf16>
func.func @bf16_logits(%logits: tensor<4x6xbf16>, %labels: tensor<4xi64>, %g: tensor<bf16>) -> (tensor<bf16>, tensor<4x6xbf16>) {
  %loss = train.cross_entropy %logits, %labels : (tensor<4x6xbf16>, tensor<4xi64>) -> tensor<bf16>
  %d = train.cross_entropy_backward %g, %logits, %labels : (tensor<bf16>, tensor<4x6xbf16>, tensor<4xi64>) -> tensor<4x6xbf16>
  return %loss, %d : tensor<bf16>, tensor<4x6xbf16>
}

// -----

// The loss and its gradient in different blocks share nothing: both stay
// whole, with a remark.
// CHECK-LABEL: func.func @other_block
// CHECK: train.cross_entropy
// CHECK: train.cross_entropy_backward
func.func @other_block(%logits: tensor<4x6xf32>, %labels: tensor<4xi32>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x6xf32>) {
  // expected-remark @+1 {{cross-entropy left whole: the ops of these logits and labels are in different blocks}}
  %loss = train.cross_entropy %logits, %labels : (tensor<4x6xf32>, tensor<4xi32>) -> tensor<f32>
  %d = scf.execute_region -> tensor<4x6xf32> {
    %r = train.cross_entropy_backward %g, %logits, %labels : (tensor<f32>, tensor<4x6xf32>, tensor<4xi32>) -> tensor<4x6xf32>
    scf.yield %r : tensor<4x6xf32>
  }
  return %loss, %d : tensor<f32>, tensor<4x6xf32>
}
