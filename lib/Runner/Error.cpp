//===- Error.cpp - the runner's errors and warnings -----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Error.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/Support/raw_ostream.h"

using namespace distopt::runner;

char RunError::ID = 0;

void RunError::log(llvm::raw_ostream &os) const { os << message; }

std::error_code RunError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

llvm::Error distopt::runner::makeError(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str());
}

llvm::Error distopt::runner::makeEveryRankError(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str(), /*everyRank=*/true);
}

llvm::Error distopt::runner::makeRuntimeError() {
  return makeError(getRuntimeError());
}

std::string distopt::runner::takeErrorMessage(llvm::Error error,
                                              bool *everyRank) {
  std::string message;
  bool all = false;
  llvm::handleAllErrors(
      std::move(error),
      [&](const RunError &run) {
        message = run.getMessage();
        all = run.isEveryRank();
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  if (everyRank)
    *everyRank = all;
  return message;
}

std::string distopt::runner::getRuntimeError() {
  llvm::StringRef error = distrt_last_error();
  if (error.consume_front("distrt: rank ")) {
    size_t colon = error.find(": ");
    if (colon != llvm::StringRef::npos)
      error = error.drop_front(colon + 2);
  }
  return error.str();
}

static bool runtimeStarted = false;

void distopt::runner::noteRuntimeStarted(bool started) {
  runtimeStarted = started;
}

bool distopt::runner::isRuntimeStarted() { return runtimeStarted; }

void distopt::runner::warn(const llvm::Twine &message) {
  llvm::outs().flush();
  llvm::errs() << "dist-run: rank " << (runtimeStarted ? distrt_rank() : 0)
               << ": warning: " << message << "\n";
  llvm::errs().flush();
}
