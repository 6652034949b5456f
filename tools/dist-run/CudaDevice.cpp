//===- CudaDevice.cpp - the device of dist-run --device=cuda --------------===//

#include "CudaDevice.h"

#include "Failure.h"

#include "llvm/ADT/Twine.h"

#include <dlfcn.h>

using namespace distrun;

CudaDevice &CudaDevice::load(const std::string &libDirectory) {
  static CudaDevice *device = [&] {
    // The driver first: its absence is the common reason.
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
      fail(llvm::Twine("--device=cuda: no CUDA driver (") + dlerror() +
           "): this machine has no NVIDIA GPU driver");
    std::string path = libDirectory + "/libdistopt_cuda.so";
    void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!library)
      fail(llvm::Twine("--device=cuda: cannot load libdistopt_cuda: ") +
           dlerror());
    auto *cuda = new CudaDevice();
    auto bind = [&](const char *name, auto &function) {
      function = reinterpret_cast<std::decay_t<decltype(function)>>(
          dlsym(library, name));
      if (!function)
        fail(llvm::Twine("--device=cuda: '") + path + "' has no " + name);
    };
    bind("distopt_cuda_device_count", cuda->deviceCount);
    bind("distopt_cuda_synchronize", cuda->synchronizeStream);
    bind("distopt_cuda_alloc", cuda->alloc);
    bind("distopt_cuda_free", cuda->freeMemory);
    bind("distopt_cuda_copy_to_device", cuda->toDevice);
    bind("distopt_cuda_copy_to_host", cuda->toHost);
    bind("distopt_cuda_last_error", cuda->lastError);
    if (cuda->deviceCount() == 0)
      fail(llvm::Twine("--device=cuda: no CUDA device (") + cuda->lastError() +
           ")");
    return cuda;
  }();
  return *device;
}

void CudaDevice::failCall(const char *call) {
  fail(llvm::Twine(call) + ": " + lastError());
}

void *CudaDevice::allocate(size_t bytes) {
  void *pointer = alloc(bytes);
  if (!pointer)
    failCall("allocating device memory");
  return pointer;
}

void CudaDevice::free(void *pointer) {
  if (freeMemory(pointer) != 0)
    failCall("freeing device memory");
}

void CudaDevice::copyToDevice(void *device, const void *host, size_t bytes) {
  if (toDevice(device, host, bytes) != 0)
    failCall("copying to the device");
}

void CudaDevice::copyToHost(void *host, const void *device, size_t bytes) {
  if (toHost(host, device, bytes) != 0)
    failCall("copying to the host");
}

void CudaDevice::synchronize(const char *what) {
  if (synchronizeStream() != 0)
    fail(llvm::Twine(what) + " failed on the device: " + lastError());
}
