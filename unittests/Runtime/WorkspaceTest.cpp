//===- WorkspaceTest.cpp - libdistopt_cpu's function workspaces -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// distopt_workspace (lib/Runtime/CpuKernels.cpp), the memory that holds the
// buffers dist-plan-workspace hoisted out of a GPU-mapped function's calls:
// one buffer per key, answered again by every lookup, 256-byte aligned,
// replaced by a larger one (its contents not kept) when a lookup asks for
// more; its descriptor has no allocated pointer (nothing to free).
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>

extern "C" void _mlir_ciface_distopt_workspace(StridedMemRefType<int8_t, 1> *,
                                               int64_t, int64_t);

namespace {
StridedMemRefType<int8_t, 1> lookUp(int64_t key, int64_t bytes) {
  StridedMemRefType<int8_t, 1> result;
  _mlir_ciface_distopt_workspace(&result, key, bytes);
  return result;
}

TEST(WorkspaceTest, OneBufferPerKey) {
  StridedMemRefType<int8_t, 1> first = lookUp(41, 1000);
  ASSERT_NE(first.data, nullptr);
  // (Not the caller's to free: a step's loss may be returned from it.)
  EXPECT_EQ(first.basePtr, nullptr);
  EXPECT_EQ(first.offset, 0);
  EXPECT_EQ(first.sizes[0], 1000);
  EXPECT_EQ(first.strides[0], 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.data) % 256, 0u);
  std::memset(first.data, 7, 1000);
  // The same buffer, whatever smaller size is asked (its contents kept:
  // nothing frees it between calls).
  StridedMemRefType<int8_t, 1> again = lookUp(41, 300);
  EXPECT_EQ(again.data, first.data);
  EXPECT_EQ(again.sizes[0], 300);
  EXPECT_EQ(again.data[299], 7);
  // Another key, another buffer.
  StridedMemRefType<int8_t, 1> other = lookUp(42, 1000);
  EXPECT_NE(other.data, first.data);
  // More than it holds: a larger buffer, the whole of it writable.
  StridedMemRefType<int8_t, 1> larger = lookUp(41, 1 << 20);
  ASSERT_NE(larger.data, nullptr);
  EXPECT_EQ(larger.sizes[0], 1 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(larger.data) % 256, 0u);
  std::memset(larger.data, 1, 1 << 20);
  EXPECT_EQ(lookUp(41, 64).data, larger.data);
}
} // namespace
