//===- ConvKernels.cpp - convolutions as batch-reduce products ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `dist-conv-to-kernels` replaces the direct convolution contractions that
// `train-to-linalg` builds (conv2d, its filter gradient, and the input
// gradient of a stride-1 convolution) by calls of this entry point. Each
// one is a sum over window taps of products whose operands are views of
// the (padded) image: for an output row y of image n, the [ow, f]
// block is sum over taps (kh, kw) of image[n, :, y + kh, kw : kw + ow]^T x
// filter[:, :, kh, kw]^T -- no im2col patch matrix, only row windows read
// in place. With 64 channels or more the same products run channels last
// (windowProductsChannelsLast). LIBXSMM generates the batch-reduce product
// kernels (the sum over taps stays in registers); without its JIT (a CPU it
// does not know), the same products run through OpenBLAS, one per tap.
//
// Measured on one thread (bench/README.md, the 3x3 64->64 layer of batch 8):
// the forward and input-gradient products at ~170 GFLOP/s against sgemm's
// ~112 on the im2col patches, the filter gradient (one image at a time) at
// ~150. ResNet-18's 3x3 layers (batch 8, two threads, 64 to 512 channels):
// forward and input gradient 270-335 GFLOP/s, filter gradient 255-330
// (the 512-channel layer's forward 8.1 -> 6.6 ms once its filter blocks
// were packed in registers by the thread that uses them, in its L2).
//
//===----------------------------------------------------------------------===//

#include "CpuBlas.h"
#include "CpuTeam.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <immintrin.h>
#include <libxsmm.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using distopt::cpu::runsOnTeam;

namespace {
/// A rank-5 f32 view: its first element, sizes and strides (in elements).
struct View5 {
  float *data;
  std::array<int64_t, 5> sizes, strides;

  explicit View5(UnrankedMemRefType<float> *memref) {
    DynamicMemRefType<float> view(*memref);
    data = view.data + view.offset;
    for (int i = 0; i < 5; ++i) {
      sizes[i] = view.sizes[i];
      strides[i] = view.strides[i];
    }
  }
  float *at(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) const {
    return data + a * strides[0] + b * strides[1] + c * strides[2] +
           d * strides[3] + e * strides[4];
  }
};

/// C = sum over i < count of A[i] x B[i] (column-major, m x n, k deep),
/// overwriting C (adding to C when `accumulate`): a LIBXSMM batch-reduce
/// kernel, or OpenBLAS's sgemm per batch entry when LIBXSMM has no JIT for
/// this CPU.
class BatchReduceProduct {
public:
  BatchReduceProduct(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                     int64_t ldc, bool accumulate = false)
      : m(m), n(n), k(k), lda(lda), ldb(ldb), ldc(ldc), accumulate(accumulate) {
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    libxsmm_blasint la = lda, lb = ldb, lc = ldc;
    kernel = libxsmm_smmdispatch_reducebatch_addr(m, n, k, &la, &lb, &lc, &one,
                                                  &beta, nullptr, nullptr);
  }

  /// False where the products run through OpenBLAS.
  bool isJitted() const { return kernel != nullptr; }

  void operator()(const float **a, const float **b, float *c,
                  unsigned long long count) const {
    if (kernel) {
      kernel(a, b, c, &count);
      return;
    }
    for (unsigned long long i = 0; i < count; ++i)
      distopt::cpu::sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k,
                          1.0f, a[i], lda, b[i], ldb,
                          i || accumulate ? 1.0f : 0.0f, c, ldc);
    if (count == 0 && !accumulate)
      for (int64_t j = 0; j < n; ++j)
        std::fill_n(c + j * ldc, m, 0.0f);
  }

private:
  int64_t m, n, k, lda, ldb, ldc;
  bool accumulate;
  libxsmm_smmfunction_reducebatch_addr kernel;
};

/// The kernels' large buffers (the packed filter, the filter gradient's
/// sums and transposed gradients), kept by the calling thread from call to
/// call, grown and never zeroed: allocated per call, up to 9 MiB each were
/// page-faulted and zeroed again at every call (~1 ms per 9 MiB buffer).
enum class Scratch { packed, sums, gradients, image, count };

/// Aligned to a cache line: the products' full-vector loads of the packed
/// filter would otherwise straddle two lines each.
float *scratch(Scratch slot, size_t count) {
  constexpr size_t line = 64 / sizeof(float);
  thread_local std::vector<float> buffers[size_t(Scratch::count)];
  std::vector<float> &buffer = buffers[size_t(slot)];
  if (buffer.size() < count + line)
    buffer.resize(count + line);
  auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + (line - address / sizeof(float) % line) % line;
}

/// dst[j * ldd + i] = src[i * lds + j] for i, j < 16 in AVX-512 registers:
/// rows interleaved by pairs, then pairs of pairs, then 128-bit quarters
/// twice (~4 instructions per row, where the element-by-element copy took
/// two scalar accesses per element: ResNet-18's channels-last images and
/// outputs, ~50 ms of a 440 ms step on two threads).
/// Only the first `is` rows and `js` columns of src (masked loads and
/// stores): a block at the edge of a 14 x 14 or 7 x 7 image's rows.
// GCC 12's AVX-512 casts and unpacks read an intentionally undefined
// register (`__m512 __Y = __Y;` in its headers): false warnings, once per
// inlined call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void
transposeBlock16(const float *src, int64_t lds, float *dst, int64_t ldd,
                 int64_t is, int64_t js) {
  __m512 r[16], t[16];
  __mmask16 columns = static_cast<__mmask16>((1u << js) - 1),
            rows = static_cast<__mmask16>((1u << is) - 1);
  for (int i = 0; i < 16; ++i)
    r[i] = i < is ? _mm512_maskz_loadu_ps(columns, src + i * lds)
                  : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    __m512d c = _mm512_castps_pd(t[4 * i + 1]),
            d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
  }
  for (int j = 0; j < js; ++j)
    _mm512_mask_storeu_ps(dst + j * ldd, rows, r[j]);
}

/// to[x / 2] = from[x] for even x < width and to[phase + x / 2] = from[x]
/// for odd ones: a row's two column phases, 32 pixels at a time.
__attribute__((target("avx512f"))) void
splitTwoPhases(const float *from, int64_t width, float *to, int64_t phase) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                        10, 8, 6, 4, 2, 0),
                odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13,
                                       11, 9, 7, 5, 3, 1);
  for (int64_t x = 0; x < width; x += 32) {
    int64_t rest = std::min<int64_t>(32, width - x);
    auto mask = [](int64_t count) {
      return static_cast<__mmask16>((1u << std::clamp<int64_t>(count, 0, 16)) -
                                    1);
    };
    __m512 a = _mm512_maskz_loadu_ps(mask(rest), from + x),
           b = _mm512_maskz_loadu_ps(mask(rest - 16), from + x + 16);
    _mm512_mask_storeu_ps(to + x / 2, mask((rest + 1) / 2),
                          _mm512_permutex2var_ps(a, even, b));
    _mm512_mask_storeu_ps(to + phase + x / 2, mask(rest / 2),
                          _mm512_permutex2var_ps(a, odd, b));
  }
}
#pragma GCC diagnostic pop

/// Whether this CPU runs transposeBlock16 (checked once).
bool hasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

/// dst[i * dstI + j * dstJ] = src[i * srcI + j * srcJ] for i < rows, j <
/// cols, through 16 x 16 blocks held in a local tile: the reads run along
/// j and the writes along i, so that a side with a unit stride there moves
/// whole cache lines (element by element, the other side's stride made
/// every access a different line). A true transpose (both unit strides
/// there) goes through transposeBlock16 where the CPU has AVX-512.
void transposeCopy(const float *src, int64_t srcI, int64_t srcJ, float *dst,
                   int64_t dstI, int64_t dstJ, int64_t rows, int64_t cols) {
  constexpr int64_t tile = 16;
  bool vector = srcJ == 1 && hasAvx512();
  alignas(64) float block[tile][tile];
  for (int64_t i0 = 0; i0 < rows; i0 += tile)
    for (int64_t j0 = 0; j0 < cols; j0 += tile) {
      int64_t is = std::min(tile, rows - i0), js = std::min(tile, cols - j0);
      if (vector && dstI == 1) {
        transposeBlock16(src + i0 * srcI + j0, srcI, dst + i0 + j0 * dstJ, dstJ,
                         is, js);
        continue;
      }
      // (A strided destination -- a strided input gradient's phase --
      // still gets the vector transpose, then strided stores.)
      if (vector)
        transposeBlock16(src + i0 * srcI + j0, srcI, &block[0][0], tile, is,
                         js);
      else
        for (int64_t i = 0; i < is; ++i)
          for (int64_t j = 0; j < js; ++j)
            block[j][i] = src[(i0 + i) * srcI + (j0 + j) * srcJ];
      for (int64_t j = 0; j < js; ++j)
        for (int64_t i = 0; i < is; ++i)
          dst[(i0 + i) * dstI + (j0 + j) * dstJ] = block[j][i];
    }
}

/// The filter's (kh, kw) that tap t (row-major over the window) reads:
/// reversed when `flipped` (the input gradient's filter).
std::pair<int64_t, int64_t> filterTap(int64_t t, int64_t kernelH,
                                      int64_t kernelW, bool flipped) {
  int64_t kh = t / kernelW, kw = t % kernelW;
  if (flipped)
    return {kernelH - 1 - kh, kernelW - 1 - kw};
  return {kh, kw};
}

/// Calls visit(g, x0, x1, y0, y1) for every g < groups and 16 x 16 tile
/// [x0, x1) x [y0, y1) of [xs, ys], the tiles split over the team when
/// `team`. The by-image filter gradient's scatter moves the taps from the
/// outermost dim to the innermost and transposes two dims one tile at a
/// time, every tap of it: element by element, the 9 taps' rows
/// (1 MiB apart for 512 x 512 filters) and the rows of one tap (2 KiB
/// apart) fell into two L1 sets and evicted one another (10.5 ms for a
/// 512 x 512 x 3 x 3 filter gradient's scatter against products of ~20 ms);
/// a tile's lines stay in L1 for its taps.
template <typename Visit>
void forTiles(int64_t groups, int64_t xs, int64_t ys, bool team, Visit visit) {
  constexpr int64_t tile = 16;
  int64_t xTiles = (xs + tile - 1) / tile, yTiles = (ys + tile - 1) / tile;
#pragma omp parallel for collapse(3) schedule(static) if (team)
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t xt = 0; xt < xTiles; ++xt)
      for (int64_t yt = 0; yt < yTiles; ++yt)
        visit(g, xt * tile, std::min(xs, (xt + 1) * tile), yt * tile,
              std::min(ys, (yt + 1) * tile));
}

/// Whether the taps of `filter` ([g, a, b, kh, kw]) are contiguous and
/// innermost, few enough for one AVX-512 transpose, and the CPU has one:
/// then a tile's taps move between innermost and outermost in registers.
bool tapsInRegisters(const View5 &filter) {
  int64_t kernelW = filter.sizes[4], taps = filter.sizes[3] * kernelW;
  return taps <= 16 && filter.strides[4] == 1 && filter.strides[3] == kernelW &&
         filter.strides[2] == taps && hasAvx512();
}

/// to[t * tapStride + a * toA + b * toB] = filter[g, a0 + a, b0 + b, tap
/// t] for a < as, b < bs and every tap t (row-major over the window; tap
/// taps - 1 - t, the window reversed, when `reversed`). `to` is the tile's
/// first element. Where tapsInRegisters holds and `to` has a unit stride
/// along a or b, each filter row's [b, tap] block (contiguous) is
/// transposed in registers, straight into `to` when b is its unit dim, else
/// through a local [tap, a, b] tile transposed again per tap: the packing
/// of a 512 x 512 x 3 x 3 filter took 1.8 ms on two threads element by
/// element (the taps 9 apart), a quarter of its products' time.
void packFilterTile(const View5 &filter, int64_t g, int64_t a0, int64_t as,
                    int64_t b0, int64_t bs, bool reversed, float *to,
                    int64_t tapStride, int64_t toA, int64_t toB) {
  int64_t kernelH = filter.sizes[3], kernelW = filter.sizes[4],
          taps = kernelH * kernelW;
  if (!tapsInRegisters(filter) || (toA != 1 && toB != 1)) {
    for (int64_t t = 0; t < taps; ++t) {
      auto [kh, kw] = filterTap(t, kernelH, kernelW, reversed);
      transposeCopy(filter.at(g, a0, b0, kh, kw), filter.strides[1],
                    filter.strides[2], to + t * tapStride, toA, toB, as, bs);
    }
    return;
  }
  // Source tap s lands in row `first + s * step` of `to`'s taps.
  int64_t first = reversed ? (taps - 1) * tapStride : 0;
  int64_t step = reversed ? -tapStride : tapStride;
  if (toB == 1) {
    for (int64_t a = 0; a < as; ++a)
      transposeBlock16(filter.at(g, a0 + a, b0, 0, 0), taps,
                       to + first + a * toA, step, bs, taps);
    return;
  }
  alignas(64) float local[16][16][16]; // [tap, a, b]
  for (int64_t a = 0; a < as; ++a)
    transposeBlock16(filter.at(g, a0 + a, b0, 0, 0), taps, &local[0][a][0],
                     16 * 16, bs, taps);
  for (int64_t s = 0; s < taps; ++s)
    transposeBlock16(&local[s][0][0], 16, to + first + s * step, toB, as, bs);
}

/// The inverse of packFilterTile for the filter gradient: out[g, a0 + a,
/// b0 + b, tap t] = from[t * tapStride + b * fromB + a] for a < as, b < bs
/// and every tap (`from` unit along a), through a local [tap, a, b] tile
/// when tapsInRegisters holds for `out`.
void scatterFilterTile(const float *from, int64_t tapStride, int64_t fromB,
                       const View5 &out, int64_t g, int64_t a0, int64_t as,
                       int64_t b0, int64_t bs) {
  int64_t kernelW = out.sizes[4], taps = out.sizes[3] * kernelW;
  if (!tapsInRegisters(out)) {
    for (int64_t t = 0; t < taps; ++t)
      transposeCopy(from + t * tapStride, fromB, 1,
                    out.at(g, a0, b0, t / kernelW, t % kernelW), out.strides[2],
                    out.strides[1], bs, as);
    return;
  }
  alignas(64) float local[16][16][16]; // [tap, a, b]
  for (int64_t t = 0; t < taps; ++t)
    transposeBlock16(from + t * tapStride, fromB, &local[t][0][0], 16, bs, as);
  for (int64_t a = 0; a < as; ++a)
    transposeBlock16(&local[0][a][0], 16 * 16, out.at(g, a0 + a, b0, 0, 0),
                     taps, taps, bs);
}

/// Output channels [o0, o0 + os) of group g of `filter`, every reduced
/// channel r and tap t, packed for the products of one output block:
/// to[t * reds * os + r * toR + (o - o0) * toO] = the filter at (o, r) and
/// tap t (reversed when `flipped`). The filter is [g, o, r, kh, kw], or [g,
/// r, o, kh, kw] when `reductionFirst`. The window kernels pack each block
/// on the thread that runs its products, right before them: the packed
/// block (up to 1.2 MiB) stays in that core's L2 instead of a whole packed
/// filter (9 MiB for 512 x 512 x 3 x 3) passing through memory twice.
void packFilterBlock(const View5 &filter, bool reductionFirst, bool flipped,
                     int64_t g, int64_t o0, int64_t os, float *to, int64_t toR,
                     int64_t toO) {
  constexpr int64_t tile = 16;
  int64_t reds = filter.sizes[reductionFirst ? 1 : 2];
  int64_t tapStride = reds * os;
  for (int64_t o = o0; o < o0 + os; o += tile)
    for (int64_t r = 0; r < reds; r += tile) {
      int64_t ot = std::min(tile, o0 + os - o), rt = std::min(tile, reds - r);
      float *tileTo = to + r * toR + (o - o0) * toO;
      if (reductionFirst)
        packFilterTile(filter, g, r, rt, o, ot, flipped, tileTo, tapStride, toR,
                       toO);
      else
        packFilterTile(filter, g, o, ot, r, rt, flipped, tileTo, tapStride, toO,
                       toR);
    }
}

/// Output channels per product: the filter's block for every tap stays in
/// L2 while the rows of every image pass through it.
constexpr int64_t kOutBlock = 64;
/// Rows narrower than kJoinBelow are joined into wide runs of about
/// kJoinedRun columns (see windowProducts). Joining 32-wide rows in pairs
/// measured slower (the 3x3 64 -> 64 layer: 13 -> 17 ms per step).
constexpr int64_t kJoinBelow = 16, kJoinedRun = 64;

/// out[n, g, o, y, x] = sum over (r, kh, kw) of image[n, g, r, y + kh * dh,
/// x + kw * dw] * filter[g, o, r, kh, kw] (filter[g, r, o, kh, kw] when
/// `reductionFirst`; at tap (KH - 1 - kh, KW - 1 - kw) when `flipped`, a
/// reversal the packing does for free): per block of output rows and of output
/// channels, one batch-reduce product over the taps, [x, r] windows of the
/// image times [r, o] slices of the filter. Narrow rows (a 7 x 7 layer's) are
/// joined: when the image's rows are contiguous, R rows of a tap's window
/// are one run of (R - 1) * width + ow columns of the image's plane, whose
/// product lands in a scratch block of R rows of `width` columns (the
/// columns past ow, which straddle two rows, are dropped), so that the
/// product is R times taller.
void windowProducts(const View5 &image, const View5 &filter, const View5 &out,
                    bool reductionFirst, bool flipped, int64_t dh, int64_t dw) {
  int64_t batch = out.sizes[0], groups = out.sizes[1], outs = out.sizes[2],
          outH = out.sizes[3], outW = out.sizes[4];
  int64_t reds = image.sizes[2], kernelH = filter.sizes[3],
          kernelW = filter.sizes[4], taps = kernelH * kernelW;
  bool team = runsOnTeam(batch * groups * outH * outW * outs * reds * taps);
  // Rows per product: joined when narrow and the image's rows contiguous.
  int64_t width = image.strides[3];
  int64_t joined = 1;
  if (outW < kJoinBelow && width == image.sizes[4])
    joined = std::min(outH, kJoinedRun / width + 1);
  int64_t rowBlocks = (outH + joined - 1) / joined;
  int64_t outBlock = std::min(outs, kOutBlock);
  int64_t outBlocks = (outs + outBlock - 1) / outBlock;
  // Tasks ordered (g, output block, image, row block): a thread's run of
  // tasks shares the filter block, which it packs as [tap, o, r] (column-
  // major [r, o] per tap) on its first task there.
  int64_t tasks = groups * outBlocks * batch * rowBlocks;
  // The products, dispatched once: [full rows, last rows] x [full output
  // block, last output block]. Joined rows land in a scratch block of
  // `joined` rows of `width` columns.
  int64_t ld = joined > 1 ? joined * width : out.strides[2];
  auto rowsOf = [&](int64_t rowBlock) {
    return std::min(joined, outH - rowBlock * joined);
  };
  auto outsOf = [&](int64_t ob) {
    return std::min(outBlock, outs - ob * outBlock);
  };
  std::vector<BatchReduceProduct> products;
  for (int64_t rows : {rowsOf(0), rowsOf(rowBlocks - 1)})
    for (int64_t os : {outsOf(0), outsOf(outBlocks - 1)})
      products.emplace_back(joined > 1 ? (rows - 1) * width + outW : outW, os,
                            reds, image.strides[2], reds, ld);
#pragma omp parallel if (team)
  {
    std::vector<const float *> a(taps), b(taps);
    std::vector<float> joinedRows(joined > 1 ? ld * outBlock : 0);
    float *packed = scratch(Scratch::packed, size_t(taps * outBlock * reds));
    int64_t packedBlock = -1;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < tasks; ++i) {
      int64_t rowBlock = i % rowBlocks, n = i / rowBlocks % batch,
              ob = i / (rowBlocks * batch) % outBlocks,
              g = i / (rowBlocks * batch * outBlocks);
      int64_t y0 = rowBlock * joined, rows = rowsOf(rowBlock);
      int64_t o0 = ob * outBlock, os = outsOf(ob);
      if (i / (rowBlocks * batch) != packedBlock) {
        packedBlock = i / (rowBlocks * batch);
        packFilterBlock(filter, reductionFirst, flipped, g, o0, os, packed, 1,
                        reds);
      }
      for (int64_t t = 0; t < taps; ++t) {
        a[t] = image.at(n, g, 0, y0 + t / kernelW * dh, t % kernelW * dw);
        b[t] = packed + t * os * reds;
      }
      const BatchReduceProduct &product =
          products[2 * (rowBlock == rowBlocks - 1) + (ob == outBlocks - 1)];
      if (joined == 1) {
        product(a.data(), b.data(), out.at(n, g, o0, y0, 0), taps);
        continue;
      }
      // The wide run's product, column-major [rows * width, os], then its
      // rows' first ow columns.
      product(a.data(), b.data(), joinedRows.data(), taps);
      for (int64_t o = 0; o < os; ++o)
        for (int64_t y = 0; y < rows; ++y)
          std::copy_n(joinedRows.data() + o * ld + y * width, outW,
                      out.at(n, g, o0 + o, y0 + y, 0));
    }
  }
}

/// Output and reduced channels per group from which windowProducts goes
/// channels last.
constexpr int64_t kChannelsLastFrom = 64;

/// windowProducts with the channels innermost, for many channels: the
/// image transposed to [n, g, h, w, r] and the filter packed per block of
/// output channels as [tap, r, o], then per output row and block one
/// batch-reduce product over the taps, [o, r] slices of the filter times
/// [r, x] windows of the image (the pixels `r` apart), into a [x, o] block
/// written back transposed. Every operand is read along unit strides and
/// the filter block's rows are `os` apart, not a plane or a power of two:
/// one thread, batch 8, ResNet-18's 3x3 layers measured 154-191 GFLOP/s
/// for the products (the pixels-first form 120-149, its image planes read
/// with a stride of the plane). Strides (sh, sw) > 1 as well: output row y
/// reads image rows y * sh + kh * dh, and a window's pixels are sw * r
/// apart (the products' leading dimension), so that a strided convolution
/// needs no patch matrix either.
void windowProductsChannelsLast(const View5 &image, const View5 &filter,
                                const View5 &out, bool reductionFirst,
                                bool flipped, int64_t dh, int64_t dw,
                                int64_t sh, int64_t sw) {
  int64_t batch = out.sizes[0], groups = out.sizes[1], outs = out.sizes[2],
          outH = out.sizes[3], outW = out.sizes[4];
  int64_t reds = image.sizes[2], height = image.sizes[3],
          width = image.sizes[4], kernelH = filter.sizes[3],
          kernelW = filter.sizes[4], taps = kernelH * kernelW;
  bool team = runsOnTeam(batch * groups * outH * outW * outs * reds * taps);
  int64_t outBlock = std::min(outs, kOutBlock);
  int64_t outBlocks = (outs + outBlock - 1) / outBlock;
  auto outsOf = [&](int64_t ob) {
    return std::min(outBlock, outs - ob * outBlock);
  };
  // The image: [n, g, h, w, r].
  float *imageT =
      scratch(Scratch::image, size_t(batch * groups * height * width * reds));
#pragma omp parallel for schedule(static) if (team)
  for (int64_t ngh = 0; ngh < batch * groups * height; ++ngh) {
    int64_t h = ngh % height, g = ngh / height % groups,
            n = ngh / (height * groups);
    transposeCopy(image.at(n, g, 0, h, 0), image.strides[2], image.strides[4],
                  imageT + ngh * width * reds, 1, reds, reds, width);
  }
  std::vector<BatchReduceProduct> products;
  for (int64_t os : {outsOf(0), outsOf(outBlocks - 1)})
    products.emplace_back(os, outW, reds, os, sw * reds, os);
  // Tasks ordered (g, output block, image, row): a thread's run of tasks
  // shares the filter block, which it packs as [tap, r, o] (column-major
  // [o, r] per tap) on its first task there.
  int64_t tasks = groups * outBlocks * batch * outH;
#pragma omp parallel if (team)
  {
    std::vector<const float *> a(taps), b(taps);
    std::vector<float> block(outW * outBlock);
    float *packed = scratch(Scratch::packed, size_t(taps * reds * outBlock));
    int64_t packedBlock = -1;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < tasks; ++i) {
      int64_t y = i % outH, n = i / outH % batch,
              ob = i / (outH * batch) % outBlocks,
              g = i / (outH * batch * outBlocks);
      int64_t o0 = ob * outBlock, os = outsOf(ob);
      if (i / (outH * batch) != packedBlock) {
        packedBlock = i / (outH * batch);
        packFilterBlock(filter, reductionFirst, flipped, g, o0, os, packed, os,
                        1);
      }
      for (int64_t t = 0; t < taps; ++t) {
        a[t] = packed + t * reds * os;
        b[t] =
            imageT +
            (((n * groups + g) * height + y * sh + t / kernelW * dh) * width +
             t % kernelW * dw) *
                reds;
      }
      products[ob == outBlocks - 1](a.data(), b.data(), block.data(), taps);
      transposeCopy(block.data(), os, 1, out.at(n, g, o0, y, 0), out.strides[4],
                    out.strides[2], outW, os);
    }
  }
}

/// The filter gradient's shapes, and its sums: column-major [f, c] per
/// (group, tap), `parts` copies (summed by `scatter`).
struct FilterGrad {
  const View5 &grad, &image, &out;
  int64_t dh, dw, sh, sw;
  /// What the products read the image's windows from: the image itself,
  /// or with strides sw > 1 its rows split into sw column phases of
  /// `phaseWidth` pixels each (see splitPhases).
  View5 source = image;
  int64_t phaseWidth = 0;
  int64_t batch = grad.sizes[0], groups = grad.sizes[1],
          filters = grad.sizes[2], outH = grad.sizes[3], outW = grad.sizes[4];
  int64_t channels = out.sizes[2], kernelH = out.sizes[3],
          kernelW = out.sizes[4], taps = kernelH * kernelW;
  /// One image's gradient transposed: [y, x, f].
  int64_t plane = outH * outW * filters;
  int64_t sumsSize = groups * taps * channels * filters;

  /// Image n's group-g gradient transposed into `to` ([y, x, f]).
  void transpose(int64_t n, int64_t g, float *to) const {
    for (int64_t y = 0; y < outH; ++y)
      transposeCopy(grad.at(n, g, 0, y, 0), grad.strides[2], grad.strides[4],
                    to + y * outW * filters, 1, filters, filters, outW);
  }
  /// The window of image n, group g, tap t at output row y, channel c:
  /// outW pixels along a row of `source`, its channels source.strides[2]
  /// apart.
  const float *window(int64_t n, int64_t g, int64_t c, int64_t t,
                      int64_t y) const {
    int64_t column = t % kernelW * dw;
    if (sw > 1)
      column = column % sw * phaseWidth + column / sw;
    return source.at(n, g, c, y * sh + t / kernelW * dh, column);
  }
  /// With strides sw > 1, a window's pixels are sw apart: the products
  /// need them contiguous (they are the reduced dim). Each image row a
  /// window reads is split into its sw column phases (pixel x to phase x %
  /// sw, at x / sw), so that the window of tap kw is a run of phase (kw *
  /// dw) % sw: at most one copy of the image, where im2col's patches were
  /// one per tap. Rows and phases no window reads (a 1x1 stride-2 layer's
  /// odd ones) are not copied.
  void splitPhases(bool team) {
    int64_t height = image.sizes[3], width = image.sizes[4];
    phaseWidth = (width + sw - 1) / sw;
    int64_t rowSize = sw * phaseWidth;
    std::vector<char> readRows(height), readPhases(sw);
    for (int64_t kh = 0; kh < kernelH; ++kh)
      for (int64_t y = 0; y < outH; ++y)
        readRows[y * sh + kh * dh] = 1;
    for (int64_t kw = 0; kw < kernelW; ++kw)
      readPhases[kw * dw % sw] = 1;
    bool twoPhases = sw == 2 && readPhases[0] && readPhases[1] &&
                     image.strides[4] == 1 && hasAvx512();
    int64_t rows = batch * groups * channels * height;
    float *phased = scratch(Scratch::image, size_t(rows * rowSize));
#pragma omp parallel for schedule(static) if (team)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t h = row % height, c = row / height % channels,
              g = row / (height * channels) % groups,
              n = row / (height * channels * groups);
      if (!readRows[h])
        continue;
      const float *from = image.at(n, g, c, h, 0);
      float *to = phased + row * rowSize;
      if (twoPhases) {
        splitTwoPhases(from, width, to, phaseWidth);
        continue;
      }
      for (int64_t phase = 0; phase < sw; ++phase)
        if (readPhases[phase])
          for (int64_t x = phase, q = 0; x < width; x += sw, ++q)
            to[phase * phaseWidth + q] = from[x * image.strides[4]];
    }
    source.data = phased;
    source.sizes[4] = rowSize;
    int64_t stride = 1;
    for (int d = 4; d >= 0; --d) {
      source.strides[d] = stride;
      stride *= source.sizes[d];
    }
  }
  /// out = the sum of the `parts` copies of the sums.
  void scatter(float *sums, int parts, bool team) const {
    // The parts summed into the first, then [c, f] per tap transposed.
    int64_t chunks = (sumsSize + 4095) / 4096;
    if (parts > 1) {
#pragma omp parallel for schedule(static) if (team)
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        for (int part = 1; part < parts; ++part)
          for (int64_t i = chunk * 4096;
               i < std::min(sumsSize, (chunk + 1) * 4096); ++i)
            sums[i] += sums[part * sumsSize + i];
    }
    forTiles(groups, filters, channels, team,
             [&](int64_t g, int64_t f0, int64_t f1, int64_t c0, int64_t c1) {
               scatterFilterTile(sums + (g * taps * channels + c0) * filters +
                                     f0,
                                 channels * filters, filters, out, g, f0,
                                 f1 - f0, c0, c1 - c0);
             });
  }
};

/// Filter blocks and channel blocks of the by-tile filter gradient.
constexpr int64_t kFilterGradTile = 64;
/// Beyond this many bytes of sums, the filter gradient goes by tile.
constexpr int64_t kMaxSumsBytes = 1 << 20;

/// The filter gradient one image at a time (its gradient and image stay
/// in cache for every tap): the image's gradient transposed to [y, x, f],
/// then per tap one batch-reduce product over the rows, [f, x] rows of the
/// gradient times [x, c] windows of the image, added to the tap's sums.
/// The team splits the images, each thread summing into its own sums,
/// added up at the end. For large images and few channels (a 3x3 64 -> 64
/// layer on 32 x 32 images: 150 GFLOP/s on one thread, where summing each
/// tap over all images ran at 90).
void filterGradByImage(const FilterGrad &p) {
  bool team = runsOnTeam(p.batch * p.groups * p.plane * p.channels * p.taps);
  int parts = team ? std::min<int64_t>(omp_get_max_threads(), p.batch) : 1;
  float *sums = scratch(Scratch::sums, size_t(parts * p.sumsSize));
#pragma omp parallel num_threads(parts) if (team)
  {
    int part = omp_get_thread_num();
    float *partSums = sums + part * p.sumsSize;
    std::vector<float> gradT(p.plane);
    std::vector<const float *> a(p.outH), b(p.outH);
    BatchReduceProduct first(p.filters, p.channels, p.outW, p.filters,
                             p.source.strides[2], p.filters);
    BatchReduceProduct next(p.filters, p.channels, p.outW, p.filters,
                            p.source.strides[2], p.filters,
                            /*accumulate=*/true);
    int64_t n0 = p.batch * part / parts, n1 = p.batch * (part + 1) / parts;
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t g = 0; g < p.groups; ++g) {
        p.transpose(n, g, gradT.data());
        for (int64_t t = 0; t < p.taps; ++t) {
          for (int64_t y = 0; y < p.outH; ++y) {
            a[y] = gradT.data() + y * p.outW * p.filters;
            b[y] = p.window(n, g, 0, t, y);
          }
          float *c = partSums + (g * p.taps + t) * p.channels * p.filters;
          (n == n0 ? first : next)(a.data(), b.data(), c, p.outH);
        }
      }
  }
  p.scatter(sums, parts, team);
}

/// The filter gradient one tile of [64 filters, 64 channels] of one tap at
/// a time, summed over every (image, row) in one batch-reduce product: for
/// many channels on small images (a 3x3 512 -> 512 layer on 7 x 7 images,
/// whose sums, 9 MiB, would otherwise pass through memory once per image).
/// Every image's gradient is transposed first; the team splits the tiles.
void filterGradByTile(const FilterGrad &p) {
  constexpr int64_t tile = kFilterGradTile;
  float *gradT =
      scratch(Scratch::gradients, size_t(p.batch * p.groups * p.plane));
  int64_t fBlocks = (p.filters + tile - 1) / tile;
  int64_t cBlocks = (p.channels + tile - 1) / tile;
  int64_t tiles = p.groups * fBlocks * cBlocks;
  bool team = runsOnTeam(p.batch * p.groups * p.plane * p.channels * p.taps);
  auto sizeOf = [](int64_t block, int64_t size) {
    return std::min(kFilterGradTile, size - block * kFilterGradTile);
  };
  // The products, dispatched once: [full, last] filter blocks x [full,
  // last] channel blocks, into a tile's sums.
  std::vector<BatchReduceProduct> products;
  for (int64_t fs : {sizeOf(0, p.filters), sizeOf(fBlocks - 1, p.filters)})
    for (int64_t cs : {sizeOf(0, p.channels), sizeOf(cBlocks - 1, p.channels)})
      products.emplace_back(fs, cs, p.outW, p.filters, p.source.strides[2],
                            tile);
#pragma omp parallel if (team)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < p.batch * p.groups; ++i)
      p.transpose(i / p.groups, i % p.groups, gradT + i * p.plane);
    std::vector<const float *> a(p.batch * p.outH), b(p.batch * p.outH);
    // One tile's sums for every tap, [tap, c, f] (column-major [f, c] per
    // tap), written to `out` by the thread as soon as they are complete:
    // summed into a whole [tap, c, f] copy of the gradient first, then
    // scattered, the 9 MiB of a 512 x 512 x 3 x 3 gradient's sums passed
    // through memory twice more.
    float *sums = scratch(Scratch::sums, size_t(p.taps * tile * tile));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < tiles; ++i) {
      int64_t cb = i % cBlocks, fb = i / cBlocks % fBlocks,
              g = i / (cBlocks * fBlocks);
      int64_t f0 = fb * tile, c0 = cb * tile;
      int64_t fs = sizeOf(fb, p.filters), cs = sizeOf(cb, p.channels);
      const BatchReduceProduct &product =
          products[2 * (fb == fBlocks - 1) + (cb == cBlocks - 1)];
      for (int64_t t = 0; t < p.taps; ++t) {
        for (int64_t n = 0; n < p.batch; ++n)
          for (int64_t y = 0; y < p.outH; ++y) {
            a[n * p.outH + y] = gradT + (n * p.groups + g) * p.plane +
                                y * p.outW * p.filters + f0;
            b[n * p.outH + y] = p.window(n, g, c0, t, y);
          }
        product(a.data(), b.data(), sums + t * tile * tile, a.size());
      }
      for (int64_t f = 0; f < fs; f += 16)
        for (int64_t c = 0; c < cs; c += 16)
          scatterFilterTile(sums + c * tile + f, tile * tile, tile, p.out, g,
                            f0 + f, std::min<int64_t>(16, fs - f), c0 + c,
                            std::min<int64_t>(16, cs - c));
    }
  }
}

/// out[g, f, c, kh, kw] = sum over (n, y, x) of grad[n, g, f, y, x] *
/// image[n, g, c, y * sh + kh * dh, x * sw + kw * dw].
void filterGradProducts(const View5 &grad, const View5 &image, const View5 &out,
                        int64_t dh, int64_t dw, int64_t sh, int64_t sw) {
  FilterGrad p{grad, image, out, dh, dw, sh, sw};
  if (sw > 1)
    p.splitPhases(runsOnTeam(p.batch * p.groups * p.plane * p.channels));
  if (p.sumsSize * int64_t(sizeof(float)) > kMaxSumsBytes)
    filterGradByTile(p);
  else
    filterGradByImage(p);
}
} // namespace

std::string distopt::cpu::getConvolutionKernelInfo() {
  // The kernels' condition: whether LIBXSMM dispatches a batch-reduce
  // product (its JIT knows the target it detected from the CPU's features,
  // or LIBXSMM_TARGET's).
  BatchReduceProduct probe(16, 16, 16, 16, 16, 16);
  std::string arch = libxsmm_get_target_arch();
  if (probe.isJitted())
    return "libxsmm " + arch;
  return "openblas (libxsmm has no JIT for '" + arch + "')";
}

extern "C" {

/// The convolution contractions `dist-conv-to-kernels` matches,
/// on rank-5 grouped views (the last dim of `lhs` and `rhs` contiguous, of
/// `out` too but for kinds 0, 1 and 3's channels-last products; dilations
/// dh and dw):
///   kind 0 (conv2d): out[n, g, f, y, x] = sum of lhs[n, g, c, y + kh*dh,
///     x + kw*dw] * rhs[g, f, c, kh, kw];
///   kind 1 (the input gradient, a conv2d of the padded output gradient
///     with the flipped filter): out[n, g, c, y, x] = sum of lhs[n, g, f,
///     y + kh*dh, x + kw*dw] * rhs[g, f, c, kh, kw];
///   kind 2 (the filter gradient): out[g, f, c, kh, kw] = sum of lhs[n, g,
///     f, y, x] * rhs[n, g, c, y + kh*dh, x + kw*dw];
///   kind 3 (the input gradient of an unflipped filter): kind 1 reading
///     rhs[g, f, c, KH - 1 - kh, KW - 1 - kw].
/// Kinds 0 and 2 take strides (sh, sw): lhs[n, g, c, y * sh + kh * dh, x *
/// sw + kw * dw], rhs[n, g, c, y * sh + kh * dh, x * sw + kw * dw]; kinds 1
/// and 3 take strides 1. `out` is overwritten.
void _mlir_ciface_distopt_conv2d_f32(UnrankedMemRefType<float> *lhs,
                                     UnrankedMemRefType<float> *rhs,
                                     UnrankedMemRefType<float> *out,
                                     int32_t kind, int64_t dh, int64_t dw,
                                     int64_t sh, int64_t sw) {
  View5 a(lhs), b(rhs), c(out);
  if (kind == 2) {
    filterGradProducts(a, b, c, dh, dw, sh, sw);
    return;
  }
  bool reductionFirst = kind == 1 || kind == 3, flipped = kind == 3;
  // A strided window's pixels are not contiguous, nor are the output rows
  // of a strided input gradient's phase: channels last only.
  if (sh != 1 || sw != 1 || c.strides[4] != 1 ||
      (c.sizes[2] >= kChannelsLastFrom && a.sizes[2] >= kChannelsLastFrom))
    windowProductsChannelsLast(a, b, c, reductionFirst, flipped, dh, dw, sh,
                               sw);
  else
    windowProducts(a, b, c, reductionFirst, flipped, dh, dw);
}

} // extern "C"
