//===- CudaDevice.cpp - the device of dist-run --device=cuda --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/CudaDevice.h"

#include "distopt/Runner/Error.h"

#include "llvm/ADT/Twine.h"

#include <dlfcn.h>
#include <memory>

using namespace distopt;
using namespace distopt::runner;

llvm::Expected<CudaDevice *> CudaDevice::load(const std::string &libDirectory) {
  static CudaDevice *device = nullptr;
  if (device)
    return device;
  // The driver first: its absence is the common reason.
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
    return makeError(llvm::Twine("--device=cuda: no CUDA driver (") +
                     dlerror() + "): this machine has no NVIDIA GPU driver");
  std::string path = libDirectory + "/libdistopt_cuda.so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library)
    return makeError(
        llvm::Twine("--device=cuda: cannot load libdistopt_cuda: ") +
        dlerror());
  auto cuda = std::unique_ptr<CudaDevice>(new CudaDevice());
  std::string missing;
  auto bind = [&](const char *name, auto &function) {
    function = reinterpret_cast<std::decay_t<decltype(function)>>(
        dlsym(library, name));
    if (!function && missing.empty())
      missing = name;
  };
  bind("distopt_cuda_device_count", cuda->deviceCount);
  bind("distopt_cuda_synchronize", cuda->synchronizeStream);
  bind("distopt_cuda_alloc", cuda->alloc);
  bind("distopt_cuda_free", cuda->freeMemory);
  bind("distopt_cuda_copy_to_device", cuda->toDevice);
  bind("distopt_cuda_copy_to_host", cuda->toHost);
  bind("distopt_cuda_last_error", cuda->lastError);
  if (!missing.empty())
    return makeError(llvm::Twine("--device=cuda: '") + path + "' has no " +
                     missing);
  if (cuda->deviceCount() == 0)
    return makeError(llvm::Twine("--device=cuda: no CUDA device (") +
                     cuda->lastError() + ")");
  device = cuda.release();
  return device;
}

llvm::Error CudaDevice::failCall(const char *call) {
  return makeError(llvm::Twine(call) + ": " + lastError());
}

llvm::Expected<void *> CudaDevice::allocate(size_t bytes) {
  void *pointer = alloc(bytes);
  if (!pointer)
    return failCall("allocating device memory");
  return pointer;
}

llvm::Error CudaDevice::free(void *pointer) {
  if (freeMemory(pointer) != 0)
    return failCall("freeing device memory");
  return llvm::Error::success();
}

llvm::Error CudaDevice::copyToDevice(void *device, const void *host,
                                     size_t bytes) {
  if (toDevice(device, host, bytes) != 0)
    return failCall("copying to the device");
  return llvm::Error::success();
}

llvm::Error CudaDevice::copyToHost(void *host, const void *device,
                                   size_t bytes) {
  if (toHost(host, device, bytes) != 0)
    return failCall("copying to the host");
  return llvm::Error::success();
}

llvm::Error CudaDevice::synchronize(const char *what) {
  if (synchronizeStream() != 0)
    return makeError(llvm::Twine(what) +
                     " failed on the device: " + lastError());
  return llvm::Error::success();
}
