// RUN: dist-opt %s --dist-gpu-host | FileCheck %s

// Every library call of a CUDA step takes libdistopt_cuda's name
// (distopt_cuda_<f>), so that libdistopt_cpu's distopt_<f>, which the
// runner also loads, can never take it (before, dist-run's CUDA steps ran
// their products and workspaces through libdistopt_cpu, on device
// pointers); distrt's collectives keep their names.
// CHECK-LABEL: func.func @products
// CHECK:         call @distopt_cuda_matmul_f32(
// CHECK:         call @distrt_mlir_barrier(
// CHECK-NOT:     @distopt_matmul_f32
// CHECK:       func.func private @distopt_cuda_matmul_f32(memref<*xf32>) attributes {llvm.emit_c_interface}
// CHECK:       func.func private @distrt_mlir_barrier()
func.func @products(%a: memref<*xf32>) {
  call @distopt_matmul_f32(%a) : (memref<*xf32>) -> ()
  call @distrt_mlir_barrier() : () -> ()
  return
}
func.func private @distopt_matmul_f32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @distrt_mlir_barrier()
