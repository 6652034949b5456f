//===- TrainingStep.cpp - roles and names of a training step --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::train;

static StepValue readValue(unsigned index, Type type, DictionaryAttr attrs) {
  StepValue value{index, std::nullopt, nullptr, type};
  if (!attrs)
    return value;
  if (auto role = attrs.getAs<RoleAttr>(TrainDialect::kRoleAttrName))
    value.role = role.getValue();
  value.name = attrs.getAs<StringAttr>(TrainDialect::kNameAttrName);
  // By name: the train dialect does not depend on the dist dialect.
  value.part = attrs.get("dist.block");
  return value;
}

std::string StepValue::getKey() const {
  std::string key = name ? name.getValue().str() : std::string();
  if (part) {
    llvm::raw_string_ostream os(key);
    os << " " << part;
  }
  return key;
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

bool TrainingStep::isEvalFunction(FunctionOpInterface func) {
  return func->hasAttr(TrainDialect::kEvalOfAttrName);
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

std::string TrainingStep::describe(StringRef what, const StepValue &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << what << " #" << value.index;
  if (value.name)
    os << " '" << value.name.getValue() << "'";
  if (value.role)
    os << " (" << stringifyRole(*value.role) << ")";
  return text;
}

/// The location of argument `index` of `func`: its own when the body has
/// one, else the function's (also when the entry block does not match the
/// signature, which the function's own verifier reports).
static Location getArgumentLoc(FunctionOpInterface func, unsigned index) {
  if (func.isExternal() || index >= func.getFunctionBody().getNumArguments())
    return func.getLoc();
  return func.getArgument(index).getLoc();
}

/// The location of result `index` of `func`: its return's.
static Location getResultLoc(FunctionOpInterface func, unsigned index) {
  Region &body = func.getFunctionBody();
  if (body.empty() || body.back().empty())
    return func.getLoc();
  return body.back().back().getLoc();
}

InFlightDiagnostic
TrainingStep::emitArgumentError(const StepValue &value) const {
  return mlir::emitError(getArgumentLoc(func, value.index))
         << describe("argument", value) << " ";
}

InFlightDiagnostic TrainingStep::emitResultError(const StepValue &value) const {
  return mlir::emitError(getResultLoc(func, value.index))
         << describe("result", value) << " ";
}

InFlightDiagnostic
TrainingStep::emitArgumentRemark(const StepValue &value) const {
  return mlir::emitRemark(getArgumentLoc(func, value.index))
         << describe("argument", value) << " ";
}

/// Checks roles and names are present and names unique; fills `byName`.
static LogicalResult checkNamed(const TrainingStep &step, bool results,
                                llvm::StringMap<const StepValue *> &byName) {
  StringRef what = results ? "result" : "argument";
  for (const StepValue &value : results ? step.results : step.arguments) {
    auto emit = [&] {
      return results ? step.emitResultError(value)
                     : step.emitArgumentError(value);
    };
    if (!value.role)
      return emit() << "has no '" << TrainDialect::kRoleAttrName << "'";
    if (!value.name)
      return emit() << "has no '" << TrainDialect::kNameAttrName << "'";
    auto [it, inserted] = byName.try_emplace(value.getKey(), &value);
    if (!inserted)
      return emit() << "reuses the name of "
                    << TrainingStep::describe(what, *it->second);
  }
  return success();
}

LogicalResult TrainingStep::verify(bool requireLoss) const {
  llvm::StringMap<const StepValue *> byArgument, byResult;
  if (failed(checkNamed(*this, /*results=*/false, byArgument)) ||
      failed(checkNamed(*this, /*results=*/true, byResult)))
    return failure();

  const StepValue *loss = nullptr;
  for (const StepValue &result : results) {
    if (*result.role == Role::loss) {
      if (loss)
        return emitResultError(result)
               << "is a second loss (" << describe("result", *loss)
               << " is one)";
      loss = &result;
      auto type = dyn_cast<RankedTensorType>(result.type);
      if (!type || type.getRank() != 0 ||
          !isa<FloatType>(type.getElementType()))
        return emitResultError(result)
               << "must be a float scalar tensor, got " << result.type;
      continue;
    }
    if (*result.role != Role::param && *result.role != Role::opt_state)
      continue;
    const StepValue *argument = byArgument.lookup(result.getKey());
    if (!argument)
      return emitResultError(result)
             << "does not name an argument: updated state must replace "
                "the argument of the same name";
    if (argument->role != result.role)
      return emitResultError(result)
             << "replaces " << describe("argument", *argument)
             << " of another role";
    if (argument->type != result.type)
      return emitResultError(result)
             << "has type " << result.type << " but "
             << describe("argument", *argument) << " has " << argument->type;
  }
  if (!loss && requireLoss)
    return mlir::emitError(FunctionOpInterface(func).getLoc())
           << "training step '" << FunctionOpInterface(func).getName()
           << "' has no result with role 'loss'";
  return success();
}

const StepValue *TrainingStep::getSkippedUpdate() const {
  FunctionOpInterface function = func;
  if (function.isExternal())
    return nullptr;
  Operation *ret = function.getFunctionBody().back().getTerminator();
  llvm::StringMap<unsigned> argumentOf;
  for (const StepValue &argument : arguments)
    argumentOf.try_emplace(argument.getKey(), argument.index);
  for (const StepValue &result : results) {
    if (result.role != Role::param && result.role != Role::opt_state)
      continue;
    auto it = argumentOf.find(result.getKey());
    if (it == argumentOf.end())
      continue;
    Value returned = ret->getOperand(result.index);
    if (getUnskipped(returned, function.getArgument(it->second)) != returned)
      return &result;
  }
  return nullptr;
}

Value mlir::train::getUnskipped(Value returned, Value arg) {
  auto select = returned.getDefiningOp<SelectOp>();
  if (!select || select.getOnFalse() != arg ||
      select.getOnTrue().getType() != returned.getType())
    return returned;
  auto condition = dyn_cast<RankedTensorType>(select.getCondition().getType());
  if (!condition || condition.getRank() != 0)
    return returned;
  return select.getOnTrue();
}

BlockArgument mlir::train::getKeptArgument(Operation *op) {
  auto select = dyn_cast<SelectOp>(op);
  if (!select || llvm::none_of(select->getUsers(), [](Operation *user) {
        return user->hasTrait<OpTrait::IsTerminator>();
      }))
    return nullptr;
  auto arg = dyn_cast<BlockArgument>(select.getOnFalse());
  if (!arg || getUnskipped(select.getResult(), arg) == select.getResult())
    return nullptr;
  return arg;
}

OptimizerOpInterface mlir::train::getUpdateOf(Value returned, Value arg) {
  Value unskipped = getUnskipped(returned, arg);
  auto update = unskipped.getDefiningOp<OptimizerOpInterface>();
  if (!update)
    return nullptr;
  // The parameter becomes the new parameter; state becomes other results.
  if (update.getParam() == arg || unskipped == update.getNewParam())
    return update.getParam() == arg && unskipped == update.getNewParam()
               ? update
               : nullptr;
  return llvm::is_contained(update->getOperands(), arg) ? update : nullptr;
}

std::optional<StringRef> mlir::train::getNumberedModule(StringRef name) {
  size_t end = 0;
  while (end < name.size()) {
    size_t dot = name.find('.', end);
    StringRef part = name.slice(end, dot);
    if (!part.empty() &&
        llvm::all_of(part, [](char c) { return llvm::isDigit(c); }))
      return name.take_front(dot == StringRef::npos ? name.size() : dot);
    if (dot == StringRef::npos)
      break;
    end = dot + 1;
  }
  return std::nullopt;
}

bool mlir::train::hasLayers(const TrainingStep &step) {
  return llvm::any_of(step.arguments, [](const StepValue &arg) {
    return arg.role == Role::param && arg.name &&
           getNumberedModule(arg.name.getValue());
  });
}
