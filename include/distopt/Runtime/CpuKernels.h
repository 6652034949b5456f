//===- CpuKernels.h - libdistopt_cpu's functions for the runner -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The library kernels of compiled CPU steps (lib/Runtime/CpuKernels.cpp,
// ConvKernels.cpp) are called through the memref C interface by the JIT'd
// code; this header declares what the runner calls directly, on the same
// OpenMP team as the steps' loops and kernels.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNTIME_CPUKERNELS_H
#define DISTOPT_RUNTIME_CPUKERNELS_H

#include <cstddef>

extern "C" {

/// memcpy(to, from, bytes) split over the step's OpenMP team when large (8
/// MiB or more) and no parallel region encloses the call; the ranges must
/// not overlap.
void distopt_copy(void *to, const void *from, size_t bytes);

/// The kernels behind the steps' products and convolutions, one line:
/// "products: openblas 0.3.21 core SkylakeX (chosen by the CPU's features);
/// convolutions: libxsmm cpx" (", below the CPU's ..." where the products'
/// kernels use less than the CPU offers).
const char *distopt_cpu_kernel_info(void);

/// The kernels behind the steps' 16-bit products, one line: "bf16: onednn
/// 2.6.3 (avx512_bf16); f16: f32 sgemm of the converted operands" (bf16
/// falls back to the f32 product too, with the reason, where the CPU lacks
/// bf16 products or oneDNN does not load).
const char *distopt_cpu_sixteen_bit_info(void);

} // extern "C"

#endif // DISTOPT_RUNTIME_CPUKERNELS_H
