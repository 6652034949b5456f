// RUN: dist-opt %s --dist-lower-cpu | FileCheck %s --implicit-check-not="bf16 to f32" --implicit-check-not="f32 to bf16" --implicit-check-not="llvm.call @tanh"
// RUN: dist-opt %s --dist-lower-cpu | FileCheck %s --check-prefix=ARITH

// dist-lower-cpu on a bf16 linear layer with a bias and GELU: the product
// is the library's bf16 product (f32 accumulation); the elementwise loop
// computes in f32 -- bf16 loads widened by a shift, the result rounded to
// nearest even in integer arithmetic (no fpext / fptrunc of bfloat, which
// LLVM vectorizes poorly or calls a libcall for) -- and the GELU's tanh is
// the f32 polynomial (math extended to f32, then dist-approximate-math),
// not a libm call. f16 alike, its conversions left to LLVM (F16C).
// CHECK-LABEL: llvm.func @step
// CHECK: llvm.call @distopt_matmul_bf16(
// CHECK: llvm.load {{.*}} -> bf16
// CHECK: llvm.bitcast {{.*}} : bf16 to i16
// CHECK: llvm.shl
// CHECK: llvm.bitcast {{.*}} : i16 to bf16
// CHECK: llvm.store {{.*}} : bf16, !llvm.ptr
// CHECK-LABEL: llvm.func @step_f16
// CHECK: llvm.call @distopt_matmul_f16(
// CHECK: llvm.fpext {{.*}} : f16 to f32
// CHECK: llvm.fptrunc {{.*}} : f32 to f16
// No arithmetic on 16-bit values.
// ARITH-NOT: llvm.{{fadd|fsub|fmul|fdiv|fneg|fcmp|intr.maximum|intr.minimum|select}} {{.*}}: {{(vector<[0-9]+x)?}}{{bf16|f16}}
func.func @step(%x: tensor<16x32xbf16>, %w: tensor<8x32xbf16>, %b: tensor<8xbf16>) -> tensor<16x8xbf16> {
  %y = train.matmul %x, %w {transpose_rhs} : (tensor<16x32xbf16>, tensor<8x32xbf16>) -> tensor<16x8xbf16>
  %z = train.add %y, %b : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xbf16>
  %g = train.gelu %z : (tensor<16x8xbf16>) -> tensor<16x8xbf16>
  return %g : tensor<16x8xbf16>
}

func.func @step_f16(%x: tensor<16x32xf16>, %w: tensor<8x32xf16>, %b: tensor<8xf16>) -> tensor<16x8xf16> {
  %y = train.matmul %x, %w {transpose_rhs} : (tensor<16x32xf16>, tensor<8x32xf16>) -> tensor<16x8xf16>
  %z = train.add %y, %b : (tensor<16x8xf16>, tensor<8xf16>) -> tensor<16x8xf16>
  %g = train.relu %z : (tensor<16x8xf16>) -> tensor<16x8xf16>
  return %g : tensor<16x8xf16>
}
