//===- ApproximateMathTest.cpp - accuracy of dist-approximate-math --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// JIT-compiles `y = math.<fn>(x)` over a tensor with dist-lower-cpu (which
// runs dist-approximate-math) and measures the error of every element
// against the float64 C library, in units in the last place of the float
// result.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/InitAll.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <vector>

using namespace mlir;

namespace {

/// The largest error of `fn` (lowered by dist-lower-cpu) over `inputs`
/// against `reference`, in ulps of the float reference.
double maxUlpError(StringRef fn, const std::vector<float> &inputs,
                   const std::function<double(double)> &reference,
                   bool approximated) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  dist::registerAllDialects(registry);
  dist::registerAllTranslations(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string source = R"mlir(
    #id = affine_map<(i) -> (i)>
    func.func @f(%x: tensor<{0}xf32>) -> tensor<{0}xf32>
        attributes {llvm.emit_c_interface} {
      %e = tensor.empty() : tensor<{0}xf32>
      %y = linalg.generic {indexing_maps = [#id, #id],
                           iterator_types = ["parallel"]}
          ins(%x : tensor<{0}xf32>) outs(%e : tensor<{0}xf32>) {
      ^bb0(%a: f32, %b: f32):
        %t = math.{1} %a : f32
        linalg.yield %t : f32
      } -> tensor<{0}xf32>
      return %y : tensor<{0}xf32>
    })mlir";
  auto substitute = [&](StringRef from, StringRef to) {
    for (size_t at; (at = source.find(from)) != std::string::npos;)
      source.replace(at, from.size(), to.str());
  };
  substitute("{0}", std::to_string(inputs.size()));
  substitute("{1}", fn);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  EXPECT_TRUE(module);
  PassManager pm(&context);
  // Without the approximation: libm's results, to show the measure itself
  // is right.
  // Serial loops: the JIT here loads no OpenMP runtime.
  train::CPUPipelineOptions lowering;
  lowering.approximateMath = approximated;
  lowering.parallelMinIterations = 0;
  train::buildCPUPipeline(pm, lowering);
  EXPECT_TRUE(succeeded(pm.run(*module)));
  ExecutionEngineOptions options;
  // The options hold a function_ref: the transformer must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(3, 0, nullptr);
  options.transformer = optimize;
  auto engine = ExecutionEngine::create(*module, options);
  EXPECT_TRUE(static_cast<bool>(engine));
  StridedMemRefType<float, 1> in{const_cast<float *>(inputs.data()),
                                 const_cast<float *>(inputs.data()),
                                 0,
                                 {static_cast<int64_t>(inputs.size())},
                                 {1}};
  StridedMemRefType<float, 1> out;
  auto *inPtr = &in;
  auto *outPtr = &out;
  SmallVector<void *> args = {&outPtr, &inPtr};
  EXPECT_FALSE(
      static_cast<bool>((*engine)->invokePacked("_mlir_ciface_f", args)));
  double worst = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    double want = reference(inputs[i]);
    float wantF = static_cast<float>(want);
    double ulp = std::nextafter(std::fabs(wantF), INFINITY) - std::fabs(wantF);
    double error = std::fabs(out.data[out.offset + i] - want) / ulp;
    worst = std::max(worst, error);
  }
  free(out.basePtr);
  return worst;
}

std::vector<float> linspace(float lo, float hi, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i)
    v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

std::vector<float> powers(float loExp, float hiExp, int n) {
  std::vector<float> v;
  for (float e : linspace(loExp, hiExp, n))
    v.push_back(std::exp2(e));
  return v;
}

/// Measures `fn` with and without the approximation over `x`: libm's
/// results bound the measure (glibc's tanhf, expf and logf are within 2
/// ulp), the approximation must stay within `bound` ulp.
void expectAccurate(StringRef fn, const std::vector<float> &x,
                    double (*reference)(double), double bound) {
  auto ref = [&](double v) { return reference(v); };
  double libm = maxUlpError(fn, x, ref, /*approximated=*/false);
  double approx = maxUlpError(fn, x, ref, /*approximated=*/true);
  std::printf("%s: libm %.2f ulp, approximation %.2f ulp over %zu values\n",
              fn.str().c_str(), libm, approx, x.size());
  EXPECT_LE(libm, 2.0) << fn.str();
  EXPECT_LE(approx, bound) << fn.str();
}

// GELU's tanh: the whole range where it is not +-1, and tiny arguments.
TEST(ApproximateMathTest, Tanh) {
  std::vector<float> x = linspace(-12, 12, 1 << 16);
  for (float p : powers(-40, 0, 1 << 12)) {
    x.push_back(p);
    x.push_back(-p);
  }
  expectAccurate("tanh", x, std::tanh, 5.0);
}

// Softmax and cross-entropy: every exponent without overflow.
TEST(ApproximateMathTest, Exp) {
  expectAccurate("exp", linspace(-87, 88, 1 << 16), std::exp, 5.0);
}

// Cross-entropy's log: every normal float, and around 1 (small logs).
TEST(ApproximateMathTest, Log) {
  std::vector<float> x = powers(-126, 127, 1 << 16);
  for (float v : linspace(0.5f, 2.0f, 1 << 14))
    x.push_back(v);
  expectAccurate("log", x, std::log, 5.0);
}

} // namespace
