// RUN: dist-opt %s -split-input-file -verify-diagnostics

// Rank-1 logits have no batch dim.
func.func @cross_entropy_rank1(%logits: tensor<10xf32>, %labels: tensor<i32>) {
  // expected-error @+2 {{'train.cross_entropy' op logits must have rank >= 2 (batch..., classes), got 1}}
  // expected-error @+1 {{'train.cross_entropy' op failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<10xf32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

// Labels of another batch size than the logits.
func.func @cross_entropy_labels_size(%logits: tensor<64x10xf32>, %labels: tensor<32xi32>) {
  // expected-error @+2 {{'train.cross_entropy' op labels must have shape 64 (the logits without the class dim), got 32}}
  // expected-error @+1 {{failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<32xi32>) -> tensor<f32>
  return
}

// -----

// Labels with a trailing size-1 dim (they are class indices, not one-hot rows).
func.func @cross_entropy_labels_rank(%logits: tensor<64x10xf32>, %labels: tensor<64x1xi32>) {
  // expected-error @+2 {{'train.cross_entropy' op labels must have shape 64 (the logits without the class dim), got 64x1}}
  // expected-error @+1 {{failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64x1xi32>) -> tensor<f32>
  return
}

// -----

// One-hot labels of the logits' shape.
func.func @cross_entropy_labels_one_hot(%logits: tensor<64x10xf32>, %labels: tensor<64x10xi64>) {
  // expected-error @+2 {{'train.cross_entropy' op labels must have shape 64 (the logits without the class dim), got 64x10}}
  // expected-error @+1 {{failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64x10xi64>) -> tensor<f32>
  return
}

// -----

// Labels of rank-3 logits that drop the sequence dim.
func.func @cross_entropy_rank3_labels(%logits: tensor<8x128x1000xf32>, %labels: tensor<8xi64>) {
  // expected-error @+2 {{'train.cross_entropy' op labels must have shape 8x128 (the logits without the class dim), got 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<8x128x1000xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

// Float labels (soft targets) are not class indices.
func.func @cross_entropy_float_labels(%logits: tensor<64x10xf32>, %labels: tensor<64xf32>) {
  // expected-error @+1 {{'train.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<64xf32>'}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64xf32>) -> tensor<f32>
  return
}

// -----

// Labels must be i32 or i64.
func.func @cross_entropy_i16_labels(%logits: tensor<64x10xf32>, %labels: tensor<64xi16>) {
  // expected-error @+1 {{'train.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<64xi16>'}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64xi16>) -> tensor<f32>
  return
}

// -----

// Logits are float-only.
func.func @cross_entropy_integer_logits(%logits: tensor<64x10xi32>, %labels: tensor<64xi32>) {
  // expected-error @+1 {{'train.cross_entropy' op operand #0 must be statically shaped tensor of float values, but got 'tensor<64x10xi32>'}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xi32>, tensor<64xi32>) -> tensor<f32>
  return
}

// -----

// A declared loss that is not a scalar (per-example losses).
func.func @cross_entropy_result_rank(%logits: tensor<64x10xf32>, %labels: tensor<64xi32>) {
  // expected-error @+1 {{'train.cross_entropy' op result #0 must be 0D tensor of float values, but got 'tensor<64xf32>'}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xf32>, tensor<64xi32>) -> tensor<64xf32>
  return
}

// -----

// A declared loss of another element type than the logits.
func.func @cross_entropy_result_element_type(%logits: tensor<64x10xbf16>, %labels: tensor<64xi32>) {
  // expected-error @+2 {{'train.cross_entropy' op inferred type(s) 'tensor<bf16>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %loss = train.cross_entropy %logits, %labels : (tensor<64x10xbf16>, tensor<64xi32>) -> tensor<f32>
  return
}

// -----

// Rank-1 logits for cross_entropy_backward.
func.func @cross_entropy_backward_rank1(%dl: tensor<f32>, %logits: tensor<10xf32>, %labels: tensor<i64>) {
  // expected-error @+2 {{'train.cross_entropy_backward' op logits must have rank >= 2 (batch..., classes), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<10xf32>, tensor<i64>) -> tensor<10xf32>
  return
}

// -----

// cross_entropy_backward labels of the wrong shape.
func.func @cross_entropy_backward_labels(%dl: tensor<f32>, %logits: tensor<4x16x32xf32>, %labels: tensor<4x32xi32>) {
  // expected-error @+2 {{'train.cross_entropy_backward' op labels must have shape 4x16 (the logits without the class dim), got 4x32}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<4x16x32xf32>, tensor<4x32xi32>) -> tensor<4x16x32xf32>
  return
}

// -----

// cross_entropy_backward float labels.
func.func @cross_entropy_backward_float_labels(%dl: tensor<f32>, %logits: tensor<64x10xf32>, %labels: tensor<64xf32>) {
  // expected-error @+1 {{'train.cross_entropy_backward' op operand #2 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<64xf32>'}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<64x10xf32>, tensor<64xf32>) -> tensor<64x10xf32>
  return
}

// -----

// A grad_loss of another element type than the logits.
func.func @cross_entropy_backward_grad_element_type(%dl: tensor<f32>, %logits: tensor<64x10xbf16>, %labels: tensor<64xi32>) {
  // expected-error @+2 {{'train.cross_entropy_backward' op grad_loss and logits have different element types 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<64x10xbf16>, tensor<64xi32>) -> tensor<64x10xbf16>
  return
}

// -----

// A grad_loss that is not a scalar.
func.func @cross_entropy_backward_grad_rank(%dl: tensor<1xf32>, %logits: tensor<64x10xf32>, %labels: tensor<64xi32>) {
  // expected-error @+1 {{'train.cross_entropy_backward' op operand #0 must be 0D tensor of float values, but got 'tensor<1xf32>'}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<1xf32>, tensor<64x10xf32>, tensor<64xi32>) -> tensor<64x10xf32>
  return
}

// -----

// A declared gradient of the labels' shape instead of the logits'.
func.func @cross_entropy_backward_result(%dl: tensor<f32>, %logits: tensor<64x10xf32>, %labels: tensor<64xi32>) {
  // expected-error @+2 {{'train.cross_entropy_backward' op inferred type(s) 'tensor<64x10xf32>' are incompatible with return type(s) of operation 'tensor<64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = train.cross_entropy_backward %dl, %logits, %labels : (tensor<f32>, tensor<64x10xf32>, tensor<64xi32>) -> tensor<64xf32>
  return
}
