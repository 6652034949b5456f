//===- TrainDialect.cpp - train dialect -----------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::train;

#include "distopt/Dialect/Train/IR/ElementwiseOpInterface.cpp.inc"
#include "distopt/Dialect/Train/IR/OptimizerOpInterface.cpp.inc"

bool mlir::train::hasElementwiseShapes(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return type && llvm::all_of(op->getOperandTypes(), [&](Type operand) {
           auto tensor = dyn_cast<RankedTensorType>(operand);
           return tensor && (tensor.getRank() == 0 ||
                             tensor.getShape() == type.getShape());
         });
}
#include "distopt/Dialect/Train/IR/TrainEnums.cpp.inc"
#include "distopt/Dialect/Train/IR/TrainOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Train/IR/TrainAttrs.cpp.inc"

namespace {
/// Short names in printed IR. A lowered step returns its results as one
/// LLVM struct of memref descriptors, whose type every `llvm.insertvalue`
/// building it repeats: printed in full, a 48-layer GPT's lowered step is
/// 500 MB of text (quadratic in the results), 30 MB with an alias.
struct TrainOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Type type, raw_ostream &os) const override {
    if (type.getAbstractType().getName() != "llvm.struct")
      return AliasResult::NoAlias;
    unsigned members = 0;
    type.walkImmediateSubElements([](Attribute) {}, [&](Type) { ++members; });
    if (members < kMinAliasedMembers)
      return AliasResult::NoAlias;
    os << "struct" << members;
    return AliasResult::OverridableAlias;
  }

  static constexpr unsigned kMinAliasedMembers = 8;
};
} // namespace

void TrainDialect::initialize() {
  addInterfaces<TrainOpAsmInterface>();
  registerPartBuilder(this);
  addOperations<
#define GET_OP_LIST
#include "distopt/Dialect/Train/IR/TrainOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "distopt/Dialect/Train/IR/TrainAttrs.cpp.inc"
      >();
}

static bool isArgumentRole(Role role) {
  switch (role) {
  case Role::param:
  case Role::opt_state:
  case Role::input:
  case Role::label:
  case Role::hyper:
    return true;
  case Role::loss:
  case Role::metric:
    return false;
  }
  llvm_unreachable("unknown role");
}

static bool isResultRole(Role role) {
  return role == Role::param || role == Role::opt_state || role == Role::loss ||
         role == Role::metric;
}

/// Checks `train.role` / `train.name` on argument or result `index` of `op`.
static LogicalResult verifyValueAttribute(Operation *op, StringRef what,
                                          unsigned index, NamedAttribute attr) {
  auto emit = [&]() {
    return op->emitOpError() << what << " #" << index << ": ";
  };
  if (attr.getName() == TrainDialect::kRoleAttrName) {
    auto role = dyn_cast<RoleAttr>(attr.getValue());
    if (!role)
      return emit() << "'" << TrainDialect::kRoleAttrName
                    << "' must be a #train.role attribute, got "
                    << attr.getValue();
    bool valid = what == "argument" ? isArgumentRole(role.getValue())
                                    : isResultRole(role.getValue());
    if (!valid)
      return emit() << "role '" << stringifyRole(role.getValue())
                    << "' is not valid on "
                    << (what == "argument" ? "an " : "a ") << what
                    << " (expected "
                    << (what == "argument"
                            ? "param, opt_state, input, label or hyper"
                            : "param, opt_state, loss or metric")
                    << ")";
    return success();
  }
  if (attr.getName() == TrainDialect::kNameAttrName) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return emit() << "'" << TrainDialect::kNameAttrName
                    << "' must be a non-empty string, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == TrainDialect::kClassesAttrName) {
    auto classes = dyn_cast<IntegerAttr>(attr.getValue());
    if (what != "argument" || !classes || classes.getInt() < 1)
      return emit() << "'" << TrainDialect::kClassesAttrName
                    << "' must be a positive integer on an argument (the "
                       "classes a label indexes), got "
                    << attr.getValue();
    return success();
  }
  if (attr.getName() == TrainDialect::kInitAttrName) {
    Attribute value = attr.getValue();
    auto text = dyn_cast<StringAttr>(value);
    if (what != "argument" ||
        !(isa<FloatAttr>(value) || (text && text.getValue() == "normal")))
      return emit() << "'" << TrainDialect::kInitAttrName
                    << "' must be a float or \"normal\" on an argument (its "
                       "initial value), got "
                    << value;
    return success();
  }
  return emit() << "unknown attribute '" << attr.getName().getValue() << "'";
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  return verifyValueAttribute(op, "argument", argIndex, attr);
}

LogicalResult TrainDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  return verifyValueAttribute(op, "result", resultIndex, attr);
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kShardingRuleAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << kShardingRuleAttrName << "' must be a string";
    return success();
  }
  if (attr.getName() == kStepAttrName) {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << kStepAttrName << "' must be a dictionary on a module";
    return success();
  }
  if (attr.getName() == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stage || !stage.getType().isInteger() || stage.getInt() < 0)
      return op->emitOpError()
             << "'" << kStageAttrName
             << "' must be a non-negative integer (a pipeline stage), got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kEvalOfAttrName) {
    auto of = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!of || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << kEvalOfAttrName
             << "' must be a symbol (the training step) on a function";
    return success();
  }
  if (attr.getName() == kMixedPrecisionAttrName) {
    if (!isa<StringAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << kMixedPrecisionAttrName
             << "' must be a string (train-mixed-precision's options) on a "
                "function";
    return success();
  }
  if (attr.getName() == kRematAttrName) {
    if (!isa<StringAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << kRematAttrName
             << "' must be a string (train-remat's policy) on a function";
    return success();
  }
  if (attr.getName() == kLossSeedAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<ConstantOp>(op))
      return op->emitOpError()
             << "'" << kLossSeedAttrName
             << "' must be a unit attribute on a train.constant (the "
                "backward's seed)";
    return success();
  }
  if (attr.getName() == kCostAttrName) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << kCostAttrName << "' must be a dictionary";
    return success();
  }
  return op->emitOpError() << "unknown attribute '" << attr.getName().getValue()
                           << "' (train attributes on ops are '"
                           << kShardingRuleAttrName << "', '" << kCostAttrName
                           << "', '" << kStageAttrName << "' and '"
                           << kLossSeedAttrName << "', on functions '"
                           << kEvalOfAttrName << "', '"
                           << kMixedPrecisionAttrName << "' and '"
                           << kRematAttrName << "', on modules '"
                           << kStepAttrName << "'; roles and names belong "
                           << "on function arguments and results)";
}
