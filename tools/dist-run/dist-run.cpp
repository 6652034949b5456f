//===- dist-run.cpp - train a step (single device or under mpirun) --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//   dist-run MODULE.mlir --state=STATE.npz --data=BATCH.npz --steps=N
//            --out=OUT.npz [--entry=NAME] [--collective-timeout=SECONDS]
//   dist-run MODULE.mlir --state=STATE.npz --dataset=DIR --epochs=E
//            [--seed=S] --checkpoint-dir=CKPT [--checkpoint-every=N]
//            [--keep=K] [--resume] [--out=OUT.npz]
//   dist-run --export=OUT.npz --checkpoint-dir=CKPT
//
// With --dataset, each step reads the next global batch of a per-epoch
// shuffle (Dataset.h); with --checkpoint-dir, the ranks save their shards
// every N steps and --resume continues from the newest complete checkpoint
// (Checkpoint.h), whatever strategy wrote it.
//
// Compiles the training step from whatever stage it is in (train dialect,
// partitioned by a strategy, collectives lowered by dist-to-runtime, or the
// LLVM dialect after dist-lower-cpu) for the CPU, JIT-runs it N times
// feeding the updated state back, and writes the final state (gathered to
// rank 0) and every step's loss. Arrays are bound by `train.name`; under
// `mpirun -np K` every rank takes its block of each global array from the
// argument's `dist.sharding`, or, once lowering removed those, from the
// module's record of the step (`train.step`).
//
// Before anything runs, the ranks check that they agree on the module, the
// options and the inputs (Agreement.h), that the step keeps its contract
// (each state result comes back as its argument), that labels and token ids
// are in range (StepInputs.h) and that the output can be written. Any
// failure ends every rank with one line naming the rank (Failure.h).
//
//===----------------------------------------------------------------------===//

#include "Failure.h"

#include "distopt/Runner/Error.h"
#include "distopt/Runner/Npz.h"
#include "distopt/Runner/Run.h"
#include "distopt/Runner/RunOptions.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace distrun;
using namespace distopt;
using namespace distopt::runner;
using llvm::StringRef;
namespace cl = llvm::cl;

/// dist-run's own options: `--help` lists these (and LLVM's generic ones);
/// the hundreds of LLVM code-generation options linked in stay behind
/// `--help-hidden`.
static cl::OptionCategory distRunCategory("dist-run options");

static cl::opt<std::string> inputFile(cl::Positional, cl::cat(distRunCategory),
                                      cl::desc("<training step .mlir>"));
static cl::opt<std::string>
    statePath("state", cl::cat(distRunCategory),
              cl::desc("npz with every param, opt_state and hyper array"));
static cl::opt<std::string>
    dataPath("data", cl::cat(distRunCategory),
             cl::desc("npz with every input and label array"));
static cl::opt<unsigned>
    numSteps("steps", cl::init(1), cl::cat(distRunCategory),
             cl::desc("Steps to run (default 1; with --dataset, one epoch); "
                      "a resumed run's total, counted from the start"));
static cl::opt<std::string> datasetPath(
    "dataset", cl::cat(distRunCategory),
    cl::desc("Directory with one .npy per input and label name (leading "
             "dim: samples), read memory-mapped: each step takes the next "
             "global batch of a per-epoch shuffle, each rank only its block"));
static cl::opt<unsigned>
    numEpochs("epochs", cl::cat(distRunCategory),
              cl::desc("With --dataset: train this many epochs of "
                       "floor(samples / batch) steps"));
static cl::opt<bool>
    shuffleData("shuffle", cl::init(true), cl::cat(distRunCategory),
                cl::desc("With --dataset: shuffle the samples every epoch "
                         "from --seed (default true)"));
static cl::opt<std::string> evalDatasetPath(
    "eval-dataset", cl::cat(distRunCategory),
    cl::desc("Directory (as --dataset) to evaluate on: the mean loss and, "
             "for a cross-entropy over logits, the accuracy, with the "
             "step's evaluation function (dist-opt --train-derive-eval), "
             "distributed as the step"));
static cl::opt<unsigned> evalEvery(
    "eval-every", cl::cat(distRunCategory),
    cl::desc("Evaluate every N steps (and after the last step); default: "
             "after the last step only"));
static cl::opt<std::string> metricsPath(
    "metrics", cl::cat(distRunCategory),
    cl::desc("Append one JSON line per step (step, loss, step_ms, comm_ms, "
             "collective_bytes, sent_bytes, peak_rss_mb: rank 0's) and per "
             "evaluation to this file (a fresh run empties it first); "
             "scripts/plot_metrics.py draws it"));
static cl::opt<std::string> eventsPath(
    "events", cl::cat(distRunCategory),
    cl::desc("Append the run's events as JSON lines to this file or FIFO "
             "(rank 0: start, step, eval, checkpoint, epoch_end, end; any "
             "failing rank: error), each line flushed at once; a fresh run "
             "empties a regular file first"));
static cl::opt<std::string> controlPath(
    "control", cl::cat(distRunCategory),
    cl::desc("With --dataset: after each epoch but the last, read one line "
             "from this file or FIFO (rank 0): 'continue' trains on, 'stop' "
             "(or the end of the file) ends the run after that epoch"));
static cl::opt<bool> useCache(
    "cache", cl::init(true), cl::cat(distRunCategory),
    cl::desc("Keep the compiled step in --cache-dir and load it from there "
             "when the module, the options, the CPU and DistOpt's build are "
             "the same (default true)"));
static cl::opt<std::string> cacheDir(
    "cache-dir", cl::cat(distRunCategory),
    cl::desc("The compile cache (default: $DISTOPT_CACHE_DIR, else "
             "$XDG_CACHE_HOME/distopt, else ~/.cache/distopt); the 64 most "
             "recently used steps are kept"));
static cl::opt<std::string> checkpointDir(
    "checkpoint-dir", cl::cat(distRunCategory),
    cl::desc("Directory of the run's checkpoints (each rank writes its own "
             "shards; an index per checkpoint)"));
static cl::opt<unsigned> checkpointEvery(
    "checkpoint-every", cl::cat(distRunCategory),
    cl::desc("Save a checkpoint every N steps (and after the last step); "
             "default: after the last step only"));
static cl::opt<unsigned>
    keepCheckpoints("keep", cl::init(3), cl::cat(distRunCategory),
                    cl::desc("Complete checkpoints kept, newest first "
                             "(default 3; 0 keeps all)"));
static cl::opt<bool> resume(
    "resume", cl::cat(distRunCategory),
    cl::desc("Continue from the newest complete checkpoint in "
             "--checkpoint-dir (from --state when there is none), whatever "
             "strategy wrote it; --steps stays the run's total"));
static cl::opt<bool> allowDataChange(
    "allow-data-change", cl::cat(distRunCategory),
    cl::desc("With --resume: continue from a checkpoint trained on other "
             "data (its fingerprint of --data or --dataset differs; "
             "refused without this)"));
static cl::opt<OnNonFinite> onNonFinite(
    "on-nonfinite", cl::init(OnNonFinite::stop), cl::cat(distRunCategory),
    cl::desc("What a NaN or infinite loss (or state, at a checkpoint and "
             "--out) does"),
    cl::values(clEnumValN(OnNonFinite::stop, "stop",
                          "the run fails naming the step and the value; "
                          "nothing of that state is saved (the default)"),
               clEnumValN(OnNonFinite::carryOn, "continue", "train on")));
static cl::opt<std::string>
    exportPath("export", cl::cat(distRunCategory),
               cl::desc("Write the newest complete checkpoint in "
                        "--checkpoint-dir as one npz of global arrays (and "
                        "the losses so far), then exit; takes no module"));
static cl::opt<std::string>
    outPath("out", cl::cat(distRunCategory),
            cl::desc("npz to write: the final state and the losses (written "
                     "as OUT.partial.XXXXXX, renamed once complete)"));
static cl::opt<std::string> initStatePath(
    "init-state", cl::cat(distRunCategory),
    cl::desc("Write deterministic random state for the step to this npz "
             "(and the batch with --init-data), then exit"));
static cl::opt<std::string>
    initDataPath("init-data", cl::cat(distRunCategory),
                 cl::desc("Write a random batch to this npz"));
static cl::opt<uint64_t>
    seed("seed", cl::init(0), cl::cat(distRunCategory),
         cl::desc("Seed of --init-state/--init-data and of the dataset's "
                  "shuffle (default 0)"));
static cl::opt<std::string> backendName(
    "backend", cl::init("auto"), cl::cat(distRunCategory),
    cl::desc("Runtime backend: auto (mpi under an MPI launcher, else local; "
             "nccl with --device=cuda), mpi, local or nccl; a module lowered "
             "with dist-to-runtime{backend=...} names its own"));
static cl::opt<Device> device(
    "device", cl::init(Device::cpu), cl::cat(distRunCategory),
    cl::desc("Where the step runs"),
    cl::values(clEnumValN(Device::cpu, "cpu", "the CPU (the default)"),
               clEnumValN(Device::cuda, "cuda",
                          "one NVIDIA GPU per rank (dist-lower-cuda, "
                          "collectives through NCCL; the rank's device is its "
                          "rank on its node modulo the node's devices)")));
static cl::opt<bool> flushDenormals(
    "flush-denormals", cl::init(true), cl::cat(distRunCategory),
    cl::desc("Run the step with subnormal floats flushed to zero (inputs and "
             "results, as TensorFlow and XLA do on CPUs): without it a step "
             "slows down as training makes values tiny (default true)"));
static cl::opt<std::string>
    entryName("entry", cl::cat(distRunCategory),
              cl::desc("The step function (default: the one whose "
                       "arguments carry train.role)"));
static cl::opt<double> collectiveTimeout(
    "collective-timeout", cl::init(300), cl::cat(distRunCategory),
    cl::desc("Seconds a collective or message may wait for the other ranks "
             "before the job ends with an error (a rank stopped answering); "
             "0 waits forever (default 300)"));
static cl::opt<std::string> tracePath(
    "trace", cl::cat(distRunCategory),
    cl::desc("Write the measured timeline of every step (each rank's units "
             "and point-to-point transfers) to this file as a Chrome trace, "
             "the format of dist-opt --dist-schedule-trace"));
static cl::opt<unsigned> optLevel(
    "opt-level", cl::init(mlir::train::kDefaultOptLevel),
    cl::cat(distRunCategory),
    cl::desc("LLVM optimization level of the compiled step, 0-3 (default 3; "
             "0 compiles a large step in a fraction of the time and runs it "
             "slower)"));
static cl::opt<unsigned> opsPerFunction(
    "ops-per-function", cl::init(mlir::train::kDefaultOpsPerFunction),
    cl::cat(distRunCategory),
    cl::desc("Compile functions of more ops than this as private parts of "
             "about this many ops (dist-lower-cpu's ops-per-function; "
             "default 1000; 0 keeps every function whole)"));
static cl::opt<int64_t> parallelMinIterations(
    "parallel-min-iterations",
    cl::init(mlir::train::kDefaultParallelMinIterations),
    cl::cat(distRunCategory),
    cl::desc("Loop nests of at least this many iterations run their "
             "outermost parallel loop on the threads (dist-lower-cpu's "
             "parallel-min-iterations; default 32768; 0 keeps every loop "
             "serial)"));
static cl::opt<bool> gpuMapped(
    "gpu-mapped", cl::cat(distRunCategory),
    cl::desc("Compile the step as dist-lower-cuda does up to its GPU-mapped "
             "loop nests, and run those nests as CPU loops (dist-lower-cpu's "
             "gpu-mapped): checks the CUDA kernels' index arithmetic "
             "without a GPU; slower than the CPU lowering"));
static cl::opt<bool> stepGraphs(
    "step-graphs", cl::cat(distRunCategory), cl::init(true),
    cl::desc("On a device (--device=cuda, --gpu-mapped): capture the step's "
             "work at its second step as a CUDA graph and replay it at "
             "every later one, one launch per step; a step whose state "
             "moves or that allocates runs launch by launch, with a warning "
             "saying why (default on; --gpu-mapped replays the captured "
             "call)"));
static cl::opt<bool> stageBatches(
    "stage-batches", cl::cat(distRunCategory), cl::init(true),
    cl::desc("On a device, with --dataset: read and copy each batch to the "
             "device while the step before runs (a pinned host buffer, a "
             "second stream, then a copy on the device into the step's "
             "input), instead of between the steps (default on)"));
static cl::opt<unsigned> numThreads(
    "num-threads", cl::cat(distRunCategory),
    cl::desc("Threads of this process's step: the OpenMP team its large "
             "loops and BLAS products are split over (default: "
             "OMP_NUM_THREADS when set, else the cores this process may use "
             "divided among the ranks on its node; at most 4 x the "
             "machine's cores)"));
static cl::opt<bool> profileOps(
    "profile", cl::cat(distRunCategory),
    cl::desc("Time every op of the step (dist-lower-cpu{profile=true}; never "
             "cached) and print, after the run, the time per op family (the "
             "train op it was lowered from) with its FLOP and byte rates"));
static cl::opt<std::string> testRaise(
    "test-raise", cl::Hidden, cl::cat(distRunCategory),
    cl::desc("For tests: RANK:SIGNAL:POINT makes rank RANK raise SIGNAL "
             "(STOP, TERM, INT or KILL) at POINT (step: before the first "
             "step; stepN: before step N; write: with the output written but "
             "not yet renamed; checkpoint: with its part of a checkpoint "
             "written but not yet committed)"));

/// The options as the runner takes them.
static RunConfig makeConfig(const char *argv0) {
  RunConfig config;
  config.modulePath = inputFile;
  config.statePath = statePath;
  config.dataPath = dataPath;
  config.datasetPath = datasetPath;
  if (numSteps.getNumOccurrences())
    config.steps = numSteps;
  if (numEpochs.getNumOccurrences())
    config.epochs = numEpochs;
  if (shuffleData.getNumOccurrences())
    config.shuffle = shuffleData;
  config.seed = seed;
  config.evalDatasetPath = evalDatasetPath;
  if (evalEvery.getNumOccurrences())
    config.evalEvery = evalEvery;
  config.checkpointDir = checkpointDir;
  if (checkpointEvery.getNumOccurrences())
    config.checkpointEvery = checkpointEvery;
  if (keepCheckpoints.getNumOccurrences())
    config.keep = keepCheckpoints;
  config.resume = resume;
  config.allowDataChange = allowDataChange;
  config.onNonFinite = onNonFinite;
  config.outPath = outPath;
  config.metricsPath = metricsPath;
  config.tracePath = tracePath;
  config.eventsPath = eventsPath;
  config.controlPath = controlPath;
  config.backend = backendName;
  config.device = device;
  config.flushDenormals = flushDenormals;
  config.bindThreads = true;
  config.entry = entryName;
  config.collectiveTimeout = collectiveTimeout;
  config.optLevel = optLevel;
  config.opsPerFunction = opsPerFunction;
  config.parallelMinIterations = parallelMinIterations;
  config.gpuMapped = gpuMapped;
  config.stepGraphs = stepGraphs;
  config.stageBatches = stageBatches;
  if (numThreads.getNumOccurrences())
    config.numThreads = numThreads;
  config.profile = profileOps;
  config.useCache = useCache;
  config.cacheDir = cacheDir;
  config.toolPath = argv0;
  config.testRaise = testRaise;
  return config;
}

/// Parses the command line; a bad one is a failure like any other (under
/// mpirun the other ranks must not wait for this one).
static void parseCommandLine(int argc, char **argv) {
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  cl::HideUnrelatedOptions(distRunCategory);
  if (cl::ParseCommandLineOptions(argc, argv, "DistOpt training-step runner\n",
                                  &stream)) {
    setRequestedBackend(backendName);
    return;
  }
  llvm::SmallVector<StringRef> lines;
  StringRef(errors).split(lines, '\n', -1, /*KeepEmpty=*/false);
  std::string prefix = llvm::sys::path::filename(argv[0]).str() + ": ";
  std::string message;
  for (StringRef line : lines) {
    line.consume_front(prefix);
    message += (message.empty() ? "" : " ") + line.trim().str();
  }
  if (message.empty())
    fail("invalid command line (see above)");
  message[0] = llvm::toLower(message[0]);
  fail(message);
}

/// --export: the newest complete checkpoint as one npz.
static int exportNewest() {
  if (checkpointDir.empty())
    fail("--export writes a checkpoint: give its --checkpoint-dir");
  if (!inputFile.empty())
    fail("--export reads only the checkpoint: drop the module '" + inputFile +
         "'");
  protectInput("--checkpoint-dir", checkpointDir);
  llvm::Expected<std::string> exported =
      exportCheckpoint(checkpointDir, exportPath);
  if (!exported)
    exitOnError(exported.takeError());
  llvm::outs() << "exported " << *exported << " to " << exportPath << "\n";
  return 0;
}

/// --init-state / --init-data: deterministic arrays for the step (rank 0
/// writes them).
static int writeInitialArrays(const RunConfig &config) {
  if (llvm::Error error = checkRunConfig(config))
    exitOnError(std::move(error));
  protectInput("the module", inputFile);
  std::pair<const char *, std::string> outputs[] = {
      {"--init-state", initStatePath}, {"--init-data", initDataPath}};
  for (auto &[what, path] : outputs) {
    if (path.empty())
      continue;
    if (llvm::Error error = checkOutputTarget(what, path))
      fail(llvm::toString(std::move(error)));
    std::string error;
    if (!checkWritable(path, error))
      fail(llvm::Twine("cannot write ") + what + " '" + path + "': " + error);
  }
  if (!initStatePath.empty() && !initDataPath.empty() &&
      isSameFile(initStatePath, initDataPath))
    fail("--init-state '" + initStatePath + "' is the same file as " +
         "--init-data '" + initDataPath + "'");
  llvm::Expected<std::pair<Arrays, Arrays>> arrays =
      initStateAndData(config, /*withData=*/!initDataPath.empty());
  if (!arrays)
    exitOnError(arrays.takeError());
  for (auto [path, written] : {std::pair{&initStatePath, &arrays->first},
                               std::pair{&initDataPath, &arrays->second}}) {
    std::string error;
    if (!path->empty() && !writeNpz(*path, *written, error))
      fail(error);
  }
  return 0;
}

namespace {
/// dist-run's part of a run: once the rank is known, the signal handlers
/// name it, and a failure appends its "error" event to --events.
class ToolObserver : public RunObserver {
public:
  void onRuntimeStarted(int64_t rank, int64_t size) override {
    installFailureHandlers(/*runtimeIsStarted=*/true);
    if (eventsPath.empty())
      return;
    if (llvm::Error error =
            checkOutputTarget("--events", eventsPath, OutputKind::stream))
      llvm::consumeError(std::move(error));
    else
      setErrorEventsPath(eventsPath);
  }
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  installFailureHandlers(/*runtimeIsStarted=*/false);
  parseCommandLine(argc, argv);
  if (!exportPath.empty())
    return exportNewest();
  RunConfig config = makeConfig(argv[0]);
  if (!initStatePath.empty() || !initDataPath.empty())
    return writeInitialArrays(config);
  ToolObserver observer;
  llvm::Expected<RunResult> result = run(config, &observer);
  if (!result)
    exitOnError(result.takeError());
  return 0;
}
