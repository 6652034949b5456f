//===- ProductGroupTest.cpp - libdistopt_cpu's grouped products ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// distopt_matmul_group_f32 (lib/Runtime/CpuKernels.cpp), the products of a
// level of a GPU-mapped step in one call: a group of every transpose and
// batching form with padded rows against the product in double, and
// against the same products one distopt_matmul_f32 call each (bitwise: the
// group runs each row as that call does); the padding of C is left alone.
//
//===----------------------------------------------------------------------===//

#include "ProductTable.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include "gtest/gtest.h"

#include <cstring>

extern "C" {
void _mlir_ciface_distopt_matmul_group_f32(StridedMemRefType<int64_t, 2> *);
void _mlir_ciface_distopt_matmul_group_bf16(StridedMemRefType<int64_t, 2> *);
void _mlir_ciface_distopt_matmul_bf16(UnrankedMemRefType<uint16_t> *,
                                      UnrankedMemRefType<uint16_t> *,
                                      UnrankedMemRefType<uint16_t> *, int64_t,
                                      int64_t, int64_t, int64_t, int32_t,
                                      int32_t, int32_t, int32_t);
void _mlir_ciface_distopt_matmul_f32(UnrankedMemRefType<float> *,
                                     UnrankedMemRefType<float> *,
                                     UnrankedMemRefType<float> *, int64_t,
                                     int64_t, int64_t, int64_t, int32_t,
                                     int32_t, int32_t, int32_t);
}

namespace {
using distopt::test::GroupProduct;

/// Runs `products` as one group on their host buffers.
void runGroup(std::vector<GroupProduct> &products) {
  distopt::test::GroupTable table;
  for (GroupProduct &p : products)
    table.add(p.getRow(p.a.data(), p.b.data(), p.c.data()));
  _mlir_ciface_distopt_matmul_group_f32(table.get());
}

TEST(ProductGroupTest, EveryFormAgainstDouble) {
  std::mt19937 random(11);
  std::vector<GroupProduct> products = distopt::test::getGroupProducts(random);
  runGroup(products);
  for (size_t q = 0; q < products.size(); ++q)
    ASSERT_TRUE(products[q].check(products[q].c, 0)) << "product " << q;
}

TEST(ProductGroupTest, SameAsOneCallEach) {
  std::mt19937 random(12);
  std::vector<GroupProduct> grouped = distopt::test::getGroupProducts(random);
  std::vector<GroupProduct> alone = grouped;
  runGroup(grouped);
  for (GroupProduct &p : alone) {
    distopt::test::View a(p.a.data(), p.batchedA ? p.batch : 1, p.rowsA(),
                          p.colsA(), p.ldA()),
        b(p.b.data(), p.batchedB ? p.batch : 1, p.rowsB(), p.colsB(), p.ldB()),
        c(p.c.data(), p.batch, p.m, p.n, p.ldC());
    _mlir_ciface_distopt_matmul_f32(&a.unranked, &b.unranked, &c.unranked,
                                    p.batch, p.m, p.n, p.k, p.transA, p.transB,
                                    p.batchedA, p.batchedB);
  }
  for (size_t i = 0; i < grouped.size(); ++i)
    ASSERT_EQ(std::memcmp(grouped[i].c.data(), alone[i].c.data(),
                          grouped[i].c.size() * sizeof(float)),
              0)
        << "product " << i;
}

/// `values` as bf16 bits (truncated: the test needs bf16 inputs, not
/// rounding).
std::vector<uint16_t> toBf16(const std::vector<float> &values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t word;
    std::memcpy(&word, &values[i], 4);
    bits[i] = uint16_t(word >> 16);
  }
  return bits;
}

TEST(ProductGroupTest, Bf16SameAsOneCallEach) {
  // distopt_matmul_group_bf16 (a mixed precision step's grouped products
  // on --gpu-mapped): every form, bitwise equal to one
  // distopt_matmul_bf16 call each; C's padding left alone.
  std::mt19937 random(13);
  std::vector<GroupProduct> products = distopt::test::getGroupProducts(random);
  struct Operands {
    std::vector<uint16_t> a, b, grouped, alone;
  };
  std::vector<Operands> operands;
  for (const GroupProduct &p : products)
    operands.push_back({toBf16(p.a), toBf16(p.b), toBf16(p.c), toBf16(p.c)});
  distopt::test::GroupTable table;
  for (size_t i = 0; i < products.size(); ++i)
    table.add(products[i].getRow(
        reinterpret_cast<const float *>(operands[i].a.data()),
        reinterpret_cast<const float *>(operands[i].b.data()),
        reinterpret_cast<const float *>(operands[i].grouped.data())));
  _mlir_ciface_distopt_matmul_group_bf16(table.get());
  for (size_t i = 0; i < products.size(); ++i) {
    const GroupProduct &p = products[i];
    Operands &o = operands[i];
    distopt::test::View a(o.a.data(), p.batchedA ? p.batch : 1, p.rowsA(),
                          p.colsA(), p.ldA()),
        b(o.b.data(), p.batchedB ? p.batch : 1, p.rowsB(), p.colsB(), p.ldB()),
        c(o.alone.data(), p.batch, p.m, p.n, p.ldC());
    _mlir_ciface_distopt_matmul_bf16(&a.unranked, &b.unranked, &c.unranked,
                                     p.batch, p.m, p.n, p.k, p.transA, p.transB,
                                     p.batchedA, p.batchedB);
    ASSERT_EQ(o.grouped, o.alone) << "product " << i;
    for (int64_t r = 0; r < p.batch * p.m; ++r)
      for (int64_t j = p.n; j < p.ldC(); ++j)
        ASSERT_EQ(o.grouped[r * p.ldC() + j], 0xc0e0) << "padding (-7)";
  }
}

TEST(ProductGroupTest, WrongTableWidthAborts) {
  // (The earlier tests started the OpenMP team: re-exec, not a bare fork.)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  distopt::test::GroupTable table(DISTOPT_PRODUCT_WORDS + 1);
  table.addZeros();
  EXPECT_DEATH(_mlir_ciface_distopt_matmul_group_f32(table.get()),
               "a table of 24 words per product, not 23");
}
} // namespace
