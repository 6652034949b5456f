//===- ConvKernels.cpp - stride-1 convolutions as batch-reduce products ---===//
//
// `dist-conv-to-kernels` replaces the direct convolution contractions that
// `train-to-linalg` builds for stride-1 convolutions by calls of this entry
// point. Each one is a sum over window taps of products whose operands are
// views of the (padded) image: for an output row y of image n, the [ow, f]
// block is sum over taps (kh, kw) of image[n, :, y + kh, kw : kw + ow]^T x
// filter[:, :, kh, kw]^T -- no im2col patch matrix, only row windows read
// in place. LIBXSMM generates the batch-reduce product kernels (the sum over
// taps stays in registers); without its JIT (a CPU it does not know), the
// same products run through OpenBLAS, one per tap.
//
// Measured on one thread (bench/README.md, the 3x3 64->64 layer of batch 8):
// the forward and input-gradient products at ~170 GFLOP/s against sgemm's
// ~112 on the im2col patches, the filter gradient at ~126.
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cblas.h>
#include <libxsmm.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

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

  void operator()(const float **a, const float **b, float *c,
                  unsigned long long count) const {
    if (kernel) {
      kernel(a, b, c, &count);
      return;
    }
    for (unsigned long long i = 0; i < count; ++i)
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                  a[i], lda, b[i], ldb, i || accumulate ? 1.0f : 0.0f, c, ldc);
    if (count == 0 && !accumulate)
      for (int64_t j = 0; j < n; ++j)
        std::fill_n(c + j * ldc, m, 0.0f);
  }

private:
  int64_t m, n, k, lda, ldb, ldc;
  bool accumulate;
  libxsmm_smmfunction_reducebatch_addr kernel;
};

/// Below this many multiply-adds a convolution runs on the calling thread.
constexpr int64_t kMinParallelMacs = 1 << 18;

bool runsOnTeam(int64_t macs) {
  return omp_get_max_threads() > 1 && !omp_in_parallel() &&
         macs >= kMinParallelMacs;
}

/// out[n, g, o, y, x] = sum over (r, kh, kw) of image[n, g, r, y + kh * dh,
/// x + kw * dw] * filter[g, o, r, kh, kw] (filter[g, r, o, kh, kw] when
/// `reductionFirst`): per output row, one batch-reduce product over the
/// taps, [x, r] windows of the image times [r, o] slices of the filter.
void windowProducts(const View5 &image, const View5 &filter, const View5 &out,
                    bool reductionFirst, int64_t dh, int64_t dw) {
  int64_t batch = out.sizes[0], groups = out.sizes[1], outs = out.sizes[2],
          outH = out.sizes[3], outW = out.sizes[4];
  int64_t reds = image.sizes[2], kernelH = filter.sizes[3],
          kernelW = filter.sizes[4], taps = kernelH * kernelW;
  // The filter packed as [g, tap, o, r]: column-major [r, o] per tap.
  std::vector<float> packed(groups * taps * outs * reds);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t o = 0; o < outs; ++o)
        for (int64_t r = 0; r < reds; ++r)
          packed[((g * taps + t) * outs + o) * reds + r] =
              reductionFirst ? *filter.at(g, r, o, t / kernelW, t % kernelW)
                             : *filter.at(g, o, r, t / kernelW, t % kernelW);
  BatchReduceProduct product(outW, outs, reds, image.strides[2], reds,
                             out.strides[2]);
  int64_t rows = batch * groups * outH;
#pragma omp parallel if (runsOnTeam(rows * outW * outs * reds * taps))
  {
    std::vector<const float *> a(taps), b(taps);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      int64_t y = i % outH, g = i / outH % groups, n = i / (outH * groups);
      for (int64_t t = 0; t < taps; ++t) {
        a[t] = image.at(n, g, 0, y + t / kernelW * dh, t % kernelW * dw);
        b[t] = packed.data() + (g * taps + t) * outs * reds;
      }
      product(a.data(), b.data(), out.at(n, g, 0, y, 0), taps);
    }
  }
}

/// out[g, f, c, kh, kw] = sum over (n, y, x) of grad[n, g, f, y, x] *
/// image[n, g, c, y + kh * dh, x + kw * dw], one image at a time (its
/// gradient and image stay in cache for every tap): the image's gradient
/// transposed to [y, x, f], then per tap one batch-reduce product over the
/// rows, [f, x] rows of the gradient times [x, c] windows of the image,
/// added to the tap's sums. The team splits the images, each thread
/// summing into its own sums, added up at the end.
void filterGradProducts(const View5 &grad, const View5 &image, const View5 &out,
                        int64_t dh, int64_t dw) {
  int64_t batch = grad.sizes[0], groups = grad.sizes[1],
          filters = grad.sizes[2], outH = grad.sizes[3], outW = grad.sizes[4];
  int64_t channels = out.sizes[2], kernelH = out.sizes[3],
          kernelW = out.sizes[4], taps = kernelH * kernelW;
  int64_t plane = outH * outW * filters;
  // Per thread, the sums: column-major [f, c] per (g, tap).
  int64_t sumsSize = groups * taps * channels * filters;
  bool team = runsOnTeam(batch * groups * plane * channels * taps);
  int parts = team ? std::min<int64_t>(omp_get_max_threads(), batch) : 1;
  std::vector<float> sums(parts * sumsSize);
#pragma omp parallel num_threads(parts) if (team)
  {
    int part = omp_get_thread_num();
    float *partSums = sums.data() + part * sumsSize;
    std::vector<float> gradT(plane);
    std::vector<const float *> a(outH), b(outH);
    BatchReduceProduct first(filters, channels, outW, filters, image.strides[2],
                             filters);
    BatchReduceProduct next(filters, channels, outW, filters, image.strides[2],
                            filters, /*accumulate=*/true);
    for (int64_t n = batch * part / parts; n < batch * (part + 1) / parts; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        for (int64_t y = 0; y < outH; ++y)
          for (int64_t f = 0; f < filters; ++f) {
            const float *from = grad.at(n, g, f, y, 0);
            float *to = gradT.data() + y * outW * filters + f;
            for (int64_t x = 0; x < outW; ++x)
              to[x * filters] = from[x * grad.strides[4]];
          }
        for (int64_t t = 0; t < taps; ++t) {
          for (int64_t y = 0; y < outH; ++y) {
            a[y] = gradT.data() + y * outW * filters;
            b[y] = image.at(n, g, 0, y + t / kernelW * dh, t % kernelW * dw);
          }
          float *c = partSums + (g * taps + t) * channels * filters;
          (n == batch * part / parts ? first : next)(a.data(), b.data(), c,
                                                     outH);
        }
      }
  }
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t f = 0; f < filters; ++f)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t t = 0; t < taps; ++t) {
          float sum = 0.0f;
          int64_t at = ((g * taps + t) * channels + c) * filters + f;
          for (int part = 0; part < parts; ++part)
            sum += sums[part * sumsSize + at];
          *out.at(g, f, c, t / kernelW, t % kernelW) = sum;
        }
}
} // namespace

extern "C" {

/// The stride-1 convolution contractions `dist-conv-to-kernels` matches,
/// on rank-5 grouped views (the last dim of `lhs`, `rhs` and `out`
/// contiguous, dilations dh and dw):
///   kind 0 (conv2d): out[n, g, f, y, x] = sum of lhs[n, g, c, y + kh*dh,
///     x + kw*dw] * rhs[g, f, c, kh, kw];
///   kind 1 (the input gradient, a conv2d of the padded output gradient
///     with the flipped filter): out[n, g, c, y, x] = sum of lhs[n, g, f,
///     y + kh*dh, x + kw*dw] * rhs[g, f, c, kh, kw];
///   kind 2 (the filter gradient): out[g, f, c, kh, kw] = sum of lhs[n, g,
///     f, y, x] * rhs[n, g, c, y + kh*dh, x + kw*dw].
/// `out` is overwritten.
void _mlir_ciface_distopt_conv2d_f32(UnrankedMemRefType<float> *lhs,
                                     UnrankedMemRefType<float> *rhs,
                                     UnrankedMemRefType<float> *out,
                                     int32_t kind, int64_t dh, int64_t dw) {
  View5 a(lhs), b(rhs), c(out);
  if (kind == 2)
    filterGradProducts(a, b, c, dh, dw);
  else
    windowProducts(a, b, c, /*reductionFirst=*/kind == 1, dh, dw);
}

} // extern "C"
