//===- Failure.h - how dist-run ends on an error or a signal ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The runner library returns its errors (distopt/Runner/Error.h); the tool
// ends on them. Failures are loud and whole: the rank that fails prints one
// line
// ("dist-run: rank R: ..."), removes its partial output, and ends every
// rank of the job (distrt_abort), so no rank waits forever in a collective
// for it. SIGINT and SIGTERM end the process with 128 + the signal, after
// removing the partial output.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_FAILURE_H
#define DISTOPT_TOOLS_DIST_RUN_FAILURE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace distrun {

/// Prints "dist-run: rank R: `message`", removes the partial output and
/// ends the job: every rank when there are several (distrt_abort), else this
/// process, with exit status 1. Before the runtime is started, under an MPI
/// launcher, it starts MPI first: the other ranks wait in MPI_Init and would
/// never notice an exit.
[[noreturn]] void fail(const llvm::Twine &message);

/// fail() for an error that every rank finds at the same point: rank 0
/// reports it and ends the job; the others stay quiet, reporting it
/// themselves only if rank 0 has not ended the job within seconds.
[[noreturn]] void failOnEveryRank(const llvm::Twine &message);

/// The --events file (none when empty) to which fail() appends an "error"
/// event (Events.h), set once its path is checked.
void setErrorEventsPath(llvm::StringRef path);

/// fail() or failOnEveryRank() for a runner error (distopt/Runner/Error.h),
/// with its message.
[[noreturn]] void exitOnError(llvm::Error error);

/// The --backend asked for: fail() starts MPI before the runtime is started
/// only when this is not "local".
void setRequestedBackend(llvm::StringRef backend);

/// Handles SIGINT, SIGTERM and SIGHUP: removes the partial output, prints
/// "dist-run: rank R: ended by SIGTERM" and exits with 128 + the signal (an
/// exit status, which mpirun passes on, where dying of the signal made
/// MPICH's mpirun exit with 0). A failed check in the compiled step
/// (SIGABRT after its message) prints "dist-run: rank R: the step stopped at
/// a failed check" and ends every rank. Also routes the runtime's fatal
/// errors in compiled code through fail(). Called at start-up and again once
/// the runtime is started (`runtimeIsStarted`: the rank is known).
void installFailureHandlers(bool runtimeIsStarted);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_FAILURE_H
