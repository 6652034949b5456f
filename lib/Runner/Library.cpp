//===- Library.cpp - compiled steps as shared libraries -------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Library.h"
#include "distopt/Support/SafeOutput.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Target/TargetMachine.h"

#include <dlfcn.h>
#include <unistd.h>

using namespace mlir;
using namespace distopt;

std::string runner::getToolPath(const char *argv0) {
  // A caller that names the tool (Python's extension: this build's
  // dist-run) is taken at its word; /proc/self/exe would be the
  // interpreter.
  if (argv0 && llvm::sys::path::is_absolute(argv0) &&
      llvm::sys::fs::exists(argv0))
    return argv0;
  return llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&getLibDirectory));
}

std::string runner::getLibDirectory(const char *argv0) {
  // Without a tool's path (the C API's library), the directory of the
  // shared object holding the runner, when the runtime libraries are
  // beside it (an installed or built libDistOptCAPI.so).
  if (!argv0 || !*argv0) {
    Dl_info info;
    if (::dladdr(reinterpret_cast<void *>(&getLibDirectory), &info) &&
        info.dli_fname) {
      SmallString<256> lib(llvm::sys::path::parent_path(info.dli_fname));
      SmallString<256> runtime(lib);
      llvm::sys::path::append(runtime, "libdistrt.so");
      if (llvm::sys::fs::exists(runtime))
        return lib.str().str();
    }
  }
  std::string tool = getToolPath(argv0);
  SmallString<256> lib(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(tool)));
  llvm::sys::path::append(lib, "lib");
  return lib.str().str();
}

SmallVector<std::string> runner::getRuntimeLibraries(const char *argv0,
                                                     Device device) {
  std::string lib = getLibDirectory(argv0);
  if (device == Device::cuda)
    return {lib + "/libdistopt_cuda.so", lib + "/libdistrt.so",
            DISTOPT_MLIR_C_RUNNER_UTILS};
  return {lib + "/libdistopt_cpu.so", lib + "/libdistrt.so",
          DISTOPT_MLIR_C_RUNNER_UTILS, DISTOPT_OMP_LIBRARY};
}

/// Adds `_mlir_<f>(void **args)` for every C-interface function `f` of
/// `module`: it calls `f` with `*args[i]` (the packed calling convention of
/// MLIR's ExecutionEngine, which CompiledStep::invoke uses).
static void addPackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(context);
  SmallVector<llvm::Function *> functions;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() &&
        function.getName().starts_with("_mlir_ciface_"))
      functions.push_back(&function);
  for (llvm::Function *function : functions) {
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr},
                                         /*isVarArg=*/false);
    auto *wrapper =
        llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                               "_mlir_" + function->getName(), module);
    llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "", wrapper));
    SmallVector<llvm::Value *> args;
    for (auto [i, arg] : llvm::enumerate(function->args())) {
      llvm::Value *slot =
          builder.CreateConstGEP1_64(ptr, wrapper->getArg(0), i);
      llvm::Value *address = builder.CreateLoad(ptr, slot);
      args.push_back(builder.CreateLoad(arg.getType(), address));
    }
    llvm::Value *result = builder.CreateCall(function, args);
    if (!function->getReturnType()->isVoidTy()) {
      llvm::Value *slot =
          builder.CreateConstGEP1_64(ptr, wrapper->getArg(0), args.size());
      builder.CreateStore(result, builder.CreateLoad(ptr, slot));
    }
    builder.CreateRetVoid();
  }
}

bool runner::buildLibrary(ModuleOp module, unsigned optLevel,
                          const std::string &path,
                          ArrayRef<std::string> libraries, std::string &error) {
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName("cc");
  if (!driver) {
    error = "no C compiler driver 'cc' to link it";
    return false;
  }
  // (A bare file name is in the working directory, which exists.)
  std::string directory = llvm::sys::path::parent_path(path).str();
  if (directory.empty())
    directory = ".";
  else if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    error = "cannot create '" + directory + "': " + ec.message();
    return false;
  }
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder) {
    error = llvm::toString(hostBuilder.takeError());
    return false;
  }
  hostBuilder->setRelocationModel(llvm::Reloc::PIC_);
  hostBuilder->setCodeModel(llvm::CodeModel::Small);
  hostBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel(optLevel));
  auto machine = hostBuilder->createTargetMachine();
  if (!machine) {
    error = llvm::toString(machine.takeError());
    return false;
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    error = "cannot translate it to LLVM IR";
    return false;
  }
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  addPackedWrappers(*llvmModule);
  if (llvm::Error e = makeOptimizingTransformer(optLevel, 0, machine->get())(
          llvmModule.get())) {
    error = llvm::toString(std::move(e));
    return false;
  }
  SmallString<256> object, library, log;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".%%%%%%.o", fd, object)) {
    error =
        "cannot create an object file in '" + directory + "': " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    llvm::legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, out, nullptr,
                                        llvm::CodeGenFileType::ObjectFile)) {
      llvm::sys::fs::remove(object);
      error = "this host's target cannot emit object files";
      return false;
    }
    codegen.run(*llvmModule);
  }
  if (llvm::sys::fs::createUniqueFile(path + ".%%%%%%.so", fd, library) ||
      (::close(fd), false) ||
      llvm::sys::fs::createUniqueFile(path + ".%%%%%%.log", fd, log) ||
      (::close(fd), false)) {
    llvm::sys::fs::remove(object);
    error = "cannot create files in '" + directory + "'";
    return false;
  }
  SmallVector<std::string> args = {*driver, "-shared", "-o",
                                   library.str().str(), object.str().str()};
  for (const std::string &dependency : libraries) {
    args.push_back(dependency);
    args.push_back(
        ("-Wl,-rpath," + llvm::sys::path::parent_path(dependency)).str());
  }
  args.push_back("-lm");
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, argRefs, std::nullopt,
                                         redirects, /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &message);
  auto output = llvm::MemoryBuffer::getFile(log);
  llvm::sys::fs::remove(object);
  llvm::sys::fs::remove(log);
  if (status != 0) {
    llvm::sys::fs::remove(library);
    error = "linking it failed (" +
            (message.empty() ? "status " + std::to_string(status) : message) +
            ")" + (output ? ": " + (*output)->getBuffer().trim().str() : "");
    return false;
  }
  // Only over nothing or a regular file that is no input (PartialFile.h).
  if (llvm::Error e = checkOutputTarget("the library", path)) {
    llvm::sys::fs::remove(library);
    error = llvm::toString(std::move(e));
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(library, path)) {
    llvm::sys::fs::remove(library);
    error = ec.message();
    return false;
  }
  return true;
}
