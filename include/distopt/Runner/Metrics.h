//===- Metrics.h - dist-run --metrics: one JSON line per event -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Rank 0 appends one JSON object per line to the --metrics file, flushed
// at once: one per step (its loss, time, the runtime's communication
// counters, the peak resident memory) and one per evaluation.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_METRICS_H
#define DISTOPT_RUNNER_METRICS_H

#include "distopt/Runner/Runner.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace distopt::runner {

/// This process's peak resident memory, MiB.
double getPeakRssMiB();

class MetricsFile {
public:
  /// Opens `path` (none when empty; only on rank 0) to append, emptied
  /// first unless `resumed`; an error when it cannot be written.
  llvm::Error open(const std::string &path, bool resumed);

  /// Appends `line` (nothing without a file).
  void write(llvm::json::Object line);
  /// Appends the line of a step.
  void writeStep(const StepReport &report);

private:
  std::unique_ptr<llvm::raw_fd_ostream> stream;
};

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_METRICS_H
