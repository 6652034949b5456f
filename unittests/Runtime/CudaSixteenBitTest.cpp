//===- CudaSixteenBitTest.cpp - libdistopt_cuda's bf16 and f16 products ---===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// ctest label `gpu`. distopt_matmul_bf16 and distopt_matmul_f16
// (cublasGemmStridedBatchedEx, 16-bit inputs and output, CUBLAS_COMPUTE_32F)
// in every product form against the exact product of the same 16-bit
// inputs on the host: within one rounding to the 16-bit type plus f32
// accumulation error. Loaded with dlopen and skipped (exit 77) where the
// library does not load or no device is found, as CudaRuntimeTest.
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

using Product = void (*)(UnrankedMemRefType<uint16_t> *,
                         UnrankedMemRefType<uint16_t> *,
                         UnrankedMemRefType<uint16_t> *, int64_t, int64_t,
                         int64_t, int64_t, int32_t, int32_t, int32_t, int32_t);

/// The library's entry points, or why it cannot run here.
struct Cuda {
  std::string skip;
  std::vector<std::string> missing;
  int (*deviceCount)() = nullptr;
  int (*synchronize)() = nullptr;
  void *(*alloc)(size_t) = nullptr;
  int (*free)(void *) = nullptr;
  int (*toDevice)(void *, const void *, size_t) = nullptr;
  int (*toHost)(void *, const void *, size_t) = nullptr;
  const char *(*lastError)() = nullptr;
  Product bf16 = nullptr, f16 = nullptr;
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
    void *library = dlopen(DISTOPT_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      c.skip = std::string("libdistopt_cuda does not load here: ") + dlerror();
      return c;
    }
    bind(library, "distopt_cuda_device_count", c.deviceCount, c.missing);
    bind(library, "distopt_cuda_synchronize", c.synchronize, c.missing);
    bind(library, "distopt_cuda_alloc", c.alloc, c.missing);
    bind(library, "distopt_cuda_free", c.free, c.missing);
    bind(library, "distopt_cuda_copy_to_device", c.toDevice, c.missing);
    bind(library, "distopt_cuda_copy_to_host", c.toHost, c.missing);
    bind(library, "distopt_cuda_last_error", c.lastError, c.missing);
    bind(library, "_mlir_ciface_distopt_cuda_matmul_bf16", c.bf16, c.missing);
    bind(library, "_mlir_ciface_distopt_cuda_matmul_f16", c.f16, c.missing);
    // (A library without them is a failure of every test, not a skip.)
    if (c.missing.empty() && c.deviceCount() == 0)
      c.skip = std::string("no CUDA device: ") + c.lastError();
    return c;
  }();
  return cuda;
}

/// bf16 or f16 bits and their values.
struct Format {
  bool bf16;
  float toFloat(uint16_t bits) const {
    if (bf16) {
      uint32_t wide = uint32_t(bits) << 16;
      float value;
      std::memcpy(&value, &wide, 4);
      return value;
    }
    _Float16 half;
    std::memcpy(&half, &bits, 2);
    return float(half);
  }
  uint16_t fromFloat(float value) const {
    if (bf16) {
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    }
    _Float16 half = _Float16(value);
    uint16_t bits;
    std::memcpy(&bits, &half, 2);
    return bits;
  }
  /// Half the distance to the next representable magnitude of `value`.
  double halfUlp(double value) const {
    int exponent;
    std::frexp(std::fabs(value), &exponent);
    return std::ldexp(1.0, exponent - (bf16 ? 9 : 12));
  }
};

/// A device buffer holding `host`.
struct DeviceBuffer {
  explicit DeviceBuffer(const std::vector<uint16_t> &host) : size(host.size()) {
    data = static_cast<uint16_t *>(getCuda().alloc(size * 2));
    EXPECT_EQ(getCuda().toDevice(data, host.data(), size * 2), 0);
  }
  ~DeviceBuffer() { getCuda().free(data); }
  std::vector<uint16_t> read() const {
    std::vector<uint16_t> host(size);
    EXPECT_EQ(getCuda().toHost(host.data(), data, size * 2), 0)
        << getCuda().lastError();
    return host;
  }
  uint16_t *data;
  size_t size;
};

/// A rank-3 descriptor of `data` ([batch, rows, cols], contiguous).
struct Descriptor {
  Descriptor(uint16_t *data, int64_t batch, int64_t rows, int64_t cols) {
    view.basePtr = view.data = data;
    view.offset = 0;
    view.sizes[0] = batch;
    view.sizes[1] = rows;
    view.sizes[2] = cols;
    view.strides[0] = rows * cols;
    view.strides[1] = cols;
    view.strides[2] = 1;
    unranked.rank = 3;
    unranked.descriptor = &view;
  }
  StridedMemRefType<uint16_t, 3> view;
  UnrankedMemRefType<uint16_t> unranked;
};

void checkForms(const Format &format, Product product) {
  const int64_t batch = 3, m = 17, n = 33, k = 65;
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-2, 2);
  for (int form = 0; form < 16; ++form) {
    bool transA = form & 1, transB = form & 2, batchedA = form & 4,
         batchedB = form & 8;
    std::vector<uint16_t> a((batchedA ? batch : 1) * m * k),
        b((batchedB ? batch : 1) * k * n), c(batch * m * n, 0xffff);
    for (uint16_t &v : a)
      v = format.fromFloat(uniform(random));
    for (uint16_t &v : b)
      v = format.fromFloat(uniform(random));
    DeviceBuffer da(a), db(b), dc(c);
    Descriptor ad(da.data, batchedA ? batch : 1, transA ? k : m,
                  transA ? m : k),
        bd(db.data, batchedB ? batch : 1, transB ? n : k, transB ? k : n),
        cd(dc.data, batch, m, n);
    product(&ad.unranked, &bd.unranked, &cd.unranked, batch, m, n, k, transA,
            transB, batchedA, batchedB);
    ASSERT_EQ(getCuda().synchronize(), 0) << getCuda().lastError();
    std::vector<uint16_t> got = dc.read();
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, scale = 0;
          for (int64_t l = 0; l < k; ++l) {
            double x = format.toFloat(a[(batchedA ? p * m * k : 0) +
                                        (transA ? l * m + i : i * k + l)]);
            double y = format.toFloat(b[(batchedB ? p * k * n : 0) +
                                        (transB ? j * k + l : l * n + j)]);
            sum += x * y;
            scale += std::fabs(x * y);
          }
          double value = format.toFloat(got[(p * m + i) * n + j]);
          ASSERT_NEAR(value, sum,
                      format.halfUlp(sum) + k * std::ldexp(scale, -23) + 1e-6)
              << (format.bf16 ? "bf16" : "f16") << " form " << form << " at "
              << p << ", " << i << ", " << j;
        }
  }
}

/// The functions the library lacks, for a failure message.
std::string getMissing() {
  std::string names;
  for (const std::string &name : getCuda().missing)
    names += (names.empty() ? "" : ", ") + name;
  return "libdistopt_cuda has no " + names;
}

// Every function the tests call is in the library (named as dist-gpu-host
// renames a CUDA step's calls: distopt_cuda_*), with or without a device
// (the fake driver, test/lib/FakeCuda, lets the library load).
TEST(CudaSixteenBitTest, EveryFunctionIsThere) {
  if (getCuda().skip.find("does not load") != std::string::npos)
    GTEST_SKIP() << getCuda().skip;
  EXPECT_TRUE(getCuda().missing.empty()) << getMissing();
}

TEST(CudaSixteenBitTest, Bf16ProductForms) {
  if (!getCuda().missing.empty())
    FAIL() << getMissing();
  if (!getCuda().skip.empty())
    GTEST_SKIP() << getCuda().skip;
  checkForms(Format{true}, getCuda().bf16);
}

TEST(CudaSixteenBitTest, F16ProductForms) {
  if (!getCuda().missing.empty())
    FAIL() << getMissing();
  if (!getCuda().skip.empty())
    GTEST_SKIP() << getCuda().skip;
  checkForms(Format{false}, getCuda().f16);
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
