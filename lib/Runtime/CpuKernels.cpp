//===- CpuKernels.cpp - library kernels that compiled CPU steps call ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `dist-matmul-to-blas` replaces contractions by calls of these entry points
// (memref C interface): OpenBLAS's sgemm on row-major buffers, one call per
// batch. The threads are OpenMP's: the loops of a compiled step run on the
// same team (`dist-parallel-loops`), so OpenBLAS runs single-threaded calls
// and the kernels split their work over the team themselves. Two thread
// pools (OpenBLAS's own and OpenMP's) would oversubscribe the cores, and
// OpenBLAS's threading costs more than the split on small products: the
// transformer block's 128 x 128 x 64 attention products ran at 80-100
// GFLOP/s with two OpenBLAS threads, 220 split over two single-threaded
// calls.
//
// OpenBLAS is loaded by CpuBlas.cpp, with the core the CPU's features call
// for; so is oneDNN, for bf16 products. 16-bit products accumulate in f32
// and round each element of the result once; where no library multiplies
// the type (f16; bf16 on CPUs without bf16 products) the operands are
// widened to f32 (exact) and multiplied by sgemm.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CpuKernels.h"
#include "CpuBlas.h"
#include "CpuTeam.h"
#include "MatrixOperand.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using distopt::getMatrix;
using distopt::Matrix;

namespace {
/// The first row (or column) of part `part` of `parts` of `size` ones,
/// cut on multiples of 16 (the width of sgemm's register blocks).
int64_t partBegin(int64_t size, int part, int parts) {
  int64_t blocks = (size + 15) / 16;
  return std::min(size, blocks * part / parts * 16);
}
} // namespace

namespace {
/// Splits the product C[b] = op(A[b]) x op(B[b]) (b < batch, C [batch, m,
/// n]) over the team when it is large enough: `multiply(b0, b1, m0, m1, n0,
/// n1)` computes rows [m0, m1) and columns [n0, n1) of C for batches [b0,
/// b1). When the batches split evenly enough (at least 2T of them on T
/// threads, or a multiple of T), each thread takes whole batches; otherwise
/// each product is cut into T blocks of rows of C (of columns when C is
/// wider than tall).
template <typename Multiply>
void splitProduct(int64_t batch, int64_t m, int64_t n, int64_t k,
                  Multiply multiply) {
  if (!distopt::cpu::runsOnTeam(batch * m * n * k)) {
    multiply(0, batch, 0, m, 0, n);
    return;
  }
  int threads = omp_get_max_threads();
  bool byBatch = batch >= 2 * threads || batch % threads == 0;
  bool byRows = m >= n;
#pragma omp parallel num_threads(threads)
  {
    int part = omp_get_thread_num(), parts = omp_get_num_threads();
    if (byBatch)
      multiply(batch * part / parts, batch * (part + 1) / parts, 0, m, 0, n);
    else if (byRows)
      multiply(0, batch, partBegin(m, part, parts),
               partBegin(m, part + 1, parts), 0, n);
    else
      multiply(0, batch, 0, m, partBegin(n, part, parts),
               partBegin(n, part + 1, parts));
  }
}

/// A batch of products with one B matrix, whose batches of A and of C each
/// follow one another row after row, is one product of batch * m rows: one
/// call with the rows a larger blocking and the team want (a layer's
/// weight applied to [batch, seq, features] activations).
template <typename T>
void foldBatchIntoRows(const Matrix<T> &av, const Matrix<T> &cv, int64_t &batch,
                       int64_t &m, bool transA, bool batchedA, bool batchedB) {
  if (batch > 1 && batchedA && !batchedB && !transA &&
      av.batchStride == m * av.ld && cv.batchStride == m * cv.ld) {
    m *= batch;
    batch = 1;
  }
}

/// The f32 product of distopt_matmul_f32 on views.
void multiplyF32(Matrix<float> av, Matrix<float> bv, Matrix<float> cv,
                 int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
                 bool transB) {
  splitProduct(batch, m, n, k,
               [&](int64_t b0, int64_t b1, int64_t m0, int64_t m1, int64_t n0,
                   int64_t n1) {
                 if (m0 >= m1 || n0 >= n1)
                   return;
                 // Row i of op(A) starts at i * ld (at column i when
                 // transposed).
                 int64_t aOffset = transA ? m0 : m0 * av.ld;
                 int64_t bOffset = transB ? n0 * bv.ld : n0;
                 for (int64_t i = b0; i < b1; ++i)
                   distopt::cpu::sgemm(
                       CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                       transB ? CblasTrans : CblasNoTrans, m1 - m0, n1 - n0, k,
                       1.0f, av.data + i * av.batchStride + aOffset, av.ld,
                       bv.data + i * bv.batchStride + bOffset, bv.ld, 0.0f,
                       cv.data + i * cv.batchStride + m0 * cv.ld + n0, cv.ld);
               });
}

//===----------------------------------------------------------------------===//
// 16-bit floats: conversions (round to nearest even, as arith.truncf)
//===----------------------------------------------------------------------===//

/// The two 16-bit formats, by their element conversions.
enum class Half { bf16, f16 };

// Cloned for AVX-512 (x86-64-v4 has F16C and 512-bit integer shifts) and
// the baseline, chosen by the CPU's features when the library loads.
#define DISTOPT_VECTOR_CLONES                                                  \
  __attribute__((target_clones("arch=x86-64-v4", "default")))

DISTOPT_VECTOR_CLONES void widenBf16(const uint16_t *from, float *to,
                                     int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = uint32_t(from[i]) << 16;
    std::memcpy(&to[i], &bits, 4);
  }
}

DISTOPT_VECTOR_CLONES void narrowToBf16(const float *from, uint16_t *to,
                                        int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &from[i], 4);
    // NaNs stay NaNs (quieted); others round to nearest, ties to even.
    bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    to[i] = nan ? uint16_t((bits >> 16) | 0x40u) : uint16_t(rounded >> 16);
  }
}

DISTOPT_VECTOR_CLONES void widenF16(const uint16_t *from, float *to,
                                    int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    _Float16 half;
    std::memcpy(&half, &from[i], 2);
    to[i] = float(half);
  }
}

DISTOPT_VECTOR_CLONES void narrowToF16(const float *from, uint16_t *to,
                                       int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    _Float16 half = _Float16(from[i]);
    std::memcpy(&to[i], &half, 2);
  }
}

void widen(Half half, const uint16_t *from, float *to, int64_t count) {
  half == Half::bf16 ? widenBf16(from, to, count) : widenF16(from, to, count);
}

void narrow(Half half, const float *from, uint16_t *to, int64_t count) {
  half == Half::bf16 ? narrowToBf16(from, to, count)
                     : narrowToF16(from, to, count);
}

/// The elements a matrix operand spans: from its first element to its last
/// (padding between rows and batches included), `batches` of `rows` rows
/// of `cols`.
int64_t getSpan(const Matrix<uint16_t> &matrix, int64_t batches, int64_t rows,
                int64_t cols) {
  if (batches == 0 || rows == 0 || cols == 0)
    return 0;
  return (batches - 1) * matrix.batchStride + (rows - 1) * matrix.ld + cols;
}

/// `matrix` (its span) widened to f32, with its layout.
Matrix<float> widenMatrix(Half half, const Matrix<uint16_t> &matrix,
                          int64_t span, std::unique_ptr<float[]> &storage) {
  // Uninitialized (every element is written below).
  storage.reset(new float[span]);
  // 64 Ki-element pieces over the team when there is much.
  constexpr int64_t piece = 1 << 16;
  int64_t pieces = (span + piece - 1) / piece;
  bool team = distopt::cpu::teamIsFree() && pieces >= 4;
#pragma omp parallel for schedule(static) if (team)
  for (int64_t i = 0; i < pieces; ++i)
    widen(half, matrix.data + i * piece, storage.get() + i * piece,
          std::min(piece, span - i * piece));
  return {storage.get(), matrix.ld, matrix.batchStride};
}

/// C = op(A) x op(B) for 16-bit A, B and C, accumulated in f32 and rounded
/// to C's type once: oneDNN's bf16 product where the CPU has one, else the
/// f32 product of the (exactly) widened operands.
void multiplyHalf(Half half, Matrix<uint16_t> av, Matrix<uint16_t> bv,
                  Matrix<uint16_t> cv, int64_t batch, int64_t m, int64_t n,
                  int64_t k, bool transA, bool transB, bool batchedA,
                  bool batchedB) {
  if (batch == 0 || m == 0 || n == 0)
    return;
  foldBatchIntoRows(av, cv, batch, m, transA, batchedA, batchedB);
  // Rows [m0, m1) of C[i] from f32 rows `from` (n1 - n0 wide).
  auto store = [&](int64_t i, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                   const float *from, int64_t ld) {
    for (int64_t row = m0; row < m1; ++row)
      narrow(half, from + (row - m0) * ld,
             cv.data + i * cv.batchStride + row * cv.ld + n0, n1 - n0);
  };
  if (distopt::cpu::Bf16GemmFunction gemm =
          half == Half::bf16 ? distopt::cpu::getBf16Gemm() : nullptr) {
    // Outside a parallel region oneDNN would start the team itself: the
    // calls below run on the thread that makes them (splitProduct chose).
    bool serial = !omp_in_parallel();
    int threads = omp_get_max_threads();
    if (serial)
      omp_set_num_threads(1);
    bool failed = false;
    splitProduct(
        batch, m, n, k,
        [&](int64_t b0, int64_t b1, int64_t m0, int64_t m1, int64_t n0,
            int64_t n1) {
          if (m0 >= m1 || n0 >= n1)
            return;
          // The f32 product goes through a scratch block before
          // its rounding to bf16. When the product is short (k
          // below the width: many outputs per multiply-add) the
          // block stays in the core's L2 (256 KiB), in row blocks
          // of a multiple of 16 rows (AMX's tile height); else one
          // call, which packs B once.
          int64_t width = n1 - n0;
          int64_t rows = m1 - m0;
          if (k < width)
            rows = std::max<int64_t>(16, (int64_t(1) << 16) / width / 16 * 16);
          rows = std::min(rows, m1 - m0);
          thread_local std::vector<float> scratch;
          scratch.resize(rows * width);
          int64_t bOffset = transB ? n0 * bv.ld : n0;
          for (int64_t i = b0; i < b1; ++i) {
            for (int64_t r0 = m0; r0 < m1; r0 += rows) {
              int64_t r1 = std::min(m1, r0 + rows);
              int64_t aOffset = transA ? r0 : r0 * av.ld;
              int status =
                  gemm(transA ? 'T' : 'N', transB ? 'T' : 'N', r1 - r0, width,
                       k, 1.0f, av.data + i * av.batchStride + aOffset, av.ld,
                       bv.data + i * bv.batchStride + bOffset, bv.ld, 0.0f,
                       scratch.data(), width);
              if (status != 0) {
#pragma omp atomic write
                failed = true;
                return;
              }
              store(i, r0, r1, n0, n1, scratch.data(), width);
            }
          }
        });
    if (serial)
      omp_set_num_threads(threads);
    if (failed) {
      fprintf(stderr,
              "libdistopt_cpu: oneDNN's dnnl_gemm_bf16bf16f32 failed on a "
              "%ld x %ld x %ld bf16 product (batch %ld)\n",
              long(m), long(n), long(k), long(batch));
      exit(1);
    }
    return;
  }
  std::unique_ptr<float[]> aStorage, bStorage, cStorage;
  int64_t aSpan =
              getSpan(av, batchedA ? batch : 1, transA ? k : m, transA ? m : k),
          bSpan =
              getSpan(bv, batchedB ? batch : 1, transB ? n : k, transB ? k : n),
          cSpan = getSpan(cv, batch, m, n);
  Matrix<float> aw = widenMatrix(half, av, aSpan, aStorage),
                bw = widenMatrix(half, bv, bSpan, bStorage);
  // Uninitialized: sgemm (beta 0) writes every element that is read back.
  cStorage.reset(new float[cSpan]);
  Matrix<float> cw = {cStorage.get(), cv.ld, cv.batchStride};
  multiplyF32(aw, bw, cw, batch, m, n, k, transA, transB);
  bool team = distopt::cpu::teamIsFree() && batch * m * n >= (1 << 18);
#pragma omp parallel for collapse(2) schedule(static) if (team)
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t row = 0; row < m; ++row)
      store(i, row, row + 1, 0, n, cw.data + i * cw.batchStride + row * cw.ld,
            cw.ld);
}

/// Checks that `table` has a product group's row width (ProductGroup.h).
void checkGroupTable(const char *name, StridedMemRefType<int64_t, 2> *table) {
  if (table->sizes[1] == DISTOPT_PRODUCT_WORDS && table->strides[1] == 1)
    return;
  std::fprintf(stderr, "%s: a table of %lld words per product, not %d\n", name,
               static_cast<long long>(table->sizes[1]), DISTOPT_PRODUCT_WORDS);
  std::abort();
}

/// The 16-bit products of a group's table, one after another, each as
/// distopt_matmul_bf16 (_f16) runs it.
void multiplyHalfGroup(Half half, const char *name,
                       StridedMemRefType<int64_t, 2> *table) {
  checkGroupTable(name, table);
  for (int64_t i = 0; i < table->sizes[0]; ++i) {
    const int64_t *row = table->data + table->offset + i * table->strides[0];
    bool batchedA = row[DISTOPT_PRODUCT_BATCHED_A],
         batchedB = row[DISTOPT_PRODUCT_BATCHED_B];
    multiplyHalf(half, getMatrix<uint16_t>(row, 0, batchedA),
                 getMatrix<uint16_t>(row, 1, batchedB),
                 getMatrix<uint16_t>(row, 2, /*batched=*/true),
                 row[DISTOPT_PRODUCT_BATCH], row[DISTOPT_PRODUCT_M],
                 row[DISTOPT_PRODUCT_N], row[DISTOPT_PRODUCT_K],
                 row[DISTOPT_PRODUCT_TRANS_A], row[DISTOPT_PRODUCT_TRANS_B],
                 batchedA, batchedB);
  }
}
} // namespace

extern "C" {

/// C[b] = op(A[b]) x op(B[b]) for b < batch, with C [batch, m, n]; A is
/// [m, k] ([k, m] when transA) per batch, or one matrix for every batch
/// when !batchedA; likewise B ([k, n], [n, k] when transB). Rows may be
/// padded and batches apart (the strides of the buffers; dist-matmul-to-blas
/// checks that the batch dims flatten into one stride); the last dim is
/// contiguous. Split over the team as splitProduct says.
void _mlir_ciface_distopt_matmul_f32(UnrankedMemRefType<float> *a,
                                     UnrankedMemRefType<float> *b,
                                     UnrankedMemRefType<float> *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transA, int32_t transB,
                                     int32_t batchedA, int32_t batchedB) {
  Matrix<float> av = getMatrix(a, batchedA),
                cv = getMatrix(c, /*batched=*/true);
  foldBatchIntoRows(av, cv, batch, m, transA, batchedA, batchedB);
  multiplyF32(av, getMatrix(b, batchedB), cv, batch, m, n, k, transA, transB);
}

/// D = op(A) x op(B) + bias, bias [n] added to every row, plus R when
/// `flags & 1` (a residual); with `flags & 2`, P = that sum and D =
/// GELU(P), tanh approximation: the product with its epilogue, as
/// dist-matmul-epilogues folds a linear layer's additions into one call
/// (libdistopt_cuda runs it as one cuBLASLt product with a bias or
/// GELU_AUX_BIAS epilogue; this is its check on the CPU, --gpu-mapped).
/// One matrix each (batch 1); R and P, when unused, are D.
void _mlir_ciface_distopt_matmul_epilogue_f32(
    UnrankedMemRefType<float> *a, UnrankedMemRefType<float> *b,
    UnrankedMemRefType<float> *d, UnrankedMemRefType<float> *bias,
    UnrankedMemRefType<float> *residual, UnrankedMemRefType<float> *pre,
    int64_t m, int64_t n, int64_t k, int32_t transA, int32_t transB,
    int32_t flags) {
  bool addResidual = flags & 1, gelu = flags & 2;
  Matrix<float> dv = getMatrix(d, /*batched=*/false),
                rv = getMatrix(residual, /*batched=*/false),
                pv = getMatrix(pre, /*batched=*/false);
  Matrix<float> sum = gelu ? pv : dv;
  multiplyF32(getMatrix(a, false), getMatrix(b, false), sum, 1, m, n, k, transA,
              transB);
  DynamicMemRefType<float> biasView(*bias);
  const float *biasData = biasView.data + biasView.offset;
  const float scale = 0.7978845608028654f, cubic = 0.044715f;
  for (int64_t i = 0; i < m; ++i) {
    float *row = sum.data + i * sum.ld;
    const float *res = rv.data + i * rv.ld;
    float *out = dv.data + i * dv.ld;
    for (int64_t j = 0; j < n; ++j) {
      float x = row[j] + biasData[j];
      if (addResidual)
        x += res[j];
      row[j] = x;
      if (gelu)
        out[j] = 0.5f * x * (1.0f + std::tanh(scale * (x + cubic * x * x * x)));
    }
  }
}

/// The products of a group's table (ProductGroup.h: a row per product, as
/// distopt_matmul_f32 takes it), one after another, each split over the
/// team as that call splits it.
void _mlir_ciface_distopt_matmul_group_f32(
    StridedMemRefType<int64_t, 2> *table) {
  checkGroupTable("distopt_matmul_group_f32", table);
  for (int64_t i = 0; i < table->sizes[0]; ++i) {
    const int64_t *row = table->data + table->offset + i * table->strides[0];
    int64_t batch = row[DISTOPT_PRODUCT_BATCH], m = row[DISTOPT_PRODUCT_M];
    bool transA = row[DISTOPT_PRODUCT_TRANS_A],
         transB = row[DISTOPT_PRODUCT_TRANS_B],
         batchedA = row[DISTOPT_PRODUCT_BATCHED_A],
         batchedB = row[DISTOPT_PRODUCT_BATCHED_B];
    Matrix<float> av = getMatrix<float>(row, 0, batchedA),
                  cv = getMatrix<float>(row, 2, /*batched=*/true);
    foldBatchIntoRows(av, cv, batch, m, transA, batchedA, batchedB);
    multiplyF32(av, getMatrix<float>(row, 1, batchedB), cv, batch, m,
                row[DISTOPT_PRODUCT_N], row[DISTOPT_PRODUCT_K], transA, transB);
  }
}

/// distopt_matmul_f32 on bf16 buffers (their bits): the products
/// accumulate in f32 and each element of C is rounded to bf16 once
/// (oneDNN where the CPU multiplies bf16, else f32 sgemm of the widened
/// operands; distopt_cpu_sixteen_bit_info says which).
void _mlir_ciface_distopt_matmul_bf16(UnrankedMemRefType<uint16_t> *a,
                                      UnrankedMemRefType<uint16_t> *b,
                                      UnrankedMemRefType<uint16_t> *c,
                                      int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int32_t transA, int32_t transB,
                                      int32_t batchedA, int32_t batchedB) {
  multiplyHalf(Half::bf16, getMatrix(a, batchedA), getMatrix(b, batchedB),
               getMatrix(c, /*batched=*/true), batch, m, n, k, transA, transB,
               batchedA, batchedB);
}

/// distopt_matmul_bf16 for f16: f32 sgemm of the widened operands (neither
/// OpenBLAS 0.3.21 nor oneDNN 2.6 has an f16 product for CPUs), C rounded
/// to f16 once.
void _mlir_ciface_distopt_matmul_f16(UnrankedMemRefType<uint16_t> *a,
                                     UnrankedMemRefType<uint16_t> *b,
                                     UnrankedMemRefType<uint16_t> *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transA, int32_t transB,
                                     int32_t batchedA, int32_t batchedB) {
  multiplyHalf(Half::f16, getMatrix(a, batchedA), getMatrix(b, batchedB),
               getMatrix(c, /*batched=*/true), batch, m, n, k, transA, transB,
               batchedA, batchedB);
}

/// distopt_matmul_group_f32 for bf16 products (a row per product, as
/// distopt_matmul_bf16 takes it), one after another.
void _mlir_ciface_distopt_matmul_group_bf16(
    StridedMemRefType<int64_t, 2> *table) {
  multiplyHalfGroup(Half::bf16, "distopt_matmul_group_bf16", table);
}

/// distopt_matmul_group_f32 for f16 products.
void _mlir_ciface_distopt_matmul_group_f16(
    StridedMemRefType<int64_t, 2> *table) {
  multiplyHalfGroup(Half::f16, "distopt_matmul_group_f16", table);
}

const char *distopt_cpu_sixteen_bit_info() {
  static const std::string info = distopt::cpu::getSixteenBitProductInfo();
  return info.c_str();
}

void distopt_copy(void *to, const void *from, size_t bytes) {
  // 1 MiB pieces, split over the team from 8 MiB (the runner copying a
  // ResNet-18 step's 94 MB of updated state: 13 ms on one thread).
  constexpr size_t piece = size_t(1) << 20;
  size_t pieces = (bytes + piece - 1) / piece;
  bool team = distopt::cpu::teamIsFree() && pieces >= 8;
#pragma omp parallel for schedule(static) if (team)
  for (size_t i = 0; i < pieces; ++i)
    std::memcpy(static_cast<char *>(to) + i * piece,
                static_cast<const char *>(from) + i * piece,
                std::min(piece, bytes - i * piece));
}

/// The workspace of the function `key` names, of at least `bytes` bytes
/// (dist-plan-workspace; the host-memory counterpart of libdistopt_cuda's):
/// allocated by the function's first call, 256-byte aligned, answered again
/// by every later one; a call asking for more replaces it by a larger one
/// (the last call of the function has returned: nothing still uses it). A
/// failed allocation ends the process with the request's size, as the
/// allocations of the compiled code itself do. The descriptor's allocated
/// pointer is null: a result in the workspace (a step's loss) is not the
/// caller's to free.
void _mlir_ciface_distopt_workspace(StridedMemRefType<int8_t, 1> *result,
                                    int64_t key, int64_t bytes) {
  struct Workspace {
    std::unique_ptr<int8_t, decltype(&std::free)> data{nullptr, &std::free};
    int64_t size = 0;
  };
  static std::mutex mutex;
  static std::map<int64_t, Workspace> workspaces;
  std::lock_guard<std::mutex> lock(mutex);
  Workspace &workspace = workspaces[key];
  if (workspace.size < bytes) {
    constexpr int64_t kAlignment = 256;
    int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    workspace.data.reset(
        static_cast<int8_t *>(std::aligned_alloc(kAlignment, rounded)));
    if (!workspace.data) {
      std::fprintf(stderr,
                   "distopt_workspace: cannot allocate %lld bytes of "
                   "workspace\n",
                   static_cast<long long>(bytes));
      std::abort();
    }
    workspace.size = bytes;
  }
  *result = {nullptr, workspace.data.get(), 0, {bytes}, {1}};
}

} // extern "C"
