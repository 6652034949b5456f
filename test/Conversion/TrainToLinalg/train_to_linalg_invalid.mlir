// RUN: dist-opt %s -split-input-file --train-to-linalg -verify-diagnostics

// An op without a lowering yet is an error at the op, not a half-converted
// program.
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'train.softmax' op has no lowering to linalg yet (train-to-linalg covers elementwise ops, matmul, reduce, constant, cross_entropy and its backward op, sgd, adam and adamw)}}
  %r = train.softmax %x {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
