//===- Run.h - a training run as a library call -----------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `dist-run` does, for any front end (the tool, the C API, Python's
// extension): load a step at any stage, start the runtime, check that the
// ranks agree, bind the state and the data (npz files, a dataset
// directory or in-memory arrays), evaluate, checkpoint and resume, compile,
// run, and gather the state to rank 0. Errors come back as llvm::Error
// (RunError, with dist-run's message text); nothing here ends the process.
//
// While it runs, run() reports events to a RunObserver (the JSON objects
// of `dist-run --events`: start, step, eval, checkpoint, epoch_end, end,
// error) and, after each epoch but the last, asks it whether to go on
// (`dist-run --control`). EventFileObserver is the --events/--control
// implementation.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_RUN_H
#define DISTOPT_RUNNER_RUN_H

#include "distopt/Conversion/Passes.h"
#include "distopt/Runner/Array.h"
#include "distopt/Runner/Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distopt::runner {

//===----------------------------------------------------------------------===//
// What to run
//===----------------------------------------------------------------------===//

enum class OnNonFinite { stop, carryOn };

/// dist-run's options. Paths are empty when not given; an option dist-run
/// tells apart from its default when given (--steps, --epochs, --shuffle,
/// --eval-every, --checkpoint-every, --keep, --num-threads) is optional.
struct RunConfig {
  /// The step: `moduleText` when set, else the file `modulePath` ("-":
  /// stdin). `modulePath` names it in messages either way.
  std::string modulePath;
  std::optional<std::string> moduleText;
  /// The state (params, optimizer state, hyperparameters): in memory when
  /// set, else the npz `statePath`. `statePath` names it in messages.
  std::string statePath;
  std::optional<Arrays> state;
  /// One batch used by every step: in memory when set, else the npz
  /// `dataPath`. Without either, `datasetPath` gives the batches.
  std::string dataPath;
  std::optional<Arrays> data;
  std::string datasetPath;

  std::optional<uint64_t> steps;
  std::optional<uint64_t> epochs;
  std::optional<bool> shuffle;
  uint64_t seed = 0;
  std::string evalDatasetPath;
  std::optional<uint64_t> evalEvery;
  std::string checkpointDir;
  std::optional<uint64_t> checkpointEvery;
  std::optional<unsigned> keep;
  bool resume = false;
  bool allowDataChange = false;
  OnNonFinite onNonFinite = OnNonFinite::stop;

  /// Outputs (rank 0): the final state and losses as npz, --metrics
  /// lines, a Chrome trace. None when empty; RunResult holds the state and
  /// losses either way.
  std::string outPath, metricsPath, tracePath;
  /// `dist-run --events` / `--control`: run() adds an EventFileObserver
  /// for them beside the caller's observer (both must say continue).
  std::string eventsPath, controlPath;

  /// Compiling and running.
  std::string backend = "auto";
  Device device = Device::cpu;
  bool flushDenormals = true;
  /// Pin the OpenMP team to cores (OMP_PROC_BIND=true) when this process
  /// is the only rank on its node: for a process of the runner's own
  /// (dist-run). A host process (Python, the C API) keeps it off: the
  /// binding pins its main thread, and every process it starts afterwards
  /// inherits the one core.
  bool bindThreads = false;
  std::string entry;
  double collectiveTimeout = 300;
  unsigned optLevel = mlir::train::kDefaultOptLevel;
  unsigned opsPerFunction = mlir::train::kDefaultOpsPerFunction;
  int64_t parallelMinIterations = mlir::train::kDefaultParallelMinIterations;
  bool gpuMapped = false;
  /// On a device: replay each step from a graph captured at the second
  /// (--step-graphs).
  bool stepGraphs = true;
  /// On a device with a dataset: stage each batch while the step before
  /// runs (--stage-batches).
  bool stageBatches = true;
  std::optional<unsigned> numThreads;
  bool profile = false;
  bool useCache = true;
  std::string cacheDir;
  /// The path of a program of DistOpt's build (dist-run's argv[0]; empty:
  /// the library's own location): its lib directory holds the runtime
  /// libraries the step links, and it keys the compile cache.
  std::string toolPath;
  /// Print each step's loss and time, evaluations and progress on rank 0
  /// (llvm::outs() / llvm::errs()), as dist-run does.
  bool print = true;
  /// For tests (dist-run --test-raise): RANK:SIGNAL:POINT.
  std::string testRaise;
};

//===----------------------------------------------------------------------===//
// Watching a run
//===----------------------------------------------------------------------===//

/// Receives a run's events (`dist-run --events`'s objects). onEvent runs on
/// rank 0 for every event but "error", which any failing rank reports;
/// continueAfterEpoch runs on rank 0 after each epoch but the last (its
/// answer goes to every rank).
class RunObserver {
public:
  virtual ~RunObserver();
  virtual void onEvent(const llvm::json::Object &event);
  /// `epoch`: 0-based, the epoch just ended (after its "epoch_end"
  /// event). False stops the run there: the state is gathered and written,
  /// the "end" event says stopped_early. An Error fails the run.
  virtual llvm::Expected<bool> continueAfterEpoch(uint64_t epoch);
  /// Once the runtime is started (the rank is known): dist-run installs
  /// its signal handlers here.
  virtual void onRuntimeStarted(int64_t rank, int64_t size);
  /// A failure of onEvent (an events file that cannot be written): run()
  /// asks after each event and fails with it.
  virtual llvm::Error takeError();
  /// Polled on rank 0 after every step: true stops the run there as
  /// continueAfterEpoch's false does (a single process stops after that
  /// step; several ranks at the end of the epoch, the decision broadcast).
  /// Python's Ctrl-C.
  virtual bool stopRequested();
};

/// `dist-run --events=PATH --control=PATH`: writes each event as one JSON
/// line to the events file or FIFO (rank 0; an "error" from any rank,
/// appended), and reads "continue" / "stop" lines from the control file or
/// FIFO (the end of it: stop). Either path may be empty. run() makes one
/// for RunConfig::eventsPath / controlPath.
class EventFileObserver : public RunObserver {
public:
  EventFileObserver(std::string eventsPath, std::string controlPath,
                    bool resumed);
  ~EventFileObserver() override;
  /// Opens the events file on rank 0 (through the safe writer's in-place
  /// open: a regular file, emptied unless `resumed`, or a FIFO, which
  /// waits for its reader); call once the runtime is started.
  llvm::Error open();
  void onEvent(const llvm::json::Object &event) override;
  llvm::Expected<bool> continueAfterEpoch(uint64_t epoch) override;
  llvm::Error takeError() override;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// What one evaluation found (rank 0).
struct EvaluationRecord {
  uint64_t step = 0;
  std::optional<uint64_t> epoch;
  double loss = 0;
  std::optional<double> accuracy;
  int64_t samples = 0;
};

/// What a run ends with (rank 0; the other ranks' state is empty).
struct RunResult {
  /// The final global state arrays (params and optimizer state).
  Arrays state;
  /// Every step's loss, counted from the start of training (a resumed
  /// run's include the checkpoint's).
  std::vector<float> losses;
  std::vector<EvaluationRecord> evaluations;
  /// The step of the checkpoint a --resume continued from.
  std::optional<uint64_t> resumedFrom;
  uint64_t stepsDone = 0;
  bool stoppedEarly = false;
};

/// Runs the step as `dist-run` with `config` does; every rank calls it.
/// Starts the runtime and finalizes it before returning. On an error the
/// runtime is finalized by a single process; with several ranks it stays
/// started for the caller to end the job (distrt_abort: the other ranks
/// may wait in a collective). `observer` (may be null) gets the events;
/// errors come back as the Error (dist-run writes its "error" event).
llvm::Expected<RunResult> run(const RunConfig &config,
                              RunObserver *observer = nullptr);

/// `dist-run --init-state` / `--init-data`: deterministic random state
/// (from `config.seed`) for the step `config` names, and a random batch
/// (the state drawn with the batch, `withData`, is dist-run's --init-state
/// with --init-data; the batch needs the labels' range from the step's
/// ops). Start and finalize the runtime.
llvm::Expected<std::pair<Arrays, Arrays>>
initStateAndData(const RunConfig &config, bool withData);
llvm::Expected<Arrays> initState(const RunConfig &config);
llvm::Expected<Arrays> initData(const RunConfig &config);

/// `dist-run --export`: the newest complete checkpoint of `checkpointDir`
/// as global arrays (and "loss": the losses so far); sets `exported` to its
/// directory.
llvm::Expected<Arrays> readNewestCheckpoint(llvm::StringRef checkpointDir,
                                            std::string *exported = nullptr);
/// The same, written to the npz `outPath` through the safe writer; returns
/// the checkpoint's directory.
llvm::Expected<std::string> exportCheckpoint(llvm::StringRef checkpointDir,
                                             llvm::StringRef outPath);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_RUN_H
