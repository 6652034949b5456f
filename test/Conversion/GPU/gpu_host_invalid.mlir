// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-gpu-host

func.func @scalar_read(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{would access device memory on the host of a CUDA step (a scalar read or write outside the kernels)}}
  %x = memref.load %a[%c0] : memref<4xf32>
  return %x : f32
}

// -----

func.func @unmapped(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @below {{is left on the host of a CUDA step (every linalg op and copy must be mapped to kernels first: dist-map-to-gpu)}}
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @dynamic(%n: index) {
  // expected-error @below {{has a dynamic size, which a CUDA step cannot allocate}}
  %a = memref.alloc(%n) : memref<?xf32>
  return
}

// -----

// (A mutable global: a constant's device copy is kept across calls, from
// any region.)
memref.global "private" @table : memref<4xf32> = dense<1.0>
func.func @nested_global(%c: i1) {
  scf.if %c {
    // expected-error @below {{reads a global in a nested region of a CUDA step's host code (only the entry block's globals are copied to the device)}}
    %g = memref.get_global @table : memref<4xf32>
  }
  return
}

// -----

// libdistopt_cuda's name is taken: the call is not renamed onto another
// function.
// expected-error @below {{'func.func' op cannot be renamed to libdistopt_cuda's 'distopt_cuda_matmul_f32': the module already has that symbol}}
func.func private @distopt_matmul_f32(memref<*xf32>)
func.func private @distopt_cuda_matmul_f32(memref<*xf32>)
