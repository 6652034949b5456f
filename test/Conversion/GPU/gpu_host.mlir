// RUN: dist-opt %s --dist-gpu-host | FileCheck %s

// The host of a CUDA step after outlining: its buffers move to the device
// (stream-ordered gpu.alloc / gpu.dealloc), a global the kernels read is
// copied to a device buffer freed before the return, the launch becomes
// asynchronous, and everything depends on the one token of the entry's
// `gpu.wait async` (libdistopt_cuda's stream). The address list the host
// writes for a collective stays host memory. No host wait anywhere.
// CHECK-LABEL: func.func @step
// CHECK:         %[[S:.*]] = gpu.wait async
// CHECK:         %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK:         %[[GD:.*]], %{{.*}} = gpu.alloc async [%[[S]]] () : memref<4xf32>
// CHECK:         gpu.memcpy async [%[[S]]] %[[GD]], %[[G]] : memref<4xf32>, memref<4xf32>
// CHECK:         %[[B:.*]], %{{.*}} = gpu.alloc async [%[[S]]] () : memref<4xf32>
// CHECK:         %[[A:.*]] = memref.alloc() : memref<1xindex>
// CHECK:         memref.store %{{.*}}, %[[A]][%{{.*}}] : memref<1xindex>
// CHECK:         gpu.launch_func async [%[[S]]] @kernels::@add blocks in {{.*}} args(%[[GD]] : memref<4xf32>, %[[B]] : memref<4xf32>, %{{.*}} : memref<4xf32>)
// CHECK:         call @collective(%[[A]], %[[B]])
// CHECK:         memref.dealloc %[[A]] : memref<1xindex>
// CHECK:         gpu.dealloc async [%[[S]]] %[[B]] : memref<4xf32>
// CHECK:         gpu.dealloc async [%[[S]]] %[[GD]] : memref<4xf32>
// CHECK-NEXT:    return
// CHECK-NOT:     gpu.wait [
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func private @collective(memref<1xindex>, memref<4xf32>)
  func.func @step(%out: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %g = memref.get_global @table : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    %addresses = memref.alloc() : memref<1xindex>
    %p = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
    memref.store %p, %addresses[%c0] : memref<1xindex>
    gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%g : memref<4xf32>, %b : memref<4xf32>, %out : memref<4xf32>)
    call @collective(%addresses, %b) : (memref<1xindex>, memref<4xf32>) -> ()
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
