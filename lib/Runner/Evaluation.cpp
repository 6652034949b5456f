//===- Evaluation.cpp - dist-run --eval-dataset ---------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Evaluation.h"
#include "distopt/Runner/Checkpoint.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/StepInputs.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

/// Binds `arg` of an evaluation on gathered parameters: a state array some
/// program holds is gathered at each evaluation, anything else but data
/// comes from --state; only rank 0 keeps the arrays.
static llvm::Error bindGathered(Evaluation &evaluation, Binding arg,
                                const std::set<std::string> &held,
                                Arrays &state,
                                const EvaluationOptions &options) {
  const std::string &name = arg.value->name;
  if (held.count(name)) {
    evaluation.gathered.insert(name);
  } else if (isRestored(*arg.value)) {
    return makeError("the evaluation function takes '" + name +
                     "', which none of the placed programs holds");
  } else if (!isData(arg)) {
    auto it = state.find(name);
    if (it == state.end())
      return makeError("'" + name +
                       "', which the evaluation function takes, is missing "
                       "from --state '" +
                       options.statePath + "'");
    if (distrt_rank() == 0)
      copyBlock(it->second, arg.local, arg.offsets, /*toGlobal=*/false);
  }
  if (distrt_rank() != 0)
    std::vector<char>().swap(arg.local.bytes);
  evaluation.fromTraining.push_back(-1);
  evaluation.args.push_back(std::move(arg));
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Evaluation>>
runner::setUpEvaluation(const train::StepSignature &wholeStep,
                        const std::vector<Binding> &trainArgs, Arrays &state,
                        ModuleOp module, const EvaluationOptions &options) {
  if (!wholeStep.eval)
    return makeEveryRankError(
        "'" + options.modulePath +
        "' has no evaluation function for --eval-dataset: derive "
        "it with dist-opt --train-derive-eval before the strategy");
  auto evaluation = std::make_unique<Evaluation>();
  evaluation->step = wholeStep.getEvalStep();
  int64_t rank = distrt_rank();
  // Placed programs: the state arrays any program holds are gathered.
  std::set<std::string> held;
  if (wholeStep.isEvalGathered()) {
    evaluation->gatheredFrom = &wholeStep;
    evaluation->collectiveTimeout = options.collectiveTimeout;
    for (const train::StepSignature::Program &program : wholeStep.programs)
      for (const train::StepSignature::Value &value : program.arguments)
        if (isState(value) && !value.cache)
          held.insert(value.name);
  }
  for (const train::StepSignature::Value &value : evaluation->step.arguments) {
    if (llvm::Error error = checkBindable(value))
      return std::move(error);
    Binding arg = bind(value, evaluation->step, rank);
    if (evaluation->gatheredFrom) {
      if (llvm::Error error =
              bindGathered(*evaluation, std::move(arg), held, state, options))
        return std::move(error);
      continue;
    }
    int64_t from = -1;
    for (auto [i, train] : llvm::enumerate(trainArgs))
      if (train.value->name == value.name && train.offsets == arg.offsets &&
          train.local.shape == arg.local.shape)
        from = i;
    if (from < 0 && isRestored(value))
      return makeError(
          "the evaluation function takes '" + value.name + "' as [" +
          formatShape(arg.local.shape) + "] at [" + formatShape(arg.offsets) +
          "], a block the training step does not hold on this rank");
    if (from < 0 && !isData(arg)) {
      auto it = state.find(value.name);
      if (it == state.end())
        return makeError("'" + value.name +
                         "', which the evaluation function takes, is "
                         "missing from --state '" +
                         options.statePath + "'");
      copyBlock(it->second, arg.local, arg.offsets, /*toGlobal=*/false);
    }
    evaluation->fromTraining.push_back(from);
    evaluation->args.push_back(std::move(arg));
  }
  for (const train::StepSignature::Value &value : evaluation->step.results) {
    if (value.role == train::Role::loss)
      evaluation->lossResult = evaluation->results.size();
    if (value.role == train::Role::metric && value.name == "correct")
      evaluation->correctResult = evaluation->results.size();
    if (llvm::Error error = checkBindable(value))
      return std::move(error);
    evaluation->results.push_back(bind(value, evaluation->step, rank));
  }
  if (evaluation->lossResult < 0)
    return makeEveryRankError("the evaluation function returns no loss");
  llvm::Expected<std::unique_ptr<Dataset>> dataset =
      Dataset::open("--eval-dataset", options.datasetPath,
                    getDataSpecs(evaluation->step), /*seed=*/0,
                    /*shuffle=*/false);
  if (!dataset)
    return dataset.takeError();
  evaluation->dataset = std::move(*dataset);
  // The evaluation function's own arguments (the values' indices are its),
  // while it is still a function with a body.
  auto evalFunc = module.lookupSymbol<func::FuncOp>(evaluation->step.entry);
  if (evalFunc && evalFunc.isExternal())
    evalFunc = nullptr;
  for (Binding &arg : evaluation->args)
    if (isData(arg))
      if (std::optional<IndexRange> range =
              getIndexRange(evalFunc, arg, evaluation->args))
        if (llvm::Error error = evaluation->dataset->checkRange(arg, *range))
          return std::move(error);
  return std::move(evaluation);
}

/// The ranks meet after rank 0 evaluated gathered parameters alone: a
/// barrier without the collective timeout, which a long evaluation would
/// otherwise exceed on the waiting ranks.
static llvm::Error waitForEvaluation(const Evaluation &evaluation) {
  if (distrt_set_timeout(0) != 0 || distrt_barrier() != 0 ||
      distrt_set_timeout(evaluation.collectiveTimeout) != 0)
    return makeRuntimeError();
  return llvm::Error::success();
}

llvm::Expected<std::optional<EvaluationResult>>
runner::evaluate(CompiledStep &compiled, Evaluation &evaluation,
                 std::vector<Binding> &trainArgs, uint64_t stepsDone,
                 MetricsFile &metrics) {
  for (auto [arg, from] :
       llvm::zip_equal(evaluation.args, evaluation.fromTraining))
    if (from >= 0)
      arg.local.bytes = trainArgs[from].local.bytes;
  if (evaluation.gatheredFrom) {
    // Every rank sends its blocks; rank 0 evaluates alone.
    llvm::Expected<Arrays> gathered =
        gatherState(trainArgs, *evaluation.gatheredFrom, &evaluation.gathered);
    if (!gathered)
      return gathered.takeError();
    Arrays global = std::move(*gathered);
    if (distrt_rank() != 0) {
      if (llvm::Error error = waitForEvaluation(evaluation))
        return std::move(error);
      return std::nullopt;
    }
    for (Binding &arg : evaluation.args) {
      auto it = global.find(arg.value->name);
      if (it == global.end())
        continue;
      if (it->second.shape != arg.local.shape)
        return makeError("the evaluation function takes '" + arg.value->name +
                         "' as [" + formatShape(arg.local.shape) +
                         "], the programs hold it as [" +
                         formatShape(it->second.shape) + "]");
      arg.local.bytes = std::move(it->second.bytes);
    }
  }
  Dataset &dataset = *evaluation.dataset;
  int64_t batches = dataset.getStepsPerEpoch();
  double lossSum = 0, correct = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) {
    for (Binding &arg : evaluation.args)
      if (isData(arg))
        dataset.fill(b, arg);
    if (llvm::Expected<float> ignored =
            invokeStep(compiled, evaluation.step.entry, evaluation.args,
                       evaluation.results);
        !ignored)
      return ignored.takeError();
    llvm::Expected<float> loss =
        readScalar(evaluation.results[evaluation.lossResult]);
    if (!loss)
      return loss.takeError();
    lossSum += *loss;
    if (evaluation.correctResult >= 0) {
      llvm::Expected<float> right =
          readScalar(evaluation.results[evaluation.correctResult]);
      if (!right)
        return right.takeError();
      correct += *right;
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (distrt_rank() != 0)
    return std::nullopt;
  int64_t samples = batches * dataset.getBatchSize();
  EvaluationResult result;
  result.loss = lossSum / batches;
  result.samples = samples;
  llvm::json::Object line{{"eval_after_step", stepsDone},
                          {"loss", lossSum / batches},
                          {"samples", samples},
                          {"seconds", seconds}};
  if (evaluation.correctResult >= 0) {
    line["accuracy"] = correct / samples;
    result.accuracy = correct / samples;
  }
  metrics.write(std::move(line));
  if (evaluation.print) {
    llvm::outs() << llvm::formatv("eval after step {0}: loss {1:F6}", stepsDone,
                                  lossSum / batches);
    if (result.accuracy)
      llvm::outs() << llvm::formatv(", accuracy {0:F4}", *result.accuracy);
    llvm::outs() << llvm::formatv(" ({0} samples", samples);
    if (int64_t left = dataset.getNumSamples() - samples)
      llvm::outs() << ", " << left << " left out: not a whole batch";
    llvm::outs() << llvm::formatv(", {0:F2} s)\n", seconds);
    llvm::outs().flush();
  }
  if (evaluation.gatheredFrom)
    if (llvm::Error error = waitForEvaluation(evaluation))
      return std::move(error);
  return result;
}
