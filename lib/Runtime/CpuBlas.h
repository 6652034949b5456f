//===- CpuBlas.h - OpenBLAS with a core for the CPU's ISA -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// libdistopt_cpu does not link OpenBLAS: it loads it (dlopen) when the
// library itself is loaded, having set OPENBLAS_CORETYPE from the CPU's
// features (cpuid, never its model number) unless the user set it. A
// DYNAMIC_ARCH OpenBLAS chooses its kernels once, in its constructor, by
// family and model: Debian's 0.3.21 does not know newer CPUs (family 6
// model 207, AVX-512 with bf16) and ran its generic Prescott kernels there,
// ~4x slower than SkylakeX's.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_CPUBLAS_H
#define DISTOPT_LIB_RUNTIME_CPUBLAS_H

#include <cblas.h>

#include <cstdint>
#include <string>

namespace distopt::cpu {

using SgemmFunction = decltype(&cblas_sgemm);

/// OpenBLAS's cblas_sgemm (the library loaded by libdistopt_cpu); exits with
/// one line on stderr where OpenBLAS could not be loaded.
SgemmFunction getSgemm();

/// cblas_sgemm through the loaded OpenBLAS.
inline void sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE transA,
                  CBLAS_TRANSPOSE transB, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc) {
  static const SgemmFunction function = getSgemm();
  function(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// oneDNN's dnnl_gemm_bf16bf16f32 (exported by libdnnl.so.2, not declared
/// in its headers): row-major C (f32) = alpha op(A) x op(B) + beta C with
/// bf16 A and B (their bits), accumulated in f32. 0 on success.
using Bf16GemmFunction = int (*)(char transA, char transB, int64_t m, int64_t n,
                                 int64_t k, float alpha, const uint16_t *a,
                                 int64_t lda, const uint16_t *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc);

/// The bf16 product with f32 accumulation where the CPU multiplies bf16
/// itself (cpuid: avx512_bf16 or amx_bf16) and oneDNN loads (libdnnl.so.2,
/// loaded on first use); null otherwise, or where DISTOPT_CPU_BF16_PRODUCTS
/// is "f32": the caller then converts the operands to f32 (exact) and runs
/// sgemm. Any other value of that variable exits with a message.
Bf16GemmFunction getBf16Gemm();

/// What runs the bf16 and f16 products, one line: "bf16: onednn 2.6.3
/// (avx512_bf16); f16: f32 sgemm of the converted operands" (with the
/// reason where bf16 falls back too).
std::string getSixteenBitProductInfo();

/// What runs the convolutions' products (ConvKernels.cpp): "libxsmm <arch>"
/// or "openblas (libxsmm has no JIT for '<arch>')".
std::string getConvolutionKernelInfo();

} // namespace distopt::cpu

#endif // DISTOPT_LIB_RUNTIME_CPUBLAS_H
