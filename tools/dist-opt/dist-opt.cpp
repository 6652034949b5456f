//===- dist-opt.cpp - DistOpt's mlir-opt ----------------------------------===//
//
// Parses, verifies, transforms and prints MLIR with DistOpt's dialects and
// passes and the upstream dialects training steps are combined with.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::train::test {
void registerTestInterfacePasses();
} // namespace mlir::train::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::train::TrainDialect, mlir::dist::DistDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::shard::ShardDialect, mlir::tensor::TensorDialect>();

  // What the CPU lowering produces and bufferizes.
  registry.insert<mlir::affine::AffineDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect,
                  mlir::memref::MemRefDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);

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

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "DistOpt optimizer driver\n", registry));
}
