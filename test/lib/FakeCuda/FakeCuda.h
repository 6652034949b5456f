//===- FakeCuda.h - what the fake CUDA libraries share ----------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The fake driver's (FakeDriver.cpp, libcuda.so.1) services to the fake
// cuBLAS, cuBLASLt and NCCL: the device memory table, the streams' queues
// and captures, and the report. See docs/guides/fake-cuda.md.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TEST_FAKECUDA_FAKECUDA_H
#define DISTOPT_TEST_FAKECUDA_FAKECUDA_H

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fakecuda {

/// What a stream's work is, for the report's counts and a graph's nodes.
enum class Work { Kernel, Product, Collective, Copy, Memset, Wait };

/// Records a breach of the CUDA programming model: said on stderr and kept
/// for the report (whose "violations" a test asserts empty).
void violate(const std::string &message);

/// The violations recorded so far (the report's), oldest first.
std::vector<std::string> getViolations();

/// True when [pointer, pointer + bytes) lies in one live device (or
/// managed) allocation; otherwise records a violation naming `what`.
bool checkDevice(const void *pointer, size_t bytes, const std::string &what);

/// Puts `work` on `stream` in stream order (captured as a node when the
/// stream is capturing); CUDA_SUCCESS or why not (recorded).
CUresult enqueue(CUstream stream, Work kind, const std::string &name,
                 std::function<void()> work);

/// True when `stream` is being captured.
bool isCapturing(CUstream stream);

/// The live handles of one kind a fake library made: owned here, as a
/// real library owns its objects, so a handle a program never destroys
/// stays reachable to the end of the process (not a leak of the fake's).
template <typename T> class Handles {
public:
  template <typename... Args> T *create(Args &&...args) {
    auto handle = std::make_unique<T>(std::forward<Args>(args)...);
    T *created = handle.get();
    std::lock_guard<std::mutex> lock(mutex);
    live.emplace(created, std::move(handle));
    return created;
  }

  /// Destroys `handle`; false (nothing done) when it is not live.
  bool destroy(T *handle) {
    std::lock_guard<std::mutex> lock(mutex);
    return live.erase(handle) != 0;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return live.size();
  }

private:
  std::mutex mutex;
  std::unordered_map<T *, std::unique_ptr<T>> live;
};

/// The one table of `T` handles, never destroyed (handles outlive every
/// static destructor that might still use one).
template <typename T> Handles<T> &getHandles() {
  static auto *handles = new Handles<T>();
  return *handles;
}

} // namespace fakecuda

#endif // DISTOPT_TEST_FAKECUDA_FAKECUDA_H
