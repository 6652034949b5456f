//===- Runner.h - compile, run and gather the step --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The JIT side of dist-run: the step compiled for this host, run N times
// on this rank's blocks with the state fed back, and the state gathered
// back to rank 0.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_RUNNER_H
#define DISTOPT_RUNNER_RUNNER_H

#include "distopt/Runner/Bindings.h"
#include "distopt/Runner/CudaDevice.h"
#include "distopt/Runner/Library.h"

#include "distopt/Conversion/Passes.h"
#include "distopt/Runtime/distrt.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include <functional>
#include <memory>
#include <set>

#include "llvm/Support/Error.h"

namespace distopt::runner {

class DeviceMemory;
class ResidentState;
struct StepGraphs;

/// The compiled step: its functions, JIT-compiled or loaded from the
/// compile cache (a shared library written by an earlier run).
class CompiledStep {
public:
  CompiledStep() = default;
  CompiledStep(const CompiledStep &) = delete;
  CompiledStep &operator=(const CompiledStep &) = delete;
  ~CompiledStep();

  /// Calls function `name` (its C interface) with packed arguments: the
  /// result pointer (when it returns any), then the argument descriptors.
  llvm::Error invoke(llvm::StringRef name,
                     llvm::MutableArrayRef<void *> packed);

  /// The JIT-compiled step, or one loaded from `library`.
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void *library = nullptr;
  /// Where the step came from, for messages.
  std::string origin;
  /// --device=cuda (or --gpu-mapped's stand-in in host memory): the
  /// device its buffers live on (null: the host).
  DeviceMemory *device = nullptr;
  /// --gpu-mapped's stand-in device, which this step owns (declared
  /// first: destroyed after `resident`, whose buffers it holds).
  std::unique_ptr<DeviceMemory> ownedDevice;
  /// The device copies of the arguments: the state stays on the device
  /// from step to step (see pullState()).
  std::unique_ptr<ResidentState> resident;
  /// On a device: capture each function's second call as a graph and
  /// replay it while its arguments stay where they were (--step-graphs).
  bool captureGraphs = true;
  /// The captured functions (declared after `resident`: destroyed first).
  std::unique_ptr<StepGraphs> graphs;

private:
  llvm::StringMap<void (*)(void **)> functions;
};

/// Where compiled steps are kept between runs (`--cache-dir`): none when
/// `directory` is empty.
struct CompileCache {
  std::string directory;
  /// The step's key: the module's text, the backend, the optimization
  /// level, this host's CPU and the DistOpt build (dist-run and its
  /// runtime libraries).
  std::string key;
};

/// How a step is compiled: dist-lower-cpu's options with their one set of
/// defaults (the runtime backend its collectives call, LLVM's
/// optimization level, ops-per-function, profile brackets — the step is
/// then never cached —, parallel-min-iterations, gpu-mapped), and the
/// device: cuda compiles with dist-lower-cuda, the arguments copied to the
/// device before each step and the results back after it.
struct CompileOptions : mlir::train::CPUPipelineOptions {
  Device device = Device::cpu;
};

/// Compiles `module` (any stage) for this host's CPU with `options`, or
/// loads it from `cache` when an earlier run compiled the same; an error
/// when it cannot (the diagnostics are printed). A step compiled with a cache
/// is written to it (a shared library linked with the system's C compiler
/// driver).
llvm::Expected<std::unique_ptr<CompiledStep>>
compileStep(mlir::ModuleOp module, const CompileOptions &options,
            const char *argv0, const CompileCache &cache = {});

/// The compile cache's default directory: $DISTOPT_CACHE_DIR, else
/// $XDG_CACHE_HOME/distopt, else ~/.cache/distopt ("" without a home).
std::string getDefaultCacheDirectory();

/// The compile cache's key for a module whose text hashes to `moduleHash`.
std::string getCacheKey(uint64_t moduleHash, const CompileOptions &options,
                        const char *argv0);

/// Calls `entry` once on `args`: copies its results into `results`' local
/// arrays, frees the buffers it allocated, and feeds each result `i` with
/// `feedBack[i] >= 0` into that argument. Returns the loss (0 without one).
/// On a device, the arguments fed back (the state) stay there: they are
/// copied to the device before the first step only, each step's result
/// becomes the argument's device buffer, and their host arrays are out of
/// date until pullState(); the other arguments (data, hyper-parameters)
/// are copied before every call, the other results (loss, metrics) back
/// after it.
///
/// `staged` (on a device): the arguments whose values were staged to the
/// device beforehand, copied from there instead of from their host arrays,
/// and work for the host while the step runs.
struct StagedInputs {
  /// Per argument: the staging buffer holding its value, or null.
  std::vector<const void *> from;
  /// Called once the step is enqueued, before the host waits for it.
  std::function<llvm::Error()> whileRunning;
  /// The data arguments (input, label) hold what they held at the previous
  /// call that said so (one fixed batch: --data without a dataset): their
  /// device copies are kept, not copied again.
  bool fixedData = false;
};
llvm::Expected<float> invokeStep(CompiledStep &compiled, llvm::StringRef entry,
                                 std::vector<Binding> &args,
                                 std::vector<Binding> &results,
                                 llvm::ArrayRef<int64_t> feedBack = {},
                                 const StagedInputs *staged = nullptr);

/// Brings the host arrays of `args` (all, or only `only`) up to date with
/// their device copies, where a step left them on a device; nothing
/// otherwise. Every host read of state during or after a run (checkpoints,
/// evaluation, the loss scale, gathering, the output) comes after it.
llvm::Error pullState(CompiledStep &compiled, std::vector<Binding> &args,
                      const Binding *only = nullptr);

/// A scalar result as a float, whatever its float type (an f64 step's loss
/// was reported and written as 0 before); an error for an integer one.
llvm::Expected<float> readScalar(const Binding &result);

/// What one step did, as measured on this rank.
struct StepReport {
  /// Steps done, this one included.
  uint64_t step = 0;
  /// The loss (rank 0: the step's; others: their own result or 0).
  float loss = 0;
  /// The whole call of the step, milliseconds.
  double ms = 0;
  /// The runtime's counters over the call (time inside communication,
  /// bytes handed to collectives and sent).
  distrt_stats comm{};
  /// On a device: what the runner copied to and from it for the step.
  std::optional<DeviceTraffic> device;
  /// A step with dynamic loss scaling: the scale after it, and whether it
  /// skipped its update (a non-finite gradient lowered the scale).
  std::optional<float> lossScale;
  bool skipped = false;
};

/// What a run does around each step: with a dataset, fill the batch
/// before it; with checkpoints, save after it.
struct RunHooks {
  /// Steps done before this run (a resumed run starts there).
  uint64_t firstStep = 0;
  /// Before step `step` (0-based, counted from the start of training).
  std::function<llvm::Error(uint64_t step)> beforeStep;
  /// With a dataset: whether argument `arg` is one of the batch's, and
  /// writing its block of batch `step` to `target` (its host array, or a
  /// pinned buffer of its size). runSteps fills the batch of each step.
  std::function<bool(const Binding &arg)> isBatch;
  std::function<void(uint64_t step, const Binding &arg, char *target)>
      fillBatch;
  /// On a device: each batch is read and copied there while the step
  /// before runs (a pinned buffer, the copy stream, then a copy on the
  /// device into the step's input), not between the steps
  /// (--stage-batches).
  bool stageBatches = true;
  /// After a step, with what it did and the losses so far (rank 0's).
  std::function<llvm::Error(const StepReport &report,
                            llvm::ArrayRef<float> losses)>
      afterStep;
  /// --on-nonfinite=stop: a step whose loss is NaN or infinite ends the
  /// run (rank 0 returns an error naming the step, the loss and the first
  /// non-finite value it holds) before afterStep saves anything of it.
  bool stopOnNonFinite = true;
  /// The step scales its loss dynamically (train-mixed-precision): its
  /// state `loss_scale` tells a skipped update, which a non-finite loss
  /// does not end. The rank that holds it (a pipeline's loss stage), which
  /// tells rank 0.
  std::optional<int64_t> lossScaleRank;
  /// After afterStep: true ends the run there (--control's "stop").
  std::function<llvm::Expected<bool>(uint64_t stepsDone)> stopAfter;
  /// Rank 0 prints each step's loss and time, and progress.
  bool print = true;
};

/// Runs the step `entry` from step `hooks.firstStep` to `steps` on `args`,
/// feeding each state result back into its argument (the step contract,
/// checked before, makes their types equal); rank 0 prints each step's
/// loss and time, and progress every tenth of a long run. The loss comes
/// from rank `lossRank` (the last pipeline stage of an MPMD step), which
/// sends it to rank 0 after each step. Returns `losses` (those of the steps
/// before) followed by the new ones (on rank 0).
llvm::Expected<std::vector<float>>
runSteps(CompiledStep &compiled, llvm::StringRef entry,
         std::vector<Binding> &args, std::vector<Binding> &results,
         uint64_t steps, int64_t lossRank, const RunHooks &hooks,
         std::vector<float> losses = {});

/// The first NaN or infinite element of this rank's block of `binding` (a
/// float argument), as "'lr' is inf" or "'fc1.weight' holds nan at [2, 0]"
/// (global indices); empty when there is none.
std::string findNonFinite(const Binding &binding);

/// --on-nonfinite=stop before the state is written (`what`: "the
/// checkpoint of step 4", "--out"): when some rank's state arguments hold a
/// NaN or an infinity, the lowest such rank returns an error naming the
/// array and the element (the others: an every-rank error), and nothing is
/// to be written. Every rank calls it.
llvm::Error checkStateFinite(const std::vector<Binding> &args, uint64_t step,
                             llvm::StringRef what);

/// The global state arrays (param and opt_state arguments) gathered to
/// rank 0 (empty arrays on the other ranks); for an MPMD step, from the
/// devices of the program that holds each. With `only`, just the arrays
/// it names (every rank must pass the same names).
llvm::Expected<Arrays> gatherState(std::vector<Binding> &args,
                                   const mlir::train::StepSignature &step,
                                   const std::set<std::string> *only = nullptr);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_RUNNER_H
