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

#include <functional>
#include <memory>

namespace distrun {

/// Compiles `module` (any stage) for this host's CPU against `backend`'s
/// runtime calls, with LLVM's optimization level `optLevel` (0-3); fails
/// (fail()) with the diagnostics.
std::unique_ptr<mlir::ExecutionEngine>
compileStep(mlir::ModuleOp module, llvm::StringRef backend, const char *argv0,
            unsigned optLevel = 3);

/// Calls `entry` once on `args`: copies its results into `results`' local
/// arrays, frees the buffers it allocated, and feeds each result `i` with
/// `feedBack[i] >= 0` into that argument. Returns the loss (0 without one).
float invokeStep(mlir::ExecutionEngine &engine, llvm::StringRef entry,
                 std::vector<Binding> &args, std::vector<Binding> &results,
                 llvm::ArrayRef<int64_t> feedBack = {});

/// A scalar result as a float, whatever its float type (an f64 step's loss
/// was reported and written as 0 before); fails for an integer one.
float readScalar(const Binding &result);

/// What a run does around each step: with a dataset, fill the batch
/// before it; with checkpoints, save after it.
struct RunHooks {
  /// Steps done before this run (a resumed run starts there).
  uint64_t firstStep = 0;
  /// Before step `step` (0-based, counted from the start of training).
  std::function<void(uint64_t step)> beforeStep;
  /// After a step, with the steps done and the losses so far (rank 0's).
  std::function<void(uint64_t stepsDone, llvm::ArrayRef<float> losses)>
      afterStep;
};

/// Runs the step `entry` from step `hooks.firstStep` to `steps` on `args`,
/// feeding each state result back into its argument (the step contract,
/// checked before, makes their types equal); rank 0 prints each step's
/// loss and time, and progress every tenth of a long run. The loss comes
/// from rank `lossRank` (the last pipeline stage of an MPMD step), which
/// sends it to rank 0 after each step. Returns `losses` (those of the steps
/// before) followed by the new ones (on rank 0).
std::vector<float> runSteps(mlir::ExecutionEngine &engine,
                            llvm::StringRef entry, std::vector<Binding> &args,
                            std::vector<Binding> &results, uint64_t steps,
                            int64_t lossRank, const RunHooks &hooks,
                            std::vector<float> losses = {});

/// The global state arrays (param and opt_state arguments) gathered to
/// rank 0 (empty arrays on the other ranks); for an MPMD step, from the
/// devices of the program that holds each.
Arrays gatherState(std::vector<Binding> &args,
                   const mlir::train::StepSignature &step);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_RUNNER_H
