//===- SixteenBitProductTest.cpp - libdistopt_cpu's bf16 and f16 products -===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// distopt_matmul_bf16 and distopt_matmul_f16 (lib/Runtime/CpuKernels.cpp)
// against the product of the same 16-bit inputs accumulated in double and
// rounded to the 16-bit type: every transpose combination, odd shapes,
// padded rows, batched and shared operands, one and two threads. The
// result may differ from that rounding only by the f32 accumulation's
// error (which can move it across a rounding boundary: one 16-bit ulp).
// ctest runs it twice: as the CPU chooses (oneDNN where it multiplies bf16)
// and with DISTOPT_CPU_BF16_PRODUCTS=f32 (widened operands, sgemm).
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CpuKernels.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <omp.h>

#include <dirent.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using Product = void (*)(UnrankedMemRefType<uint16_t> *,
                         UnrankedMemRefType<uint16_t> *,
                         UnrankedMemRefType<uint16_t> *, int64_t, int64_t,
                         int64_t, int64_t, int32_t, int32_t, int32_t, int32_t);

extern "C" {
void _mlir_ciface_distopt_matmul_bf16(UnrankedMemRefType<uint16_t> *,
                                      UnrankedMemRefType<uint16_t> *,
                                      UnrankedMemRefType<uint16_t> *, int64_t,
                                      int64_t, int64_t, int64_t, int32_t,
                                      int32_t, int32_t, int32_t);
void _mlir_ciface_distopt_matmul_f16(UnrankedMemRefType<uint16_t> *,
                                     UnrankedMemRefType<uint16_t> *,
                                     UnrankedMemRefType<uint16_t> *, int64_t,
                                     int64_t, int64_t, int64_t, int32_t,
                                     int32_t, int32_t, int32_t);
}

namespace {
/// bf16 or f16 values as bits, with conversions written independently of
/// the library's (bf16 by hand, f16 by the compiler's _Float16).
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
  /// `value` rounded to nearest, ties to even.
  uint16_t fromDouble(double value) const {
    if (bf16) {
      // double -> bf16 directly (no double rounding through f32): the
      // nearest of the two bf16 neighbours of `value`.
      float f = float(value);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t down = uint16_t(bits >> 16);
      uint16_t lo = down, hi = uint16_t(down + 1);
      double dl = std::fabs(toFloat(lo) - value),
             dh = std::fabs(toFloat(hi) - value);
      if (dl < dh || (dl == dh && (lo & 1) == 0))
        return lo;
      // down may be on the far side of value (float rounded up).
      uint16_t below = uint16_t(down - 1);
      double db = std::fabs(toFloat(below) - value);
      return db < dh ? below : hi;
    }
    _Float16 half = _Float16(value);
    uint16_t bits;
    std::memcpy(&bits, &half, 2);
    return bits;
  }
  /// The distance between `value` and the next representable magnitude.
  double ulp(double value) const {
    int exponent;
    std::frexp(std::fabs(value), &exponent);
    return std::ldexp(1.0, exponent - (bf16 ? 8 : 11));
  }
};

/// A [batches, rows, cols] operand in storage with padded rows (`ld`)
/// and batches `batchStride` apart.
struct Operand {
  int64_t batches, rows, cols, ld, batchStride;
  std::vector<uint16_t> storage;
  StridedMemRefType<uint16_t, 3> descriptor;

  Operand(const Format &format, int64_t batches, int64_t rows, int64_t cols,
          int64_t pad, std::mt19937 &rng)
      : batches(batches), rows(rows), cols(cols), ld(cols + pad),
        batchStride(rows * (cols + pad) + pad) {
    storage.resize(batches * batchStride);
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    for (uint16_t &v : storage)
      v = format.fromDouble(dist(rng));
    descriptor.basePtr = descriptor.data = storage.data();
    descriptor.offset = 0;
    int64_t sizes[3] = {batches, rows, cols};
    int64_t strides[3] = {batchStride, ld, 1};
    for (int d = 0; d < 3; ++d) {
      descriptor.sizes[d] = sizes[d];
      descriptor.strides[d] = strides[d];
    }
  }
  uint16_t at(int64_t b, int64_t i, int64_t j) const {
    return storage[b * batchStride + i * ld + j];
  }
  UnrankedMemRefType<uint16_t> unranked() { return {3, &descriptor}; }
};

struct Case {
  int64_t batch, m, n, k;
  bool transA, transB, batchedA, batchedB;
  int64_t pad;
  int threads;
};

std::string describe(const Case &c) {
  return "batch " + std::to_string(c.batch) + " m " + std::to_string(c.m) +
         " n " + std::to_string(c.n) + " k " + std::to_string(c.k) +
         (c.transA ? " transA" : "") + (c.transB ? " transB" : "") +
         (c.batchedA ? " batchedA" : "") + (c.batchedB ? " batchedB" : "") +
         " pad " + std::to_string(c.pad) + " threads " +
         std::to_string(c.threads);
}

void check(const Format &format, Product product, const Case &c) {
  std::mt19937 rng(uint32_t(c.m * 1000003 + c.n * 101 + c.k));
  Operand a(format, c.batchedA ? c.batch : 1, c.transA ? c.k : c.m,
            c.transA ? c.m : c.k, c.pad, rng);
  Operand b(format, c.batchedB ? c.batch : 1, c.transB ? c.n : c.k,
            c.transB ? c.k : c.n, c.pad, rng);
  Operand out(format, c.batch, c.m, c.n, /*pad=*/0, rng);
  auto ua = a.unranked(), ub = b.unranked(), uc = out.unranked();
  omp_set_num_threads(c.threads);
  product(&ua, &ub, &uc, c.batch, c.m, c.n, c.k, c.transA, c.transB, c.batchedA,
          c.batchedB);
  omp_set_num_threads(2);
  int64_t wrong = 0;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double exact = 0, magnitude = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          int64_t ab = c.batchedA ? bi : 0, bb = c.batchedB ? bi : 0;
          double x = format.toFloat(c.transA ? a.at(ab, l, i) : a.at(ab, i, l));
          double y = format.toFloat(c.transB ? b.at(bb, j, l) : b.at(bb, l, j));
          exact += x * y;
          magnitude += std::fabs(x * y);
        }
        double got = format.toFloat(out.at(bi, i, j));
        double rounded = format.toFloat(format.fromDouble(exact));
        // f32 accumulation: k roundings of at most 2^-24 of the running
        // sum's magnitude; then one rounding to the 16-bit type.
        double accumulation = double(c.k) * std::ldexp(magnitude, -23);
        bool near =
            got == rounded || (std::fabs(got - exact) <=
                               format.ulp(exact) / 2 + accumulation + 1e-30);
        if (!near && ++wrong <= 3)
          ADD_FAILURE() << describe(c) << ": C[" << bi << "][" << i << "][" << j
                        << "] = " << got << ", the product rounds to "
                        << rounded << " (exact " << exact << ")";
      }
  EXPECT_EQ(wrong, 0) << describe(c);
}

std::vector<Case> getCases() {
  std::vector<Case> cases;
  for (int t = 0; t < 4; ++t) {
    bool transA = t & 1, transB = t & 2;
    // Odd shapes, one thread and two; the large one splits over the team.
    cases.push_back({1, 37, 53, 71, transA, transB, false, false, 0, 1});
    cases.push_back({1, 1, 19, 5, transA, transB, false, false, 3, 2});
    cases.push_back({1, 131, 67, 129, transA, transB, false, false, 5, 2});
    cases.push_back({1, 45, 150, 96, transA, transB, false, false, 0, 2});
    // Batches: both batched, one shared operand, odd batch counts.
    cases.push_back({3, 17, 33, 65, transA, transB, true, true, 2, 2});
    cases.push_back({5, 64, 48, 40, transA, transB, true, false, 0, 2});
    // A shared B with A's and C's batches row after row is one product of
    // batch * m rows; with padding between the batches it is not.
    cases.push_back({6, 16, 40, 24, transA, transB, true, false, 0, 1});
    cases.push_back({3, 20, 24, 16, transA, transB, true, false, 3, 2});
    cases.push_back({4, 29, 31, 64, transA, transB, false, true, 1, 2});
  }
  return cases;
}

TEST(SixteenBitProduct, Bf16EqualsTheRoundedProduct) {
  for (const Case &c : getCases())
    check(Format{true}, &_mlir_ciface_distopt_matmul_bf16, c);
}

TEST(SixteenBitProduct, F16EqualsTheRoundedProduct) {
  for (const Case &c : getCases())
    check(Format{false}, &_mlir_ciface_distopt_matmul_f16, c);
}

// The sum is f32, rounded to bf16 once: 1024 x (1 x 1) is 1024 (exact in
// bf16), where a bf16 accumulator sticks at 256 (256 + 1 rounds to 256,
// bf16 having 8 significant bits).
TEST(SixteenBitProduct, Bf16AccumulatesInF32) {
  Format bf16{true};
  std::mt19937 rng(7);
  int64_t k = 1024;
  Operand a(bf16, 1, 1, k, 0, rng), b(bf16, 1, k, 1, 0, rng),
      out(bf16, 1, 1, 1, 0, rng);
  for (int64_t l = 0; l < k; ++l) {
    a.storage[l] = bf16.fromDouble(1.0);
    b.storage[l] = bf16.fromDouble(1.0);
  }
  auto ua = a.unranked(), ub = b.unranked(), uc = out.unranked();
  _mlir_ciface_distopt_matmul_bf16(&ua, &ub, &uc, 1, 1, 1, k, 0, 0, 0, 0);
  EXPECT_EQ(bf16.toFloat(out.storage[0]), 1024.0f);
}

/// The threads of this process.
int countThreads() {
  int count = 0;
  if (DIR *dir = opendir("/proc/self/task")) {
    while (dirent *entry = readdir(dir))
      count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

// oneDNN runs on our OpenMP team: no pool of its own beside it.
TEST(SixteenBitProduct, NoSecondThreadPool) {
  omp_set_num_threads(2);
  // The team started (and OpenBLAS's threads, started when it loaded).
#pragma omp parallel num_threads(2)
  {
  }
  int before = countThreads();
  check(Format{true}, &_mlir_ciface_distopt_matmul_bf16,
        {1, 256, 256, 256, false, false, false, false, 0, 2});
  check(Format{true}, &_mlir_ciface_distopt_matmul_bf16,
        {1, 8, 8, 8, false, false, false, false, 0, 2});
  EXPECT_EQ(countThreads(), before);
}

TEST(SixteenBitProduct, InfoNamesTheKernels) {
  std::string info = distopt_cpu_sixteen_bit_info();
  const char *choice = getenv("DISTOPT_CPU_BF16_PRODUCTS");
  __builtin_cpu_init();
  bool bf16Cpu = __builtin_cpu_supports("avx512bf16") ||
                 __builtin_cpu_supports("amx-bf16");
  if (choice && std::string(choice) == "f32")
    EXPECT_EQ(info.rfind("bf16: f32 sgemm of the converted operands "
                         "(DISTOPT_CPU_BF16_PRODUCTS=f32)",
                         0),
              0u)
        << info;
  else if (bf16Cpu)
    EXPECT_EQ(info.rfind("bf16: onednn ", 0), 0u) << info;
  else
    EXPECT_EQ(info.rfind("bf16: f32 sgemm", 0), 0u) << info;
  EXPECT_NE(info.find("; f16: f32 sgemm of the converted operands"),
            std::string::npos)
      << info;
}
} // namespace
