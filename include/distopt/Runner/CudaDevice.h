//===- CudaDevice.h - the device of dist-run --device=cuda ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libdistopt_cuda, loaded with dlopen only for --device=cuda (dist-run
// itself runs on machines without a CUDA driver): the step's arguments are
// copied to device buffers before each step and its results back after it,
// on the process's stream (the one the step's kernels, cuBLAS calls and
// NCCL collectives are ordered on).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_CUDADEVICE_H
#define DISTOPT_RUNNER_CUDADEVICE_H

#include "llvm/Support/Error.h"
#include <cstddef>

#include <string>

namespace distopt::runner {

class CudaDevice {
public:
  /// Loads libdistopt_cuda from `libDirectory`; fails (fail()) with the
  /// reason when it or the CUDA driver cannot be loaded, or the machine
  /// has no device.
  static llvm::Expected<CudaDevice *> load(const std::string &libDirectory);

  /// Device memory; fails on an error.
  llvm::Expected<void *> allocate(size_t bytes);
  llvm::Error free(void *pointer);
  llvm::Error copyToDevice(void *device, const void *host, size_t bytes);
  /// Completes every earlier call on the stream first.
  llvm::Error copyToHost(void *host, const void *device, size_t bytes);
  /// Waits for the stream; fails with the first error of the calls since
  /// the last wait, naming `what` was running.
  llvm::Error synchronize(const char *what);

private:
  CudaDevice() = default;
  llvm::Error failCall(const char *call);

  int (*deviceCount)() = nullptr;
  int (*synchronizeStream)() = nullptr;
  void *(*alloc)(size_t) = nullptr;
  int (*freeMemory)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  const char *(*lastError)() = nullptr;
};

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_CUDADEVICE_H
