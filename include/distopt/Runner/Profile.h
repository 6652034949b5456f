//===- Profile.h - dist-run --profile: time per op family -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// With --profile the step is compiled with dist-lower-cpu{profile=true}:
// every op that does work is bracketed by runtime profile calls, and the
// module's `distopt.profile` table gives each bracket's op family (the train
// op it was lowered from), FLOPs and bytes. StepProfile sums the runtime's
// counters over the steps (the first left out when there are several;
// evaluations and checkpoints between steps are not counted) and prints,
// per family, the time per step, its share of the step, and the FLOP and
// byte rates it reached.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_PROFILE_H
#define DISTOPT_RUNNER_PROFILE_H

#include "distopt/Runner/Runner.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace distopt::runner {

class StepProfile {
public:
  /// Reads the sites of `module` (compiled with profiling); an error when
  /// it has no `distopt.profile` table.
  static llvm::Expected<std::unique_ptr<StepProfile>>
  create(mlir::ModuleOp module);

  /// Before a step: the counters start from zero.
  void beforeStep();
  /// After a step: adds the counters and the step's time (unless `skip`).
  void afterStep(const StepReport &report, bool skip);
  /// The tables: one row per family, the most time first; then the
  /// `kSlowestSites` sites that took the most time, with their loops.
  void print(llvm::raw_ostream &os) const;

  static constexpr size_t kSlowestSites = 10;

private:
  StepProfile() = default;
  llvm::Error readTable(mlir::ModuleOp module);

  struct Site {
    std::string family;
    int64_t flops = 0, bytes = 0;
    /// A loop nest's ranges ("8x4x128x128x64"), else "".
    std::string loops;
  };
  std::vector<Site> sites;
  std::vector<int64_t> calls;
  std::vector<double> seconds;
  int64_t steps = 0;
  double stepMs = 0;
};

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_PROFILE_H
