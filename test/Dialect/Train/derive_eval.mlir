// RUN: dist-opt %s -split-input-file --train-derive-eval -verify-diagnostics | FileCheck %s

// The MLP step: the evaluation keeps the forward pass and the loss, adds
// the accuracy count over the cross-entropy's logits, and drops the
// backward pass, the updates, the optimizer state and the learning rate.
// CHECK-LABEL: func.func @step(
// CHECK-LABEL: func.func @step_eval(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x8xf32> {train.name = "fc.weight", train.role = #train.role<param>}
// CHECK-SAME: %[[X:[^:]*]]: tensor<16x8xf32> {train.name = "x", train.role = #train.role<input>}
// CHECK-SAME: %[[Y:[^:]*]]: tensor<16xi32> {train.name = "y", train.role = #train.role<label>})
// CHECK-SAME: -> (tensor<f32> {train.name = "loss", train.role = #train.role<loss>}, tensor<f32> {train.name = "correct", train.role = #train.role<metric>})
// CHECK-SAME: attributes {train.eval_of = @step}
// CHECK: %[[LOGITS:.*]] = train.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[LOGITS]], %[[Y]]
// CHECK: %[[COLUMN:.*]] = train.reshape %[[Y]] : (tensor<16xi32>) -> tensor<16x1xi32>
// CHECK: %[[CLASSES:.*]] = train.iota {dim = 0 : i64} : () -> tensor<4xi32>
// CHECK: %[[TARGET:.*]] = train.compare %[[CLASSES]], %[[COLUMN]] {direction = #train.compare_direction<eq>}
// CHECK: %[[LOWEST:.*]] = train.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[PICKED:.*]] = train.select %[[TARGET]], %[[LOGITS]], %[[LOWEST]]
// CHECK: %[[AT:.*]] = train.reduce %[[PICKED]] {dims = array<i64: 1>, keepdims, kind = #train.reduce_kind<max>}
// CHECK: %[[MAX:.*]] = train.reduce %[[LOGITS]] {dims = array<i64: 1>, keepdims, kind = #train.reduce_kind<max>}
// CHECK: %[[HIT:.*]] = train.compare %[[AT]], %[[MAX]] {direction = #train.compare_direction<ge>}
// CHECK: %[[HITS:.*]] = train.convert %[[HIT]] : (tensor<16x1xi1>) -> tensor<16x1xf32>
// CHECK: %[[CORRECT:.*]] = train.reduce %[[HITS]] {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>}
// CHECK-NOT: train.sgd
// CHECK-NOT: train.cross_entropy_backward
// CHECK: return %[[LOSS]], %[[CORRECT]] : tensor<f32>, tensor<f32>
func.func @step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.0> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 0.9 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// Dropout passes its input through (evaluation mode); its seed goes. A
// loss that is not a cross-entropy gets no accuracy.
// CHECK-LABEL: func.func @regression_eval(
// CHECK-SAME: %[[W:[^:]*]]: tensor<8xf32>
// CHECK-SAME: %[[X:[^:]*]]: tensor<16x8xf32>
// CHECK-SAME: %[[T:[^:]*]]: tensor<16xf32>
// CHECK-SAME: -> (tensor<f32> {train.name = "loss", train.role = #train.role<loss>}) attributes
// CHECK-NOT: train.dropout
// CHECK: %[[P:.*]] = train.mul %[[X]], %[[W]]
// CHECK-NOT: train.dropout
// CHECK: return
func.func @regression(
    %w: tensor<8xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %t: tensor<16xf32> {train.role = #train.role<label>, train.name = "t"},
    %seed: tensor<i64> {train.role = #train.role<hyper>, train.name = "dropout_seed"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %d = train.dropout %x, %seed {rate = 0.5 : f64} : (tensor<16x8xf32>, tensor<i64>) -> tensor<16x8xf32>
  %p = train.mul %d, %w : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %s = train.reduce %p {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<16x8xf32>) -> tensor<16xf32>
  %e = train.sub %s, %t : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %sq = train.mul %e, %e : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %loss = train.reduce %sq {dims = array<i64: 0>, kind = #train.reduce_kind<mean>} : (tensor<16xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Batch normalization keeps the batch's statistics, and says so.
func.func @norm(
    %x: tensor<16x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %g: tensor<4xf32> {train.role = #train.role<param>, train.name = "g"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // expected-warning @below {{the evaluation normalizes with the batch's statistics: train.batch_norm has no running-statistics form}}
  %n, %mean, %var = train.batch_norm %x, %g, %b : (tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %loss = train.cross_entropy %n, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A step that already has an evaluation function is left alone.
// CHECK-LABEL: func.func @done(
// CHECK-LABEL: func.func @mine(
// CHECK-NOT: func.func @done_eval
func.func @done(%x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @mine(%x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) attributes {train.eval_of = @done} {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// No loss: nothing to evaluate.
// expected-error @below {{the step returns no loss: there is nothing to evaluate}}
func.func @no_loss(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// The name is taken.
// expected-error @below {{cannot name the step's evaluation function 'taken_eval': the symbol exists}}
func.func @taken(%x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func private @taken_eval()

// -----

// A loss that reads an updated parameter has no forward-only form.
func.func @penalty(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // expected-error @below {{the loss of 'penalty' reads this optimizer update: an evaluation cannot run it}}
  %wn = train.sgd %w, %w, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %l = train.reduce %wn {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %wn, %l : tensor<4xf32>, tensor<f32>
}
