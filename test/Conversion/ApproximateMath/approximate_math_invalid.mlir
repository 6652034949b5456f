// RUN: not dist-opt %s --dist-approximate-math=functions=tanh,tanhh 2>&1 | FileCheck %s
// RUN: not dist-opt %s --dist-approximate-math=functions=rsqrt 2>&1 | FileCheck %s --check-prefix=RSQRT

// A function upstream does not approximate (or only with AVX2 intrinsics,
// rsqrt) is an error that lists the ones it does.
// CHECK: error: dist-approximate-math: no approximation of 'tanhh' (functions: acos, asin, atan, atan2, cbrt, cos, erf, erfc, exp, expm1, log, log1p, log2, sin, tanh)
// RSQRT: error: dist-approximate-math: no approximation of 'rsqrt'
func.func @f(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  return %y : f32
}
