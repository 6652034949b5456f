// RUN: dist-opt %s --dist-gpu-host | FileCheck %s

// The host of a CUDA step after outlining: its buffers move to the device
// (stream-ordered gpu.alloc / gpu.dealloc), a constant global the kernels
// read is the device copy libdistopt_cuda keeps (distopt_constant: copied
// by the first call, no copy or allocation per call), a mutable one is
// copied to a device buffer freed before the return, the launch becomes
// asynchronous, and everything depends on the one token of the entry's
// `gpu.wait async` (libdistopt_cuda's stream). The address list the host
// writes for a collective stays host memory, and so does a global the
// collective's runtime call reads on the host (its counts: a ranked
// operand of a call of a function marked `distopt.host_operands`, as
// dist-to-runtime's distrt declarations are; before, it was copied to the
// device and the host would have read device memory). A global a call of
// an unmarked function reads is the device's (whatever the function's
// name). No host wait anywhere.
// CHECK-LABEL: func.func @step
// CHECK:         %[[S:.*]] = gpu.wait async
// CHECK:         %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[G]]
// CHECK:         %[[HOST:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK:         %[[BYTES:.*]] = arith.constant 16 : i64
// CHECK:         %[[RAW:.*]] = call @distopt_cuda_constant(%[[HOST]], %[[BYTES]]) : (i64, i64) -> memref<?xi8>
// CHECK:         %[[GD:.*]] = memref.view %[[RAW]][%{{.*}}][] : memref<?xi8> to memref<4xf32>
// CHECK:         %[[M:.*]] = memref.get_global @mutable : memref<4xf32>
// CHECK:         %[[MD:.*]], %{{.*}} = gpu.alloc async [%[[S]]] () : memref<4xf32>
// CHECK:         gpu.memcpy async [%[[S]]] %[[MD]], %[[M]] : memref<4xf32>, memref<4xf32>
// CHECK:         %[[B:.*]], %{{.*}} = gpu.alloc async [%[[S]]] () : memref<4xf32>
// CHECK:         %[[A:.*]] = memref.alloc() : memref<1xindex>
// CHECK:         memref.store %{{.*}}, %[[A]][%{{.*}}] : memref<1xindex>
// CHECK:         gpu.launch_func async [%[[S]]] @kernels::@add blocks in {{.*}} args(%[[GD]] : memref<4xf32>, %[[B]] : memref<4xf32>, %{{.*}} : memref<4xf32>)
// CHECK:         gpu.launch_func async [%[[S]]] @kernels::@add blocks in {{.*}} args(%[[MD]] : memref<4xf32>, %[[B]] : memref<4xf32>, %{{.*}} : memref<4xf32>)
// CHECK:         %[[COUNTS:.*]] = memref.get_global @counts : memref<1xi64>
// CHECK-NOT:     gpu.memcpy
// CHECK:         %[[CAST:.*]] = memref.cast %[[COUNTS]] : memref<1xi64> to memref<?xi64>
// CHECK:         call @distrt_mlir_all_reduce_f32(%[[A]], %[[CAST]])
// CHECK:         %[[DEV:.*]] = memref.get_global @device_counts : memref<1xi64>
// CHECK:         call @distopt_cuda_constant(
// CHECK:         call @distrt_mlir_unmarked(
// CHECK:         memref.dealloc %[[A]] : memref<1xindex>
// CHECK:         gpu.dealloc async [%[[S]]] %[[B]] : memref<4xf32>
// CHECK:         gpu.dealloc async [%[[S]]] %[[MD]] : memref<4xf32>
// CHECK-NEXT:    return
// CHECK:       func.func private @distopt_cuda_constant(i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-NOT:     gpu.wait [
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  memref.global "private" constant @counts : memref<1xi64> = dense<4>
  memref.global "private" constant @device_counts : memref<1xi64> = dense<4>
  memref.global "private" @mutable : memref<4xf32> = dense<0.0>
  func.func private @distrt_mlir_all_reduce_f32(memref<1xindex>, memref<?xi64>) attributes {distopt.host_operands}
  func.func private @distrt_mlir_unmarked(memref<?xi64>)
  func.func @step(%out: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %g = memref.get_global @table : memref<4xf32>
    %m = memref.get_global @mutable : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    %addresses = memref.alloc() : memref<1xindex>
    %p = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
    memref.store %p, %addresses[%c0] : memref<1xindex>
    gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%g : memref<4xf32>, %b : memref<4xf32>, %out : memref<4xf32>)
    gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%m : memref<4xf32>, %b : memref<4xf32>, %out : memref<4xf32>)
    %counts = memref.get_global @counts : memref<1xi64>
    %cast = memref.cast %counts : memref<1xi64> to memref<?xi64>
    call @distrt_mlir_all_reduce_f32(%addresses, %cast) : (memref<1xindex>, memref<?xi64>) -> ()
    %device = memref.get_global @device_counts : memref<1xi64>
    %dcast = memref.cast %device : memref<1xi64> to memref<?xi64>
    call @distrt_mlir_unmarked(%dcast) : (memref<?xi64>) -> ()
    memref.dealloc %addresses : memref<1xindex>
    memref.dealloc %b : memref<4xf32>
    return
  }
  gpu.module @kernels {
    gpu.func @add(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<4xf32>
      %y = memref.load %b[%i] : memref<4xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i] : memref<4xf32>
      gpu.return
    }
  }
}

