//===- Evaluation.h - dist-run --eval-dataset ------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The step's evaluation function (train-derive-eval) on this rank: its
// parameters copied from the training step's blocks before each
// evaluation, the other arguments bound once from --state, the batches from
// the evaluation dataset in order (whole batches); rank 0 prints the mean
// loss and, with a `correct` metric, the accuracy. Placed programs
// (pipelines, parameter servers) evaluate on rank 0 alone: their
// parameters are gathered there before each evaluation.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_EVALUATION_H
#define DISTOPT_RUNNER_EVALUATION_H

#include "distopt/Runner/Dataset.h"
#include "distopt/Runner/Metrics.h"
#include "distopt/Runner/Runner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <optional>
#include <set>

#include "llvm/Support/Error.h"

namespace distopt::runner {

/// The step's evaluation function on this rank, with its dataset.
struct Evaluation {
  mlir::train::StepSignature step;
  std::vector<Binding> args, results;
  /// Per argument: the training argument it copies (a parameter), or -1.
  std::vector<int64_t> fromTraining;
  /// For placed programs (StepSignature::isEvalGathered): the training
  /// step, and the names of the state arrays gathered to rank 0 for each
  /// evaluation (the other ranks hold no evaluation arrays).
  const mlir::train::StepSignature *gatheredFrom = nullptr;
  std::set<std::string> gathered;
  double collectiveTimeout = 0;
  std::unique_ptr<Dataset> dataset;
  int64_t lossResult = -1, correctResult = -1;
  /// Rank 0 prints each evaluation's line.
  bool print = true;
};

/// Where the evaluation's inputs come from, for messages and binding.
struct EvaluationOptions {
  std::string modulePath, statePath, datasetPath;
  /// --collective-timeout, restored after the untimed wait of the ranks
  /// that do not evaluate gathered parameters.
  double collectiveTimeout = 0;
};

/// Sets up --eval-dataset: binds the evaluation function's arguments (the
/// parameters from the training step's blocks `trainArgs`, or gathered from
/// the programs of an MPMD step; the rest from `state`) and opens its
/// dataset; an error when the module has none. `wholeStep` must outlive it.
llvm::Expected<std::unique_ptr<Evaluation>>
setUpEvaluation(const mlir::train::StepSignature &wholeStep,
                const std::vector<Binding> &trainArgs, Arrays &state,
                mlir::ModuleOp module, const EvaluationOptions &options);

/// What an evaluation found (rank 0).
struct EvaluationResult {
  double loss = 0;
  /// With a `correct` metric.
  std::optional<double> accuracy;
  int64_t samples = 0;
};

/// Evaluates the parameters in `trainArgs` on the whole evaluation dataset
/// (its whole batches, in order); rank 0 prints the mean loss and accuracy,
/// writes them to `metrics` and returns them (none on the other ranks).
llvm::Expected<std::optional<EvaluationResult>>
evaluate(CompiledStep &compiled, Evaluation &evaluation,
         std::vector<Binding> &trainArgs, uint64_t stepsDone,
         MetricsFile &metrics);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_EVALUATION_H
