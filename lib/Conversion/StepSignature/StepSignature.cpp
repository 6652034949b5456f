//===- StepSignature.cpp - a training step's interface for runners --------===//

#include "distopt/Conversion/StepSignature.h"
#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTRECORDSTEPPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

static constexpr StringLiteral kEntry = "entry", kMeshShape = "mesh_shape",
                               kMeshAxes = "mesh_axes",
                               kArguments = "arguments",
                               kResults = "results", kType = "type",
                               kName = "name", kRole = "role",
                               kSplit = "split", kClasses = "classes";

int64_t StepSignature::getNumDevices() const {
  int64_t devices = 1;
  for (int64_t size : meshShape)
    devices *= size;
  return devices;
}

int64_t StepSignature::getAxisIndex(StringRef axis) const {
  return llvm::find(meshAxes, axis.str()) - meshAxes.begin();
}

int64_t StepSignature::getGroupSize(ArrayAttr axes) const {
  int64_t size = 1;
  for (Attribute axis : axes)
    size *= meshShape[getAxisIndex(cast<StringAttr>(axis).getValue())];
  return size;
}

/// The classes label argument `index` of `entry` indexes: its
/// `train.classes`, else the class dim of a cross-entropy reading it.
static std::optional<int64_t> getLabelClasses(func::FuncOp entry,
                                              unsigned index) {
  auto role = entry.getArgAttrOfType<RoleAttr>(index, TrainDialect::kRoleAttrName);
  if (!role || role.getValue() != Role::label)
    return std::nullopt;
  if (auto classes = entry.getArgAttrOfType<IntegerAttr>(
          index, TrainDialect::kClassesAttrName))
    return classes.getInt();
  for (Operation *user : entry.getArgument(index).getUsers()) {
    Value logits;
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      logits = loss.getLogits();
    else if (auto grad = dyn_cast<CrossEntropyBackwardOp>(user))
      logits = grad.getLogits();
    if (logits)
      return cast<RankedTensorType>(logits.getType()).getShape().back();
  }
  return std::nullopt;
}

LogicalResult mlir::train::recordStepSignature(ModuleOp module,
                                               StringRef entryName) {
  if (module->hasAttr(TrainDialect::kStepAttrName))
    return success();
  func::FuncOp entry;
  unsigned steps = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (entryName.empty() ? TrainingStep::isTrainingStep(func)
                          : func.getSymName() == entryName) {
      entry = func;
      ++steps;
    }
  }
  if (!entryName.empty() && !entry)
    return module.emitError() << "no function '" << entryName
                              << "' to record as the training step";
  if (steps != 1)
    return success();

  MLIRContext *context = module.getContext();
  Builder builder(context);
  bool partitioned = entry->hasAttr(dist::DistDialect::kPartitionedAttrName);
  dist::MeshOp mesh;
  auto record = [&](Type type, DictionaryAttr attrs,
                    StringRef what) -> FailureOr<Attribute> {
    if (!isa<RankedTensorType>(type))
      return entry.emitError()
             << what << " is " << type
             << ", not a ranked tensor: the step signature cannot record it";
    NamedAttrList fields;
    fields.set(kType, TypeAttr::get(type));
    if (attrs) {
      if (auto role = attrs.getAs<RoleAttr>(TrainDialect::kRoleAttrName))
        fields.set(kRole, builder.getStringAttr(stringifyRole(role.getValue())));
      if (auto name = attrs.getAs<StringAttr>(TrainDialect::kNameAttrName))
        fields.set(kName, name);
      auto sharding =
          attrs.getAs<dist::ShardingAttr>(dist::DistDialect::kShardingAttrName);
      if (partitioned && sharding) {
        SmallVector<Attribute> dims(sharding.getDims().begin(),
                                    sharding.getDims().end());
        fields.set(kSplit, builder.getArrayAttr(dims));
        if (!mesh)
          mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
              entry, sharding.getMesh());
      }
    }
    return Attribute(fields.getDictionary(context));
  };
  SmallVector<Attribute> arguments, results;
  for (auto [i, type] : llvm::enumerate(entry.getArgumentTypes())) {
    FailureOr<Attribute> value = record(type, entry.getArgAttrDict(i),
                                        "argument #" + std::to_string(i));
    if (failed(value))
      return failure();
    // The classes a label indexes, for runners that check the labels once
    // lowering has removed the cross-entropy.
    if (std::optional<int64_t> classes = getLabelClasses(entry, i)) {
      NamedAttrList fields(cast<DictionaryAttr>(*value));
      fields.set(kClasses, builder.getI64IntegerAttr(*classes));
      *value = fields.getDictionary(context);
    }
    arguments.push_back(*value);
  }
  for (auto [i, type] : llvm::enumerate(entry.getResultTypes())) {
    FailureOr<Attribute> value = record(type, entry.getResultAttrDict(i),
                                        "result #" + std::to_string(i));
    if (failed(value))
      return failure();
    results.push_back(*value);
  }
  NamedAttrList step;
  step.set(kEntry, entry.getSymNameAttr());
  if (mesh) {
    step.set(kMeshShape, mesh.getShapeAttr());
    step.set(kMeshAxes, mesh.getAxes());
  }
  step.set(kArguments, builder.getArrayAttr(arguments));
  step.set(kResults, builder.getArrayAttr(results));
  module->setAttr(TrainDialect::kStepAttrName, step.getDictionary(context));
  entry->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  return success();
}

FailureOr<StepSignature> mlir::train::readStepSignature(ModuleOp module) {
  auto step = module->getAttrOfType<DictionaryAttr>(TrainDialect::kStepAttrName);
  if (!step)
    return module.emitError()
           << "no training step: no function has train.role arguments and "
           << "the module records no '" << TrainDialect::kStepAttrName << "'";
  auto malformed = [&]() {
    return module.emitError()
           << "malformed '" << TrainDialect::kStepAttrName << "': ";
  };
  StepSignature signature;
  auto entry = step.getAs<StringAttr>(kEntry);
  if (!entry)
    return malformed() << "no '" << kEntry << "' string";
  signature.entry = entry.str();
  auto shape = step.getAs<DenseI64ArrayAttr>(kMeshShape);
  auto axes = step.getAs<ArrayAttr>(kMeshAxes);
  if (bool(shape) != bool(axes) ||
      (shape && shape.size() != static_cast<int64_t>(axes.size())))
    return malformed() << "'" << kMeshShape << "' and '" << kMeshAxes
                       << "' must come together, one size per axis";
  if (shape) {
    llvm::append_range(signature.meshShape, shape.asArrayRef());
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name)
        return malformed() << "'" << kMeshAxes << "' must hold strings";
      signature.meshAxes.push_back(name.str());
    }
  }
  for (auto [listName, values, key] :
       {std::make_tuple(kArguments, &signature.arguments, "argument"),
        std::make_tuple(kResults, &signature.results, "result")}) {
    auto entries = step.getAs<ArrayAttr>(listName);
    if (!entries)
      return malformed() << "no '" << listName << "' array";
    for (auto [i, attr] : llvm::enumerate(entries)) {
      auto fields = dyn_cast<DictionaryAttr>(attr);
      auto type = fields ? fields.getAs<TypeAttr>(kType) : nullptr;
      auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue())
                         : nullptr;
      if (!tensor)
        return malformed() << key << " #" << i
                           << " must be a dictionary with a ranked tensor '"
                           << kType << "'";
      StepSignature::Value value;
      value.index = i;
      value.type = tensor;
      if (auto role = fields.getAs<StringAttr>(kRole)) {
        value.role = symbolizeRole(role.getValue());
        if (!value.role)
          return malformed() << key << " #" << i << " has the unknown role "
                             << role;
      }
      if (auto name = fields.getAs<StringAttr>(kName))
        value.name = name.str();
      value.split = fields.getAs<ArrayAttr>(kSplit);
      if (value.split) {
        if (!shape)
          return malformed() << key << " #" << i
                             << " is split but no mesh is recorded";
        if (static_cast<int64_t>(value.split.size()) != tensor.getRank())
          return malformed() << key << " #" << i << " has " << value.split.size()
                             << " split dims for " << tensor;
        for (Attribute dim : value.split) {
          auto axes = dyn_cast<ArrayAttr>(dim);
          if (!axes)
            return malformed() << key << " #" << i
                               << " must split each dim over an array of axes";
          for (Attribute axis : axes) {
            auto axisName = dyn_cast<StringAttr>(axis);
            if (!axisName || signature.getAxisIndex(axisName.getValue()) ==
                                 static_cast<int64_t>(signature.meshAxes.size()))
              return malformed() << key << " #" << i << " is split over "
                                 << axis << ", not an axis of the mesh";
          }
        }
      }
      values->push_back(value);
    }
  }
  return signature;
}

namespace {
struct DistRecordStepPass
    : public mlir::train::impl::DistRecordStepPassBase<DistRecordStepPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(recordStepSignature(module, entry)))
      return signalPassFailure();
    auto step =
        module->getAttrOfType<DictionaryAttr>(TrainDialect::kStepAttrName);
    auto name = step ? step.getAs<StringAttr>(kEntry) : nullptr;
    auto func = name ? module.lookupSymbol<func::FuncOp>(name) : nullptr;
    if (!dropFunctionAttributes || !func)
      return;
    MLIRContext *context = module.getContext();
    for (StringRef attr :
         {TrainDialect::kRoleAttrName, TrainDialect::kNameAttrName}) {
      auto attrName = StringAttr::get(context, attr);
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, attrName);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        func.removeResultAttr(i, attrName);
    }
  }
};
} // namespace
