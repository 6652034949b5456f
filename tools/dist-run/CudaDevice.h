//===- CudaDevice.h - the device of dist-run --device=cuda ------*- C++ -*-===//
//
// libdistopt_cuda, loaded with dlopen only for --device=cuda (dist-run
// itself runs on machines without a CUDA driver): the step's arguments are
// copied to device buffers before each step and its results back after it,
// on the process's stream (the one the step's kernels, cuBLAS calls and
// NCCL collectives are ordered on).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_CUDADEVICE_H
#define DISTOPT_TOOLS_DIST_RUN_CUDADEVICE_H

#include <cstddef>
#include <string>

namespace distrun {

class CudaDevice {
public:
  /// Loads libdistopt_cuda from `libDirectory`; fails (fail()) with the
  /// reason when it or the CUDA driver cannot be loaded, or the machine
  /// has no device.
  static CudaDevice &load(const std::string &libDirectory);

  /// Device memory; fails on an error.
  void *allocate(size_t bytes);
  void free(void *pointer);
  void copyToDevice(void *device, const void *host, size_t bytes);
  /// Completes every earlier call on the stream first.
  void copyToHost(void *host, const void *device, size_t bytes);
  /// Waits for the stream; fails with the first error of the calls since
  /// the last wait, naming `what` was running.
  void synchronize(const char *what);

private:
  CudaDevice() = default;
  [[noreturn]] void failCall(const char *call);

  int (*deviceCount)() = nullptr;
  int (*synchronizeStream)() = nullptr;
  void *(*alloc)(size_t) = nullptr;
  int (*freeMemory)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  const char *(*lastError)() = nullptr;
};

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_CUDADEVICE_H
