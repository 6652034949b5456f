//===- CpuKernels.cpp - library kernels that compiled CPU steps call ------===//
//
// `dist-matmul-to-blas` replaces contractions by calls of these entry points
// (memref C interface): OpenBLAS's sgemm on row-major buffers, one call per
// batch.
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cblas.h>

#include <cstdint>

namespace {
/// A matrix operand as sgemm takes it: its first element, the distance
/// between its rows (a row of a one-row matrix is as long as it needs to
/// be) and, when it has a batch dim, between batches.
struct Matrix {
  float *data;
  int64_t ld, batchStride;
};

Matrix getMatrix(UnrankedMemRefType<float> *memref, bool batched) {
  DynamicMemRefType<float> view(*memref);
  int64_t rank = view.rank;
  int64_t ld = view.strides[rank - 2];
  if (view.sizes[rank - 2] == 1 && ld < view.sizes[rank - 1])
    ld = view.sizes[rank - 1];
  return {view.data + view.offset, ld,
          batched && rank > 2 ? view.strides[rank - 3] : 0};
}
} // namespace

extern "C" {

/// C[b] = op(A[b]) x op(B[b]) for b < batch, with C [batch, m, n]; A is
/// [m, k] ([k, m] when transA) per batch, or one matrix for every batch
/// when !batchedA; likewise B ([k, n], [n, k] when transB). Rows may be
/// padded and batches apart (the strides of the buffers; dist-matmul-to-blas
/// checks that the batch dims flatten into one stride); the last dim is
/// contiguous.
void _mlir_ciface_distopt_matmul_f32(UnrankedMemRefType<float> *a,
                                     UnrankedMemRefType<float> *b,
                                     UnrankedMemRefType<float> *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transA, int32_t transB,
                                     int32_t batchedA, int32_t batchedB) {
  Matrix av = getMatrix(a, batchedA), bv = getMatrix(b, batchedB),
         cv = getMatrix(c, /*batched=*/true);
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                av.data + i * av.batchStride, av.ld,
                bv.data + i * bv.batchStride, bv.ld, 0.0f,
                cv.data + i * cv.batchStride, cv.ld);
}

} // extern "C"
