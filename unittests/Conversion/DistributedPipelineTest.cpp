//===- DistributedPipelineTest.cpp - the top-level pipeline entry ---------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// buildDistributedPipeline builds the passes dist-opt's textual pipelines
// name (a strategy, then dist-lower-cpu or dist-lower-cuda with their
// defaults, which CPUPipelineOptions and CUDAPipelineOptions hold), and
// refuses an unknown strategy leaving the pass manager as it was.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;

namespace {

/// `pm`'s passes as text.
std::string print(OpPassManager &pm) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

/// The passes of the textual pipeline `pipeline`, as text.
std::string parse(StringRef pipeline) {
  OpPassManager pm("builtin.module");
  std::string error;
  llvm::raw_string_ostream errors(error);
  EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm, errors))) << error;
  return print(pm);
}

TEST(DistributedPipeline, NoStrategyIsDistLowerCpu) {
  dist::registerAllPasses();
  OpPassManager pm("builtin.module");
  ASSERT_TRUE(succeeded(train::buildDistributedPipeline(
      pm, "", train::CPUPipelineOptions(), llvm::errs())));
  EXPECT_EQ(print(pm), parse("dist-lower-cpu"));
  // The positional defaults are the struct's.
  OpPassManager positional("builtin.module");
  train::buildCPUPipeline(positional);
  EXPECT_EQ(print(positional), print(pm));
}

TEST(DistributedPipeline, StrategyThenLowering) {
  dist::registerAllPasses();
  OpPassManager pm("builtin.module");
  train::CPUPipelineOptions options;
  options.opsPerFunction = 200;
  options.parallelMinIterations = 0;
  ASSERT_TRUE(succeeded(train::buildDistributedPipeline(
      pm, "dist-mirrored{replicas=2}", options, llvm::errs())));
  EXPECT_EQ(print(pm),
            parse("dist-mirrored{replicas=2},dist-lower-cpu{ops-per-function="
                  "200 parallel-min-iterations=0}"));
}

TEST(DistributedPipeline, GpuMappedAndCuda) {
  dist::registerAllPasses();
  OpPassManager mapped("builtin.module");
  train::CPUPipelineOptions options;
  options.gpuMapped = true;
  ASSERT_TRUE(succeeded(train::buildDistributedPipeline(
      mapped, "dist-zero{stage=1 replicas=2}", options, llvm::errs())));
  EXPECT_EQ(
      print(mapped),
      parse("dist-zero{stage=1 replicas=2},dist-lower-cpu{gpu-mapped=1}"));
  OpPassManager cuda("builtin.module");
  ASSERT_TRUE(succeeded(train::buildDistributedPipeline(
      cuda, "", train::CUDAPipelineOptions(), llvm::errs())));
  EXPECT_EQ(print(cuda), parse("dist-lower-cuda"));
}

TEST(DistributedPipeline, UnknownStrategy) {
  dist::registerAllPasses();
  OpPassManager pm("builtin.module");
  std::string error;
  llvm::raw_string_ostream errors(error);
  EXPECT_TRUE(failed(train::buildDistributedPipeline(
      pm, "dist-mirrored{replicas=2},dist-unknown", train::CPUPipelineOptions(),
      errors)));
  EXPECT_NE(error.find("invalid strategy 'dist-mirrored{replicas=2},"
                       "dist-unknown': "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("dist-unknown"), std::string::npos) << error;
  EXPECT_EQ(pm.size(), 0u);
}

} // namespace
