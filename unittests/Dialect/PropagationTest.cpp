//===- PropagationTest.cpp - sharding propagation on small programs -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs dist-propagate-sharding on parsed programs and reads the recorded
// shardings: the driver's order, priorities and determinism.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/ScopedPrinter.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

class PropagationTest : public ::testing::Test {
protected:
  PropagationTest() {
    context.loadDialect<DistDialect, train::TrainDialect, func::FuncDialect>();
  }

  /// Parses `source`, runs propagation and returns the module (null on
  /// failure).
  OwningOpRef<ModuleOp> propagate(StringRef source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return nullptr;
    PassManager pm(&context);
    pm.addPass(createDistPropagateShardingPass());
    if (failed(pm.run(*module)))
      return nullptr;
    return module;
  }

  /// The recorded sharding of the result of the op named `name` (its first
  /// result), printed.
  static std::string resultSharding(ModuleOp module, StringRef name) {
    std::string text;
    module.walk([&](Operation *op) {
      if (op->getName().getStringRef() != name)
        return;
      auto shardings =
          op->getAttrOfType<ArrayAttr>(DistDialect::kResultShardingsAttrName);
      llvm::raw_string_ostream os(text);
      shardings[0].print(os);
    });
    return text;
  }

  static std::string print(ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    return text;
  }

  MLIRContext context;
};

constexpr StringLiteral kMegatron = R"mlir(
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @mlp(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
               %w1: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [model]]>},
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %h = train.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = train.relu %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = train.matmul %a, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
)mlir";

// The column split of w1 reaches w2 through relu, whose rows it splits: the
// second matmul reduces over `model` and its result is partial.
TEST_F(PropagationTest, MegatronPairOnTwoDimensionalMesh) {
  OwningOpRef<ModuleOp> module = propagate(kMegatron);
  ASSERT_TRUE(module);
  EXPECT_EQ(resultSharding(*module, "train.relu"),
            "#dist.sharding<@mesh, [[data], [model]]>");
  func::FuncOp func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(llvm::to_string(func.getArgAttr(2, "dist.sharding")),
            "#dist.sharding<@mesh, [[model], []]>");
  std::string matmuls;
  module->walk([&](Operation *op) {
    if (op->getName().getStringRef() == "train.matmul")
      matmuls += llvm::to_string(op->getAttr("dist.shardings")) + ";";
  });
  EXPECT_EQ(matmuls, "[#dist.sharding<@mesh, [[data], [model]]>];"
                     "[#dist.sharding<@mesh, [[data], []], partial = "
                     "[model]>];");
}

// Same input, same output, byte for byte.
TEST_F(PropagationTest, Deterministic) {
  OwningOpRef<ModuleOp> first = propagate(kMegatron);
  OwningOpRef<ModuleOp> second = propagate(kMegatron);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(print(*first), print(*second));
}

// An annotated factor claims its axis before an inferred one.
TEST_F(PropagationTest, AnnotationBeatsInference) {
  OwningOpRef<ModuleOp> module = propagate(R"mlir(
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @f(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
             %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>}) -> tensor<8x32xf32> {
  %r = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = train.matmul %r, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}
)mlir");
  ASSERT_TRUE(module);
  EXPECT_EQ(resultSharding(*module, "train.matmul"),
            "#dist.sharding<@mesh, [[], [data]]>");
}

// A sharding known only at the end of a chain reaches its start.
TEST_F(PropagationTest, InformationFlowsBackward) {
  OwningOpRef<ModuleOp> module = propagate(R"mlir(
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %a = train.neg %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %b = train.exp %a : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = dist.annotate %b {sharding = #dist.sharding<@mesh, [[data], []]>} : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}
)mlir");
  ASSERT_TRUE(module);
  EXPECT_EQ(resultSharding(*module, "train.neg"),
            "#dist.sharding<@mesh, [[data], []]>");
}

// Conflicting annotations of one factor fail the pass.
TEST_F(PropagationTest, ConflictingAnnotationsFail) {
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  EXPECT_FALSE(propagate(R"mlir(
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 2>}
func.func @f(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
             %y: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x16xf32> {
  %s = train.add %x, %y : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}
)mlir"));
}

} // namespace
