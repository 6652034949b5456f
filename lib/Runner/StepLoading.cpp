//===- StepLoading.cpp - the step run() runs, read from its module --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "StepLoading.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Runner/Agreement.h"
#include "distopt/Runner/Npz.h"
#include "distopt/Runner/RunOptions.h"
#include "distopt/Runner/StepInputs.h"
#include "distopt/Runtime/distrt.h"
#include "distopt/Runtime/distrt_mlir.h"
#include "distopt/Support/DiagnosticText.h"
#include "distopt/Support/ParseSource.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#define DEBUG_TYPE "distopt-runner"

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

llvm::Expected<OwningOpRef<ModuleOp>>
distopt::runner::loadModule(MLIRContext &context, const RunConfig &config,
                            uint64_t &hash) {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  if (config.moduleText) {
    buffer = llvm::MemoryBuffer::getMemBufferCopy(*config.moduleText,
                                                  config.modulePath);
  } else {
    auto read = llvm::MemoryBuffer::getFileOrSTDIN(config.modulePath);
    if (!read)
      return makeError("cannot read '" + config.modulePath +
                       "': " + read.getError().message());
    buffer = std::move(*read);
  }
  hash = hashText(buffer->getBuffer());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  // Parse errors as FILE:LINE:COL: error: message: on stderr when the run
  // prints (dist-run), else in the error (the C API, Python).
  std::string diagnostics;
  dist::DiagnosticTextHandler handler(&context, [&](const std::string &text) {
    if (config.print)
      llvm::errs() << text << "\n";
    else
      diagnostics += "\n" + text;
  });
  OwningOpRef<ModuleOp> module = dist::parseUserSource(sourceMgr, &context);
  if (!module)
    return makeError("cannot parse '" + config.modulePath + "'" +
                     (diagnostics.empty() ? "" : ":" + diagnostics));
  // What placed programs were made from: nothing runs it.
  dist::erasePlacementSource(*module);
  return std::move(module);
}

std::string distopt::runner::getBackend(const RunConfig &config) {
  if (config.device == Device::cuda && config.backend == "auto")
    return "nccl";
  return config.backend;
}

llvm::Expected<std::string>
distopt::runner::startRuntime(ModuleOp module, const RunConfig &config) {
  std::string backend = getBackend(config);
  if (auto built = module->getAttrOfType<StringAttr>("distrt.backend")) {
    if (backend != "auto" && backend != built.getValue())
      return makeError("'" + config.modulePath + "' is built for the " +
                       built.getValue() + " backend, not --backend=" + backend);
    backend = built.getValue().str();
  }
  distrt_set_timeout(config.collectiveTimeout);
  LLVM_DEBUG(llvm::dbgs() << "starting the runtime with backend '" << backend
                          << "'\n");
  // distrt_mlir_init_backend's choice for "auto", with its failure
  // returned (that entry point ends the job on one).
  std::string chosen = backend;
  if (chosen == "auto") {
    const char *set = std::getenv("DISTRT_BACKEND");
    chosen = set ? set
             : std::getenv("PMI_RANK") || std::getenv("OMPI_COMM_WORLD_RANK")
                 ? "mpi"
                 : "local";
  }
  if (distrt_init(chosen.c_str()) != 0)
    return makeRuntimeError();
  noteRuntimeStarted(true);
  return backend;
}

/// The worlds a step runs on: an error unless it is `devices` processes.
static llvm::Error checkWorldSize(const train::StepSignature &step) {
  int64_t devices = step.getNumDevices(), worldSize = distrt_size();
  if (devices == worldSize)
    return llvm::Error::success();
  return makeError(
      llvm::Twine("the step runs on ") + llvm::Twine(devices) +
      " device(s) but there " +
      (worldSize == 1 ? "is 1 process"
                      : "are " + llvm::Twine(worldSize) + " processes") +
      (step.meshShape.empty() ? " (distribute it with a strategy first)" : ""));
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
/// otherwise wait out --collective-timeout. An error with dist-verify's
/// first error (and its notes) on one line.
static llvm::Error checkPrograms(ModuleOp module, const RunConfig &config) {
  bool unlowered = false;
  module.walk([&](Operation *op) {
    unlowered =
        isa<dist::FragmentOp, dist::SendOp, dist::RecvOp, dist::ServeOp>(op);
    return unlowered ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (!unlowered)
    return llvm::Error::success();
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
    return makeEveryRankError(
        "'" + config.modulePath +
        "' fails dist-verify's check of its placed programs: " +
        (message.empty() ? std::string("see above") : message));
  return llvm::Error::success();
}

/// readStep for placed programs (an MPMD step): every device runs the
/// program placed on it; `entry` is set to this rank's program while it is
/// still a function with a body.
static llvm::Expected<train::StepSignature>
readProgramsStep(ModuleOp module, const RunConfig &config,
                 func::FuncOp &entry) {
  if (!config.entry.empty())
    return makeError(
        "'" + config.modulePath +
        "' is a step of placed programs (one per pipeline stage or server), "
        "which dist-run runs together: drop --entry");
  if (llvm::Error error = checkPrograms(module, config))
    return std::move(error);
  if (failed(train::recordStepSignature(module)))
    return makeError("cannot record the step (see the diagnostics above)");
  FailureOr<train::StepSignature> step = train::readStepSignature(module);
  if (failed(step))
    return makeError(
        "cannot read the step's record (see the diagnostics above)");
  if (!step->isMPMD())
    return makeError("'" + config.modulePath + "' records no placed programs");
  if (llvm::Error error = checkWorldSize(*step))
    return std::move(error);
  const train::StepSignature::Program *program =
      step->getProgram(distrt_rank());
  if (!program)
    return makeError("device " + llvm::Twine(distrt_rank()) +
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
llvm::Expected<train::StepSignature>
distopt::runner::readStep(ModuleOp module, const RunConfig &config,
                          func::FuncOp &entry) {
  const std::string &entryName = config.entry;
  // Placed programs (a pipeline, a parameter server) are one step.
  bool placed = llvm::any_of(module.getOps<func::FuncOp>(), [](func::FuncOp f) {
    return f->hasAttr(dist::DistDialect::kPlaceAttrName);
  });
  if (auto recorded = module->getAttrOfType<DictionaryAttr>(
          train::TrainDialect::kStepAttrName))
    placed |= recorded.contains("programs");
  if (placed)
    return readProgramsStep(module, config, entry);
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
    return makeError("several functions are training steps (" +
                     llvm::join(steps, ", ") + "): pick one with --entry");
  bool recorded = module->hasAttr(train::TrainDialect::kStepAttrName);
  if (!entry && !recorded)
    return makeError(entryName.empty() ? "no function has train.role arguments"
                                       : "no function '" + entryName + "'");
  if (!recorded &&
      failed(train::recordStepSignature(module, entry.getSymName())))
    return makeError("cannot record the step (see the diagnostics above)");
  FailureOr<train::StepSignature> step = train::readStepSignature(module);
  if (failed(step))
    return makeError(
        "cannot read the step's record (see the diagnostics above)");
  if (!entryName.empty() && step->entry != entryName)
    return makeError("'" + config.modulePath + "' records the step '" +
                     step->entry + "', not --entry '" + entryName + "'");
  if (entry && (entry.getSymName() != step->entry || entry.isExternal()))
    entry = nullptr;
  if (llvm::Error error = checkWorldSize(*step))
    return std::move(error);
  LLVM_DEBUG(llvm::dbgs() << "step '" << step->entry << "' on "
                          << step->getNumDevices() << " device(s)\n");
  return std::move(*step);
}

int64_t distopt::runner::getLossRank(const train::StepSignature &step) {
  for (const train::StepSignature::Program &program : step.programs)
    for (const train::StepSignature::Value &result : program.results)
      if (result.role == train::Role::loss)
        return program.devices.front();
  return 0;
}

int64_t distopt::runner::getLossScaleRank(const train::StepSignature &step) {
  for (const train::StepSignature::Program &program : step.programs)
    for (const train::StepSignature::Value &arg : program.arguments)
      if (arg.name == train::TrainDialect::kLossScaleStateName)
        return program.devices.front();
  return 0;
}

//===----------------------------------------------------------------------===//
// Options, inputs and outputs
//===----------------------------------------------------------------------===//

llvm::Expected<TestRaise>
distopt::runner::parseTestRaise(llvm::StringRef text) {
  TestRaise raise;
  if (text.empty())
    return raise;
  SmallVector<StringRef> fields;
  text.split(fields, ':');
  if (fields.size() == 3)
    raise.signal = llvm::StringSwitch<int>(fields[1])
                       .Case("STOP", SIGSTOP)
                       .Case("TERM", SIGTERM)
                       .Case("INT", SIGINT)
                       .Case("KILL", SIGKILL)
                       .Default(0);
  uint64_t stepNumber;
  if (fields.size() != 3 || fields[0].getAsInteger(10, raise.rank) ||
      !raise.signal ||
      (fields[2] != "step" && fields[2] != "write" &&
       fields[2] != "checkpoint" &&
       !(fields[2].starts_with("step") &&
         !fields[2].drop_front(4).getAsInteger(10, stepNumber))))
    return makeError("malformed --test-raise '" + text +
                     "' (expected RANK:STOP|TERM|INT|KILL:step|stepN|write|"
                     "checkpoint)");
  raise.point = fields[2].str();
  return raise;
}

/// --test-raise: raises its signal on its rank at `point`.
void distopt::runner::raiseForTest(const TestRaise &raise,
                                   llvm::StringRef point) {
  if (raise.signal && raise.point == point && raise.rank == distrt_rank()) {
    llvm::outs().flush();
    std::raise(raise.signal);
  }
}

llvm::Error distopt::runner::checkRunConfig(const RunConfig &config) {
  const std::string &backend = config.backend;
  if (backend != "auto" && backend != "mpi" && backend != "local" &&
      backend != "nccl")
    return makeError("unknown --backend '" + backend +
                     "' (expected auto, mpi, local or nccl)");
  if (config.device == Device::cuda) {
    // Collectives move device buffers: only NCCL can.
    if (backend != "auto" && backend != "nccl")
      return makeError("--device=cuda moves device buffers, which only "
                       "--backend=nccl can (not '" +
                       backend + "')");
    if (config.gpuMapped || config.profile)
      return makeError(
          llvm::Twine(config.gpuMapped ? "--gpu-mapped" : "--profile") +
          " does not apply to --device=cuda");
  } else if (backend == "nccl") {
    return makeError(
        "--backend=nccl moves device buffers: it needs --device=cuda");
  }
  if (config.modulePath.empty() && !config.moduleText)
    return makeError("no training step given (dist-run MODULE.mlir ...)");
  bool hasData = !config.dataPath.empty() || config.data;
  if (!config.datasetPath.empty() && hasData)
    return makeError("--data and --dataset both give the batches: use one");
  if (config.datasetPath.empty()) {
    if (config.epochs)
      return makeError(
          "--epochs counts passes over a --dataset, and none is given");
    if (config.shuffle)
      return makeError("--shuffle shuffles a --dataset, and none is given");
  } else if (config.epochs && config.steps) {
    return makeError("give --steps or --epochs, not both");
  }
  if (!config.controlPath.empty() && config.datasetPath.empty())
    return makeError("--control decides after each epoch of a --dataset, and "
                     "none is given");
  if (config.evalDatasetPath.empty() && config.evalEvery)
    return makeError("--eval-every needs --eval-dataset");
  if (config.checkpointDir.empty())
    for (auto [option, given] :
         {std::pair{"--checkpoint-every", config.checkpointEvery.has_value()},
          std::pair{"--keep", config.keep.has_value()},
          std::pair{"--resume", config.resume}})
      if (given)
        return makeError(llvm::Twine(option) + " needs --checkpoint-dir");
  if (config.allowDataChange && !config.resume)
    return makeError("--allow-data-change applies to a --resume");
  if (config.optLevel > 3)
    return makeError("--opt-level must be 0, 1, 2 or 3, not " +
                     llvm::Twine(config.optLevel));
  if (!(config.collectiveTimeout >= 0) ||
      std::isinf(config.collectiveTimeout)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", config.collectiveTimeout);
    return makeError("--collective-timeout must be a number of seconds >= 0 "
                     "(0: none), not '" +
                     llvm::Twine(text) + "'");
  }
  if (config.gpuMapped && config.profile)
    return makeError("--profile does not apply to --gpu-mapped (its nests "
                     "have no profile brackets)");
  if (llvm::Expected<TestRaise> raise = parseTestRaise(config.testRaise);
      !raise)
    return raise.takeError();
  return llvm::Error::success();
}

/// Registers the inputs no output may overwrite (SafeOutput.h).
void distopt::runner::protectInputs(const RunConfig &config) {
  if (!config.state)
    protectInput("--state", config.statePath);
  if (!config.data)
    protectInput("--data", config.dataPath);
  if (!config.moduleText)
    protectInput("the module", config.modulePath);
  protectInput("--dataset", config.datasetPath);
  protectInput("--eval-dataset", config.evalDatasetPath);
  protectInput("--checkpoint-dir", config.checkpointDir);
  protectInput("--control", config.controlPath);
}

/// Checks, before anything runs, that the outputs (`outputs`: option and
/// path) overwrite no input or anything but a regular file and can be
/// written (rank 0 writes them), that --events is a regular file or a
/// FIFO, and that --checkpoint-dir is a directory or nothing.
llvm::Error distopt::runner::checkOutputs(
    llvm::ArrayRef<std::pair<const char *, std::string>> outputs,
    const std::string &checkpointDir, const std::string &events) {
  if (!checkpointDir.empty())
    if (llvm::Error error = checkOutputTarget("--checkpoint-dir", checkpointDir,
                                              OutputKind::directory))
      return makeError(llvm::toString(std::move(error)));
  // --events may be a FIFO (written in place, checked again when opened).
  if (!events.empty()) {
    if (llvm::Error error =
            checkOutputTarget("--events", events, OutputKind::stream))
      return makeError(llvm::toString(std::move(error)));
    for (auto &other : outputs)
      if (!other.second.empty() && isSameFile(events, other.second))
        return makeError("--events '" + events + "' is the same file as " +
                         other.first + " '" + other.second + "'");
  }
  for (auto [i, output] : llvm::enumerate(outputs)) {
    if (output.second.empty())
      continue;
    if (llvm::Error error = checkOutputTarget(output.first, output.second))
      return makeError(llvm::toString(std::move(error)));
    for (auto &other : outputs.drop_front(i + 1))
      if (!other.second.empty() && isSameFile(output.second, other.second))
        return makeError(llvm::Twine(output.first) + " '" + output.second +
                         "' is the same file as " + other.first + " '" +
                         other.second + "'");
    std::string error;
    if (!checkWritable(output.second, error))
      return makeError(llvm::Twine("cannot write ") + output.first + " '" +
                       output.second + "': " + error);
  }
  return llvm::Error::success();
}

/// The arrays of `inMemory` or else of the npz `path` (none when empty).
llvm::Expected<Arrays>
distopt::runner::readInput(const std::optional<Arrays> &inMemory,
                           const std::string &path) {
  if (inMemory) {
    // What a caller hands in is checked as an npz's members are.
    for (const auto &[name, array] : *inMemory) {
      if (array.dtype != "<f4" && array.dtype != "<f8" &&
          array.dtype != "<i4" && array.dtype != "<i8")
        return makeError("'" + name + "' in " + path + " has dtype '" +
                         array.dtype + "' (expected <f4, <f8, <i4 or <i8)");
      int64_t elements = 1;
      for (int64_t size : array.shape)
        elements = size < 0 ? -1 : elements * size;
      if (elements < 0 || uint64_t(elements) * getElementBytes(array.dtype) !=
                              array.bytes.size())
        return makeError("'" + name + "' in " + path + " holds " +
                         llvm::Twine(array.bytes.size()) + " bytes, not " +
                         array.dtype + " [" + formatShape(array.shape) + "]");
    }
    return *inMemory;
  }
  Arrays arrays;
  std::string error;
  if (!path.empty() && !readNpz(path, arrays, error))
    return makeError(error);
  return std::move(arrays);
}

/// Writes `arrays` to `path` (rank 0; nothing when empty).
llvm::Error distopt::runner::writeOutput(const std::string &path,
                                         const Arrays &arrays,
                                         const TestRaise &raise) {
  std::string error;
  if (distrt_rank() == 0 && !path.empty() &&
      !writeNpz(path, arrays, error, [&] { raiseForTest(raise, "write"); }))
    return makeError(error);
  return llvm::Error::success();
}

/// An error unless every rank runs the same module, options and inputs.
llvm::Error distopt::runner::checkAgreement(const RunConfig &config,
                                            uint64_t moduleHash,
                                            StringRef backend,
                                            const Arrays &state,
                                            const Arrays &data) {
  auto hash = [](const auto &value) {
    std::string text;
    llvm::raw_string_ostream(text) << value;
    return hashText(text);
  };
  auto hashOptional = [&](const auto &value) {
    return value ? hash(*value) : hashText("");
  };
  return checkRanksAgree(
      {{"the module", "text", moduleHash},
       {"--state", "contents", hashArrays(state)},
       {"--data", "contents", hashArrays(data)},
       {"--steps", "value", hashOptional(config.steps)},
       {"--backend", "value", hashText(backend)},
       {"--entry", "value", hash(config.entry)},
       {"--flush-denormals", "value", hash(config.flushDenormals)},
       {"--collective-timeout", "value", hash(config.collectiveTimeout)},
       {"--opt-level", "value", hash(config.optLevel)},
       {"--ops-per-function", "value", hash(config.opsPerFunction)},
       {"--parallel-min-iterations", "value",
        hash(config.parallelMinIterations)},
       {"--profile", "value", hash(config.profile)},
       {"--gpu-mapped", "value", hash(config.gpuMapped)},
       {"--device", "value",
        hashText(config.device == Device::cuda ? "cuda" : "cpu")},
       {"--trace", "value", hash(config.tracePath)},
       {"--seed", "value", hash(config.seed)},
       {"--dataset", "value", hash(config.datasetPath)},
       {"--eval-dataset", "value", hash(config.evalDatasetPath)},
       {"--eval-every", "value", hashOptional(config.evalEvery)},
       {"--metrics", "value", hash(config.metricsPath)},
       {"--events", "value", hash(config.eventsPath)},
       {"--control", "value", hash(config.controlPath)},
       {"--cache", "value", hash(config.useCache)},
       {"--cache-dir", "value", hash(config.cacheDir)},
       {"--epochs", "value", hashOptional(config.epochs)},
       {"--shuffle", "value", hashOptional(config.shuffle)},
       {"--checkpoint-dir", "value", hash(config.checkpointDir)},
       {"--checkpoint-every", "value", hashOptional(config.checkpointEvery)},
       {"--keep", "value", hashOptional(config.keep)},
       {"--resume", "value", hash(config.resume)},
       {"--allow-data-change", "value", hash(config.allowDataChange)},
       {"--on-nonfinite", "value",
        hashText(config.onNonFinite == OnNonFinite::stop ? "stop"
                                                         : "continue")}});
}

//===----------------------------------------------------------------------===//
// The step and its arrays
//===----------------------------------------------------------------------===//

/// Copies this rank's block of each argument's global array into it, once
/// the array's name, type, shape and (for labels and token ids) range are
/// checked.
llvm::Error distopt::runner::bindInputs(const RunConfig &config,
                                        func::FuncOp entry,
                                        std::vector<Binding> &args,
                                        Arrays &state, Arrays &data) {
  for (Binding &arg : args) {
    const train::StepSignature::Value &value = *arg.value;
    // With a dataset, the batches come step by step.
    if (isData(arg) && !config.datasetPath.empty())
      continue;
    Arrays &source = isData(arg) ? data : state;
    bool given = isData(arg) ? config.data || !config.dataPath.empty()
                             : config.state || !config.statePath.empty();
    auto it = source.find(value.name);
    if (it == source.end() && !given)
      return makeError(
          llvm::Twine("the step takes '") + value.name + "' (" +
          (value.role ? train::stringifyRole(*value.role) : "no role") +
          ") but no " +
          (isData(arg) ? "--data is given (an .npz of the batch's inputs "
                         "and labels, or a --dataset directory)"
                       : "--state is given (an .npz of the step's params, "
                         "optimizer state and hyperparameters; dist-run "
                         "--init-state writes one)"));
    if (it == source.end())
      return makeError("'" + value.name + "' is missing from " +
                       (isData(arg) ? "--data '" + config.dataPath
                                    : "--state '" + config.statePath) +
                       "'");
    Array &global = it->second;
    if (global.dtype != arg.dtype || global.shape != arg.globalShape)
      return makeError("'" + value.name + "' is " + global.dtype + " [" +
                       formatShape(global.shape) + "] but the step takes " +
                       arg.dtype + " [" + formatShape(arg.globalShape) + "]");
    if (std::optional<IndexRange> range = getIndexRange(entry, arg, args))
      if (llvm::Error error = checkIndexRange(arg, global, *range))
        return error;
    copyBlock(global, arg.local, arg.offsets, /*toGlobal=*/false);
  }
  return llvm::Error::success();
}

/// Binds every value of `step` (this rank's) in `bindings`, once each of
/// `wholeStep`'s values is known to be movable; `initializing`: the
/// arguments need a role too (--init-state).
llvm::Error
distopt::runner::bindValues(llvm::ArrayRef<train::StepSignature::Value> values,
                            const train::StepSignature &step, int64_t rank,
                            bool initializing, std::vector<Binding> &bindings) {
  for (const train::StepSignature::Value &value : values) {
    if (value.name.empty() || (initializing && !value.role))
      return makeError("argument #" + llvm::Twine(value.index) +
                       " has no train.name" +
                       (initializing ? " or train.role" : ""));
    if (llvm::Error error = checkBindable(value))
      return error;
    bindings.push_back(bind(value, step, rank));
  }
  return llvm::Error::success();
}
