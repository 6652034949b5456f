//===- Runner.h - compile, run and gather the step --------------*- C++ -*-===//
//
// The JIT side of dist-run: the step compiled for this host, run N times
// on this rank's blocks with the state fed back, and the state gathered
// back to rank 0.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_RUNNER_H
#define DISTOPT_TOOLS_DIST_RUN_RUNNER_H

#include "Bindings.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include <memory>

namespace distrun {

/// Compiles `module` (any stage) for this host's CPU against `backend`'s
/// runtime calls, with LLVM's optimization level `optLevel` (0-3); fails
/// (fail()) with the diagnostics.
std::unique_ptr<mlir::ExecutionEngine>
compileStep(mlir::ModuleOp module, llvm::StringRef backend, const char *argv0,
            unsigned optLevel = 3);

/// Runs the step `entry` `steps` times on `args`, feeding each state result
/// back into its argument (the step contract, checked before, makes their
/// types equal); rank 0 prints each step's loss and time, and progress
/// every tenth of a long run. The loss comes from rank `lossRank` (the
/// last pipeline stage of an MPMD step), which sends it to rank 0 after
/// each step. Returns the losses (on rank 0).
std::vector<float> runSteps(mlir::ExecutionEngine &engine,
                            llvm::StringRef entry, std::vector<Binding> &args,
                            std::vector<Binding> &results, unsigned steps,
                            int64_t lossRank = 0);

/// The global state arrays (param and opt_state arguments) gathered to
/// rank 0 (empty arrays on the other ranks); for an MPMD step, from the
/// devices of the program that holds each.
Arrays gatherState(std::vector<Binding> &args,
                   const mlir::train::StepSignature &step);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_RUNNER_H
