// RUN: dist-opt %s -split-input-file --dist-to-runtime -verify-diagnostics

// Asynchronous collectives have no runtime lowering yet: errors at the op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @async(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce_start' op dist-to-runtime does not lower this op yet}}
  %f = dist.all_reduce_start %a on @mesh axes = ["data"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
  %r = dist.wait %f : !dist.future<tensor<4xf32>>
  return %r : tensor<4xf32>
}

// -----

// Element types the runtime does not move are errors at the op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @bf16(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'dist.all_reduce' op dist-to-runtime does not move 'bf16' elements yet (f32, f64, i32, i64)}}
  %r = dist.all_reduce %a on @mesh axes = ["data"] : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
