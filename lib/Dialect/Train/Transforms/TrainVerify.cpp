//===- TrainVerify.cpp - check that training steps are well formed --------===//

#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::train {
#define GEN_PASS_DEF_TRAINVERIFYPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

/// Prints `result #1 'fc1.weight' (param)`.
static std::string describe(StringRef what, const StepValue &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << what << " #" << value.index;
  if (value.name)
    os << " '" << value.name.getValue() << "'";
  if (value.role)
    os << " (" << stringifyRole(*value.role) << ")";
  return text;
}

/// Checks roles and names are present and names unique; fills `byName`.
static LogicalResult checkNamed(FunctionOpInterface func, StringRef what,
                                ArrayRef<StepValue> values,
                                llvm::StringMap<const StepValue *> &byName) {
  for (const StepValue &value : values) {
    if (!value.role)
      return func.emitOpError() << describe(what, value) << " has no '"
                                << TrainDialect::kRoleAttrName << "'";
    if (!value.name)
      return func.emitOpError() << describe(what, value) << " has no '"
                                << TrainDialect::kNameAttrName << "'";
    auto [it, inserted] = byName.try_emplace(value.name.getValue(), &value);
    if (!inserted)
      return func.emitOpError()
             << describe(what, value) << " reuses the name of "
             << describe(what, *it->second);
  }
  return success();
}

static LogicalResult verifyStep(const TrainingStep &step) {
  FunctionOpInterface func = step.func;
  llvm::StringMap<const StepValue *> arguments, results;
  if (failed(checkNamed(func, "argument", step.arguments, arguments)) ||
      failed(checkNamed(func, "result", step.results, results)))
    return failure();

  const StepValue *loss = nullptr;
  for (const StepValue &result : step.results) {
    if (*result.role == Role::loss) {
      if (loss)
        return func.emitOpError()
               << "has two loss results: " << describe("result", *loss)
               << " and " << describe("result", result);
      loss = &result;
      auto type = dyn_cast<RankedTensorType>(result.type);
      if (!type || type.getRank() != 0 ||
          !isa<FloatType>(type.getElementType()))
        return func.emitOpError()
               << describe("result", result)
               << " must be a float scalar tensor, got " << result.type;
      continue;
    }
    if (*result.role != Role::param && *result.role != Role::opt_state)
      continue;
    const StepValue *argument = arguments.lookup(result.name.getValue());
    if (!argument)
      return func.emitOpError()
             << describe("result", result)
             << " does not name an argument: updated state must replace "
                "the argument of the same name";
    if (argument->role != result.role)
      return func.emitOpError()
             << describe("result", result) << " replaces "
             << describe("argument", *argument) << " of another role";
    if (argument->type != result.type)
      return func.emitOpError()
             << describe("result", result) << " has type " << result.type
             << " but " << describe("argument", *argument) << " has "
             << argument->type;
  }
  if (!loss)
    return func.emitOpError() << "has no result with role 'loss'";
  return success();
}

namespace {
struct TrainVerifyPass
    : public mlir::train::impl::TrainVerifyPassBase<TrainVerifyPass> {
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](FunctionOpInterface func) {
      if (TrainingStep::isTrainingStep(func) &&
          failed(verifyStep(TrainingStep::get(func))))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
