//===- CudaRuntimeTest.cpp - libdistopt_cuda on a device, or skipped ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// ctest label `gpu`. libdistopt_cuda links the CUDA driver, which machines
// without a GPU lack: the test loads it with dlopen and skips (with the
// reason) when it cannot load or finds no device. On a device it checks
// the stream-ordered allocation and copies and every product form of
// distopt_matmul_f32 (cuBLAS) against loops on the host (FP32, no TF32:
// relative 1e-5), the products with epilogues (cuBLASLt: bias, residual,
// GELU), and a group of every form as one
// distopt_matmul_group_f32 call (cuBLAS's grouped product), twice on the
// same buffers: both grouped, the second reusing the first's pointer
// arrays (distopt_cuda_product_stats); function workspaces; a captured
// CUDA graph replayed, and one refused because its work allocates.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CudaRuntime.h"
#include "ProductTable.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

/// The library's entry points, or why it cannot run here.
struct Cuda {
  void *library = nullptr;
  std::string skip;
  std::vector<std::string> missing;
  int (*deviceCount)() = nullptr;
  int (*setDevice)(int) = nullptr;
  int (*synchronize)() = nullptr;
  void *(*alloc)(size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  const char *(*lastError)() = nullptr;
  void (*matmul)(UnrankedMemRefType<float> *, UnrankedMemRefType<float> *,
                 UnrankedMemRefType<float> *, int64_t, int64_t, int64_t,
                 int64_t, int32_t, int32_t, int32_t, int32_t) = nullptr;
  void (*matmulGroup)(StridedMemRefType<int64_t, 2> *) = nullptr;
  void (*matmulGroupBf16)(StridedMemRefType<int64_t, 2> *) = nullptr;
  void (*matmulEpilogue)(UnrankedMemRefType<float> *,
                         UnrankedMemRefType<float> *,
                         UnrankedMemRefType<float> *,
                         UnrankedMemRefType<float> *,
                         UnrankedMemRefType<float> *,
                         UnrankedMemRefType<float> *, int64_t, int64_t, int64_t,
                         int32_t, int32_t, int32_t) = nullptr;
  DistoptCudaProductStats (*productStats)() = nullptr;
  void (*workspace)(StridedMemRefType<int8_t, 1> *, int64_t, int64_t) = nullptr;
  void (*constant)(StridedMemRefType<int8_t, 1> *, int64_t, int64_t) = nullptr;
  DistoptCudaWorkspaceStats (*workspaceStats)() = nullptr;
  int (*onDevice)(void *, const void *, size_t) = nullptr;
  int (*captureBegin)() = nullptr;
  void *(*captureEnd)() = nullptr;
  int (*graphLaunch)(void *) = nullptr;
  void (*graphDestroy)(void *) = nullptr;
  DistoptCudaGraphStats (*graphStats)() = nullptr;
};

/// Binds `function` to `name` in `library`; a name it lacks is kept in
/// `missing` (EveryFunctionIsThere fails: no test calls a null function).
template <typename T>
void bind(void *library, const char *name, T &function,
          std::vector<std::string> &missing) {
  function = reinterpret_cast<T>(dlsym(library, name));
  if (!function)
    missing.push_back(name);
}

const Cuda &getCuda() {
  static Cuda cuda = [] {
    Cuda c;
    c.library = dlopen(DISTOPT_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!c.library) {
      c.skip = std::string("libdistopt_cuda does not load here: ") + dlerror();
      return c;
    }
    bind(c.library, "distopt_cuda_device_count", c.deviceCount, c.missing);
    bind(c.library, "distopt_cuda_set_device", c.setDevice, c.missing);
    bind(c.library, "distopt_cuda_synchronize", c.synchronize, c.missing);
    bind(c.library, "distopt_cuda_alloc", c.alloc, c.missing);
    bind(c.library, "distopt_cuda_free", c.free, c.missing);
    bind(c.library, "distopt_cuda_copy_to_device", c.toDevice, c.missing);
    bind(c.library, "distopt_cuda_copy_to_host", c.toHost, c.missing);
    bind(c.library, "distopt_cuda_last_error", c.lastError, c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_matmul_f32", c.matmul,
         c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_matmul_group_f32", c.matmulGroup,
         c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_matmul_group_bf16",
         c.matmulGroupBf16, c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_matmul_epilogue_f32",
         c.matmulEpilogue, c.missing);
    bind(c.library, "distopt_cuda_product_stats", c.productStats, c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_workspace", c.workspace,
         c.missing);
    bind(c.library, "distopt_cuda_workspace_stats", c.workspaceStats,
         c.missing);
    bind(c.library, "_mlir_ciface_distopt_cuda_constant", c.constant,
         c.missing);
    bind(c.library, "distopt_cuda_copy_on_device", c.onDevice, c.missing);
    bind(c.library, "distopt_cuda_capture_begin", c.captureBegin, c.missing);
    bind(c.library, "distopt_cuda_capture_end", c.captureEnd, c.missing);
    bind(c.library, "distopt_cuda_graph_launch", c.graphLaunch, c.missing);
    bind(c.library, "distopt_cuda_graph_destroy", c.graphDestroy, c.missing);
    bind(c.library, "distopt_cuda_graph_stats", c.graphStats, c.missing);
    // (A library without them is a failure of every test, not a skip.)
    if (c.missing.empty() && c.deviceCount() == 0)
      c.skip = std::string("no CUDA device: ") + c.lastError();
    return c;
  }();
  return cuda;
}

/// The functions the library lacks, for a failure message.
std::string getMissing() {
  std::string names;
  for (const std::string &name : getCuda().missing)
    names += (names.empty() ? "" : ", ") + name;
  return "libdistopt_cuda has no " + names;
}

#define SKIP_WITHOUT_DEVICE()                                                  \
  if (!getCuda().missing.empty())                                              \
    FAIL() << getMissing();                                                    \
  if (!getCuda().skip.empty())                                                 \
  GTEST_SKIP() << getCuda().skip

// Every function the tests call is in the library (named as dist-gpu-host
// renames a CUDA step's calls: distopt_cuda_*), with or without a device
// (the fake driver, test/lib/FakeCuda, lets the library load). (Before,
// the tests bound the names of libdistopt_cpu's functions and called
// null pointers on a GPU.)
TEST(CudaRuntimeTest, EveryFunctionIsThere) {
  if (!getCuda().library)
    GTEST_SKIP() << getCuda().skip;
  EXPECT_TRUE(getCuda().missing.empty()) << getMissing();
}

// Without a device the library (when it loads) says why in one line.
TEST(CudaRuntimeTest, DeviceOrReason) {
  const Cuda &cuda = getCuda();
  if (!cuda.library)
    GTEST_SKIP() << cuda.skip;
  if (!cuda.missing.empty())
    FAIL() << getMissing();
  if (cuda.deviceCount() == 0) {
    EXPECT_NE(std::string(cuda.lastError()), "");
    EXPECT_EQ(cuda.setDevice(0), -1);
    GTEST_SKIP() << cuda.skip;
  }
  EXPECT_EQ(cuda.setDevice(0), 0) << cuda.lastError();
  EXPECT_EQ(cuda.setDevice(cuda.deviceCount()), -1);
  EXPECT_NE(std::string(cuda.lastError()).find("already runs on device 0"),
            std::string::npos)
      << cuda.lastError();
}

/// A device buffer holding `host` (float, or uint16_t: bf16 bits).
template <typename T> struct DeviceBuffer {
  explicit DeviceBuffer(const std::vector<T> &host) : size(host.size()) {
    data = static_cast<T *>(getCuda().alloc(size * sizeof(T)));
    EXPECT_EQ(getCuda().toDevice(data, host.data(), size * sizeof(T)), 0);
  }
  ~DeviceBuffer() { getCuda().free(data); }
  std::vector<T> read() const {
    std::vector<T> host(size);
    EXPECT_EQ(getCuda().toHost(host.data(), data, size * sizeof(T)), 0)
        << getCuda().lastError();
    return host;
  }
  T *data;
  size_t size;
};

// Every product form cuBLAS is called with, against host loops.
TEST(CudaRuntimeTest, ProductForms) {
  SKIP_WITHOUT_DEVICE();
  const int64_t batch = 3, m = 17, n = 33, k = 65;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int form = 0; form < 16; ++form) {
    bool transA = form & 1, transB = form & 2, batchedA = form & 4,
         batchedB = form & 8;
    std::vector<float> a((batchedA ? batch : 1) * m * k),
        b((batchedB ? batch : 1) * k * n), c(batch * m * n, -1);
    for (float &v : a)
      v = uniform(random);
    for (float &v : b)
      v = uniform(random);
    DeviceBuffer da(a), db(b), dc(c);
    distopt::test::View ad(da.data, batchedA ? batch : 1, transA ? k : m,
                           transA ? m : k, transA ? m : k),
        bd(db.data, batchedB ? batch : 1, transB ? n : k, transB ? k : n,
           transB ? k : n),
        cd(dc.data, batch, m, n, n);
    getCuda().matmul(&ad.unranked, &bd.unranked, &cd.unranked, batch, m, n, k,
                     transA, transB, batchedA, batchedB);
    ASSERT_EQ(getCuda().synchronize(), 0) << getCuda().lastError();
    std::vector<float> got = dc.read();
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, scale = 0;
          for (int64_t l = 0; l < k; ++l) {
            float x = a[(batchedA ? p * m * k : 0) +
                        (transA ? l * m + i : i * k + l)];
            float y = b[(batchedB ? p * k * n : 0) +
                        (transB ? j * k + l : l * n + j)];
            sum += double(x) * y;
            scale += std::fabs(double(x) * y);
          }
          ASSERT_NEAR(got[(p * m + i) * n + j], sum, 1e-5 * scale + 1e-6)
              << "form " << form << " at " << p << ", " << i << ", " << j;
        }
  }
}

// A product with each epilogue (cuBLASLt: bias; bias and a residual; bias
// then GELU, the sum kept), in both transposed forms, against host loops.
TEST(CudaRuntimeTest, ProductEpilogues) {
  SKIP_WITHOUT_DEVICE();
  const int64_t m = 37, n = 48, k = 72;
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  auto values = [&](size_t size) {
    std::vector<float> v(size);
    for (float &x : v)
      x = uniform(random);
    return v;
  };
  for (int form = 0; form < 12; ++form) {
    bool transA = form & 1, transB = form & 2;
    int32_t flags = form >> 2; // 0: bias, 1: + residual, 2: GELU
    std::vector<float> a = values(m * k), b = values(k * n), bias = values(n),
                       residual = values(m * n);
    DeviceBuffer da(a), db(b), dbias(bias), dres(residual),
        dd(std::vector<float>(m * n, -1)), dp(std::vector<float>(m * n, -1));
    distopt::test::View ad(da.data, 1, transA ? k : m, transA ? m : k,
                           transA ? m : k),
        bd(db.data, 1, transB ? n : k, transB ? k : n, transB ? k : n),
        biasd(dbias.data, 1, 1, n, n), rd(dres.data, 1, m, n, n),
        outd(dd.data, 1, m, n, n), pd(dp.data, 1, m, n, n);
    getCuda().matmulEpilogue(&ad.unranked, &bd.unranked, &outd.unranked,
                             &biasd.unranked,
                             flags & 1 ? &rd.unranked : &outd.unranked,
                             flags & 2 ? &pd.unranked : &outd.unranked, m, n, k,
                             transA, transB, flags);
    ASSERT_EQ(getCuda().synchronize(), 0) << getCuda().lastError();
    std::vector<float> got = dd.read(), pre = dp.read();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = bias[j], scale = std::fabs(bias[j]);
        if (flags & 1) {
          sum += residual[i * n + j];
          scale += std::fabs(residual[i * n + j]);
        }
        for (int64_t l = 0; l < k; ++l) {
          double x = a[transA ? l * m + i : i * k + l],
                 y = b[transB ? j * k + l : l * n + j];
          sum += x * y;
          scale += std::fabs(x * y);
        }
        double want = sum;
        if (flags & 2) {
          ASSERT_NEAR(pre[i * n + j], sum, 1e-5 * scale + 1e-6)
              << "form " << form << " pre-activation at " << i << ", " << j;
          want = 0.5 * sum *
                 (1 + std::tanh(0.7978845608028654 *
                                (sum + 0.044715 * sum * sum * sum)));
        }
        ASSERT_NEAR(got[i * n + j], want, 1e-5 * scale + 1e-6)
            << "form " << form << " at " << i << ", " << j;
      }
  }
}

// A group of every form, with padded rows, as one grouped call; run twice
// on the same buffers, C cleared between.
TEST(CudaRuntimeTest, ProductGroup) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 random(13);
  std::vector<distopt::test::GroupProduct> products =
      distopt::test::getGroupProducts(random);
  // (A deque: its buffers never move.)
  std::deque<DeviceBuffer<float>> buffers;
  distopt::test::GroupTable table;
  for (const auto &p : products) {
    buffers.emplace_back(p.a);
    buffers.emplace_back(p.b);
    buffers.emplace_back(p.c);
    size_t last = buffers.size();
    table.add(p.getRow(buffers[last - 3].data, buffers[last - 2].data,
                       buffers[last - 1].data));
  }
  DistoptCudaProductStats before = getCuda().productStats();
  for (int run = 0; run < 2; ++run) {
    for (size_t i = 0; i < products.size(); ++i)
      ASSERT_EQ(getCuda().toDevice(buffers[3 * i + 2].data,
                                   products[i].c.data(),
                                   products[i].c.size() * sizeof(float)),
                0);
    getCuda().matmulGroup(table.get());
    ASSERT_EQ(getCuda().synchronize(), 0) << getCuda().lastError();
    for (size_t q = 0; q < products.size(); ++q)
      ASSERT_TRUE(products[q].check(buffers[3 * q + 2].read(), 0))
          << "run " << run << ", product " << q;
  }
  // Both calls grouped (an H100 or H200 runs cuBLAS's grouped product),
  // the addresses copied to the device by the first only.
  DistoptCudaProductStats after = getCuda().productStats();
  EXPECT_EQ(after.groupedCalls - before.groupedCalls, 2);
  EXPECT_EQ(after.separateCalls - before.separateCalls, 0);
  EXPECT_EQ(after.pointerCopies - before.pointerCopies, 1);
}

// A function's workspace: allocated by the first lookup, the same buffer
// after that (a captured step's addresses), a larger one when asked for
// more; another key has its own. The buffer is device memory a copy
// reaches.
/// bf16 bits <-> float (truncating: the inputs are made bf16 exactly).
uint16_t truncateToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return uint16_t(bits >> 16);
}
float widenBf16(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

// A mixed precision step's grouped products (distopt_matmul_group_bf16:
// cublasGemmGroupedBatchedEx_64, f32 accumulation), every form against
// the product in double of the bf16 inputs, C rounded to bf16 once.
TEST(CudaRuntimeTest, Bf16ProductGroup) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 random(14);
  std::vector<distopt::test::GroupProduct> products =
      distopt::test::getGroupProducts(random);
  std::deque<DeviceBuffer<uint16_t>> buffers;
  distopt::test::GroupTable table;
  for (auto &p : products) {
    for (std::vector<float> *operand : {&p.a, &p.b, &p.c}) {
      std::vector<uint16_t> bits(operand->size());
      for (size_t i = 0; i < bits.size(); ++i) {
        bits[i] = truncateToBf16((*operand)[i]);
        (*operand)[i] = widenBf16(bits[i]);
      }
      buffers.emplace_back(bits);
    }
    size_t last = buffers.size();
    table.add(
        p.getRow(reinterpret_cast<const float *>(buffers[last - 3].data),
                 reinterpret_cast<const float *>(buffers[last - 2].data),
                 reinterpret_cast<const float *>(buffers[last - 1].data)));
  }
  DistoptCudaProductStats before = getCuda().productStats();
  getCuda().matmulGroupBf16(table.get());
  ASSERT_EQ(getCuda().synchronize(), 0) << getCuda().lastError();
  for (size_t q = 0; q < products.size(); ++q) {
    std::vector<uint16_t> bits = buffers[3 * q + 2].read();
    std::vector<float> got(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      got[i] = widenBf16(bits[i]);
    // (C rounded to bf16: 8 bits of mantissa.)
    ASSERT_TRUE(products[q].check(got, 1.0 / 128)) << "product " << q;
  }
  EXPECT_EQ(getCuda().productStats().groupedCalls - before.groupedCalls, 1);
}

TEST(CudaRuntimeTest, Workspace) {
  SKIP_WITHOUT_DEVICE();
  const Cuda &cuda = getCuda();
  DistoptCudaWorkspaceStats before = cuda.workspaceStats();
  StridedMemRefType<int8_t, 1> first, again, larger, other;
  cuda.workspace(&first, 0x5eed, 1000);
  cuda.workspace(&again, 0x5eed, 512);
  cuda.workspace(&larger, 0x5eed, 4096);
  cuda.workspace(&other, 0x5eee, 256);
  ASSERT_EQ(cuda.synchronize(), 0) << cuda.lastError();
  ASSERT_NE(first.data, nullptr);
  // (Not the caller's to free: a step's loss may be returned from it.)
  EXPECT_EQ(first.basePtr, nullptr);
  EXPECT_EQ(again.data, first.data);
  EXPECT_EQ(again.sizes[0], 512);
  EXPECT_EQ(larger.sizes[0], 4096);
  EXPECT_NE(other.data, larger.data);
  std::vector<float> values(1024, 3.5f), back(1024);
  ASSERT_EQ(cuda.toDevice(larger.data, values.data(), 4096), 0);
  ASSERT_EQ(cuda.toHost(back.data(), larger.data, 4096), 0);
  EXPECT_EQ(back, values);
  DistoptCudaWorkspaceStats after = cuda.workspaceStats();
  EXPECT_EQ(after.workspaces - before.workspaces, 2);
  EXPECT_EQ(after.allocations - before.allocations, 3);
  EXPECT_EQ(after.calls - before.calls, 4);
  EXPECT_EQ(after.bytes - before.bytes, 4096 + 256);
}

// A constant global's device copy: made by the first lookup, the same
// buffer (and no copy) after that; another global has its own.
TEST(CudaRuntimeTest, Constant) {
  SKIP_WITHOUT_DEVICE();
  const Cuda &cuda = getCuda();
  static const float table[4] = {1, 2, 3, 4};
  static const float other[2] = {5, 6};
  DistoptCudaWorkspaceStats before = cuda.workspaceStats();
  StridedMemRefType<int8_t, 1> first, again, second;
  cuda.constant(&first, reinterpret_cast<int64_t>(table), sizeof table);
  cuda.constant(&again, reinterpret_cast<int64_t>(table), sizeof table);
  cuda.constant(&second, reinterpret_cast<int64_t>(other), sizeof other);
  ASSERT_EQ(cuda.synchronize(), 0) << cuda.lastError();
  ASSERT_NE(first.data, nullptr);
  EXPECT_EQ(first.basePtr, nullptr);
  EXPECT_EQ(again.data, first.data);
  EXPECT_NE(second.data, first.data);
  std::vector<float> back(4);
  ASSERT_EQ(cuda.toHost(back.data(), first.data, sizeof table), 0);
  EXPECT_EQ(back, std::vector<float>(table, table + 4));
  DistoptCudaWorkspaceStats after = cuda.workspaceStats();
  EXPECT_EQ(after.constants - before.constants, 2);
  EXPECT_EQ(after.constantBytes - before.constantBytes,
            int64_t(sizeof table + sizeof other));
}

// A captured graph: a product and a copy recorded, not run, at the
// capture; each launch runs them again on the same buffers (C = A x B,
// then D = C). Work that allocates is refused at the end of its capture,
// with the reason, and leaves no error behind.
TEST(CudaRuntimeTest, Graph) {
  SKIP_WITHOUT_DEVICE();
  const Cuda &cuda = getCuda();
  const int64_t n = 8;
  std::vector<float> a(n * n), identity(n * n, 0), zeros(n * n, 0);
  for (int64_t i = 0; i < n * n; ++i)
    a[i] = float(i);
  for (int64_t i = 0; i < n; ++i)
    identity[i * n + i] = 1;
  DeviceBuffer da(a), db(identity), dc(zeros), dd(zeros);
  distopt::test::View av(da.data, 1, n, n, n), bv(db.data, 1, n, n, n),
      cv(dc.data, 1, n, n, n);
  // (cuBLAS's first call initialises it, outside the capture.)
  cuda.matmul(&av.unranked, &bv.unranked, &cv.unranked, 1, n, n, n, 0, 0, 0, 0);
  ASSERT_EQ(cuda.synchronize(), 0) << cuda.lastError();
  ASSERT_EQ(cuda.toDevice(dc.data, zeros.data(), n * n * sizeof(float)), 0);
  DistoptCudaGraphStats before = cuda.graphStats();
  ASSERT_EQ(cuda.captureBegin(), 0) << cuda.lastError();
  cuda.matmul(&av.unranked, &bv.unranked, &cv.unranked, 1, n, n, n, 0, 0, 0, 0);
  ASSERT_EQ(cuda.onDevice(dd.data, dc.data, n * n * sizeof(float)), 0);
  void *graph = cuda.captureEnd();
  ASSERT_NE(graph, nullptr) << cuda.lastError();
  EXPECT_EQ(dd.read(), zeros); // recorded, not run
  for (int launch = 0; launch < 2; ++launch) {
    ASSERT_EQ(cuda.toDevice(dc.data, zeros.data(), n * n * sizeof(float)), 0);
    ASSERT_EQ(cuda.graphLaunch(graph), 0) << cuda.lastError();
    ASSERT_EQ(cuda.synchronize(), 0) << cuda.lastError();
    EXPECT_EQ(dd.read(), a) << "launch " << launch;
  }
  cuda.graphDestroy(graph);
  DistoptCudaGraphStats after = cuda.graphStats();
  EXPECT_EQ(after.captures - before.captures, 1);
  EXPECT_EQ(after.launches - before.launches, 2);
  EXPECT_GE(after.nodes, 2);

  ASSERT_EQ(cuda.captureBegin(), 0) << cuda.lastError();
  void *buffer = cuda.alloc(1024);
  EXPECT_EQ(cuda.captureEnd(), nullptr);
  EXPECT_NE(std::string(cuda.lastError()).find("allocates device memory"),
            std::string::npos)
      << cuda.lastError();
  EXPECT_EQ(cuda.graphStats().refused - before.refused, 1);
  (void)buffer;
  EXPECT_EQ(cuda.synchronize(), 0) << cuda.lastError();
}

} // namespace

/// Exit status 77 (ctest's SKIP_RETURN_CODE) when every test skipped: no
/// device here.
int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
  if (status == 0 && unit.successful_test_count() == 0 &&
      unit.skipped_test_count() > 0)
    return 77;
  return status;
}
