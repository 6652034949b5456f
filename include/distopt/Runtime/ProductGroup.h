//===- ProductGroup.h - the table of a group of products --------*- C -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `distopt_matmul_group_f32(table)` runs independent products in one
// library call (one cuBLAS grouped product on the device, the products one
// after another on the CPU). dist-map-to-gpu writes the table, a host
// buffer of `DISTOPT_PRODUCT_WORDS` int64 words per product; the words of a
// row are `distopt_matmul_f32`'s scalars, then each operand's view.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNTIME_PRODUCTGROUP_H
#define DISTOPT_RUNTIME_PRODUCTGROUP_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  /// distopt_matmul_f32's scalars, in its order: batch, m, n, k, transA,
  /// transB, batchedA, batchedB.
  DISTOPT_PRODUCT_BATCH = 0,
  DISTOPT_PRODUCT_M = 1,
  DISTOPT_PRODUCT_N = 2,
  DISTOPT_PRODUCT_K = 3,
  DISTOPT_PRODUCT_TRANS_A = 4,
  DISTOPT_PRODUCT_TRANS_B = 5,
  DISTOPT_PRODUCT_BATCHED_A = 6,
  DISTOPT_PRODUCT_BATCHED_B = 7,
  /// The first word of operand A; B and C follow. An operand of rank r is
  /// the address of its first element (its aligned pointer plus its offset,
  /// in bytes), its sizes r-2 and r-1, its strides r-2 and r-3 (0 at rank 2),
  /// in elements.
  DISTOPT_PRODUCT_OPERANDS = 8,
  DISTOPT_PRODUCT_OPERAND_WORDS = 5,
  DISTOPT_PRODUCT_ADDRESS = 0,
  DISTOPT_PRODUCT_ROWS = 1,
  DISTOPT_PRODUCT_COLUMNS = 2,
  DISTOPT_PRODUCT_ROW_STRIDE = 3,
  DISTOPT_PRODUCT_BATCH_STRIDE = 4,
  /// The words of a row.
  DISTOPT_PRODUCT_WORDS = 8 + 3 * 5
};

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DISTOPT_RUNTIME_PRODUCTGROUP_H
