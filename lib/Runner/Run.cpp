//===- Run.cpp - a training run as a library call -------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// run(): what dist-run did in its main, with every failure returned. The
// order is dist-run's: the options' checks, the inputs protected from the
// outputs, the module, the runtime, the outputs checked (rank 0), the
// inputs read and agreed on, the step read and bound, the dataset, the
// evaluation, the checkpoints (and the resume), the compile, the steps with
// their events, and the state gathered and written.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Run.h"
#include "StepLoading.h"

#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/InitAll.h"
#include "distopt/Runner/Agreement.h"
#include "distopt/Runner/Bindings.h"
#include "distopt/Runner/Checkpoint.h"
#include "distopt/Runner/Cluster.h"
#include "distopt/Runner/CudaDevice.h"
#include "distopt/Runner/Dataset.h"
#include "distopt/Runner/Evaluation.h"
#include "distopt/Runner/Events.h"
#include "distopt/Runner/Metrics.h"
#include "distopt/Runner/Npz.h"
#include "distopt/Runner/Profile.h"
#include "distopt/Runner/RunOptions.h"
#include "distopt/Runner/Runner.h"
#include "distopt/Runner/StepInputs.h"
#include "distopt/Runner/Trace.h"
#include "distopt/Runtime/distrt.h"
#include "distopt/Support/SafeOutput.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/TargetSelect.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cmath>
#include <csignal>
#include <cstring>
#include <malloc.h>
#include <random>

#define DEBUG_TYPE "distopt-runner"

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

/// What run() and the initializers share: the module parsed, the runtime
/// started, the step read.
struct LoadedStep {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  uint64_t moduleHash = 0;
  std::string backend;
  func::FuncOp entry;
  train::StepSignature wholeStep, step;
};

/// Loads the step of `config` and starts the runtime (telling `observer`).
static llvm::Error loadStep(const RunConfig &config, RunObserver *observer,
                            LoadedStep &loaded) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  dist::registerAllDialects(registry);
  dist::registerAllTranslations(registry);
  loaded.context = std::make_unique<MLIRContext>(registry);
  loaded.context->loadAllAvailableDialects();
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      loadModule(*loaded.context, config, loaded.moduleHash);
  if (!module)
    return module.takeError();
  loaded.module = std::move(*module);
  // A machine without a GPU says so before the runtime starts.
  if (config.device == Device::cuda)
    if (llvm::Expected<CudaDevice *> cuda =
            CudaDevice::load(getLibDirectory(config.toolPath.c_str()));
        !cuda)
      return cuda.takeError();
  llvm::Expected<std::string> backend = startRuntime(*loaded.module, config);
  if (!backend)
    return backend.takeError();
  loaded.backend = *backend;
  if (observer)
    observer->onRuntimeStarted(distrt_rank(), distrt_size());
  return llvm::Error::success();
}

/// Reads the step of `loaded`'s module and this rank's part of it.
static llvm::Error readLoadedStep(const RunConfig &config, LoadedStep &loaded) {
  llvm::Expected<train::StepSignature> whole =
      readStep(*loaded.module, config, loaded.entry);
  if (!whole)
    return whole.takeError();
  loaded.wholeStep = std::move(*whole);
  if (llvm::Error error = checkClusterLayout(loaded.wholeStep))
    return error;
  // What this rank runs (an MPMD step: its program).
  loaded.step = loaded.wholeStep.getDeviceStep(distrt_rank());
  return llvm::Error::success();
}

/// Ends the runtime after `error` when this process is the whole job (a
/// later run() may start it again); several ranks are left to the caller.
static llvm::Error endAfterError(llvm::Error error) {
  if (isRuntimeStarted() && distrt_size() == 1) {
    distrt_finalize();
    noteRuntimeStarted(false);
  }
  return error;
}

llvm::Expected<std::pair<Arrays, Arrays>>
distopt::runner::initStateAndData(const RunConfig &config, bool withData) {
  bool data = withData;
  LoadedStep loaded;
  auto body = [&]() -> llvm::Expected<std::pair<Arrays, Arrays>> {
    if (llvm::Error error = loadStep(config, nullptr, loaded))
      return std::move(error);
    if (llvm::Error error = readLoadedStep(config, loaded))
      return std::move(error);
    std::vector<Binding> args;
    if (llvm::Error error =
            bindValues(loaded.step.arguments, loaded.step, distrt_rank(),
                       /*initializing=*/true, args))
      return std::move(error);
    if (!loaded.entry)
      return makeError("--init-state and --init-data read the step's ops "
                       "(the labels' range, normalization scales), which '" +
                       config.modulePath +
                       "' has lowered: write them from the module before "
                       "lowering");
    std::mt19937_64 random(config.seed);
    Arrays state, batch;
    // The same draws as dist-run --init-state --init-data: the state's
    // and the batch's arrays in the arguments' order.
    for (const Binding &arg : args) {
      if (isData(arg) && !data)
        continue;
      llvm::Expected<Array> array =
          initialize(loaded.entry, *loaded.module, arg, args, random);
      if (!array)
        return array.takeError();
      (isData(arg) ? batch : state)[arg.value->name] = std::move(*array);
    }
    return std::pair(std::move(state), std::move(batch));
  };
  llvm::Expected<std::pair<Arrays, Arrays>> arrays = body();
  if (!arrays)
    return endAfterError(arrays.takeError());
  if (distrt_finalize() != 0)
    return makeRuntimeError();
  noteRuntimeStarted(false);
  return arrays;
}

llvm::Expected<Arrays> distopt::runner::initState(const RunConfig &config) {
  llvm::Expected<std::pair<Arrays, Arrays>> arrays =
      initStateAndData(config, /*withData=*/false);
  if (!arrays)
    return arrays.takeError();
  return std::move(arrays->first);
}

llvm::Expected<Arrays> distopt::runner::initData(const RunConfig &config) {
  llvm::Expected<std::pair<Arrays, Arrays>> arrays =
      initStateAndData(config, /*withData=*/true);
  if (!arrays)
    return arrays.takeError();
  return std::move(arrays->second);
}

llvm::Expected<Arrays>
distopt::runner::readNewestCheckpoint(llvm::StringRef checkpointDir,
                                      std::string *exported) {
  Arrays arrays;
  std::string path;
  if (!CheckpointDir(checkpointDir.str(), 0).exportNewest(arrays, path))
    return makeError("--checkpoint-dir '" + checkpointDir +
                     "' holds no complete checkpoint");
  if (exported)
    *exported = path;
  return std::move(arrays);
}

llvm::Expected<std::string>
distopt::runner::exportCheckpoint(llvm::StringRef checkpointDir,
                                  llvm::StringRef outPath) {
  if (llvm::Error error = checkOutputs({{"--export", outPath.str()}}, "", ""))
    return std::move(error);
  std::string path;
  llvm::Expected<Arrays> arrays = readNewestCheckpoint(checkpointDir, &path);
  if (!arrays)
    return arrays.takeError();
  std::string error;
  if (!writeNpz(outPath.str(), *arrays, error))
    return makeError(error);
  return path;
}

//===----------------------------------------------------------------------===//
// run()
//===----------------------------------------------------------------------===//

namespace {
/// The caller's observer and the --events/--control one, as one.
class Observers {
public:
  Observers(RunObserver *caller, EventFileObserver *files)
      : caller(caller), files(files) {}
  bool any() const { return caller || files; }
  llvm::Error emit(const llvm::json::Object &event) {
    for (RunObserver *observer : {(RunObserver *)files, caller})
      if (observer) {
        observer->onEvent(event);
        if (llvm::Error error = observer->takeError())
          return error;
      }
    return llvm::Error::success();
  }
  bool stopRequested() { return caller && caller->stopRequested(); }
  /// Rank 0: whether every observer says go on after `epoch`.
  llvm::Expected<bool> continueAfterEpoch(uint64_t epoch) {
    bool goOn = true;
    for (RunObserver *observer : {(RunObserver *)files, caller})
      if (observer && goOn) {
        llvm::Expected<bool> answer = observer->continueAfterEpoch(epoch);
        if (!answer)
          return answer.takeError();
        goOn = *answer;
      }
    return goOn;
  }

private:
  RunObserver *caller;
  EventFileObserver *files;
};
} // namespace

/// A value JSON can hold: null for a NaN or an infinity.
static llvm::json::Value number(double value) {
  if (!std::isfinite(value))
    return nullptr;
  return value;
}

/// The scalar hyperparameter named lr or learning_rate, if the step takes
/// one (this rank's argument).
static const Binding *findLearningRate(const std::vector<Binding> &args) {
  for (const Binding &arg : args)
    if (arg.value->role == train::Role::hyper &&
        (arg.value->name == "lr" || arg.value->name == "learning_rate") &&
        arg.local.getNumElements() == 1 &&
        (arg.dtype == "<f4" || arg.dtype == "<f8"))
      return &arg;
  return nullptr;
}

static llvm::json::Value readLearningRate(const Binding *binding) {
  if (!binding)
    return nullptr;
  const std::vector<char> &bytes = binding->local.bytes;
  if (binding->dtype == "<f4") {
    float value;
    std::memcpy(&value, bytes.data(), sizeof(value));
    return number(value);
  }
  double value;
  std::memcpy(&value, bytes.data(), sizeof(value));
  return number(value);
}

static llvm::Expected<RunResult>
runLoaded(const RunConfig &config, RunObserver *observer, LoadedStep &loaded) {
  if (llvm::Error error = loadStep(config, observer, loaded))
    return std::move(error);
  int64_t rank = distrt_rank();
  TestRaise raise = cantFail(parseTestRaise(config.testRaise));
  if (rank == 0)
    if (llvm::Error error =
            checkOutputs({{"--out", config.outPath},
                          {"--metrics", config.metricsPath},
                          {"--trace", config.tracePath}},
                         config.checkpointDir, config.eventsPath))
      return std::move(error);
  // --events and --control beside the caller's observer.
  std::unique_ptr<EventFileObserver> files;
  if (!config.eventsPath.empty() || !config.controlPath.empty()) {
    files = std::make_unique<EventFileObserver>(
        config.eventsPath, config.controlPath, config.resume);
    if (llvm::Error error = files->open())
      return std::move(error);
  }
  Observers observers(observer, files.get());

  // The inputs, and the ranks' agreement on everything they run.
  llvm::Expected<Arrays> stateRead = readInput(config.state, config.statePath);
  if (!stateRead)
    return stateRead.takeError();
  llvm::Expected<Arrays> dataRead = readInput(config.data, config.dataPath);
  if (!dataRead)
    return dataRead.takeError();
  Arrays state = std::move(*stateRead), data = std::move(*dataRead);
  if (llvm::Error error = checkAgreement(config, loaded.moduleHash,
                                         loaded.backend, state, data))
    return std::move(error);
  if (llvm::Error error = setThreads(config.numThreads, config.bindThreads))
    return std::move(error);
  if (llvm::Error error = readLoadedStep(config, loaded))
    return std::move(error);
  const train::StepSignature &wholeStep = loaded.wholeStep;
  const train::StepSignature &step = loaded.step;
  ModuleOp module = *loaded.module;
  func::FuncOp entry = loaded.entry;
  std::vector<Binding> args, results;
  if (llvm::Error error = bindValues(step.arguments, step, rank,
                                     /*initializing=*/false, args))
    return std::move(error);
  // The step's contract first (its results are fed back), then the arrays.
  if (llvm::Error error = checkStepContract(step))
    return std::move(error);
  for (const train::StepSignature::Program &program : wholeStep.programs)
    if (llvm::Error error =
            checkStepContract(wholeStep.getDeviceStep(program.devices.front())))
      return std::move(error);
  for (const train::StepSignature::Program &program : wholeStep.programs)
    for (const train::StepSignature::Value &value : program.arguments)
      if (llvm::Error error = checkBindable(value))
        return std::move(error);
  if (llvm::Error error = bindInputs(config, entry, args, state, data))
    return std::move(error);
  for (const train::StepSignature::Value &value : step.results) {
    if (llvm::Error error = checkBindable(value))
      return std::move(error);
    results.push_back(bind(value, step, rank));
  }

  // The batches: from --data (the same every step) or the dataset.
  std::unique_ptr<Dataset> dataset;
  RunPosition position;
  uint64_t totalSteps = config.steps.value_or(1);
  if (!config.datasetPath.empty()) {
    llvm::Expected<std::unique_ptr<Dataset>> opened =
        Dataset::open("--dataset", config.datasetPath, getDataSpecs(wholeStep),
                      config.seed, config.shuffle.value_or(true));
    if (!opened)
      return opened.takeError();
    dataset = std::move(*opened);
    for (Binding &arg : args)
      if (isData(arg))
        if (std::optional<IndexRange> range = getIndexRange(entry, arg, args))
          if (llvm::Error error = dataset->checkRange(arg, *range))
            return std::move(error);
    position.dataset = getCanonicalPath(config.datasetPath);
    position.samples = dataset->getNumSamples();
    position.batch = dataset->getBatchSize();
    position.seed = config.seed;
    position.shuffle = config.shuffle.value_or(true);
    if (config.epochs)
      totalSteps = *config.epochs * dataset->getStepsPerEpoch();
    else if (!config.steps)
      totalSteps = dataset->getStepsPerEpoch();
  }
  std::unique_ptr<Evaluation> evaluation;
  if (!config.evalDatasetPath.empty()) {
    llvm::Expected<std::unique_ptr<Evaluation>> setUp =
        setUpEvaluation(wholeStep, args, state, module,
                        {config.modulePath, config.statePath,
                         config.evalDatasetPath, config.collectiveTimeout});
    if (!setUp)
      return setUp.takeError();
    evaluation = std::move(*setUp);
    evaluation->print = config.print;
  }
  // Checkpoints, and where the run starts.
  std::unique_ptr<CheckpointDir> checkpoints;
  std::vector<float> losses;
  if (!config.checkpointDir.empty()) {
    checkpoints = std::make_unique<CheckpointDir>(config.checkpointDir,
                                                  config.keep.value_or(3));
    checkpoints->print = config.print;
    if (llvm::Error error = checkpoints->open())
      return std::move(error);
  }
  // What fed the batches, for the checkpoints (rank 0 writes and compares
  // it; one pass over a dataset's files).
  if (checkpoints && rank == 0) {
    uint64_t fingerprint = 0;
    if (config.datasetPath.empty()) {
      position.dataSource = "--data '" + config.dataPath + "'";
      fingerprint = hashArrays(data);
    } else {
      position.dataSource = "--dataset '" + config.datasetPath + "'";
      std::vector<std::string> names;
      for (const DataSpec &spec : getDataSpecs(wholeStep))
        names.push_back(spec.name);
      std::string error;
      if (!hashDataset(config.datasetPath, names, fingerprint, error))
        return makeError(error);
    }
    position.dataFingerprint = formatFingerprint(fingerprint);
  }
  RunResult result;
  if (config.resume) {
    llvm::Expected<RunPosition> resumed = checkpoints->resume(
        position, args, losses, totalSteps, config.allowDataChange);
    if (!resumed)
      return resumed.takeError();
    position = *resumed;
    if (position.step > 0)
      result.resumedFrom = position.step;
  }

  CompileOptions compileOptions;
  compileOptions.backend = loaded.backend;
  compileOptions.optLevel = config.optLevel;
  compileOptions.opsPerFunction = config.opsPerFunction;
  compileOptions.profile = config.profile;
  compileOptions.parallelMinIterations = config.parallelMinIterations;
  compileOptions.gpuMapped = config.gpuMapped;
  compileOptions.device = config.device;
  const char *toolPath = config.toolPath.c_str();
  CompileCache cache;
  if (config.useCache) {
    cache.directory =
        config.cacheDir.empty() ? getDefaultCacheDirectory() : config.cacheDir;
    if (cache.directory.empty() && rank == 0)
      warn("no compile cache: no --cache-dir, DISTOPT_CACHE_DIR, "
           "XDG_CACHE_HOME or home directory");
    // The entry too: recording the step marks it for the C interface; and
    // of placed programs, this rank's (the only one compiled).
    cache.key = getCacheKey(loaded.moduleHash ^ hashText(wholeStep.entry) ^
                                (hashText(step.entry) << 1),
                            compileOptions, toolPath);
  }
  // Placed programs: this rank compiles its own only (a 2-stage pipeline's
  // ranks each compiled both stages: twice the code, on cores they share).
  for (const train::StepSignature::Program &program : wholeStep.programs)
    if (program.entry != step.entry)
      if (auto other = module.lookupSymbol<func::FuncOp>(program.entry))
        other.erase();
  LLVM_DEBUG(llvm::dbgs() << "compiling '" << step.entry << "'\n");
  llvm::Expected<std::unique_ptr<CompiledStep>> compiledStep =
      compileStep(module, compileOptions, toolPath, cache);
  if (!compiledStep)
    return compiledStep.takeError();
  CompiledStep &compiled = **compiledStep;
  compiled.captureGraphs = config.stepGraphs;
  // Run. Subnormal operands cost x86 cores up to ~100 cycles per
  // operation: the transformer block's mirrored step went from 38 to 70 ms
  // over 50 steps as its softmax tails and Adam moments became subnormal.
  // The OpenMP team's workers, started by the step's first parallel loop
  // or product, take the mode from this thread (libomp copies the
  // master's MXCSR at every fork); OpenBLAS runs no threads of its own.
#if defined(__SSE__)
  unsigned savedCsr = _mm_getcsr();
  if (config.flushDenormals)
    _mm_setcsr(savedCsr | _MM_FLUSH_ZERO_ON | 0x0040 /*DAZ*/);
  auto restoreCsr = llvm::make_scope_exit([&] { _mm_setcsr(savedCsr); });
#endif
  raiseForTest(raise, "step");
  if (!config.tracePath.empty())
    distrt_trace_enable(1);
  std::unique_ptr<StepProfile> profile;
  if (config.profile) {
    llvm::Expected<std::unique_ptr<StepProfile>> created =
        StepProfile::create(module);
    if (!created)
      return created.takeError();
    profile = std::move(*created);
  }
  RunHooks hooks;
  hooks.firstStep = position.step;
  hooks.stopOnNonFinite = config.onNonFinite == OnNonFinite::stop;
  if (wholeStep.hasDynamicLossScale())
    hooks.lossScaleRank = getLossScaleRank(wholeStep);
  hooks.print = config.print;
  if (dataset) {
    hooks.isBatch = [](const Binding &arg) { return isData(arg); };
    hooks.fillBatch = [&](uint64_t s, const Binding &arg, char *target) {
      dataset->fill(s, arg, target);
    };
  }
  hooks.stageBatches = config.stageBatches;
  hooks.beforeStep = [&](uint64_t s) -> llvm::Error {
    raiseForTest(raise, "step" + std::to_string(s + 1));
    if (profile)
      profile->beforeStep();
    return llvm::Error::success();
  };
  // After a step: every N steps and after the last, evaluate and save.
  auto isDue = [&](uint64_t done, std::optional<uint64_t> every) {
    return done == totalSteps || (every && *every && done % *every == 0);
  };
  MetricsFile metrics;
  if (llvm::Error error = metrics.open(config.metricsPath, position.step > 0))
    return std::move(error);
  // Events (rank 0): the epoch of a step (0-based) and the learning rate.
  bool emitting = rank == 0 && observers.any();
  uint64_t stepsPerEpoch = dataset ? dataset->getStepsPerEpoch() : 0;
  auto epochOf = [&](uint64_t done) -> llvm::json::Value {
    if (!stepsPerEpoch)
      return nullptr;
    return (done - 1) / stepsPerEpoch;
  };
  const Binding *learningRate = findLearningRate(args);
  result.stepsDone = position.step;
  hooks.afterStep = [&](const StepReport &report,
                        ArrayRef<float> lossesSoFar) -> llvm::Error {
    uint64_t done = report.step;
    result.stepsDone = done;
    // (The first step of several, with its first-touch page faults, is
    // left out of the profile.)
    if (profile)
      profile->afterStep(report, done == hooks.firstStep + 1 &&
                                     totalSteps > hooks.firstStep + 1);
    metrics.writeStep(report);
    if (emitting) {
      llvm::json::Object event{
          {"event", "step"},
          {"step", done},
          {"epoch", epochOf(done)},
          {"loss", number(report.loss)},
          {"step_ms", report.ms},
          {"comm_ms", report.comm.comm_seconds * 1e3},
          {"collective_bytes", report.comm.collective_bytes},
          {"sent_bytes", report.comm.sent_bytes},
          {"peak_rss_mb", getPeakRssMiB()},
          {"lr", readLearningRate(learningRate)}};
      // On a device: what the runner copied to and from it (the state
      // stays there: after the first step only data and the loss move).
      if (report.device)
        event["device"] = llvm::json::Object{
            {"to_device_copies", report.device->toDevice},
            {"to_device_bytes", report.device->toDeviceBytes},
            {"to_host_copies", report.device->toHost},
            {"to_host_bytes", report.device->toHostBytes},
            {"on_device_copies", report.device->onDevice},
            {"staged_copies", report.device->staged},
            {"staged_bytes", report.device->stagedBytes},
            {"allocations", report.device->allocations},
            {"graph_captures", report.device->graphCaptures},
            {"graph_launches", report.device->graphLaunches}};
      // Dynamic loss scaling: the scale after the step, and whether the
      // step kept its parameters (a non-finite gradient).
      if (report.lossScale) {
        event["loss_scale"] = number(*report.lossScale);
        event["skipped"] = report.skipped;
      }
      if (llvm::Error error = observers.emit(std::move(event)))
        return error;
    }
    // (Evaluation and checkpoints read the state: on a device, it is
    // brought back first.)
    if ((evaluation && isDue(done, config.evalEvery)) ||
        (checkpoints && isDue(done, config.checkpointEvery)))
      if (llvm::Error error = pullState(compiled, args))
        return error;
    if (evaluation && isDue(done, config.evalEvery)) {
      llvm::Expected<std::optional<EvaluationResult>> evaluated =
          evaluate(compiled, *evaluation, args, done, metrics);
      if (!evaluated)
        return evaluated.takeError();
      if (*evaluated) {
        const EvaluationResult &found = **evaluated;
        EvaluationRecord record;
        record.step = done;
        if (stepsPerEpoch)
          record.epoch = (done - 1) / stepsPerEpoch;
        record.loss = found.loss;
        record.accuracy = found.accuracy;
        record.samples = found.samples;
        result.evaluations.push_back(record);
        if (emitting)
          if (llvm::Error error = observers.emit(llvm::json::Object{
                  {"event", "eval"},
                  {"step", done},
                  {"epoch", epochOf(done)},
                  {"loss", number(found.loss)},
                  {"accuracy", found.accuracy ? number(*found.accuracy)
                                              : llvm::json::Value(nullptr)},
                  {"samples", found.samples}}))
            return error;
      }
    }
    if (checkpoints && isDue(done, config.checkpointEvery)) {
      if (hooks.stopOnNonFinite)
        if (llvm::Error error = checkStateFinite(
                args, done, "the checkpoint of step " + std::to_string(done)))
          return error;
      RunPosition now = position;
      now.step = done;
      if (llvm::Error error =
              checkpoints->save(now, args, wholeStep, lossesSoFar,
                                [&] { raiseForTest(raise, "checkpoint"); }))
        return error;
      if (emitting)
        if (llvm::Error error = observers.emit(llvm::json::Object{
                {"event", "checkpoint"},
                {"step", done},
                {"dir", checkpoints->getCheckpointPath(done)}}))
          return error;
    }
    if (emitting && stepsPerEpoch && done % stepsPerEpoch == 0)
      if (llvm::Error error = observers.emit(
              llvm::json::Object{{"event", "epoch_end"},
                                 {"epoch", done / stepsPerEpoch - 1},
                                 {"step", done}}))
        return error;
    return llvm::Error::success();
  };
  // After each epoch but the last, rank 0's observers decide; every rank
  // follows.
  if (observers.any())
    hooks.stopAfter = [&](uint64_t done) -> llvm::Expected<bool> {
      if (done >= totalSteps)
        return false;
      bool requested = rank == 0 && observers.stopRequested();
      if (!stepsPerEpoch || done % stepsPerEpoch != 0) {
        // Between epochs only a single process stops (nothing to tell).
        if (!requested || distrt_size() != 1)
          return false;
        result.stoppedEarly = true;
        if (config.print) {
          llvm::outs() << "stopping after step " << done
                       << ": stop requested\n";
          llvm::outs().flush();
        }
        return true;
      }
      bool goOn = !requested;
      if (rank == 0 && goOn) {
        llvm::Expected<bool> decision =
            observers.continueAfterEpoch(done / stepsPerEpoch - 1);
        if (!decision)
          return decision.takeError();
        goOn = *decision;
      }
      llvm::Expected<bool> shared =
          broadcastDecision(goOn, config.collectiveTimeout);
      if (!shared)
        return shared.takeError();
      result.stoppedEarly = !*shared;
      if (result.stoppedEarly && rank == 0 && config.print) {
        llvm::outs() << "stopping after epoch " << done / stepsPerEpoch
                     << " of " << totalSteps / stepsPerEpoch << ": "
                     << (requested ? "stop requested" : "--control says stop")
                     << "\n";
        llvm::outs().flush();
      }
      return result.stoppedEarly;
    };
  if (emitting) {
    auto orNull = [](bool known, int64_t value) -> llvm::json::Value {
      if (!known)
        return nullptr;
      return value;
    };
    uint64_t epochs = config.epochs              ? *config.epochs
                      : dataset && !config.steps ? 1
                                                 : 0;
    if (llvm::Error error = observers.emit(llvm::json::Object{
            {"event", "start"},
            {"world_size", distrt_size()},
            {"first_step", position.step},
            {"steps", totalSteps},
            {"steps_per_epoch", orNull(dataset != nullptr, stepsPerEpoch)},
            {"epochs", orNull(epochs != 0, epochs)},
            {"batch", orNull(dataset != nullptr, position.batch)},
            {"samples", orNull(dataset != nullptr, position.samples)},
            {"resumed_from", orNull(position.step > 0, position.step)}}))
      return std::move(error);
  }
  llvm::Expected<std::vector<float>> ran =
      runSteps(compiled, step.entry, args, results, totalSteps,
               getLossRank(wholeStep), hooks, std::move(losses));
  if (!ran)
    return ran.takeError();
  result.losses = std::move(*ran);
  if (llvm::Error error = pullState(compiled, args))
    return std::move(error);

  if (profile && rank == 0 && config.print)
    profile->print(llvm::outs());
  // Gather the state to rank 0 and write it with the losses.
  if (hooks.stopOnNonFinite && !config.outPath.empty())
    if (llvm::Error error = checkStateFinite(args, result.stepsDone,
                                             "--out '" + config.outPath + "'"))
      return std::move(error);
  llvm::Expected<Arrays> gathered = gatherState(args, wholeStep);
  if (!gathered)
    return gathered.takeError();
  result.state = std::move(*gathered);
  if (rank == 0 && !config.outPath.empty()) {
    Arrays out = result.state;
    out["loss"] = makeFloatArray(result.losses);
    if (llvm::Error error = writeOutput(config.outPath, out, raise))
      return std::move(error);
  }
  if (!config.tracePath.empty())
    if (llvm::Error error = writeTrace(config.tracePath))
      return std::move(error);
  if (emitting)
    if (llvm::Error error = observers.emit(
            llvm::json::Object{{"event", "end"},
                               {"step", result.stepsDone},
                               {"stopped_early", result.stoppedEarly}}))
      return std::move(error);
  return std::move(result);
}

llvm::Expected<RunResult> distopt::runner::run(const RunConfig &config,
                                               RunObserver *observer) {
  if (llvm::Error error = checkRunConfig(config))
    return std::move(error);
  // The inputs are protected for this run only.
  size_t protectedBefore = getNumProtectedInputs();
  auto unprotect =
      llvm::make_scope_exit([&] { unprotectInputs(protectedBefore); });
  protectInputs(config);
  // A step allocates and frees the same large buffers every time: keep
  // them in the heap instead of mapping fresh (zeroed, page-faulting)
  // memory for each (the transformer block spent ~15% of a step in page
  // faults).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  LoadedStep loaded;
  llvm::Expected<RunResult> result = runLoaded(config, observer, loaded);
  if (!result)
    return endAfterError(result.takeError());
  if (distrt_finalize() != 0)
    return makeRuntimeError();
  noteRuntimeStarted(false);
  return result;
}
