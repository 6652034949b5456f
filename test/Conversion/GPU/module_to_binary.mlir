// RUN: dist-opt %s --dist-gpu-module-to-binary=format=isa | FileCheck %s
// The same binaries compiled one module at a time (but for the times the
// target records).
// RUN: dist-opt %s --dist-gpu-module-to-binary=format=isa | sed -E 's/TimeInMs = [0-9]+/TimeInMs/g' > %t.parallel.mlir
// RUN: dist-opt %s --dist-gpu-module-to-binary=format=isa --mlir-disable-threading | sed -E 's/TimeInMs = [0-9]+/TimeInMs/g' > %t.serial.mlir
// RUN: diff %t.parallel.mlir %t.serial.mlir
// RUN: not dist-opt %s --dist-gpu-module-to-binary=format=cubin 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: error: dist-gpu-module-to-binary: unknown format 'cubin' (expected fatbin, bin, isa or offload)

// Three modules, each a gpu.binary of the same name in the same place,
// its PTX for its own target and holding only its own kernel.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.binary @first  [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {{{.*}}}, assembly = "{{.*}}.target sm_90{{.*}}.entry first_kernel{{.*}}"
// CHECK-NOT:       second_kernel
// CHECK-NEXT:    gpu.binary @second  [#gpu.object<#nvvm.target<chip = "sm_80">, properties = {{{.*}}}, assembly = "{{.*}}.target sm_80{{.*}}.entry second_kernel{{.*}}"
// CHECK-NEXT:    gpu.binary @third  [#gpu.object<#nvvm.target<chip = "sm_90">, properties = {{{.*}}}, assembly = "{{.*}}.entry third_kernel{{.*}}"
// CHECK-NEXT:    func.func @host
// CHECK-NOT:     gpu.module
module attributes {gpu.container_module} {
  gpu.module @first [#nvvm.target<chip = "sm_90">] {
    llvm.func @first_kernel(%arg0: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %0 = llvm.mlir.constant(1.0 : f32) : f32
      llvm.store %0, %arg0 : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @second [#nvvm.target<chip = "sm_80">] {
    llvm.func @second_kernel() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  gpu.module @third [#nvvm.target<chip = "sm_90">] {
    llvm.func @third_kernel() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host() {
    return
  }
}

