// RUN: dist-opt %s -split-input-file --dist-approximate-math | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-approximate-math=functions=exp | FileCheck %s --check-prefix=EXP

// f32 tanh, exp and log become arithmetic; f64 and other functions stay.
// CHECK-LABEL: func.func @f32
// EXP-LABEL: func.func @f32
func.func @f32(%x: f32, %v: vector<8xf32>) -> (f32, f32, f32, vector<8xf32>, f32) {
  // CHECK-NOT: math.tanh
  // CHECK-NOT: math.exp
  // CHECK-NOT: math.log
  // CHECK: math.sqrt
  // EXP: math.tanh
  // EXP-NOT: math.exp
  // EXP: math.log
  %t = math.tanh %x : f32
  %e = math.exp %x : f32
  %l = math.log %x : f32
  %tv = math.tanh %v : vector<8xf32>
  %s = math.sqrt %x : f32
  return %t, %e, %l, %tv, %s : f32, f32, f32, vector<8xf32>, f32
}

// -----

// CHECK-LABEL: func.func @f64
// EXP-LABEL: func.func @f64
func.func @f64(%x: f64) -> (f64, f64) {
  // CHECK: math.tanh
  // CHECK: math.exp
  %t = math.tanh %x : f64
  %e = math.exp %x : f64
  return %t, %e : f64, f64
}
