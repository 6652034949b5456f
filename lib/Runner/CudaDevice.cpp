//===- CudaDevice.cpp - the memory a step's state lives in ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/CudaDevice.h"

#include "distopt/Runner/Error.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>

using namespace distopt;
using namespace distopt::runner;

DeviceTraffic DeviceTraffic::operator-(const DeviceTraffic &before) const {
  DeviceTraffic delta;
  delta.toDevice = toDevice - before.toDevice;
  delta.toDeviceBytes = toDeviceBytes - before.toDeviceBytes;
  delta.toHost = toHost - before.toHost;
  delta.toHostBytes = toHostBytes - before.toHostBytes;
  delta.onDevice = onDevice - before.onDevice;
  delta.onDeviceBytes = onDeviceBytes - before.onDeviceBytes;
  delta.allocations = allocations - before.allocations;
  delta.staged = staged - before.staged;
  delta.stagedBytes = stagedBytes - before.stagedBytes;
  delta.stagedUses = stagedUses - before.stagedUses;
  delta.graphCaptures = graphCaptures - before.graphCaptures;
  delta.graphLaunches = graphLaunches - before.graphLaunches;
  return delta;
}

DeviceMemory::~DeviceMemory() = default;

llvm::Expected<void *> DeviceMemory::allocate(size_t bytes) {
  ++traffic.allocations;
  return allocateMemory(bytes);
}

DeviceMemory::Graph::~Graph() = default;

llvm::Error DeviceMemory::free(void *pointer) { return freeMemory(pointer); }

llvm::Error DeviceMemory::copyToDevice(void *device, const void *host,
                                       size_t bytes) {
  ++traffic.toDevice;
  traffic.toDeviceBytes += bytes;
  return copy(device, host, bytes, kToDevice);
}

llvm::Error DeviceMemory::copyToHost(void *host, const void *device,
                                     size_t bytes) {
  ++traffic.toHost;
  traffic.toHostBytes += bytes;
  return copy(host, device, bytes, kToHost);
}

llvm::Error DeviceMemory::copyOnDevice(void *to, const void *from,
                                       size_t bytes) {
  ++traffic.onDevice;
  traffic.onDeviceBytes += bytes;
  return copy(to, from, bytes, kOnDevice);
}

llvm::Expected<void *> DeviceMemory::allocateHost(size_t bytes) {
  return allocateHostMemory(bytes);
}

llvm::Error DeviceMemory::freeHost(void *pointer) {
  return freeHostMemory(pointer);
}

llvm::Error DeviceMemory::stage(void *device, const void *host, size_t bytes) {
  ++traffic.staged;
  traffic.stagedBytes += bytes;
  return stageCopy(device, host, bytes);
}

llvm::Error DeviceMemory::useStaged(void *to, const void *from, size_t bytes) {
  ++traffic.stagedUses;
  return useStagedCopy(to, from, bytes);
}

//===----------------------------------------------------------------------===//
// CudaDevice
//===----------------------------------------------------------------------===//

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
  bind("distopt_cuda_free", cuda->release);
  bind("distopt_cuda_copy_to_device", cuda->toDevice);
  bind("distopt_cuda_copy_to_host", cuda->toHost);
  bind("distopt_cuda_copy_on_device", cuda->onDevice);
  bind("distopt_cuda_last_error", cuda->lastError);
  bind("distopt_cuda_capture_begin", cuda->captureBegin);
  bind("distopt_cuda_capture_end", cuda->captureEnd);
  bind("distopt_cuda_graph_launch", cuda->graphLaunch);
  bind("distopt_cuda_graph_destroy", cuda->graphDestroy);
  bind("distopt_cuda_host_alloc", cuda->hostAlloc);
  bind("distopt_cuda_host_free", cuda->hostFree);
  bind("distopt_cuda_stage", cuda->stageToDevice);
  bind("distopt_cuda_use_staged", cuda->useStagedOnDevice);
  bind("distopt_cuda_staged_wait", cuda->stagedWait);
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

llvm::Expected<void *> CudaDevice::allocateMemory(size_t bytes) {
  void *pointer = alloc(bytes);
  if (!pointer)
    return failCall("allocating device memory");
  return pointer;
}

llvm::Error CudaDevice::freeMemory(void *pointer) {
  if (release(pointer) != 0)
    return failCall("freeing device memory");
  return llvm::Error::success();
}

llvm::Error CudaDevice::copy(void *to, const void *from, size_t bytes,
                             int direction) {
  switch (direction) {
  case kToDevice:
    if (toDevice(to, from, bytes) != 0)
      return failCall("copying to the device");
    break;
  case kToHost:
    if (toHost(to, from, bytes) != 0)
      return failCall("copying to the host");
    break;
  default:
    if (onDevice(to, from, bytes) != 0)
      return failCall("copying on the device");
  }
  return llvm::Error::success();
}

llvm::Expected<void *> CudaDevice::allocateHostMemory(size_t bytes) {
  void *pointer = hostAlloc(bytes);
  if (!pointer)
    return failCall("allocating pinned host memory");
  return pointer;
}

llvm::Error CudaDevice::freeHostMemory(void *pointer) {
  if (hostFree(pointer) != 0)
    return failCall("freeing pinned host memory");
  return llvm::Error::success();
}

llvm::Error CudaDevice::stageCopy(void *device, const void *host,
                                  size_t bytes) {
  if (stageToDevice(device, host, bytes) != 0)
    return failCall("staging a batch to the device");
  return llvm::Error::success();
}

llvm::Error CudaDevice::useStagedCopy(void *to, const void *from,
                                      size_t bytes) {
  if (useStagedOnDevice(to, from, bytes) != 0)
    return failCall("copying a staged batch on the device");
  return llvm::Error::success();
}

llvm::Error CudaDevice::waitStaged() {
  if (stagedWait() != 0)
    return failCall("staging a batch to the device");
  return llvm::Error::success();
}

llvm::Error CudaDevice::synchronize(const char *what) {
  if (synchronizeStream() != 0)
    return makeError(llvm::Twine(what) +
                     " failed on the device: " + lastError());
  return llvm::Error::success();
}

/// An instantiated CUDA graph (libdistopt_cuda's handle).
class CudaDevice::CudaGraph : public DeviceMemory::Graph {
public:
  CudaGraph(CudaDevice &device, void *handle)
      : device(device), handle(handle) {}
  ~CudaGraph() override { device.graphDestroy(handle); }
  llvm::Error launch() override {
    ++device.traffic.graphLaunches;
    if (device.graphLaunch(handle) != 0)
      return device.failCall("launching the step's CUDA graph");
    return llvm::Error::success();
  }

private:
  CudaDevice &device;
  void *handle;
};

llvm::Expected<std::unique_ptr<DeviceMemory::Graph>>
CudaDevice::capture(std::function<llvm::Error()> work) {
  if (captureBegin() != 0)
    return failCall("capturing the step in a CUDA graph");
  llvm::Error failed = work();
  // (Ended even when the work failed: the stream must leave capture mode.)
  void *handle = captureEnd();
  if (failed) {
    if (handle)
      graphDestroy(handle);
    return std::move(failed);
  }
  if (!handle)
    return failCall("capturing the step in a CUDA graph");
  ++traffic.graphCaptures;
  return std::make_unique<CudaGraph>(*this, handle);
}

//===----------------------------------------------------------------------===//
// MappedDevice
//===----------------------------------------------------------------------===//

namespace {
/// --gpu-mapped's graph: the captured host code, called again per launch.
class MappedGraph : public DeviceMemory::Graph {
public:
  MappedGraph(std::function<llvm::Error()> work, DeviceTraffic &traffic)
      : work(std::move(work)), traffic(traffic) {}
  llvm::Error launch() override {
    ++traffic.graphLaunches;
    return work();
  }

private:
  std::function<llvm::Error()> work;
  DeviceTraffic &traffic;
};
} // namespace

llvm::Expected<std::unique_ptr<DeviceMemory::Graph>>
MappedDevice::capture(std::function<llvm::Error()> work) {
  ++traffic.graphCaptures;
  return std::make_unique<MappedGraph>(std::move(work), traffic);
}

void MappedDevice::markStale(void *host, size_t bytes) {
  std::memset(host, 0xff, bytes);
}

llvm::Expected<void *> MappedDevice::allocateMemory(size_t bytes) {
  // (Aligned as the step's own allocations; freed with free().)
  void *pointer = std::aligned_alloc(64, llvm::alignTo(bytes ? bytes : 1, 64));
  if (!pointer)
    return makeError("allocating " + llvm::Twine(bytes) +
                     " bytes of mapped device memory failed");
  return pointer;
}

llvm::Error MappedDevice::freeMemory(void *pointer) {
  std::free(pointer);
  return llvm::Error::success();
}

llvm::Error MappedDevice::copy(void *to, const void *from, size_t bytes, int) {
  std::memcpy(to, from, bytes);
  return llvm::Error::success();
}

llvm::Expected<void *> MappedDevice::allocateHostMemory(size_t bytes) {
  return allocateMemory(bytes);
}

llvm::Error MappedDevice::freeHostMemory(void *pointer) {
  return freeMemory(pointer);
}

llvm::Error MappedDevice::stageCopy(void *device, const void *host,
                                    size_t bytes) {
  pending.push_back({device, host, bytes});
  return llvm::Error::success();
}

llvm::Error MappedDevice::waitStaged() {
  for (const StagedCopy &copy : pending)
    std::memcpy(copy.device, copy.host, copy.bytes);
  pending.clear();
  return llvm::Error::success();
}

llvm::Error MappedDevice::useStagedCopy(void *to, const void *from,
                                        size_t bytes) {
  if (llvm::Error error = waitStaged())
    return error;
  std::memcpy(to, from, bytes);
  std::memset(const_cast<void *>(from), 0xff, bytes);
  return llvm::Error::success();
}
