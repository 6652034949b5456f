// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-gpu-module-to-binary=format=isa

// A module no target compiles: the error at it, nothing replaced.
module attributes {gpu.container_module} {
  // expected-error @below {{the module has no target attributes}}
  gpu.module @untargeted {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// A target that fails to serialize its module (an op NVVM's translation
// does not know): the error at that module.
module attributes {gpu.container_module} {
  // expected-error @below {{Failed creating the llvm::Module.}}
  // expected-error @below {{an error happened while serializing the module for #nvvm.target}}
  gpu.module @broken [#nvvm.target<chip = "sm_90">] {
    // expected-error @below {{cannot be converted to LLVM IR}}
    func.func @k() {
      return
    }
  }
}
