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
// for.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CpuKernels.h"
#include "CpuBlas.h"
#include "CpuTeam.h"
#include "MatrixOperand.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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

extern "C" {

/// C[b] = op(A[b]) x op(B[b]) for b < batch, with C [batch, m, n]; A is
/// [m, k] ([k, m] when transA) per batch, or one matrix for every batch
/// when !batchedA; likewise B ([k, n], [n, k] when transB). Rows may be
/// padded and batches apart (the strides of the buffers; dist-matmul-to-blas
/// checks that the batch dims flatten into one stride); the last dim is
/// contiguous.
///
/// On a team of T threads: when the batches split evenly enough (at least
/// 2T of them, or a multiple of T), each thread takes whole batches;
/// otherwise each product is cut into T blocks of rows of C (of columns
/// when C is wider than tall).
void _mlir_ciface_distopt_matmul_f32(UnrankedMemRefType<float> *a,
                                     UnrankedMemRefType<float> *b,
                                     UnrankedMemRefType<float> *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transA, int32_t transB,
                                     int32_t batchedA, int32_t batchedB) {
  Matrix av = getMatrix(a, batchedA), bv = getMatrix(b, batchedB),
         cv = getMatrix(c, /*batched=*/true);
  // Rows [m0, m1) and columns [n0, n1) of C for batches [b0, b1).
  auto multiply = [&](int64_t b0, int64_t b1, int64_t m0, int64_t m1,
                      int64_t n0, int64_t n1) {
    if (m0 >= m1 || n0 >= n1)
      return;
    // Row i of op(A) starts at i * ld (at column i when transposed).
    int64_t aOffset = transA ? m0 : m0 * av.ld;
    int64_t bOffset = transB ? n0 * bv.ld : n0;
    for (int64_t i = b0; i < b1; ++i)
      distopt::cpu::sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                          transB ? CblasTrans : CblasNoTrans, m1 - m0, n1 - n0,
                          k, 1.0f, av.data + i * av.batchStride + aOffset,
                          av.ld, bv.data + i * bv.batchStride + bOffset, bv.ld,
                          0.0f, cv.data + i * cv.batchStride + m0 * cv.ld + n0,
                          cv.ld);
  };
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

} // extern "C"
