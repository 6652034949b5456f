// RUN: dist-opt %s -split-input-file --dist-merge-kernel-modules | FileCheck %s
// The whole lowering: the transformer block's 23 kernels in one binary
// with kernel-modules=1; by default in at most 16, compiled in parallel
// (fewer: its fused optimizer kernel alone holds more than half the ops).
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa kernel-modules=1" | FileCheck %s --check-prefix=BLOCK
// BLOCK-COUNT-1: gpu.binary @
// BLOCK-NOT:     gpu.binary @
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa" | grep -c "gpu.binary @" | FileCheck %s --check-prefix=SIXTEEN
// SIXTEEN: {{^([2-9]|1[0-6])$}}
// Without it (merge-kernels=false), one binary per kernel.
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa merge-kernels=false" | FileCheck %s --check-prefix=APART
// APART-COUNT-23: gpu.binary @

// Three outlined kernels: all in the first module, the second kernel
// (named like the first, as outlining names each after its function)
// renamed, a reference inside its module too, every launch pointing at
// where its kernel is now.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.module @step_kernel {
// CHECK-NEXT:      gpu.func @step_kernel() kernel
// CHECK:           gpu.func @step_kernel_0() kernel attributes {self = @step_kernel_0}
// CHECK:           gpu.func @other() kernel
// CHECK-NOT:     gpu.module
// CHECK:         func.func @step
// CHECK-NEXT:      %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      gpu.launch_func {{ *}}@step_kernel::@step_kernel blocks
// CHECK-NEXT:      gpu.launch_func {{ *}}@step_kernel::@step_kernel_0 blocks
// CHECK-NEXT:      gpu.launch_func {{ *}}@step_kernel::@other blocks
module attributes {gpu.container_module} {
  gpu.module @step_kernel {
    gpu.func @step_kernel() kernel { gpu.return }
  }
  gpu.module @step_kernel_0 {
    gpu.func @step_kernel() kernel attributes {self = @step_kernel} { gpu.return }
  }
  gpu.module @third {
    gpu.func @other() kernel { gpu.return }
  }
  func.func @step() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @step_kernel::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @step_kernel_0::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @third::@other blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Modules compiled differently (another target) stay apart; the two for
// sm_90 merge.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.module @a [#nvvm.target<chip = "sm_90">] {
// CHECK-NEXT:      gpu.func @a() kernel
// CHECK:           gpu.func @c() kernel
// CHECK:         gpu.module @b [#nvvm.target<chip = "sm_80">] {
// CHECK-NEXT:      gpu.func @b() kernel
// CHECK-NOT:     gpu.module
// CHECK:         gpu.launch_func {{ *}}@a::@a
// CHECK-NEXT:    gpu.launch_func {{ *}}@b::@b
// CHECK-NEXT:    gpu.launch_func {{ *}}@a::@c
module attributes {gpu.container_module} {
  gpu.module @a [#nvvm.target<chip = "sm_90">] {
    gpu.func @a() kernel { gpu.return }
  }
  gpu.module @b [#nvvm.target<chip = "sm_80">] {
    gpu.func @b() kernel { gpu.return }
  }
  gpu.module @c [#nvvm.target<chip = "sm_90">] {
    gpu.func @c() kernel { gpu.return }
  }
  func.func @step() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a::@a blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @b::@b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @c::@c blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

