//===- Evaluation.cpp - dist-run --eval-dataset ---------------------------===//

#include "Evaluation.h"
#include "Checkpoint.h"
#include "Failure.h"
#include "StepInputs.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace mlir;
using namespace distrun;

std::unique_ptr<Evaluation>
distrun::setUpEvaluation(const train::StepSignature &wholeStep,
                         const std::vector<Binding> &trainArgs, Arrays &state,
                         func::FuncOp entry, ModuleOp module,
                         const EvaluationOptions &options) {
  if (!wholeStep.eval)
    failOnEveryRank("'" + options.modulePath +
                    "' has no evaluation function for --eval-dataset: derive "
                    "it with dist-opt --train-derive-eval before the strategy");
  auto evaluation = std::make_unique<Evaluation>();
  evaluation->step = wholeStep.getEvalStep();
  int64_t rank = distrt_rank();
  for (const train::StepSignature::Value &value : evaluation->step.arguments) {
    Binding arg = bind(value, evaluation->step, rank);
    int64_t from = -1;
    for (auto [i, train] : llvm::enumerate(trainArgs))
      if (train.value->name == value.name && train.offsets == arg.offsets &&
          train.local.shape == arg.local.shape)
        from = i;
    if (from < 0 && isRestored(value))
      fail("the evaluation function takes '" + value.name + "' as [" +
           formatShape(arg.local.shape) + "] at [" + formatShape(arg.offsets) +
           "], a block the training step does not hold on this rank");
    if (from < 0 && !isData(arg)) {
      auto it = state.find(value.name);
      if (it == state.end())
        fail("'" + value.name +
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
    evaluation->results.push_back(bind(value, evaluation->step, rank));
  }
  if (evaluation->lossResult < 0)
    failOnEveryRank("the evaluation function returns no loss");
  evaluation->dataset = std::make_unique<Dataset>(
      "--eval-dataset", options.datasetPath, getDataSpecs(evaluation->step),
      /*seed=*/0,
      /*shuffle=*/false);
  for (Binding &arg : evaluation->args)
    if (isData(arg))
      if (std::optional<IndexRange> range =
              getIndexRange(entry, module, arg, evaluation->args))
        evaluation->dataset->checkRange(arg, *range);
  return evaluation;
}

void distrun::evaluate(CompiledStep &compiled, Evaluation &evaluation,
                       std::vector<Binding> &trainArgs, uint64_t stepsDone,
                       MetricsFile &metrics) {
  for (auto [arg, from] :
       llvm::zip_equal(evaluation.args, evaluation.fromTraining))
    if (from >= 0)
      arg.local.bytes = trainArgs[from].local.bytes;
  Dataset &dataset = *evaluation.dataset;
  int64_t batches = dataset.getStepsPerEpoch();
  double lossSum = 0, correct = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) {
    for (Binding &arg : evaluation.args)
      if (isData(arg))
        dataset.fill(b, arg);
    invokeStep(compiled, evaluation.step.entry, evaluation.args,
               evaluation.results);
    lossSum += readScalar(evaluation.results[evaluation.lossResult]);
    if (evaluation.correctResult >= 0)
      correct += readScalar(evaluation.results[evaluation.correctResult]);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (distrt_rank() != 0)
    return;
  int64_t samples = batches * dataset.getBatchSize();
  llvm::json::Object line{{"eval_after_step", stepsDone},
                          {"loss", lossSum / batches},
                          {"samples", samples},
                          {"seconds", seconds}};
  llvm::outs() << llvm::formatv("eval after step {0}: loss {1:F6}", stepsDone,
                                lossSum / batches);
  if (evaluation.correctResult >= 0) {
    llvm::outs() << llvm::formatv(", accuracy {0:F4}", correct / samples);
    line["accuracy"] = correct / samples;
  }
  metrics.write(std::move(line));
  llvm::outs() << llvm::formatv(" ({0} samples", samples);
  if (int64_t left = dataset.getNumSamples() - samples)
    llvm::outs() << ", " << left << " left out: not a whole batch";
  llvm::outs() << llvm::formatv(", {0:F2} s)\n", seconds);
  llvm::outs().flush();
}
