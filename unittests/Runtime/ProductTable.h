//===- ProductTable.h - product groups' tables for the runtime tests -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The products of distopt_matmul_group_f32's tests (ProductGroupTest on the
// CPU, CudaRuntimeTest on a device): every transpose and batching form, odd
// shapes, padded rows; their operands on the host, a table row for each
// (ProductGroup.h) and the product in double to compare with.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_UNITTESTS_RUNTIME_PRODUCTTABLE_H
#define DISTOPT_UNITTESTS_RUNTIME_PRODUCTTABLE_H

#include "distopt/Runtime/ProductGroup.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace distopt::test {
/// One product C[p] = op(A[p]) x op(B[p]) of a group: its form, shape and
/// host operands, each matrix's rows `pad` elements longer than they are
/// wide (a strided view of a wider buffer), batches one after another.
struct GroupProduct {
  int64_t batch, m, n, k, pad;
  bool transA, transB, batchedA, batchedB;
  std::vector<float> a, b, c;

  int64_t rowsA() const { return transA ? k : m; }
  int64_t colsA() const { return transA ? m : k; }
  int64_t rowsB() const { return transB ? n : k; }
  int64_t colsB() const { return transB ? k : n; }
  int64_t ldA() const { return colsA() + pad; }
  int64_t ldB() const { return colsB() + pad; }
  int64_t ldC() const { return n + pad; }

  GroupProduct(int form, int64_t batch, int64_t m, int64_t n, int64_t k,
               int64_t pad, std::mt19937 &random)
      : batch(batch), m(m), n(n), k(k), pad(pad), transA(form & 1),
        transB(form & 2), batchedA(form & 4), batchedB(form & 8) {
    std::uniform_real_distribution<float> uniform(-1, 1);
    a.resize((batchedA ? batch : 1) * rowsA() * ldA());
    b.resize((batchedB ? batch : 1) * rowsB() * ldB());
    c.assign(batch * m * ldC(), -7);
    for (float &v : a)
      v = uniform(random);
    for (float &v : b)
      v = uniform(random);
  }

  /// Its table row, with A, B and C at `da`, `db` and `dc` (host or device
  /// copies of a, b and c).
  std::array<int64_t, DISTOPT_PRODUCT_WORDS>
  getRow(const float *da, const float *db, const float *dc) const {
    std::array<int64_t, DISTOPT_PRODUCT_WORDS> row{};
    row[DISTOPT_PRODUCT_BATCH] = batch;
    row[DISTOPT_PRODUCT_M] = m;
    row[DISTOPT_PRODUCT_N] = n;
    row[DISTOPT_PRODUCT_K] = k;
    row[DISTOPT_PRODUCT_TRANS_A] = transA;
    row[DISTOPT_PRODUCT_TRANS_B] = transB;
    row[DISTOPT_PRODUCT_BATCHED_A] = batchedA;
    row[DISTOPT_PRODUCT_BATCHED_B] = batchedB;
    auto set = [&](int operand, const float *data, int64_t rows, int64_t cols,
                   int64_t ld, bool batched) {
      int64_t *words = row.data() + DISTOPT_PRODUCT_OPERANDS +
                       operand * DISTOPT_PRODUCT_OPERAND_WORDS;
      words[DISTOPT_PRODUCT_ADDRESS] = reinterpret_cast<intptr_t>(data);
      words[DISTOPT_PRODUCT_ROWS] = rows;
      words[DISTOPT_PRODUCT_COLUMNS] = cols;
      words[DISTOPT_PRODUCT_ROW_STRIDE] = ld;
      words[DISTOPT_PRODUCT_BATCH_STRIDE] = batched ? rows * ld : 0;
    };
    set(0, da, rowsA(), colsA(), ldA(), batchedA);
    set(1, db, rowsB(), colsB(), ldB(), batchedB);
    set(2, dc, m, n, ldC(), true);
    return row;
  }

  /// C[p][i][j] in double, and the sum of the terms' magnitudes (for the
  /// tolerance).
  std::pair<double, double> expected(int64_t p, int64_t i, int64_t j) const {
    double sum = 0, scale = 0;
    for (int64_t l = 0; l < k; ++l) {
      float x = a[(batchedA ? p * rowsA() * ldA() : 0) +
                  (transA ? l * ldA() + i : i * ldA() + l)];
      float y = b[(batchedB ? p * rowsB() * ldB() : 0) +
                  (transB ? j * ldB() + l : l * ldB() + j)];
      sum += double(x) * y;
      scale += std::fabs(double(x) * y);
    }
    return {sum, scale};
  }

  /// Whether `got` (C as floats) is the product in double within
  /// `relative` of each element (C's rounding) plus 1e-5 of its terms'
  /// magnitudes and 1e-6, with C's padding still -7.
  ::testing::AssertionResult check(const std::vector<float> &got,
                                   double relative) const {
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldC(); ++j) {
          float value = got[(p * m + i) * ldC() + j];
          if (j >= n) {
            if (value != -7)
              return ::testing::AssertionFailure()
                     << "padding at " << p << ", " << i << ", " << j << ": "
                     << value;
            continue;
          }
          auto [sum, scale] = expected(p, i, j);
          if (std::fabs(value - sum) >
              relative * std::fabs(sum) + 1e-5 * scale + 1e-6)
            return ::testing::AssertionFailure()
                   << "form "
                   << (transA + 2 * transB + 4 * batchedA + 8 * batchedB)
                   << " at " << p << ", " << i << ", " << j << ": " << value
                   << ", not " << sum;
        }
    return ::testing::AssertionSuccess();
  }
};

/// A rank-3 strided view [batches, rows, cols] of `data`, rows `ld` apart
/// (`cols` when contiguous), as the products take it (`T`: float, or
/// uint16_t for the bits of bf16 and f16).
template <typename T> struct View {
  View(T *data, int64_t batches, int64_t rows, int64_t cols, int64_t ld) {
    view.basePtr = view.data = data;
    view.offset = 0;
    view.sizes[0] = batches;
    view.sizes[1] = rows;
    view.sizes[2] = cols;
    view.strides[0] = rows * ld;
    view.strides[1] = ld;
    view.strides[2] = 1;
    unranked.rank = 3;
    unranked.descriptor = &view;
  }
  StridedMemRefType<T, 3> view;
  UnrankedMemRefType<T> unranked;
};

/// A product group's table: rows of `width` words, as
/// distopt_matmul_group_f32 takes it (`get`).
struct GroupTable {
  explicit GroupTable(int64_t width = DISTOPT_PRODUCT_WORDS) : width(width) {}
  void add(const std::array<int64_t, DISTOPT_PRODUCT_WORDS> &row) {
    words.insert(words.end(), row.begin(), row.end());
  }
  void addZeros() { words.resize(words.size() + width); }
  StridedMemRefType<int64_t, 2> *get() {
    memref.basePtr = memref.data = words.data();
    memref.offset = 0;
    memref.sizes[0] = words.size() / width;
    memref.sizes[1] = width;
    memref.strides[0] = width;
    memref.strides[1] = 1;
    return &memref;
  }
  int64_t width;
  std::vector<int64_t> words;
  StridedMemRefType<int64_t, 2> memref;
};

/// A group of every form (transposes, batching), odd shapes, some rows
/// padded.
inline std::vector<GroupProduct> getGroupProducts(std::mt19937 &random) {
  std::vector<GroupProduct> products;
  for (int form = 0; form < 16; ++form)
    products.emplace_back(form, 1 + form % 3, 5 + form, 17 - form / 2,
                          9 + 2 * form, form % 2 ? 3 : 0, random);
  return products;
}
} // namespace distopt::test

#endif // DISTOPT_UNITTESTS_RUNTIME_PRODUCTTABLE_H
