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
#include <string>
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

} // namespace fakecuda

#endif // DISTOPT_TEST_FAKECUDA_FAKECUDA_H
