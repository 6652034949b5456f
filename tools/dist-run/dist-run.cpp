//===- dist-run.cpp - train a step (single device or under mpirun) --------===//
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

#include "Agreement.h"
#include "Bindings.h"
#include "Checkpoint.h"
#include "Cluster.h"
#include "CudaDevice.h"
#include "Dataset.h"
#include "Evaluation.h"
#include "Events.h"
#include "Failure.h"
#include "Metrics.h"
#include "Npz.h"
#include "distopt/Support/SafeOutput.h"
#include "Profile.h"
#include "Runner.h"
#include "StepInputs.h"
#include "Trace.h"

#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/InitAll.h"
#include "distopt/Runtime/distrt.h"
#include "distopt/Runtime/distrt_mlir.h"
#include "distopt/Support/DiagnosticText.h"
#include "distopt/Support/ParseSource.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <random>
#include <set>

using namespace mlir;
using namespace distrun;
using namespace distopt;
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
enum class OnNonFinite { stop, carryOn };
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
    "opt-level", cl::init(3), cl::cat(distRunCategory),
    cl::desc("LLVM optimization level of the compiled step, 0-3 (default 3; "
             "0 compiles a large step in a fraction of the time and runs it "
             "slower)"));
static cl::opt<unsigned> opsPerFunction(
    "ops-per-function", cl::init(1000), cl::cat(distRunCategory),
    cl::desc("Compile functions of more ops than this as private parts of "
             "about this many ops (dist-lower-cpu's ops-per-function; "
             "default 1000; 0 keeps every function whole)"));
static cl::opt<int64_t> parallelMinIterations(
    "parallel-min-iterations", cl::init(32768), cl::cat(distRunCategory),
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

/// --test-raise: raises its signal on its rank at `point`.
static void raiseForTest(StringRef point) {
  if (testRaise.empty())
    return;
  SmallVector<StringRef> fields;
  StringRef(testRaise).split(fields, ':');
  int64_t rank = -1;
  int signal = 0;
  if (fields.size() == 3)
    signal = llvm::StringSwitch<int>(fields[1])
                 .Case("STOP", SIGSTOP)
                 .Case("TERM", SIGTERM)
                 .Case("INT", SIGINT)
                 .Case("KILL", SIGKILL)
                 .Default(0);
  uint64_t stepNumber;
  if (fields.size() != 3 || fields[0].getAsInteger(10, rank) || !signal ||
      (fields[2] != "step" && fields[2] != "write" &&
       fields[2] != "checkpoint" &&
       !(fields[2].starts_with("step") &&
         !fields[2].drop_front(4).getAsInteger(10, stepNumber))))
    fail("malformed --test-raise '" + testRaise +
         "' (expected RANK:STOP|TERM|INT|KILL:step|stepN|write|checkpoint)");
  if (fields[2] == point && rank == distrt_rank()) {
    llvm::outs().flush();
    std::raise(signal);
  }
}

/// Registers the inputs no output may overwrite (PartialFile.h).
static void protectInputs() {
  protectInput("--state", statePath);
  protectInput("--data", dataPath);
  protectInput("the module", inputFile);
  protectInput("--dataset", datasetPath);
  protectInput("--eval-dataset", evalDatasetPath);
  protectInput("--checkpoint-dir", checkpointDir);
  protectInput("--control", controlPath);
}

/// Checks, before anything runs, that the outputs overwrite no input or
/// anything but a regular file and can be written (rank 0 writes them),
/// and that --checkpoint-dir is a directory or nothing.
static void checkOutputs() {
  std::pair<const char *, std::string> outputs[] = {
      {"--out", outPath},
      {"--metrics", metricsPath},
      {"--export", exportPath},
      {"--trace", tracePath},
      {"--init-state", initStatePath},
      {"--init-data", initDataPath}};
  if (!checkpointDir.empty())
    if (llvm::Error error = checkOutputTarget("--checkpoint-dir", checkpointDir,
                                              OutputKind::directory))
      fail(llvm::toString(std::move(error)));
  // --events may be a FIFO (written in place, checked again when opened).
  if (!eventsPath.empty()) {
    if (llvm::Error error = checkOutputTarget("--events", eventsPath,
                                              OutputKind::stream))
      fail(llvm::toString(std::move(error)));
    for (auto &other : outputs)
      if (!other.second.empty() && isSameFile(eventsPath, other.second))
        fail("--events '" + eventsPath + "' is the same file as " +
             other.first + " '" + other.second + "'");
  }
  for (auto [i, output] : llvm::enumerate(outputs)) {
    if (output.second.empty())
      continue;
    if (llvm::Error error = checkOutputTarget(output.first, output.second))
      fail(llvm::toString(std::move(error)));
    for (auto &other : llvm::ArrayRef(outputs).drop_front(i + 1))
      if (!other.second.empty() && isSameFile(output.second, other.second))
        fail(llvm::Twine(output.first) + " '" + output.second +
             "' is the same file as " + other.first + " '" + other.second +
             "'");
    std::string error;
    if (!checkWritable(output.second, error))
      fail(llvm::Twine("cannot write ") + output.first + " '" + output.second +
           "': " + error);
  }
}

/// Reads the npz at `path` (none when empty) into `arrays`.
static void readInput(const std::string &path, Arrays &arrays) {
  std::string error;
  if (!path.empty() && !readNpz(path, arrays, error))
    fail(error);
}

/// Writes `arrays` to `path` (rank 0; nothing when empty).
static void writeOutput(const std::string &path, const Arrays &arrays) {
  std::string error;
  if (distrt_rank() == 0 && !path.empty() &&
      !writeNpz(path, arrays, error, [] { raiseForTest("write"); }))
    fail(error);
}

/// Fails on options that do not go together.
static void checkRunOptions() {
  if (!exportPath.empty()) {
    if (checkpointDir.empty())
      fail("--export writes a checkpoint: give its --checkpoint-dir");
    if (!inputFile.empty())
      fail("--export reads only the checkpoint: drop the module '" + inputFile +
           "'");
    return;
  }
  if (inputFile.empty())
    fail("no training step given (dist-run MODULE.mlir ...)");
  if (!datasetPath.empty() && !dataPath.empty())
    fail("--data and --dataset both give the batches: use one");
  if (datasetPath.empty()) {
    if (numEpochs.getNumOccurrences())
      fail("--epochs counts passes over a --dataset, and none is given");
    if (shuffleData.getNumOccurrences())
      fail("--shuffle shuffles a --dataset, and none is given");
  } else if (numEpochs.getNumOccurrences() && numSteps.getNumOccurrences()) {
    fail("give --steps or --epochs, not both");
  }
  if (!controlPath.empty() && datasetPath.empty())
    fail("--control decides after each epoch of a --dataset, and none is "
         "given");
  if (evalDatasetPath.empty() && evalEvery.getNumOccurrences())
    fail("--eval-every needs --eval-dataset");
  if (checkpointDir.empty())
    for (auto [option, given] :
         {std::pair{"--checkpoint-every", checkpointEvery.getNumOccurrences()},
          std::pair{"--keep", keepCheckpoints.getNumOccurrences()},
          std::pair{"--resume", resume.getNumOccurrences()}})
      if (given)
        fail(llvm::Twine(option) + " needs --checkpoint-dir");
  if (allowDataChange && !resume)
    fail("--allow-data-change applies to a --resume");
}

/// Parses the command line; a bad one is a failure like any other (under
/// mpirun the other ranks must not wait for this one).
static void parseCommandLine(int argc, char **argv) {
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  cl::HideUnrelatedOptions(distRunCategory);
  if (cl::ParseCommandLineOptions(argc, argv, "DistOpt training-step runner\n",
                                  &stream)) {
    if (backendName != "auto" && backendName != "mpi" &&
        backendName != "local" && backendName != "nccl")
      fail("unknown --backend '" + backendName +
           "' (expected auto, mpi, local or nccl)");
    if (device == Device::cuda) {
      // Collectives move device buffers: only NCCL can.
      if (backendName == "auto")
        backendName = "nccl";
      if (backendName != "nccl")
        fail("--device=cuda moves device buffers, which only "
             "--backend=nccl can (not '" +
             backendName + "')");
      if (gpuMapped || profileOps)
        fail(llvm::Twine(gpuMapped ? "--gpu-mapped" : "--profile") +
             " does not apply to --device=cuda");
    } else if (backendName == "nccl") {
      fail("--backend=nccl moves device buffers: it needs --device=cuda");
    }
    setRequestedBackend(backendName);
    checkRunOptions();
    if (optLevel > 3)
      fail("--opt-level must be 0, 1, 2 or 3, not " +
           llvm::Twine(optLevel.getValue()));
    if (!(collectiveTimeout >= 0) || std::isinf(collectiveTimeout)) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", collectiveTimeout.getValue());
      fail("--collective-timeout must be a number of seconds >= 0 (0: none), "
           "not '" +
           llvm::Twine(text) + "'");
    }
    return;
  }
  SmallVector<StringRef> lines;
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

/// Parses the module (`hash`: of its text, for the ranks' agreement).
static OwningOpRef<ModuleOp> loadModule(MLIRContext &context, uint64_t &hash) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buffer)
    fail("cannot read '" + inputFile + "': " + buffer.getError().message());
  hash = hashText((*buffer)->getBuffer());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  // Parse errors as FILE:LINE:COL: error: message.
  dist::DiagnosticTextHandler handler(&context, [](const std::string &text) {
    llvm::errs() << text << "\n";
  });
  OwningOpRef<ModuleOp> module = dist::parseUserSource(sourceMgr, &context);
  if (!module)
    fail("cannot parse '" + inputFile + "'");
  return module;
}

/// Starts the runtime with the module's backend (when lowered for one),
/// else --backend; returns it.
static std::string startRuntime(ModuleOp module) {
  std::string backend = backendName;
  if (auto built = module->getAttrOfType<StringAttr>("distrt.backend")) {
    if (backend != "auto" && backend != built.getValue())
      fail("'" + inputFile + "' is built for the " + built.getValue() +
           " backend, not --backend=" + backend);
    backend = built.getValue().str();
  }
  distrt_set_timeout(collectiveTimeout);
  distrt_mlir_init_backend(backend.c_str());
  installFailureHandlers(/*runtimeIsStarted=*/true);
  return backend;
}

/// Fails unless every rank runs the same module, options and inputs.
static void checkAgreement(uint64_t moduleHash, StringRef backend,
                           const Arrays &state, const Arrays &data) {
  auto hashOption = [](const auto &option) {
    std::string text;
    llvm::raw_string_ostream(text) << option.getValue();
    return hashText(text);
  };
  checkRanksAgree(
      {{"the module", "text", moduleHash},
       {"--state", "contents", hashArrays(state)},
       {"--data", "contents", hashArrays(data)},
       {"--steps", "value", hashOption(numSteps)},
       {"--backend", "value", hashText(backend)},
       {"--entry", "value", hashOption(entryName)},
       {"--flush-denormals", "value", hashOption(flushDenormals)},
       {"--collective-timeout", "value", hashOption(collectiveTimeout)},
       {"--opt-level", "value", hashOption(optLevel)},
       {"--ops-per-function", "value", hashOption(opsPerFunction)},
       {"--parallel-min-iterations", "value",
        hashOption(parallelMinIterations)},
       {"--profile", "value", hashOption(profileOps)},
       {"--gpu-mapped", "value", hashOption(gpuMapped)},
       {"--device", "value", hashText(device == Device::cuda ? "cuda" : "cpu")},
       {"--trace", "value", hashOption(tracePath)},
       {"--seed", "value", hashOption(seed)},
       {"--dataset", "value", hashOption(datasetPath)},
       {"--eval-dataset", "value", hashOption(evalDatasetPath)},
       {"--eval-every", "value", hashOption(evalEvery)},
       {"--metrics", "value", hashOption(metricsPath)},
       {"--events", "value", hashOption(eventsPath)},
       {"--control", "value", hashOption(controlPath)},
       {"--cache", "value", hashOption(useCache)},
       {"--cache-dir", "value", hashOption(cacheDir)},
       {"--epochs", "value", hashOption(numEpochs)},
       {"--shuffle", "value", hashOption(shuffleData)},
       {"--checkpoint-dir", "value", hashOption(checkpointDir)},
       {"--checkpoint-every", "value", hashOption(checkpointEvery)},
       {"--keep", "value", hashOption(keepCheckpoints)},
       {"--resume", "value", hashOption(resume)},
       {"--allow-data-change", "value", hashOption(allowDataChange)},
       {"--on-nonfinite", "value",
        hashText(onNonFinite == OnNonFinite::stop ? "stop" : "continue")}});
}

/// The worlds a step runs on: fails unless it is `devices` processes.
static void checkWorldSize(const train::StepSignature &step) {
  int64_t devices = step.getNumDevices(), worldSize = distrt_size();
  if (devices != worldSize)
    fail(llvm::Twine("the step runs on ") + llvm::Twine(devices) +
         " device(s) but there " +
         (worldSize == 1 ? "is 1 process"
                         : "are " + llvm::Twine(worldSize) + " processes") +
         (step.meshShape.empty() ? " (distribute it with a strategy first)"
                                 : ""));
}

/// "FILE:LINE:COL: " for a file location, else "".
static std::string formatLocation(Location loc) {
  auto file = dyn_cast<FileLineColLoc>(loc);
  auto fused = dyn_cast<FusedLoc>(loc);
  if (!file && fused && !fused.getLocations().empty())
    file = dyn_cast<FileLineColLoc>(fused.getLocations().front());
  if (!file)
    return "";
  return llvm::formatv("{0}:{1}:{2}: ", file.getFilename().getValue(),
                       file.getLine(), file.getColumn());
}

/// Placed programs not lowered yet (dist.fragment, dist.send, dist.recv,
/// dist.serve) get dist-verify's check of their transfers before anything
/// runs: a send without its receive, or programs that deadlock, would
/// otherwise wait out --collective-timeout. Fails with dist-verify's first
/// error (and its notes) on one line.
static void checkPrograms(ModuleOp module) {
  bool unlowered = false;
  module.walk([&](Operation *op) {
    unlowered =
        isa<dist::FragmentOp, dist::SendOp, dist::RecvOp, dist::ServeOp>(op);
    return unlowered ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (!unlowered)
    return;
  std::string message;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error || !message.empty())
      return success();
    message = formatLocation(diag.getLocation()) + diag.str();
    for (const Diagnostic &note : diag.getNotes())
      if (!StringRef(note.str()).starts_with("see current operation"))
        message +=
            " (note: " + formatLocation(note.getLocation()) + note.str() + ")";
    return success();
  });
  if (failed(dist::verifyPrograms(module)))
    failOnEveryRank("'" + inputFile +
                    "' fails dist-verify's check of its "
                    "placed programs: " +
                    (message.empty() ? std::string("see above") : message));
}

/// readStep for placed programs (an MPMD step): every device runs the
/// program placed on it; `entry` is set to this rank's program while it is
/// still a function with a body.
static train::StepSignature readProgramsStep(ModuleOp module,
                                             func::FuncOp &entry) {
  if (!entryName.empty())
    fail("'" + inputFile +
         "' is a step of placed programs (one per pipeline stage or server), "
         "which dist-run runs together: drop --entry");
  checkPrograms(module);
  if (failed(train::recordStepSignature(module)))
    fail("cannot record the step (see the diagnostics above)");
  FailureOr<train::StepSignature> step = train::readStepSignature(module);
  if (failed(step))
    fail("cannot read the step's record (see the diagnostics above)");
  if (!step->isMPMD())
    fail("'" + inputFile + "' records no placed programs");
  checkWorldSize(*step);
  const train::StepSignature::Program *program =
      step->getProgram(distrt_rank());
  if (!program)
    fail("device " + llvm::Twine(distrt_rank()) +
         " runs none of the step's programs");
  entry = module.lookupSymbol<func::FuncOp>(program->entry);
  if (entry && entry.isExternal())
    entry = nullptr;
  return std::move(*step);
}

/// The step and how its arrays are laid out. Lowering removes the
/// function's roles, names and shardings and the mesh, so they are read
/// from the module's record (train.step), which dist-to-runtime and
/// dist-lower-cpu write and which is written here for a step not lowered
/// yet. `entry` is set to the step function while it is still one (its ops
/// give the ranges of labels and token ids), else null.
static train::StepSignature readStep(ModuleOp module, func::FuncOp &entry) {
  // Placed programs (a pipeline, a parameter server) are one step.
  bool placed = llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
    return f->hasAttr(dist::DistDialect::kPlaceAttrName);
  });
  if (auto recorded = module->getAttrOfType<DictionaryAttr>(
          train::TrainDialect::kStepAttrName))
    placed |= recorded.contains("programs");
  if (placed)
    return readProgramsStep(module, entry);
  SmallVector<std::string> steps;
  module->walk([&](func::FuncOp func) {
    if (entryName.empty() ? train::TrainingStep::isTrainingStep(func) &&
                                !train::TrainingStep::isEvalFunction(func)
                          : func.getSymName() == entryName) {
      entry = func;
      steps.push_back(func.getSymName().str());
    }
  });
  if (steps.size() > 1)
    fail("several functions are training steps (" + llvm::join(steps, ", ") +
         "): pick one with --entry");
  bool recorded = module->hasAttr(train::TrainDialect::kStepAttrName);
  if (!entry && !recorded)
    fail(entryName.empty() ? "no function has train.role arguments"
                           : "no function '" + entryName + "'");
  if (!recorded &&
      failed(train::recordStepSignature(module, entry.getSymName())))
    fail("cannot record the step (see the diagnostics above)");
  FailureOr<train::StepSignature> step = train::readStepSignature(module);
  if (failed(step))
    fail("cannot read the step's record (see the diagnostics above)");
  if (!entryName.empty() && step->entry != entryName)
    fail("'" + inputFile + "' records the step '" + step->entry +
         "', not --entry '" + entryName + "'");
  if (entry && (entry.getSymName() != step->entry || entry.isExternal()))
    entry = nullptr;
  checkWorldSize(*step);
  return std::move(*step);
}

/// The rank whose results hold the loss: 0, or for an MPMD step the first
/// device of the program that returns it.
static int64_t getLossRank(const train::StepSignature &step) {
  for (const train::StepSignature::Program &program : step.programs)
    for (const train::StepSignature::Value &result : program.results)
      if (result.role == train::Role::loss)
        return program.devices.front();
  return 0;
}

/// --init-state / --init-data: writes deterministic arrays of the global
/// shapes (rank 0).
static void writeInitialArrays(func::FuncOp entry, ModuleOp module,
                               ArrayRef<Binding> args) {
  if (!entry)
    fail("--init-state and --init-data read the step's ops (the labels' "
         "range, normalization scales), which '" +
         inputFile +
         "' has lowered: write them from the module before lowering");
  std::mt19937_64 random(seed);
  Arrays initState, initData;
  // The batch only with --init-data (the state needs no label range).
  for (const Binding &arg : args)
    if (!isData(arg) || !initDataPath.empty())
      (isData(arg) ? initData : initState)[arg.value->name] =
          initialize(entry, module, arg, args, random);
  writeOutput(initStatePath, initState);
  writeOutput(initDataPath, initData);
}

/// Copies this rank's block of each argument's global array into it, once
/// the array's name, type, shape and (for labels and token ids) range are
/// checked.
static void bindInputs(func::FuncOp entry, ModuleOp module,
                       std::vector<Binding> &args, Arrays &state,
                       Arrays &data) {
  for (Binding &arg : args) {
    const train::StepSignature::Value &value = *arg.value;
    // With a dataset, the batches come step by step.
    if (isData(arg) && !datasetPath.empty())
      continue;
    Arrays &source = isData(arg) ? data : state;
    auto it = source.find(value.name);
    if (it == source.end() && (isData(arg) ? dataPath : statePath).empty())
      fail(llvm::Twine("the step takes '") + value.name + "' (" +
           (value.role ? train::stringifyRole(*value.role) : "no role") +
           ") but no " +
           (isData(arg) ? "--data is given (an .npz of the batch's inputs "
                          "and labels, or a --dataset directory)"
                        : "--state is given (an .npz of the step's params, "
                          "optimizer state and hyperparameters; dist-run "
                          "--init-state writes one)"));
    if (it == source.end())
      fail("'" + value.name + "' is missing from " +
           (isData(arg) ? "--data '" + dataPath : "--state '" + statePath) +
           "'");
    Array &global = it->second;
    if (global.dtype != arg.dtype || global.shape != arg.globalShape)
      fail("'" + value.name + "' is " + global.dtype + " [" +
           formatShape(global.shape) + "] but the step takes " + arg.dtype +
           " [" + formatShape(arg.globalShape) + "]");
    if (std::optional<IndexRange> range = getIndexRange(entry, arg, args))
      checkIndexRange(arg, global, *range);
    copyBlock(global, arg.local, arg.offsets, /*toGlobal=*/false);
  }
}

/// --export: the newest complete checkpoint as one npz.
static int exportCheckpoint() {
  checkOutputs();
  Arrays arrays;
  std::string path;
  if (!CheckpointDir(checkpointDir, 0).exportNewest(arrays, path))
    fail("--checkpoint-dir '" + checkpointDir +
         "' holds no complete checkpoint");
  writeOutput(exportPath, arrays);
  llvm::outs() << "exported " << path << " to " << exportPath << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  installFailureHandlers(/*runtimeIsStarted=*/false);
  parseCommandLine(argc, argv);
  protectInputs();
  if (!exportPath.empty())
    return exportCheckpoint();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // A step allocates and frees the same large buffers every time: keep
  // them in the heap instead of mapping fresh (zeroed, page-faulting)
  // memory for each (the transformer block spent ~15% of a step in page
  // faults).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  DialectRegistry registry;
  dist::registerAllDialects(registry);
  dist::registerAllTranslations(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  uint64_t moduleHash = 0;
  OwningOpRef<ModuleOp> module = loadModule(context, moduleHash);
  // A machine without a GPU says so before the runtime starts.
  if (device == Device::cuda)
    CudaDevice::load(getLibDirectory(argv[0]));
  std::string backend = startRuntime(*module);
  int64_t rank = distrt_rank();
  if (rank == 0)
    checkOutputs();
  // The events: rank 0 writes them; a failing rank appends its error.
  EventStream events;
  if (!eventsPath.empty()) {
    if (rank == 0)
      if (llvm::Error error = events.open(eventsPath, resume))
        fail(llvm::toString(std::move(error)));
    if (llvm::Error error =
            checkOutputTarget("--events", eventsPath, OutputKind::stream))
      llvm::consumeError(std::move(error));
    else
      setErrorEventsPath(eventsPath);
  }
  auto emit = [&](llvm::json::Object event) {
    if (llvm::Error error = events.write(event))
      fail(llvm::toString(std::move(error)));
  };

  // The inputs, and the ranks' agreement on everything they run.
  bool initializing = !initStatePath.empty() || !initDataPath.empty();
  Arrays state, data;
  if (!initializing) {
    readInput(statePath, state);
    readInput(dataPath, data);
  }
  checkAgreement(moduleHash, backend, state, data);
  setThreads(numThreads.getNumOccurrences()
                 ? std::optional<unsigned>(numThreads)
                 : std::nullopt);

  func::FuncOp entry;
  train::StepSignature wholeStep = readStep(*module, entry);
  checkClusterLayout(wholeStep);
  // What this rank runs (an MPMD step: its program).
  train::StepSignature step = wholeStep.getDeviceStep(rank);
  std::vector<Binding> args;
  for (const train::StepSignature::Value &value : step.arguments) {
    if (value.name.empty() || (initializing && !value.role))
      fail("argument #" + llvm::Twine(value.index) + " has no train.name" +
           (initializing ? " or train.role" : ""));
    args.push_back(bind(value, step, rank));
  }
  if (initializing) {
    writeInitialArrays(entry, *module, args);
    distrt_finalize();
    return 0;
  }
  // The step's contract first (its results are fed back), then the arrays.
  checkStepContract(step);
  for (const train::StepSignature::Program &program : wholeStep.programs)
    checkStepContract(wholeStep.getDeviceStep(program.devices.front()));
  bindInputs(entry, *module, args, state, data);
  std::vector<Binding> results;
  for (const train::StepSignature::Value &value : step.results)
    results.push_back(bind(value, step, rank));

  // The batches: from --data (the same every step) or the dataset.
  std::unique_ptr<Dataset> dataset;
  RunPosition position;
  uint64_t totalSteps = numSteps;
  if (!datasetPath.empty()) {
    dataset = std::make_unique<Dataset>(
        "--dataset", datasetPath, getDataSpecs(wholeStep), seed, shuffleData);
    for (Binding &arg : args)
      if (isData(arg))
        if (std::optional<IndexRange> range = getIndexRange(entry, arg, args))
          dataset->checkRange(arg, *range);
    position.dataset = getCanonicalPath(datasetPath);
    position.samples = dataset->getNumSamples();
    position.batch = dataset->getBatchSize();
    position.seed = seed;
    position.shuffle = shuffleData;
    if (numEpochs.getNumOccurrences())
      totalSteps = uint64_t(numEpochs) * dataset->getStepsPerEpoch();
    else if (!numSteps.getNumOccurrences())
      totalSteps = dataset->getStepsPerEpoch();
  }
  std::unique_ptr<Evaluation> evaluation;
  if (!evalDatasetPath.empty())
    evaluation = setUpEvaluation(
        wholeStep, args, state, *module,
        {inputFile, statePath, evalDatasetPath, collectiveTimeout});
  // Checkpoints, and where the run starts.
  std::unique_ptr<CheckpointDir> checkpoints;
  std::vector<float> losses;
  if (!checkpointDir.empty()) {
    checkpoints =
        std::make_unique<CheckpointDir>(checkpointDir, keepCheckpoints);
    checkpoints->open();
  }
  // What fed the batches, for the checkpoints (rank 0 writes and compares
  // it; one pass over a dataset's files).
  if (checkpoints && rank == 0) {
    uint64_t fingerprint = 0;
    if (datasetPath.empty()) {
      position.dataSource = "--data '" + dataPath + "'";
      fingerprint = hashArrays(data);
    } else {
      position.dataSource = "--dataset '" + datasetPath + "'";
      std::vector<std::string> names;
      for (const DataSpec &spec : getDataSpecs(wholeStep))
        names.push_back(spec.name);
      std::string error;
      if (!hashDataset(datasetPath, names, fingerprint, error))
        fail(error);
    }
    position.dataFingerprint = formatFingerprint(fingerprint);
  }
  if (resume)
    position = checkpoints->resume(position, args, losses, totalSteps,
                                   allowDataChange);

  if (gpuMapped && profileOps)
    fail("--profile does not apply to --gpu-mapped (its nests have no "
         "profile brackets)");
  CompileOptions compileOptions{
      backend,  optLevel, opsPerFunction, profileOps, parallelMinIterations,
      gpuMapped};
  CompileCache cache;
  if (useCache) {
    cache.directory = cacheDir.empty() ? getDefaultCacheDirectory() : cacheDir;
    if (cache.directory.empty() && rank == 0)
      warn("no compile cache: no --cache-dir, DISTOPT_CACHE_DIR, "
           "XDG_CACHE_HOME or home directory");
    // The entry too: recording the step marks it for the C interface; and
    // of placed programs, this rank's (the only one compiled).
    cache.key = getCacheKey(moduleHash ^ hashText(wholeStep.entry) ^
                                (hashText(step.entry) << 1),
                            compileOptions, argv[0]);
  }
  // Placed programs: this rank compiles its own only (a 2-stage pipeline's
  // ranks each compiled both stages: twice the code, on cores they share).
  for (const train::StepSignature::Program &program : wholeStep.programs)
    if (program.entry != step.entry)
      if (auto other = module->lookupSymbol<func::FuncOp>(program.entry))
        other.erase();
  std::unique_ptr<CompiledStep> compiled =
      compileStep(*module, compileOptions, argv[0], cache);
  // Run. Subnormal operands cost x86 cores up to ~100 cycles per
  // operation: the transformer block's mirrored step went from 38 to 70 ms
  // over 50 steps as its softmax tails and Adam moments became subnormal.
  // The OpenMP team's workers, started by the step's first parallel loop
  // or product, take the mode from this thread (libomp copies the
  // master's MXCSR at every fork); OpenBLAS runs no threads of its own.
#if defined(__SSE__)
  if (flushDenormals)
    _mm_setcsr(_mm_getcsr() | _MM_FLUSH_ZERO_ON | 0x0040 /*DAZ*/);
#endif
  raiseForTest("step");
  if (!tracePath.empty())
    distrt_trace_enable(1);
  std::unique_ptr<StepProfile> profile;
  if (profileOps)
    profile = std::make_unique<StepProfile>(*module);
  RunHooks hooks;
  hooks.firstStep = position.step;
  hooks.stopOnNonFinite = onNonFinite == OnNonFinite::stop;
  hooks.beforeStep = [&](uint64_t s) {
    raiseForTest("step" + std::to_string(s + 1));
    if (dataset)
      for (Binding &arg : args)
        if (isData(arg))
          dataset->fill(s, arg);
    if (profile)
      profile->beforeStep();
  };
  // After a step: every N steps and after the last, evaluate and save.
  auto isDue = [&](uint64_t done, unsigned every) {
    return done == totalSteps || (every && done % every == 0);
  };
  MetricsFile metrics(metricsPath, position.step > 0);
  // Events: the epoch of a step (0-based), a value JSON can hold, and the
  // learning rate when the step takes one.
  uint64_t stepsPerEpoch = dataset ? dataset->getStepsPerEpoch() : 0;
  auto epochOf = [&](uint64_t done) -> llvm::json::Value {
    if (!stepsPerEpoch)
      return nullptr;
    return (done - 1) / stepsPerEpoch;
  };
  auto number = [](double value) -> llvm::json::Value {
    if (!std::isfinite(value))
      return nullptr;
    return value;
  };
  const Binding *learningRate = nullptr;
  for (const Binding &arg : args)
    if (arg.value->role == train::Role::hyper &&
        (arg.value->name == "lr" || arg.value->name == "learning_rate") &&
        arg.local.getNumElements() == 1 &&
        (arg.dtype == "<f4" || arg.dtype == "<f8"))
      learningRate = &arg;
  auto readLearningRate = [&]() -> llvm::json::Value {
    if (!learningRate)
      return nullptr;
    const std::vector<char> &bytes = learningRate->local.bytes;
    if (learningRate->dtype == "<f4") {
      float value;
      std::memcpy(&value, bytes.data(), sizeof(value));
      return number(value);
    }
    double value;
    std::memcpy(&value, bytes.data(), sizeof(value));
    return number(value);
  };
  std::unique_ptr<ControlChannel> control;
  if (!controlPath.empty() && rank == 0)
    control = std::make_unique<ControlChannel>(controlPath);
  bool stoppedEarly = false;
  uint64_t stepsDone = position.step;
  hooks.afterStep = [&](const StepReport &report, ArrayRef<float> lossesSoFar) {
    uint64_t done = report.step;
    stepsDone = done;
    // (The first step of several, with its first-touch page faults, is
    // left out of the profile.)
    if (profile)
      profile->afterStep(report, done == hooks.firstStep + 1 &&
                                     totalSteps > hooks.firstStep + 1);
    metrics.writeStep(report);
    if (events.isOpen())
      emit(llvm::json::Object{{"event", "step"},
            {"step", done},
            {"epoch", epochOf(done)},
            {"loss", number(report.loss)},
            {"step_ms", report.ms},
            {"comm_ms", report.comm.comm_seconds * 1e3},
            {"collective_bytes", report.comm.collective_bytes},
            {"sent_bytes", report.comm.sent_bytes},
            {"peak_rss_mb", getPeakRssMiB()},
            {"lr", readLearningRate()}});
    if (evaluation && isDue(done, evalEvery))
      if (std::optional<EvaluationResult> result =
              evaluate(*compiled, *evaluation, args, done, metrics);
          result && events.isOpen())
        emit(llvm::json::Object{{"event", "eval"},
              {"step", done},
              {"epoch", epochOf(done)},
              {"loss", number(result->loss)},
              {"accuracy", result->accuracy ? number(*result->accuracy)
                                            : llvm::json::Value(nullptr)},
              {"samples", result->samples}});
    if (checkpoints && isDue(done, checkpointEvery)) {
      if (hooks.stopOnNonFinite)
        checkStateFinite(args, done,
                         "the checkpoint of step " + std::to_string(done));
      RunPosition now = position;
      now.step = done;
      checkpoints->save(now, args, wholeStep, lossesSoFar,
                        [] { raiseForTest("checkpoint"); });
      if (events.isOpen())
        emit(llvm::json::Object{{"event", "checkpoint"},
              {"step", done},
              {"dir", checkpoints->getCheckpointPath(done)}});
    }
    if (events.isOpen() && stepsPerEpoch && done % stepsPerEpoch == 0)
      emit(llvm::json::Object{{"event", "epoch_end"},
            {"epoch", done / stepsPerEpoch - 1},
            {"step", done}});
  };
  // --control: after each epoch but the last, rank 0's decision.
  if (!controlPath.empty())
    hooks.stopAfter = [&](uint64_t done) {
      if (done % stepsPerEpoch != 0 || done >= totalSteps)
        return false;
      bool goOn = true;
      if (control) {
        std::string warning;
        llvm::Expected<bool> decision = control->readDecision(warning);
        if (!decision)
          fail(llvm::toString(decision.takeError()));
        if (!warning.empty())
          warn(warning);
        goOn = *decision;
      }
      llvm::Expected<bool> shared = broadcastDecision(goOn, collectiveTimeout);
      if (!shared)
        fail(llvm::toString(shared.takeError()));
      stoppedEarly = !*shared;
      if (stoppedEarly && rank == 0)
        llvm::outs() << "stopping after epoch " << done / stepsPerEpoch
                     << " of " << totalSteps / stepsPerEpoch
                     << ": --control says stop\n";
      llvm::outs().flush();
      return stoppedEarly;
    };
  if (events.isOpen()) {
    auto orNull = [](bool known, int64_t value) -> llvm::json::Value {
      if (!known)
        return nullptr;
      return value;
    };
    uint64_t epochs = numEpochs.getNumOccurrences() ? uint64_t(numEpochs)
                      : dataset && !numSteps.getNumOccurrences() ? 1
                                                                 : 0;
    emit(llvm::json::Object{{"event", "start"},
          {"world_size", distrt_size()},
          {"first_step", position.step},
          {"steps", totalSteps},
          {"steps_per_epoch", orNull(dataset != nullptr, stepsPerEpoch)},
          {"epochs", orNull(epochs != 0, epochs)},
          {"batch", orNull(dataset != nullptr, position.batch)},
          {"samples", orNull(dataset != nullptr, position.samples)},
          {"resumed_from", orNull(position.step > 0, position.step)}});
  }
  losses = runSteps(*compiled, step.entry, args, results, totalSteps,
                    getLossRank(wholeStep), hooks, std::move(losses));

  if (profile && rank == 0)
    profile->print(llvm::outs());
  // Gather the state to rank 0 and write it with the losses.
  if (hooks.stopOnNonFinite && !outPath.empty())
    checkStateFinite(args, stepsDone, "--out '" + outPath + "'");
  Arrays out = gatherState(args, wholeStep);
  out["loss"] = makeFloatArray(losses);
  writeOutput(outPath, out);
  if (!tracePath.empty())
    writeTrace(tracePath);
  if (events.isOpen())
    emit(llvm::json::Object{{"event", "end"}, {"step", stepsDone}, {"stopped_early", stoppedEarly}});
  if (distrt_finalize() != 0)
    fail(getRuntimeError());
  return 0;
}
