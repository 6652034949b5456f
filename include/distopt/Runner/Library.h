//===- Library.h - compiled steps as shared libraries -----------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What dist-run's compile cache and dist-compile share: the runtime
// libraries a compiled step links, and a module in the LLVM dialect
// compiled for this host into a shared library.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_LIBRARY_H
#define DISTOPT_RUNNER_LIBRARY_H

#include "distopt/Runner/Array.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace distopt::runner {

/// The lib directory next to the bin directory of the running tool.
std::string getLibDirectory(const char *argv0);

/// The DistOpt program `argv0` names: itself when it is an absolute path
/// that exists, else this process's executable.
std::string getToolPath(const char *argv0);

/// The libraries a step compiled for `device` calls, as paths. CPU: the
/// kernels (OpenBLAS products, convolutions) and the collective runtime
/// from the lib directory beside the tool, MLIR's runner utilities (strided
/// memref copies) and LLVM's OpenMP runtime (the parallel loops' team).
/// CUDA: libdistopt_cuda (the mgpu* host calls, cuBLAS) and the collective
/// runtime (which loads its nccl backend itself).
llvm::SmallVector<std::string> getRuntimeLibraries(const char *argv0,
                                                   Device device);

/// Compiles `module` (in the LLVM dialect) into the shared library `path`:
/// position-independent code for this host at `optLevel`, with a packed
/// wrapper `_mlir_<f>(void **)` of every C-interface function `f`, linked
/// against `libraries` (with their directories as run paths) by the
/// system's C compiler driver, written under a temporary name and renamed.
/// False with `error` set.
bool buildLibrary(mlir::ModuleOp module, unsigned optLevel,
                  const std::string &path,
                  llvm::ArrayRef<std::string> libraries, std::string &error);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_LIBRARY_H
