// RUN: dist-opt %s -split-input-file --train-to-linalg | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-lower-cpu -o %t.out

// Mixed float types lower to valid IR (they once gave an invalid
// `arith.truncf` bf16 -> f16 and an `arith.mulf` of f32 and bf16).

// bf16 and f16 have one width: converting goes through f32.
// CHECK-LABEL: func.func @bf16_to_f16
// CHECK: %[[E:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %[[E]] : f32 to f16
func.func @bf16_to_f16(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %y = train.convert %x : (tensor<4xbf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @f16_to_bf16
// CHECK: %[[E:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %[[E]] : f32 to bf16
func.func @f16_to_bf16(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %y = train.convert %x : (tensor<4xf16>) -> tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

// AdamW on bf16 state with an f32 step and learning rate computes in f32
// and rounds each result to bf16 once (written over the state: the
// parameter and moments are the generic's inits, the last block
// arguments).
// CHECK-LABEL: func.func @adamw_bf16_state
// CHECK: linalg.generic
// CHECK: ^bb0(%[[G:.*]]: bf16, %[[C1:.*]]: f32, %[[C2:.*]]: f32, %[[LR:.*]]: f32, %[[P:.*]]: bf16, %[[M:.*]]: bf16, %[[V:.*]]: bf16
// CHECK: arith.extf %[[P]] : bf16 to f32
// CHECK: arith.mulf %[[LR]], %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: linalg.yield
func.func @adamw_bf16_state(%w: tensor<2x3xbf16>, %g: tensor<2x3xbf16>, %m: tensor<2x3xbf16>, %v: tensor<2x3xbf16>, %step: tensor<f32>, %lr: tensor<f32>)
    -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>) {
  %p, %m1, %v1, %s1 = train.adamw %w, %g, %m, %v, %step, %lr {weight_decay = 0.01} : (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>, tensor<f32>) -> (tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>)
  return %p, %m1, %v1, %s1 : tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<2x3xbf16>, tensor<f32>
}

// -----

// SGD with momentum on f16 state and an f32 learning rate (written over
// the parameter and the momentum buffer, the generic's inits).
// CHECK-LABEL: func.func @sgd_f16_state
// CHECK: ^bb0(%[[G:.*]]: f16, %[[LR:.*]]: f32, %[[P:.*]]: f16, %[[B:.*]]: f16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT: linalg.yield
func.func @sgd_f16_state(%w: tensor<8xf16>, %g: tensor<8xf16>, %lr: tensor<f32>, %b: tensor<8xf16>) -> (tensor<8xf16>, tensor<8xf16>) {
  %p, %b1 = train.sgd %w, %g, %lr, %b {momentum = 0.9 : f64} : (tensor<8xf16>, tensor<8xf16>, tensor<f32>, tensor<8xf16>) -> (tensor<8xf16>, tensor<8xf16>)
  return %p, %b1 : tensor<8xf16>, tensor<8xf16>
}
