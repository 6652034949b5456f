//===- dist-opt.cpp - DistOpt's mlir-opt ----------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Parses, verifies, transforms and prints MLIR with DistOpt's dialects and
// passes and the upstream dialects training steps are combined with.
// MlirOptMain's driver, with the input read first and refused when it
// would crash upstream MLIR's parser (dist::findParserHazard).
//
//===----------------------------------------------------------------------===//

#include "distopt/InitAll.h"
#include "distopt/Support/ParseSource.h"
#include "distopt/Support/SafeOutput.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>

namespace mlir::train::test {
void registerTestInterfacePasses();
} // namespace mlir::train::test

using namespace mlir;

/// False, with an error at its location, when `buffer` would crash the
/// parser.
static bool checkSource(const llvm::MemoryBuffer &buffer) {
  std::optional<dist::ParserHazard> hazard =
      dist::findParserHazard(buffer.getBuffer());
  if (!hazard)
    return true;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(buffer.getMemBufferRef(),
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  sourceMgr.PrintMessage(
      llvm::SMLoc::getFromPointer(buffer.getBufferStart() + hazard->offset),
      llvm::SourceMgr::DK_Error, hazard->message);
  return false;
}

int main(int argc, char **argv) {
  DialectRegistry registry;
  dist::registerAllDialects(registry);
  // gpu-module-to-binary (dist-lower-cuda) translates kernels to LLVM IR.
  dist::registerAllTranslations(registry);

  dist::registerAllPasses();
  train::test::registerTestInterfacePasses();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "DistOpt optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // What reads no input stays MlirOptMain's own.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // The rest of MlirOptMain(argc, argv, ...), with the input checked.
  llvm::InitLLVM y(argc, argv);
  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (!checkSource(*file))
    return EXIT_FAILURE;
  // The output through the one safe writer: never over a FIFO, a device,
  // a directory or the input; written beside its target and renamed.
  distopt::protectInput("the input", inputFilename);
  llvm::Expected<std::unique_ptr<distopt::SafeOutputFile>> output =
      distopt::SafeOutputFile::open("-o", outputFilename);
  if (!output) {
    llvm::errs() << "dist-opt: " << llvm::toString(output.takeError()) << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain((*output)->os(), std::move(file), registry, config)))
    return EXIT_FAILURE;
  if (llvm::Error error = (*output)->commit()) {
    llvm::errs() << "dist-opt: " << llvm::toString(std::move(error)) << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
