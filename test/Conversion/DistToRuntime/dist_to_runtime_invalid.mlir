// RUN: dist-opt %s -split-input-file --dist-to-runtime -verify-diagnostics

// Collectives without a runtime lowering yet are errors at the op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @all_to_all(%a: tensor<4x4xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'dist.all_to_all' op dist-to-runtime does not lower this op yet}}
  %r = dist.all_to_all %a on @mesh axes = ["data"] split_dim = 1 concat_dim = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
  return %r : tensor<8x2xf32>
}

// -----

// Element types the runtime does not move are errors at the op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @bf16(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'dist.all_reduce' op dist-to-runtime does not move 'bf16' elements yet (f32, f64, i32, i64)}}
  %r = dist.all_reduce %a on @mesh axes = ["data"] : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
