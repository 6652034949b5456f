//===- CpuKernels.cpp - library kernels that compiled CPU steps call ------===//
//
// `dist-matmul-to-blas` replaces contractions by calls of these entry points
// (memref C interface): OpenBLAS's sgemm on contiguous row-major buffers,
// one call per batch.
//
//===----------------------------------------------------------------------===//

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cblas.h>

#include <cstdint>

extern "C" {

/// C[b] = op(A[b]) x op(B[b]) for b < batch, with C [batch, m, n]; A is
/// [m, k] ([k, m] when transA) per batch, or one matrix for every batch
/// when !batchedA; likewise B ([k, n], [n, k] when transB).
void _mlir_ciface_distopt_matmul_f32(UnrankedMemRefType<float> *a,
                                     UnrankedMemRefType<float> *b,
                                     UnrankedMemRefType<float> *c,
                                     int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int32_t transA, int32_t transB,
                                     int32_t batchedA, int32_t batchedB) {
  DynamicMemRefType<float> av(*a), bv(*b), cv(*c);
  const float *aData = av.data + av.offset;
  const float *bData = bv.data + bv.offset;
  float *cData = cv.data + cv.offset;
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                aData + (batchedA ? i * m * k : 0), transA ? m : k,
                bData + (batchedB ? i * k * n : 0), transB ? k : n, 0.0f,
                cData + i * m * n, n);
}

} // extern "C"
