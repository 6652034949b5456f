//===- StepLoading.h - the step run() runs, from its module -----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Part of the DistOpt project.
//
// The pieces of run() before anything runs (private to lib/Runner): the
// module parsed from text or a file, the runtime started with its backend,
// the step read from the module's record (any stage) and checked against
// the world, and dist-run's checks of options that go together.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNNER_STEPLOADING_H
#define DISTOPT_LIB_RUNNER_STEPLOADING_H

#include "distopt/Conversion/StepSignature.h"
#include "distopt/Runner/Bindings.h"
#include "distopt/Runner/Run.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace distopt::runner {

/// Parses the module of `config` (`hash`: of its text, for the ranks'
/// agreement); parse errors are printed as FILE:LINE:COL: error: ...
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
loadModule(mlir::MLIRContext &context, const RunConfig &config, uint64_t &hash);

/// Starts the runtime with the module's backend (when lowered for one),
/// else `config.backend`; returns it.
llvm::Expected<std::string> startRuntime(mlir::ModuleOp module,
                                         const RunConfig &config);

/// The step and how its arrays are laid out (see Run.cpp); `entry` is set
/// to the step function while it is still one, else null.
llvm::Expected<mlir::train::StepSignature> readStep(mlir::ModuleOp module,
                                                    const RunConfig &config,
                                                    mlir::func::FuncOp &entry);

/// The rank whose results hold the loss: 0, or for an MPMD step the first
/// device of the program that returns it.
int64_t getLossRank(const mlir::train::StepSignature &step);

/// The rank that holds the loss scale (optimizer state `loss_scale`): 0, or
/// for an MPMD step the first device of the program whose state has it.
int64_t getLossScaleRank(const mlir::train::StepSignature &step);

/// `config.backend` as run() uses it: "nccl" for --device=cuda with "auto".
std::string getBackend(const RunConfig &config);

/// --test-raise RANK:SIGNAL:POINT, parsed (no signal when empty).
struct TestRaise {
  int64_t rank = -1;
  int signal = 0;
  std::string point;
};
llvm::Expected<TestRaise> parseTestRaise(llvm::StringRef text);
/// Raises the signal of `raise` on its rank at `point` (tests).
void raiseForTest(const TestRaise &raise, llvm::StringRef point);

/// Registers the inputs of `config` no output may overwrite.
void protectInputs(const RunConfig &config);

/// Checks, before anything runs, that `outputs` (option, path) overwrite no
/// input or anything but a regular file and can be written (rank 0 writes
/// them), that `events` is a regular file or a FIFO, and that
/// `checkpointDir` is a directory or nothing.
llvm::Error
checkOutputs(llvm::ArrayRef<std::pair<const char *, std::string>> outputs,
             const std::string &checkpointDir, const std::string &events);

/// The arrays of `inMemory` or else of the npz `path` (none when empty).
llvm::Expected<Arrays> readInput(const std::optional<Arrays> &inMemory,
                                 const std::string &path);

/// Writes `arrays` to the npz `path` (rank 0; nothing when empty).
llvm::Error writeOutput(const std::string &path, const Arrays &arrays,
                        const TestRaise &raise);

/// An error unless every rank runs the same module, options and inputs.
llvm::Error checkAgreement(const RunConfig &config, uint64_t moduleHash,
                           llvm::StringRef backend, const Arrays &state,
                           const Arrays &data);

/// Copies this rank's block of each argument's global array into it, once
/// the array's name, type, shape and range are checked.
llvm::Error bindInputs(const RunConfig &config, mlir::func::FuncOp entry,
                       std::vector<Binding> &args, Arrays &state, Arrays &data);

/// Binds `values` (of `step`, this rank's) into `bindings`, each checked
/// movable; `initializing`: each needs a role too (--init-state).
llvm::Error bindValues(llvm::ArrayRef<mlir::train::StepSignature::Value> values,
                       const mlir::train::StepSignature &step, int64_t rank,
                       bool initializing, std::vector<Binding> &bindings);

} // namespace distopt::runner

#endif // DISTOPT_LIB_RUNNER_STEPLOADING_H
