//===- MatrixOperand.h - a product's operand from a memref ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What the CPU (OpenBLAS, oneDNN) and CUDA (cuBLAS) products of
// `distopt_matmul_f32` / `_bf16` / `_f16` read from an operand's memref
// descriptor (16-bit elements as their bits: uint16_t).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H
#define DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstdint>

namespace distopt {
/// A matrix operand as sgemm takes it: its first element, the distance
/// between its rows (a row of a one-row matrix is as long as it needs to
/// be) and, when it has a batch dim, between batches.
template <typename T = float> struct Matrix {
  T *data;
  int64_t ld, batchStride;
};

template <typename T>
Matrix<T> getMatrix(UnrankedMemRefType<T> *memref, bool batched) {
  DynamicMemRefType<T> view(*memref);
  int64_t rank = view.rank;
  int64_t ld = view.strides[rank - 2];
  if (view.sizes[rank - 2] == 1 && ld < view.sizes[rank - 1])
    ld = view.sizes[rank - 1];
  return {view.data + view.offset, ld,
          batched && rank > 2 ? view.strides[rank - 3] : 0};
}
} // namespace distopt

#endif // DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H
