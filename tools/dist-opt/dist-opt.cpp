//===- dist-opt.cpp - DistOpt's mlir-opt ----------------------------------===//
//
// Parses, verifies, transforms and prints MLIR with DistOpt's dialects and
// passes and the upstream dialects training steps are combined with.
//
//===----------------------------------------------------------------------===//

#include "distopt/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::train::test {
void registerTestInterfacePasses();
} // namespace mlir::train::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dist::registerAllDialects(registry);
  // gpu-module-to-binary (dist-lower-cuda) translates kernels to LLVM IR.
  mlir::dist::registerAllTranslations(registry);

  mlir::dist::registerAllPasses();
  mlir::train::test::registerTestInterfacePasses();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "DistOpt optimizer driver\n", registry));
}
