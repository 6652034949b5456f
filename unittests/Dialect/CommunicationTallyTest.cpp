//===- CommunicationTallyTest.cpp - what pass statistics count ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist::tallyCommunication counts the collectives and sends under an op
// with the bytes of their tensor operands (the dist passes' statistics);
// local slices move nothing and are not counted.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

TEST(CommunicationTally, CountsCollectivesSendsAndBytes) {
  MLIRContext context;
  context.loadDialect<DistDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
    func.func @step(%a: tensor<f32>, %b: tensor<10x128xf32>,
                    %c: tensor<64x784xf32>) -> tensor<128x784xf32> {
      %0:2 = dist.all_reduce %a, %b on @mesh axes = ["data"]
          : tensor<f32>, tensor<10x128xf32>
      %1 = dist.all_gather %c on @mesh axes = ["data"] gather_dim = 0
          : tensor<64x784xf32> -> tensor<128x784xf32>
      return %1 : tensor<128x784xf32>
    }
  )mlir",
                                                             &context);
  ASSERT_TRUE(module);
  CommunicationTally tally = tallyCommunication(*module);
  EXPECT_EQ(tally.collectives, 2);
  // 4 + 10 * 128 * 4 bytes all-reduced, 64 * 784 * 4 gathered.
  EXPECT_EQ(tally.collectiveBytes, 4 + 5120 + 200704);
  EXPECT_EQ(tally.transfers, 0);
  EXPECT_EQ(tally.transferBytes, 0);
}

TEST(CommunicationTally, CountsSendsNotReceives) {
  MLIRContext context;
  context.loadDialect<DistDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
    func.func @stage0(%a: tensor<2xf32>) {
      dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
      dist.send %a to #dist.place<@pipe, pipe = 1> channel = 1 : tensor<2xf32>
      return
    }
    func.func @stage1() -> (tensor<2xf32>, tensor<2xf32>) {
      %0 = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2xf32>
      %1 = dist.recv from #dist.place<@pipe, pipe = 0> channel = 1 : tensor<2xf32>
      return %0, %1 : tensor<2xf32>, tensor<2xf32>
    }
  )mlir",
                                                             &context);
  ASSERT_TRUE(module);
  CommunicationTally tally = tallyCommunication(*module);
  EXPECT_EQ(tally.collectives, 0);
  EXPECT_EQ(tally.transfers, 2);
  EXPECT_EQ(tally.transferBytes, 16);
}

} // namespace
