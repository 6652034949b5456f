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
// descriptor, or from a row of a product group's table (16-bit elements as
// their bits: uint16_t).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H
#define DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H

#include "distopt/Runtime/ProductGroup.h"
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

/// The matrix of a view of rank >= 2 with `rows` x `columns` matrices,
/// `rowStride` apart (elements) and, when batched and of rank 3 or more,
/// `batchStride` between batches.
template <typename T>
Matrix<T> getMatrix(T *first, int64_t rows, int64_t columns, int64_t rowStride,
                    int64_t batchStride, bool batched) {
  int64_t ld = rowStride;
  if (rows == 1 && ld < columns)
    ld = columns;
  return {first, ld, batched ? batchStride : 0};
}

template <typename T>
Matrix<T> getMatrix(UnrankedMemRefType<T> *memref, bool batched) {
  DynamicMemRefType<T> view(*memref);
  int64_t rank = view.rank;
  return getMatrix(view.data + view.offset, view.sizes[rank - 2],
                   view.sizes[rank - 1], view.strides[rank - 2],
                   rank > 2 ? view.strides[rank - 3] : 0, batched);
}

/// Operand `operand` (0: A, 1: B, 2: C) of a row of a product group's
/// table (ProductGroup.h).
template <typename T>
Matrix<T> getMatrix(const int64_t *row, int operand, bool batched) {
  const int64_t *words =
      row + DISTOPT_PRODUCT_OPERANDS + operand * DISTOPT_PRODUCT_OPERAND_WORDS;
  return getMatrix(reinterpret_cast<T *>(
                       static_cast<uintptr_t>(words[DISTOPT_PRODUCT_ADDRESS])),
                   words[DISTOPT_PRODUCT_ROWS], words[DISTOPT_PRODUCT_COLUMNS],
                   words[DISTOPT_PRODUCT_ROW_STRIDE],
                   words[DISTOPT_PRODUCT_BATCH_STRIDE], batched);
}
} // namespace distopt

#endif // DISTOPT_LIB_RUNTIME_MATRIXOPERAND_H
