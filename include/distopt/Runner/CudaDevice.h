//===- CudaDevice.h - the memory a step's state lives in --------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The device a step runs on, as the runner sees it: memory to allocate,
// copies to and from the host, and a wait, each counted. Two kinds:
//
// - CudaDevice: libdistopt_cuda, loaded with dlopen only for
//   --device=cuda (dist-run itself runs on machines without a CUDA
//   driver); everything on the process's stream, the one the step's
//   kernels, cuBLAS calls and NCCL collectives are ordered on.
// - MappedDevice: host memory standing in for the device (--gpu-mapped,
//   where the CUDA lowering's kernels run as CPU loops), so that keeping
//   the state on the device is exercised without a GPU. A host copy of
//   resident state that is out of date is overwritten with 0xff bytes
//   (NaN) until it is pulled back: a read of stale state fails the
//   comparisons the tests make instead of passing by chance.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_CUDADEVICE_H
#define DISTOPT_RUNNER_CUDADEVICE_H

#include "llvm/Support/Error.h"
#include <cstddef>
#include <cstdint>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distopt::runner {

/// What the runner moved between the host and a device.
struct DeviceTraffic {
  uint64_t toDevice = 0, toDeviceBytes = 0;
  uint64_t toHost = 0, toHostBytes = 0;
  uint64_t onDevice = 0, onDeviceBytes = 0;
  uint64_t allocations = 0;
  /// Copies staged on the copy stream (dataset batches, while the step
  /// before ran), and copies out of a staging buffer on the compute stream.
  uint64_t staged = 0, stagedBytes = 0, stagedUses = 0;
  /// Captured graphs, and launches of one (a step replayed).
  uint64_t graphCaptures = 0, graphLaunches = 0;

  DeviceTraffic operator-(const DeviceTraffic &before) const;
};

/// Memory of the device a step runs on (see the file comment).
class DeviceMemory {
public:
  virtual ~DeviceMemory();

  /// Device memory; fails on an error.
  llvm::Expected<void *> allocate(size_t bytes);
  llvm::Error free(void *pointer);
  llvm::Error copyToDevice(void *device, const void *host, size_t bytes);
  /// Completes every earlier call on the stream first.
  llvm::Error copyToHost(void *host, const void *device, size_t bytes);
  llvm::Error copyOnDevice(void *to, const void *from, size_t bytes);

  /// Page-locked host memory (a staging copy reads it asynchronously).
  llvm::Expected<void *> allocateHost(size_t bytes);
  llvm::Error freeHost(void *pointer);
  /// Enqueues a copy of pinned `host` to `device` on the copy stream, after
  /// the last useStaged() (which read the staging buffer it overwrites);
  /// returns at once. The host must not write `host` until waitStaged().
  llvm::Error stage(void *device, const void *host, size_t bytes);
  /// Orders the compute stream after every copy staged so far, then copies
  /// `from` (a staging buffer) to `to` on it.
  llvm::Error useStaged(void *to, const void *from, size_t bytes);
  /// Returns once every staged copy has read its host buffer.
  virtual llvm::Error waitStaged() = 0;

  /// Waits for the stream; fails with the first error of the calls since
  /// the last wait, naming `what` was running.
  virtual llvm::Error synchronize(const char *what) = 0;
  /// A host copy of device state is out of date (MappedDevice poisons it).
  virtual void markStale(void *host, size_t bytes) {}

  /// Work captured once and replayed: a CUDA graph.
  class Graph {
  public:
    virtual ~Graph();
    /// Enqueues the captured work again (counted as a graph launch).
    virtual llvm::Error launch() = 0;
  };
  /// Captures what `work` enqueues, which then does not run until the
  /// graph is launched; fails with the reason when it cannot be captured.
  /// `work` must stay callable while the graph lives (MappedDevice's
  /// graph calls it again at each launch: the host code re-enqueues the
  /// same work on buffers at the same addresses).
  virtual llvm::Expected<std::unique_ptr<Graph>>
  capture(std::function<llvm::Error()> work) = 0;

  /// What moved so far.
  const DeviceTraffic &getTraffic() const { return traffic; }

protected:
  virtual llvm::Expected<void *> allocateMemory(size_t bytes) = 0;
  virtual llvm::Error freeMemory(void *pointer) = 0;
  virtual llvm::Error copy(void *to, const void *from, size_t bytes,
                           int direction) = 0;
  virtual llvm::Expected<void *> allocateHostMemory(size_t bytes) = 0;
  virtual llvm::Error freeHostMemory(void *pointer) = 0;
  virtual llvm::Error stageCopy(void *device, const void *host,
                                size_t bytes) = 0;
  virtual llvm::Error useStagedCopy(void *to, const void *from,
                                    size_t bytes) = 0;

  /// copy()'s directions.
  enum { kToDevice, kToHost, kOnDevice };

private:
protected:
  DeviceTraffic traffic;
};

class CudaDevice : public DeviceMemory {
public:
  /// Loads libdistopt_cuda from `libDirectory`; fails with the reason when
  /// it or the CUDA driver cannot be loaded, or the machine has no device.
  static llvm::Expected<CudaDevice *> load(const std::string &libDirectory);

  llvm::Error synchronize(const char *what) override;
  llvm::Error waitStaged() override;
  llvm::Expected<std::unique_ptr<Graph>>
  capture(std::function<llvm::Error()> work) override;

private:
  class CudaGraph;
  CudaDevice() = default;
  llvm::Expected<void *> allocateMemory(size_t bytes) override;
  llvm::Error freeMemory(void *pointer) override;
  llvm::Error copy(void *to, const void *from, size_t bytes,
                   int direction) override;
  llvm::Expected<void *> allocateHostMemory(size_t bytes) override;
  llvm::Error freeHostMemory(void *pointer) override;
  llvm::Error stageCopy(void *device, const void *host, size_t bytes) override;
  llvm::Error useStagedCopy(void *to, const void *from, size_t bytes) override;
  llvm::Error failCall(const char *call);

  int (*deviceCount)() = nullptr;
  int (*synchronizeStream)() = nullptr;
  void *(*alloc)(size_t) = nullptr;
  int (*release)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  int (*onDevice)(void *, const void *, size_t) = nullptr;
  const char *(*lastError)() = nullptr;
  int (*captureBegin)() = nullptr;
  void *(*captureEnd)() = nullptr;
  int (*graphLaunch)(void *) = nullptr;
  void (*graphDestroy)(void *) = nullptr;
  void *(*hostAlloc)(size_t) = nullptr;
  int (*hostFree)(void *) = nullptr;
  int (*stageToDevice)(void *, const void *, size_t) = nullptr;
  int (*useStagedOnDevice)(void *, const void *, size_t) = nullptr;
  int (*stagedWait)() = nullptr;
};

/// Host memory standing in for a device (--gpu-mapped): allocations with
/// malloc (a step's results are freed with free()), copies with memcpy.
/// A staged copy is made as late as the streams allow (at the next
/// useStaged() or waitStaged()), and a staging buffer is poisoned once
/// used: a host write to a pinned buffer before waitStaged(), or a staging
/// buffer read twice for one copy, shows in the step's results.
class MappedDevice : public DeviceMemory {
public:
  llvm::Error synchronize(const char *) override {
    return llvm::Error::success();
  }
  llvm::Error waitStaged() override;
  void markStale(void *host, size_t bytes) override;
  /// The host code is the work: each launch calls `work` again.
  llvm::Expected<std::unique_ptr<Graph>>
  capture(std::function<llvm::Error()> work) override;

private:
  llvm::Expected<void *> allocateMemory(size_t bytes) override;
  llvm::Error freeMemory(void *pointer) override;
  llvm::Error copy(void *to, const void *from, size_t bytes,
                   int direction) override;
  llvm::Expected<void *> allocateHostMemory(size_t bytes) override;
  llvm::Error freeHostMemory(void *pointer) override;
  llvm::Error stageCopy(void *device, const void *host, size_t bytes) override;
  llvm::Error useStagedCopy(void *to, const void *from, size_t bytes) override;

  struct StagedCopy {
    void *device;
    const void *host;
    size_t bytes;
  };
  /// Staged copies not made yet.
  std::vector<StagedCopy> pending;
};

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_CUDADEVICE_H
