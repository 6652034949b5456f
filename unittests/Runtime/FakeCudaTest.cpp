//===- FakeCudaTest.cpp - the fake CUDA driver enforces CUDA's rules ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// test/GPU/fake_device.test trusts the fake driver (test/lib/FakeCuda) to
// catch what a device would refuse or silently get wrong; each case here
// breaks one rule and expects the driver's error and one violation.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {
class FakeCudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&device, kBytes), CUDA_SUCCESS);
    before = fakecuda::getViolations().size();
  }

  /// The violations since SetUp.
  std::vector<std::string> getNew() {
    std::vector<std::string> all = fakecuda::getViolations();
    return {all.begin() + before, all.end()};
  }

  /// Ends a capture that a failed call invalidated.
  void endInvalidated() {
    CUgraph graph = nullptr;
    EXPECT_EQ(cuStreamEndCapture(stream, &graph),
              CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
  }

  static constexpr size_t kBytes = 256;
  CUstream stream = nullptr;
  CUdeviceptr device = 0;
  size_t before = 0;
};

TEST_F(FakeCudaTest, CopiesOrderedOnTheStreamAndCaptured) {
  std::vector<char> host(kBytes, 7), back(kBytes, 0);
  ASSERT_EQ(cuMemcpyHtoDAsync(device, host.data(), kBytes, stream),
            CUDA_SUCCESS);
  // (The pageable source was read when the copy was enqueued.)
  host.assign(kBytes, 9);
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), device, kBytes, stream),
            CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<char>(kBytes, 7));
  // A captured copy from pinned memory runs at each replay.
  void *pinned = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&pinned, kBytes, 0), CUDA_SUCCESS);
  std::memset(pinned, 3, kBytes);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(device, pinned, kBytes, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  size_t nodes = 0;
  ASSERT_EQ(cuGraphGetNodes(graph, nullptr, &nodes), CUDA_SUCCESS);
  EXPECT_EQ(nodes, 1u);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  std::memset(pinned, 5, kBytes);
  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), device, kBytes, stream),
            CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<char>(kBytes, 5));
  EXPECT_TRUE(getNew().empty());
}

TEST_F(FakeCudaTest, PinnedResultUnreadUntilTheStreamIsWaitedFor) {
  void *pinned = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&pinned, 4, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(device, 42, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(pinned, device, 4, stream), CUDA_SUCCESS);
  uint32_t value;
  std::memcpy(&value, pinned, 4);
  EXPECT_EQ(value, 0xffffffffu);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  std::memcpy(&value, pinned, 4);
  EXPECT_EQ(value, 42u);
}

TEST_F(FakeCudaTest, PageableCopyInACapture) {
  std::vector<char> host(kBytes);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoDAsync(device, host.data(), kBytes, stream),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  endInvalidated();
  ASSERT_EQ(getNew().size(), 1u);
  EXPECT_NE(getNew()[0].find("pageable host memory"), std::string::npos);
}

TEST_F(FakeCudaTest, HostWaitAndAllocationInACapture) {
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUdeviceptr more = 0;
  EXPECT_EQ(cuMemAlloc(&more, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  endInvalidated();
  EXPECT_EQ(getNew().size(), 2u);
}

TEST_F(FakeCudaTest, AsyncAllocationIsTheGraphs) {
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  CUdeviceptr more = 0;
  ASSERT_EQ(cuMemAllocAsync(&more, 16, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  size_t count = 1;
  ASSERT_EQ(cuGraphGetNodes(graph, &node, &count), CUDA_SUCCESS);
  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
}

TEST_F(FakeCudaTest, UseAfterFreeAndOutOfBounds) {
  EXPECT_EQ(cuMemsetD32Async(device, 0, kBytes / 4 + 1, stream),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemFreeAsync(device, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD32Async(device, 0, 1, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeAsync(device, stream), CUDA_ERROR_INVALID_VALUE);
  std::vector<std::string> found = getNew();
  ASSERT_EQ(found.size(), 3u);
  EXPECT_NE(found[0].find("past its end"), std::string::npos);
  EXPECT_NE(found[1].find("already freed"), std::string::npos);
  EXPECT_NE(found[2].find("freed twice"), std::string::npos);
}

TEST_F(FakeCudaTest, HostPointerAsDevice) {
  std::vector<char> host(kBytes);
  EXPECT_EQ(cuMemcpyDtoDAsync(device,
                              reinterpret_cast<CUdeviceptr>(host.data()),
                              kBytes, stream),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(getNew().size(), 1u);
  EXPECT_NE(getNew()[0].find("is not device memory"), std::string::npos);
}

TEST_F(FakeCudaTest, ForkedStreamMustJoinBack) {
  CUstream side = nullptr;
  CUevent fork = nullptr, join = nullptr;
  ASSERT_EQ(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&join, 0), CUDA_SUCCESS);
  // Joined back: a graph.
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(device, 1, 1, side), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(join, side), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(stream, join, 0), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  EXPECT_TRUE(getNew().empty());
  // Not joined back: refused.
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(device, 1, 1, side), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(stream, &graph),
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  ASSERT_EQ(getNew().size(), 1u);
  EXPECT_NE(getNew()[0].find("not joined back"), std::string::npos);
}

TEST_F(FakeCudaTest, EventOfAnEndedCapture) {
  // (Regression: the event kept its ended capture, which a later wait
  // then used after it was freed.)
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(other, event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_TRUE(fakecuda::isCapturing(stream) == false &&
              fakecuda::isCapturing(other) == false);
  EXPECT_TRUE(getNew().empty());
}

TEST_F(FakeCudaTest, CaptureWaitsOnAnOutsideEvent) {
  CUevent outside = nullptr;
  ASSERT_EQ(cuEventCreate(&outside, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(outside, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(stream, outside, 0),
            CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  endInvalidated();
  EXPECT_EQ(getNew().size(), 1u);
}

TEST_F(FakeCudaTest, HandleDestroyedTwice) {
  // (The driver owns its handles: one a program never destroys stays
  // reachable, and one destroyed twice is caught, not freed twice.)
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(event), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_ERROR_INVALID_HANDLE);
  std::vector<std::string> violations = getNew();
  ASSERT_EQ(violations.size(), 2u);
  EXPECT_NE(violations[0].find("not a live event"), std::string::npos);
  EXPECT_NE(violations[1].find("not a live graph"), std::string::npos);
}

TEST_F(FakeCudaTest, KernelLaunchLimits) {
  // A module image of one kernel name: an ELF header whose section table
  // ends at 64 bytes, the name inside.
  std::vector<unsigned char> image(64, 0);
  std::memcpy(image.data(),
              "\x7f"
              "ELF",
              4);
  image[4] = 2;
  uint64_t sections = 64;
  std::memcpy(image.data() + 0x28, &sections, 8);
  std::memcpy(image.data() + 16, "kernel", 7);
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&function, module, "missing"),
            CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuModuleGetFunction(&function, module, "kernel"), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(function, 1, 1, 1, 1024, 1, 1, 0, stream, nullptr,
                           nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(function, 1, 1, 1, 2048, 1, 1, 0, stream, nullptr,
                           nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 64 * 1024, stream,
                           nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(
      cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr),
      CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(getNew().size(), 4u);
}
} // namespace
