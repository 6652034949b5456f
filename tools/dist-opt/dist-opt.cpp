//===- dist-opt.cpp - DistOpt's mlir-opt ----------------------------------===//
//
// Parses, verifies, transforms and prints MLIR with DistOpt's dialects and
// passes and the upstream dialects training steps are combined with.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"
#include "distopt/InitAll.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::train::test {
void registerTestInterfacePasses();
} // namespace mlir::train::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dist::registerAllDialects(registry);

  mlir::train::registerTrainPasses();
  mlir::train::registerConversionPasses();
  mlir::train::registerCPUPipeline();
  mlir::dist::registerDistPasses();
  mlir::dist::registerStrategyPipelines();
  mlir::train::test::registerTestInterfacePasses();
  // Generic upstream passes users run between ours.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  // What dist-lower-cpu runs between train-to-linalg and dist-matmul-to-blas,
  // to run them one at a time.
  mlir::bufferization::registerOneShotBufferizePass();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "DistOpt optimizer driver\n", registry));
}
