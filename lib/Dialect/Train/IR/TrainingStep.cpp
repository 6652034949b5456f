//===- TrainingStep.cpp - roles and names of a training step --------------===//

#include "distopt/Dialect/Train/IR/TrainingStep.h"

using namespace mlir;
using namespace mlir::train;

static StepValue readValue(unsigned index, Type type, DictionaryAttr attrs) {
  StepValue value{index, std::nullopt, nullptr, type};
  if (!attrs)
    return value;
  if (auto role = attrs.getAs<RoleAttr>(TrainDialect::kRoleAttrName))
    value.role = role.getValue();
  value.name = attrs.getAs<StringAttr>(TrainDialect::kNameAttrName);
  return value;
}

bool TrainingStep::isTrainingStep(FunctionOpInterface func) {
  auto hasRole = [](ArrayRef<Attribute> attrs) {
    return llvm::any_of(attrs, [](Attribute attr) {
      auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
      return dict && dict.contains(TrainDialect::kRoleAttrName);
    });
  };
  ArrayAttr args = func.getArgAttrsAttr(), results = func.getResAttrsAttr();
  return (args && hasRole(args.getValue())) ||
         (results && hasRole(results.getValue()));
}

TrainingStep TrainingStep::get(FunctionOpInterface func) {
  TrainingStep step{func, {}, {}};
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes()))
    step.arguments.push_back(
        readValue(index, type, func.getArgAttrDict(index)));
  for (auto [index, type] : llvm::enumerate(func.getResultTypes()))
    step.results.push_back(
        readValue(index, type, func.getResultAttrDict(index)));
  return step;
}
