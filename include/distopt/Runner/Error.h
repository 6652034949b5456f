//===- Error.h - the runner's errors and warnings ---------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every failure of the runner comes back as an llvm::Error holding a
// RunError: the message dist-run prints after "dist-run: rank R: ", and
// whether every rank finds it at the same point (then rank 0 alone should
// report it). Nothing in the library ends the process: dist-run's main
// (tools/dist-run/Failure.h) turns a RunError into its one line, removes
// the partial output and ends every rank.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_ERROR_H
#define DISTOPT_RUNNER_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace distopt::runner {

/// An error of the runner. Its message is what dist-run prints after
/// "dist-run: rank R: ". `everyRank`: every rank finds it at the same point
/// (a disagreement, a bad checkpoint), so rank 0 alone should report it.
class RunError : public llvm::ErrorInfo<RunError> {
public:
  static char ID;
  explicit RunError(std::string message, bool everyRank = false)
      : message(std::move(message)), everyRank(everyRank) {}

  const std::string &getMessage() const { return message; }
  bool isEveryRank() const { return everyRank; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string message;
  bool everyRank;
};

/// A RunError found by this rank alone.
llvm::Error makeError(const llvm::Twine &message);
/// A RunError every rank finds at the same point.
llvm::Error makeEveryRankError(const llvm::Twine &message);
/// makeError() with the runtime's last error (getRuntimeError()).
llvm::Error makeRuntimeError();

/// Splits `error` into its message and whether every rank finds it (a
/// RunError's; any other error: its text, this rank alone).
std::string takeErrorMessage(llvm::Error error, bool *everyRank = nullptr);

/// The runtime's last error without its "distrt: rank R: " prefix (the
/// runner's messages name the rank).
std::string getRuntimeError();

/// Marks the runtime started: warnings then name distrt_rank().
void noteRuntimeStarted(bool started);
bool isRuntimeStarted();

/// Prints "dist-run: rank R: warning: `message`" on stderr and goes on.
void warn(const llvm::Twine &message);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_ERROR_H
