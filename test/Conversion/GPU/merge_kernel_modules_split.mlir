// RUN: dist-opt %s --dist-merge-kernel-modules=modules=2 | FileCheck %s --check-prefix=TWO
// RUN: dist-opt %s --dist-merge-kernel-modules=modules=3 | FileCheck %s --check-prefix=THREE
// RUN: dist-opt %s --dist-merge-kernel-modules=modules=9 | FileCheck %s --check-prefix=APART
// RUN: not dist-opt %s --dist-merge-kernel-modules=modules=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-merge-kernel-modules: 'modules' must be at least 1
// More modules asked for than kernels: each stays in its own.
// APART-COUNT-4: gpu.module @k{{[1-4]}} {

// Four kernels of equal size: with modules=2 two runs of two, with
// modules=3 a run of two then two alone (each run ends once it holds its
// share of the ops the runs before it left); every launch at its kernel's module.
// TWO:         gpu.module @k1 {
// TWO-NEXT:      gpu.func @k1() kernel
// TWO:           gpu.func @k2() kernel
// TWO:         gpu.module @k3 {
// TWO-NEXT:      gpu.func @k3() kernel
// TWO:           gpu.func @k4() kernel
// TWO-NOT:     gpu.module
// TWO:         gpu.launch_func {{ *}}@k1::@k1
// TWO-NEXT:    gpu.launch_func {{ *}}@k1::@k2
// TWO-NEXT:    gpu.launch_func {{ *}}@k3::@k3
// TWO-NEXT:    gpu.launch_func {{ *}}@k3::@k4
// THREE:         gpu.module @k1 {
// THREE-NEXT:      gpu.func @k1() kernel
// THREE:           gpu.func @k2() kernel
// THREE:         gpu.module @k3 {
// THREE-NEXT:      gpu.func @k3() kernel
// THREE-NOT:       gpu.func
// THREE:         gpu.module @k4 {
// THREE-NOT:     gpu.module
// THREE:         gpu.launch_func {{ *}}@k1::@k1
// THREE-NEXT:    gpu.launch_func {{ *}}@k1::@k2
// THREE-NEXT:    gpu.launch_func {{ *}}@k3::@k3
// THREE-NEXT:    gpu.launch_func {{ *}}@k4::@k4
module attributes {gpu.container_module} {
  gpu.module @k1 {
    gpu.func @k1() kernel { gpu.return }
  }
  gpu.module @k2 {
    gpu.func @k2() kernel { gpu.return }
  }
  gpu.module @k3 {
    gpu.func @k3() kernel { gpu.return }
  }
  gpu.module @k4 {
    gpu.func @k4() kernel { gpu.return }
  }
  func.func @step() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k1::@k1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @k2::@k2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @k3::@k3 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @k4::@k4 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
