//===- Failure.cpp - how dist-run ends on an error or a signal ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Failure.h"

#include "distopt/Runner/Error.h"
#include "distopt/Runner/Events.h"
#include "distopt/Runtime/distrt.h"
#include "distopt/Runtime/distrt_mlir.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

using namespace distrun;
using namespace distopt;
using namespace distopt::runner;

static std::string requestedBackend = "auto";

void distrun::setRequestedBackend(llvm::StringRef backend) {
  requestedBackend = backend.str();
}

/// True once the runtime was started (MPI cannot be started again after
/// the runner finalized it).
static bool runtimeEverStarted = false;

/// The rank an MPI launcher gave this process, from its environment.
static const char *getLauncherRank() {
  for (const char *name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK"})
    if (const char *value = std::getenv(name))
      return value;
  return nullptr;
}

/// This rank, as fail() names it.
static std::string getRankName() {
  if (isRuntimeStarted())
    return std::to_string(distrt_rank());
  const char *launched = getLauncherRank();
  return launched ? launched : "0";
}

static std::string errorEventsPath;

void distrun::setErrorEventsPath(llvm::StringRef path) {
  errorEventsPath = path.str();
}

void distrun::fail(const llvm::Twine &message) {
  llvm::outs().flush();
  std::string rank = getRankName();
  llvm::errs() << "dist-run: rank " << rank << ": " << message << "\n";
  appendErrorEvent(errorEventsPath, std::atoll(rank.c_str()), message.str());
  PartialFile::removeCurrent();
  // Under a launcher the other ranks wait in MPI_Init until this one is
  // there too: start MPI so that the abort below reaches them.
  if (!isRuntimeStarted() && !runtimeEverStarted && getLauncherRank() &&
      requestedBackend != "local") {
    distrt_init("mpi");
    noteRuntimeStarted(true);
  }
  if (isRuntimeStarted()) {
    if (distrt_size() > 1)
      distrt_abort(1);
    distrt_finalize();
  }
  std::exit(1);
}

void distrun::exitOnError(llvm::Error error) {
  bool everyRank = false;
  std::string message = takeErrorMessage(std::move(error), &everyRank);
  if (everyRank)
    failOnEveryRank(message);
  fail(message);
}

void distrun::failOnEveryRank(const llvm::Twine &message) {
  if (isRuntimeStarted() && distrt_rank() != 0)
    std::this_thread::sleep_for(std::chrono::seconds(10));
  fail(message);
}

/// The runtime's fatal errors in compiled code.
static void onRuntimeError(const char *message) {
  (void)message;
  fail(getRuntimeError());
}

/// "dist-run: rank R: ended by SIG" lines, formatted before any signal.
static char signalLines[3][96];
static const int handledSignals[3] = {SIGINT, SIGTERM, SIGHUP};

static void onSignal(int signal) {
  PartialFile::removeCurrent();
  for (int i = 0; i < 3; ++i)
    if (handledSignals[i] == signal) {
      ssize_t ignored = ::write(2, signalLines[i], std::strlen(signalLines[i]));
      (void)ignored;
    }
  ::_exit(128 + signal);
}

/// "dist-run: rank R: the step stopped at a failed check ..." for SIGABRT.
static char abortLine[160];

/// A failed check in the compiled step (`cf.assert`: an index outside a
/// table) has printed its message and called abort(): name the rank and end
/// the whole job, not this rank alone.
static void onAbort(int signal) {
  std::fflush(stdout);
  PartialFile::removeCurrent();
  ssize_t ignored = ::write(2, abortLine, std::strlen(abortLine));
  (void)ignored;
  if (isRuntimeStarted() && distrt_size() > 1)
    distrt_abort(128 + signal);
  ::_exit(128 + signal);
}

void distrun::installFailureHandlers(bool runtimeIsStarted) {
  // The compiled step prints a failed check's message with puts() just
  // before it aborts: keep stdout line-buffered (set before any output) so
  // the message is out.
  static bool lineBuffered = false;
  if (!lineBuffered)
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
  lineBuffered = true;
  std::string line = "dist-run: rank " + getRankName() +
                     ": the step stopped at a failed check (its message is "
                     "above)\n";
  std::strncpy(abortLine, line.c_str(), sizeof(abortLine) - 1);
  struct sigaction onAbortAction;
  std::memset(&onAbortAction, 0, sizeof(onAbortAction));
  onAbortAction.sa_handler = onAbort;
  sigemptyset(&onAbortAction.sa_mask);
  sigaction(SIGABRT, &onAbortAction, nullptr);

  runtimeEverStarted |= runtimeIsStarted;
  static const char *names[3] = {"SIGINT", "SIGTERM", "SIGHUP"};
  for (int i = 0; i < 3; ++i) {
    std::string line =
        "dist-run: rank " + getRankName() + ": ended by " + names[i] + "\n";
    std::strncpy(signalLines[i], line.c_str(), sizeof(signalLines[i]) - 1);
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    sigaction(handledSignals[i], &action, nullptr);
  }
  distrt_mlir_set_error_handler(onRuntimeError);
}
