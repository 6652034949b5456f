//===- ConvKernelsTest.cpp - libdistopt_cpu's conv kernels and copy -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The three convolution contractions of lib/Runtime/ConvKernels.cpp on
// random shapes (groups, dilations, windows of odd widths, images that are
// strided views of larger buffers, one and two threads) against the
// contractions written as loops. ctest runs it twice: with LIBXSMM's JIT
// and with LIBXSMM_TARGET=generic (no JIT: the OpenBLAS fallback). Also
// distopt_copy, the runner's copy of a step's state, split over the team.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CpuKernels.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

extern "C" void _mlir_ciface_distopt_conv2d_f32(UnrankedMemRefType<float> *lhs,
                                                UnrankedMemRefType<float> *rhs,
                                                UnrankedMemRefType<float> *out,
                                                int32_t kind, int64_t dh,
                                                int64_t dw, int64_t sh,
                                                int64_t sw);

namespace {
/// A rank-5 buffer viewed with `sizes` inside storage of `alloc` sizes
/// (row-major), so that a view may skip elements of each row and plane;
/// its innermost elements `step` apart (`alloc` counts them so).
struct Buffer {
  std::array<int64_t, 5> sizes, strides;
  std::vector<float> storage;
  StridedMemRefType<float, 5> descriptor;

  Buffer(std::array<int64_t, 5> sizes, std::array<int64_t, 5> alloc,
         std::mt19937 &rng, int64_t step = 1)
      : sizes(sizes) {
    int64_t total = 1;
    for (int d = 4; d >= 0; --d) {
      strides[d] = total;
      total *= alloc[d];
    }
    strides[4] = step;
    storage.resize(total);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float &v : storage)
      v = dist(rng);
    descriptor.basePtr = descriptor.data = storage.data();
    descriptor.offset = 0;
    for (int d = 0; d < 5; ++d) {
      descriptor.sizes[d] = sizes[d];
      descriptor.strides[d] = strides[d];
    }
  }
  float &operator()(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    return storage[a * strides[0] + b * strides[1] + c * strides[2] +
                   d * strides[3] + e * strides[4]];
  }
  UnrankedMemRefType<float> unranked() { return {5, &descriptor}; }
};

struct Case {
  int64_t batch, groups, outs, reds, outH, outW, kernelH, kernelW, dh, dw;
  int threads;
  /// The image's rows contiguous (the padded buffer a step passes): narrow
  /// rows are joined into wide runs.
  bool tight = false;
  /// The filter (the filter gradient for kind 2) a view of a buffer with
  /// wider window rows: its taps are not contiguous, and the packing and
  /// scatter go tap by tap instead of by AVX-512 transposes of whole tiles.
  bool looseFilter = false;
  /// Strides (the forward and filter-gradient kinds only).
  int64_t sh = 1, sw = 1;
  /// The output's pixels this far apart (a strided input gradient's phase,
  /// written in place; kinds 0, 1 and 3 only).
  int64_t outStep = 1;

  /// The filter's buffer for a view of `shape`.
  std::array<int64_t, 5> filterAlloc(std::array<int64_t, 5> shape) const {
    if (looseFilter)
      shape[4] += 1;
    return shape;
  }
};

/// Runs kind `kind` on `c` and compares with the loops, relative 1e-4 of
/// the sum of the absolute products.
void check(const Case &c, int32_t kind, unsigned seed) {
  std::mt19937 rng(seed);
  int64_t inH = (c.outH - 1) * c.sh + (c.kernelH - 1) * c.dh + 1,
          inW = (c.outW - 1) * c.sw + (c.kernelW - 1) * c.dw + 1;
  // The image is a view of a wider, taller buffer, or (tight) all of it.
  std::array<int64_t, 5> imageShape = {c.batch, c.groups, c.reds, inH, inW};
  Buffer image(imageShape,
               c.tight ? imageShape
                       : std::array<int64_t, 5>{c.batch, c.groups, c.reds + 1,
                                                inH + 1, inW + 3},
               rng);
  omp_set_num_threads(c.threads);
  if (kind == 2) {
    Buffer grad({c.batch, c.groups, c.outs, c.outH, c.outW},
                {c.batch, c.groups, c.outs, c.outH, c.outW + 1}, rng);
    std::array<int64_t, 5> shape = {c.groups, c.outs, c.reds, c.kernelH,
                                    c.kernelW};
    Buffer out(shape, c.filterAlloc(shape), rng);
    auto g = grad.unranked(), i = image.unranked(), o = out.unranked();
    _mlir_ciface_distopt_conv2d_f32(&g, &i, &o, kind, c.dh, c.dw, c.sh, c.sw);
    for (int64_t gr = 0; gr < c.groups; ++gr)
      for (int64_t f = 0; f < c.outs; ++f)
        for (int64_t ch = 0; ch < c.reds; ++ch)
          for (int64_t kh = 0; kh < c.kernelH; ++kh)
            for (int64_t kw = 0; kw < c.kernelW; ++kw) {
              double sum = 0, scale = 0;
              for (int64_t n = 0; n < c.batch; ++n)
                for (int64_t y = 0; y < c.outH; ++y)
                  for (int64_t x = 0; x < c.outW; ++x) {
                    double p = double(grad(n, gr, f, y, x)) *
                               image(n, gr, ch, y * c.sh + kh * c.dh,
                                     x * c.sw + kw * c.dw);
                    sum += p;
                    scale += std::fabs(p);
                  }
              ASSERT_NEAR(out(gr, f, ch, kh, kw), sum, 1e-4 * scale + 1e-6)
                  << "filter gradient at " << gr << "," << f << "," << ch << ","
                  << kh << "," << kw;
            }
    return;
  }
  // Kind 0: filter [g, o, r, kh, kw]; kinds 1 and 3: [g, r, o, kh, kw],
  // kind 3 at the reversed tap.
  std::array<int64_t, 5> shape =
      kind == 0 ? std::array<int64_t, 5>{c.groups, c.outs, c.reds, c.kernelH,
                                         c.kernelW}
                : std::array<int64_t, 5>{c.groups, c.reds, c.outs, c.kernelH,
                                         c.kernelW};
  Buffer filter(shape, c.filterAlloc(shape), rng);
  Buffer out({c.batch, c.groups, c.outs, c.outH, c.outW},
             {c.batch, c.groups, c.outs, c.outH + 2, c.outW * c.outStep}, rng,
             c.outStep);
  auto i = image.unranked(), f = filter.unranked(), o = out.unranked();
  _mlir_ciface_distopt_conv2d_f32(&i, &f, &o, kind, c.dh, c.dw, c.sh, c.sw);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t gr = 0; gr < c.groups; ++gr)
      for (int64_t oc = 0; oc < c.outs; ++oc)
        for (int64_t y = 0; y < c.outH; ++y)
          for (int64_t x = 0; x < c.outW; ++x) {
            double sum = 0, scale = 0;
            for (int64_t r = 0; r < c.reds; ++r)
              for (int64_t kh = 0; kh < c.kernelH; ++kh)
                for (int64_t kw = 0; kw < c.kernelW; ++kw) {
                  float w = kind == 0   ? filter(gr, oc, r, kh, kw)
                            : kind == 1 ? filter(gr, r, oc, kh, kw)
                                        : filter(gr, r, oc, c.kernelH - 1 - kh,
                                                 c.kernelW - 1 - kw);
                  double p = double(w) * image(n, gr, r, y * c.sh + kh * c.dh,
                                               x * c.sw + kw * c.dw);
                  sum += p;
                  scale += std::fabs(p);
                }
            ASSERT_NEAR(out(n, gr, oc, y, x), sum, 1e-4 * scale + 1e-6)
                << "kind " << kind << " at " << n << "," << gr << "," << oc
                << "," << y << "," << x;
          }
}

const Case kCases[] = {
    // batch, groups, outs, reds, outH, outW, kernelH, kernelW, dh, dw, threads
    {2, 1, 16, 8, 6, 7, 3, 3, 1, 1, 1},
    {2, 1, 16, 8, 6, 7, 3, 3, 1, 1, 2},
    {3, 2, 5, 3, 4, 9, 3, 2, 1, 1, 2},
    {1, 1, 4, 6, 5, 5, 3, 3, 2, 1, 1},
    {2, 4, 16, 16, 8, 8, 3, 3, 1, 1, 2},
    {2, 1, 33, 17, 3, 19, 5, 5, 1, 2, 2},
    {1, 3, 1, 1, 2, 3, 1, 1, 1, 1, 1},
    // Large enough for the team's split (2^18 multiply-adds).
    {4, 1, 64, 32, 16, 16, 3, 3, 1, 1, 2},
    // Narrow rows of a tight image, joined into wide runs (7 x 7 and 5 x 9
    // outputs: blocks of 6 rows and a shorter last block), dilated too.
    {2, 1, 16, 8, 7, 7, 3, 3, 1, 1, 2, true},
    {3, 2, 8, 5, 5, 9, 3, 3, 2, 1, 1, true},
    // More output channels than one block (64): a block of 64 and one of
    // 16; 196 x 196 filter-gradient sums (1.4 MiB) go tile by tile.
    {2, 1, 80, 16, 4, 4, 3, 3, 1, 1, 2, true},
    {2, 1, 196, 196, 4, 4, 3, 3, 1, 1, 2, true},
    {1, 1, 196, 196, 3, 5, 3, 3, 1, 1, 1},
    // Channels last (64 channels or more on both sides): two groups of 72
    // filters (a block of 64 and one of 8) over 64 channels, dilated, in a
    // strided view; and one ungrouped layer on one thread.
    {2, 2, 72, 64, 5, 6, 3, 3, 2, 1, 2},
    {2, 1, 64, 96, 4, 7, 3, 3, 1, 2, 1, true},
    // Rows of 21 and 23 pixels in a strided view: the image's and the
    // output's transposes by whole 16 x 16 blocks (AVX-512) and the rest.
    {2, 1, 80, 64, 3, 21, 3, 3, 1, 1, 2},
    // Filters whose taps are not contiguous: packed and scattered tap by
    // tap, pixels first and channels last.
    {2, 1, 16, 8, 6, 7, 3, 3, 1, 1, 2, false, true},
    {2, 1, 72, 64, 4, 5, 3, 3, 1, 1, 2, true, true},
};

/// Strided convolutions (forward and filter gradient): a 7x7 stride-2
/// first layer of 3 channels (the image's rows are odd: its last column
/// phase is a pixel shorter), 3x3 stride-2 and 1x1 stride-2 layers channels
/// last in strided views, strides (3, 2) with dilations and two groups,
/// a large filter gradient (by tile), one on a single thread and one on
/// wide rows.
const Case kStridedCases[] = {
    {2, 1, 64, 3, 5, 6, 7, 7, 1, 1, 2, true, false, 2, 2},
    {2, 1, 80, 64, 4, 4, 3, 3, 1, 1, 2, false, false, 2, 2},
    {2, 1, 32, 64, 3, 5, 1, 1, 1, 1, 2, false, false, 2, 2},
    {2, 2, 24, 16, 3, 4, 3, 3, 2, 1, 2, false, true, 3, 2},
    {2, 1, 196, 196, 2, 3, 3, 3, 1, 1, 2, true, false, 2, 2},
    {1, 1, 16, 8, 3, 3, 3, 3, 1, 1, 1, false, false, 2, 2},
    // Rows of 41 pixels: two whole 32-pixel chunks' phase split and a rest.
    {1, 1, 16, 8, 2, 20, 3, 3, 1, 1, 2, false, false, 2, 2},
};

TEST(ConvKernels, ForwardMatchesLoops) {
  unsigned seed = 1;
  for (const Case &c : kCases)
    check(c, 0, seed++);
}

TEST(ConvKernels, InputGradientMatchesLoops) {
  unsigned seed = 100;
  for (const Case &c : kCases)
    check(c, 1, seed++);
}

TEST(ConvKernels, FlippedInputGradientMatchesLoops) {
  unsigned seed = 200;
  for (const Case &c : kCases)
    check(c, 3, seed++);
}

// Every byte copied, none past the end, on one thread and split over two
// (from 8 MiB, in 1 MiB pieces: a last piece shorter than the others).
TEST(CpuCopy, CopiesEveryByteOnce) {
  const size_t mib = size_t(1) << 20;
  for (int threads : {1, 2})
    for (size_t bytes :
         {size_t(0), size_t(1), mib + 3, 8 * mib, 20 * mib + 5}) {
      std::vector<unsigned char> from(bytes), to(bytes + 64, 0xab);
      for (size_t i = 0; i < bytes; ++i)
        from[i] = static_cast<unsigned char>(i * 7 + i / 4096);
      omp_set_num_threads(threads);
      distopt_copy(to.data(), from.data(), bytes);
      EXPECT_TRUE(std::equal(from.begin(), from.end(), to.begin()))
          << bytes << " bytes on " << threads << " thread(s)";
      EXPECT_TRUE(std::all_of(to.begin() + bytes, to.end(),
                              [](unsigned char c) { return c == 0xab; }))
          << bytes << " bytes on " << threads << " thread(s)";
    }
}

TEST(ConvKernels, FilterGradientMatchesLoops) {
  unsigned seed = 200;
  for (const Case &c : kCases)
    check(c, 2, seed++);
}

/// Outputs whose pixels are 2 apart (the phases of a strided input
/// gradient), channels last: 64 channels, and few channels.
const Case kSpreadOutputCases[] = {
    {2, 1, 64, 64, 3, 20, 3, 3, 1, 1, 2, true, false, 1, 1, 2},
    {2, 2, 8, 4, 4, 5, 2, 1, 1, 1, 1, false, false, 1, 1, 2},
};

TEST(ConvKernels, SpreadOutputMatchesLoops) {
  unsigned seed = 500;
  for (const Case &c : kSpreadOutputCases)
    for (int32_t kind : {0, 1, 3})
      check(c, kind, seed++);
}

TEST(ConvKernels, StridedForwardMatchesLoops) {
  unsigned seed = 300;
  for (const Case &c : kStridedCases)
    check(c, 0, seed++);
}

TEST(ConvKernels, StridedFilterGradientMatchesLoops) {
  unsigned seed = 400;
  for (const Case &c : kStridedCases)
    check(c, 2, seed++);
}
} // namespace
