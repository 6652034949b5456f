//===- StepSignature.cpp - a training step's interface for runners --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

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
                               kArguments = "arguments", kResults = "results",
                               kType = "type", kName = "name", kRole = "role",
                               kSplit = "split", kClasses = "classes",
                               kPrograms = "programs", kDevices = "devices",
                               kBlock = "block", kGlobalShape = "global_shape",
                               kCache = "cache", kEval = "eval",
                               kHostAxes = "host_axes",
                               kMixedPrecision = "mixed_precision";

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

std::optional<int64_t> mlir::train::getCrossEntropyClasses(Value label) {
  for (OpOperand &use : label.getUses()) {
    Operation *user = use.getOwner();
    Value logits;
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      logits = loss.getLogits();
    else if (auto grad = dyn_cast<CrossEntropyBackwardOp>(user))
      logits = grad.getLogits();
    if (logits)
      return cast<RankedTensorType>(logits.getType()).getShape().back();
    // A placed program's fragments take their inputs as block arguments;
    // a microbatch is a slice of the labels, and a reshape keeps them.
    Value next;
    if (auto fragment = dyn_cast<dist::FragmentOp>(user))
      next = fragment.getBody().getArgument(use.getOperandNumber());
    else if (isa<SliceOp, ReshapeOp>(user))
      next = user->getResult(0);
    if (next)
      if (std::optional<int64_t> classes = getCrossEntropyClasses(next))
        return classes;
  }
  return std::nullopt;
}

/// The classes label argument `index` of `entry` indexes: its
/// `train.classes`, else the class dim of a cross-entropy reading it.
static std::optional<int64_t> getLabelClasses(func::FuncOp entry,
                                              unsigned index) {
  auto role =
      entry.getArgAttrOfType<RoleAttr>(index, TrainDialect::kRoleAttrName);
  if (!role || role.getValue() != Role::label)
    return std::nullopt;
  if (auto classes = entry.getArgAttrOfType<IntegerAttr>(
          index, TrainDialect::kClassesAttrName))
    return classes.getInt();
  return getCrossEntropyClasses(entry.getArgument(index));
}

namespace {
/// The recorded arguments and results of one function.
struct RecordedValues {
  SmallVector<Attribute> arguments, results;
};
} // namespace

/// Records `func`'s arguments and results; `mesh` is set to the mesh of
/// their shardings (a partitioned function).
static FailureOr<RecordedValues> recordValues(func::FuncOp func,
                                              dist::MeshOp &mesh) {
  MLIRContext *context = func.getContext();
  Builder builder(context);
  bool partitioned = func->hasAttr(dist::DistDialect::kPartitionedAttrName);
  auto record = [&](Type type, DictionaryAttr attrs,
                    StringRef what) -> FailureOr<Attribute> {
    if (!isa<RankedTensorType>(type))
      return func.emitError()
             << what << " is " << type
             << ", not a ranked tensor: the step signature cannot record it";
    NamedAttrList fields;
    fields.set(kType, TypeAttr::get(type));
    if (attrs) {
      if (auto role = attrs.getAs<RoleAttr>(TrainDialect::kRoleAttrName))
        fields.set(kRole,
                   builder.getStringAttr(stringifyRole(role.getValue())));
      if (auto name = attrs.getAs<StringAttr>(TrainDialect::kNameAttrName))
        fields.set(kName, name);
      auto sharding =
          attrs.getAs<dist::ShardingAttr>(dist::DistDialect::kShardingAttrName);
      if (auto block =
              attrs.getAs<dist::BlockAttr>(dist::DistDialect::kBlockAttrName)) {
        fields.set(kBlock, builder.getDenseI64ArrayAttr(block.getOffsets()));
        fields.set(kGlobalShape,
                   builder.getDenseI64ArrayAttr(block.getShape()));
      }
      if (attrs.get(dist::DistDialect::kCacheAttrName))
        fields.set(kCache, builder.getUnitAttr());
      if (partitioned && sharding) {
        SmallVector<Attribute> dims(sharding.getDims().begin(),
                                    sharding.getDims().end());
        fields.set(kSplit, builder.getArrayAttr(dims));
        if (!mesh)
          mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
              func, sharding.getMesh());
      }
    }
    return Attribute(fields.getDictionary(context));
  };
  RecordedValues values;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    FailureOr<Attribute> value =
        record(type, func.getArgAttrDict(i), "argument #" + std::to_string(i));
    if (failed(value))
      return failure();
    // The classes a label indexes, for runners that check the labels once
    // lowering has removed the cross-entropy.
    if (std::optional<int64_t> classes = getLabelClasses(func, i)) {
      NamedAttrList fields(cast<DictionaryAttr>(*value));
      fields.set(kClasses, builder.getI64IntegerAttr(*classes));
      *value = fields.getDictionary(context);
    }
    values.arguments.push_back(*value);
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    FailureOr<Attribute> value =
        record(type, func.getResultAttrDict(i), "result #" + std::to_string(i));
    if (failed(value))
      return failure();
    values.results.push_back(*value);
  }
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  return values;
}

/// The devices (row-major ranks) of `mesh` that `place` names.
static SmallVector<int64_t> getPlaceDevices(dist::PlaceAttr place,
                                            dist::MeshOp mesh) {
  ArrayRef<int64_t> shape = mesh.getShape();
  SmallVector<int64_t> devices;
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  for (int64_t device = 0; device < count; ++device) {
    bool inside = true;
    int64_t rest = device;
    for (int64_t axis = shape.size() - 1; axis >= 0; --axis) {
      int64_t coord = rest % shape[axis];
      rest /= shape[axis];
      std::optional<int64_t> fixed =
          place.getCoord(cast<StringAttr>(mesh.getAxes()[axis]).getValue());
      inside &= !fixed || *fixed == coord;
    }
    if (inside)
      devices.push_back(device);
  }
  return devices;
}

/// Records `eval`, the evaluation function of `of` (words), in `step` as
/// `eval = {entry, arguments, results}`; its values must be sharded over
/// `mesh` (none: single-device).
static LogicalResult recordEval(NamedAttrList &step, func::FuncOp eval,
                                dist::MeshOp mesh, const std::string &of) {
  Builder builder(eval.getContext());
  dist::MeshOp evalMesh;
  FailureOr<RecordedValues> values = recordValues(eval, evalMesh);
  if (failed(values))
    return failure();
  if (evalMesh != mesh) {
    InFlightDiagnostic diag = eval.emitError()
                              << "the evaluation function of " << of << " ";
    if (!mesh)
      return diag << "is distributed over mesh '" << evalMesh.getSymName()
                  << "': placed programs evaluate on one device (derive it "
                     "before the strategy)";
    return diag << "is not distributed on its mesh";
  }
  step.set(kEval, builder.getDictionaryAttr(
                      {builder.getNamedAttr(kEntry, eval.getSymNameAttr()),
                       builder.getNamedAttr(
                           kArguments, builder.getArrayAttr(values->arguments)),
                       builder.getNamedAttr(
                           kResults, builder.getArrayAttr(values->results))}));
  return success();
}

/// Records the options of train-mixed-precision (from the first of `funcs`
/// that has them), which tell runners about dynamic loss scaling.
static void recordMixedPrecision(NamedAttrList &step,
                                 ArrayRef<FunctionOpInterface> funcs) {
  for (FunctionOpInterface func : funcs)
    if (auto options = func->getAttrOfType<StringAttr>(
            TrainDialect::kMixedPrecisionAttrName)) {
      step.set(kMixedPrecision, options);
      return;
    }
}

/// Records the placed programs of an MPMD module (`programs`, in module
/// order) and its single-device evaluation function, if any.
static LogicalResult recordPrograms(ModuleOp module,
                                    ArrayRef<func::FuncOp> programs) {
  MLIRContext *context = module.getContext();
  Builder builder(context);
  dist::MeshOp placeMesh;
  SmallVector<Attribute> records;
  std::optional<RecordedValues> first;
  DenseMap<int64_t, StringRef> runner;
  for (func::FuncOp func : programs) {
    auto place =
        func->getAttrOfType<dist::PlaceAttr>(dist::DistDialect::kPlaceAttrName);
    auto mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
        func, place.getMesh());
    if (!mesh)
      return func.emitError() << "is placed on " << place
                              << ", whose mesh the module does not define";
    if (placeMesh && mesh != placeMesh)
      return func.emitError()
             << "is placed on mesh " << place.getMesh()
             << " but another program on " << placeMesh.getSymName()
             << ": the programs of a step share one mesh";
    placeMesh = mesh;
    dist::MeshOp valueMesh;
    FailureOr<RecordedValues> values = recordValues(func, valueMesh);
    if (failed(values))
      return failure();
    if (valueMesh && valueMesh != mesh)
      return func.emitError()
             << "shards its values over mesh '" << valueMesh.getSymName()
             << "', not its place's mesh '" << mesh.getSymName() << "'";
    SmallVector<int64_t> devices = getPlaceDevices(place, mesh);
    for (int64_t device : devices)
      if (auto [it, fresh] = runner.try_emplace(device, func.getSymName());
          !fresh)
        return func.emitError()
               << "runs on device " << device << ", which program '"
               << it->second << "' runs too";
    NamedAttrList fields;
    fields.set(kEntry, func.getSymNameAttr());
    fields.set(kDevices, builder.getDenseI64ArrayAttr(devices));
    fields.set(kArguments, builder.getArrayAttr(values->arguments));
    fields.set(kResults, builder.getArrayAttr(values->results));
    records.push_back(fields.getDictionary(context));
    if (!first)
      first = std::move(*values);
  }
  NamedAttrList step;
  step.set(kEntry, func::FuncOp(programs.front()).getSymNameAttr());
  step.set(kMeshShape, placeMesh.getShapeAttr());
  step.set(kMeshAxes, placeMesh.getAxes());
  if (ArrayAttr hosts = placeMesh.getHostAxesAttr())
    step.set(kHostAxes, hosts);
  step.set(kArguments, builder.getArrayAttr(first->arguments));
  step.set(kResults, builder.getArrayAttr(first->results));
  step.set(kPrograms, builder.getArrayAttr(records));
  recordMixedPrecision(step, llvm::map_to_vector(programs, [](auto program) {
                         return FunctionOpInterface(program);
                       }));
  // The evaluation function dist-pipeline and dist-parameter-server leave
  // single-device (their step is gone: the one evaluation function there is).
  func::FuncOp eval;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!TrainingStep::isEvalFunction(func) || func.isExternal() ||
        func->hasAttr(dist::DistDialect::kPlaceAttrName))
      continue;
    if (eval)
      return func.emitError()
             << "is a second evaluation function (after '" << eval.getSymName()
             << "'): placed programs have one";
    eval = func;
  }
  if (eval &&
      failed(recordEval(step, eval, /*mesh=*/nullptr, "the placed programs")))
    return failure();
  module->setAttr(TrainDialect::kStepAttrName, step.getDictionary(context));
  return success();
}

/// Runners bind arrays and feed results back by name (and block): two
/// values under one name would be bound from one array, one of them
/// silently ignored.
static LogicalResult checkUniqueNames(func::FuncOp func,
                                      ArrayRef<Attribute> values,
                                      StringRef what) {
  llvm::StringMap<size_t> seen;
  for (auto [i, value] : llvm::enumerate(values)) {
    auto fields = cast<DictionaryAttr>(value);
    auto name = fields.getAs<StringAttr>(kName);
    if (!name)
      continue;
    std::string key = name.str();
    if (auto block = fields.getAs<DenseI64ArrayAttr>(kBlock))
      for (int64_t offset : block.asArrayRef())
        key += "@" + std::to_string(offset);
    auto [it, inserted] = seen.try_emplace(key, i);
    if (!inserted)
      return func.emitError()
             << what << " #" << i << " '" << name.getValue()
             << "' reuses the name of " << what << " #" << it->second;
  }
  return success();
}

LogicalResult mlir::train::recordStepSignature(ModuleOp module,
                                               StringRef entryName) {
  if (module->hasAttr(TrainDialect::kStepAttrName))
    return success();
  SmallVector<func::FuncOp> programs;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(dist::DistDialect::kPlaceAttrName) && !func.isExternal())
      programs.push_back(func);
  if (!programs.empty() && entryName.empty())
    return recordPrograms(module, programs);
  func::FuncOp entry;
  unsigned steps = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (entryName.empty() ? TrainingStep::isTrainingStep(func) &&
                                !TrainingStep::isEvalFunction(func)
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
  dist::MeshOp mesh;
  FailureOr<RecordedValues> values = recordValues(entry, mesh);
  if (failed(values) ||
      failed(checkUniqueNames(entry, values->arguments, "argument")) ||
      failed(checkUniqueNames(entry, values->results, "result")))
    return failure();
  NamedAttrList step;
  step.set(kEntry, entry.getSymNameAttr());
  if (mesh) {
    step.set(kMeshShape, mesh.getShapeAttr());
    step.set(kMeshAxes, mesh.getAxes());
    if (ArrayAttr hosts = mesh.getHostAxesAttr())
      step.set(kHostAxes, hosts);
  }
  step.set(kArguments, builder.getArrayAttr(values->arguments));
  step.set(kResults, builder.getArrayAttr(values->results));
  recordMixedPrecision(step, {FunctionOpInterface(entry)});
  // The step's evaluation function (train-derive-eval), on the same mesh.
  for (auto eval : module.getOps<func::FuncOp>()) {
    auto of =
        eval->getAttrOfType<FlatSymbolRefAttr>(TrainDialect::kEvalOfAttrName);
    if (of && of.getValue() == entry.getSymName() && !eval.isExternal() &&
        failed(
            recordEval(step, eval, mesh, "'" + entry.getSymName().str() + "'")))
      return failure();
  }
  module->setAttr(TrainDialect::kStepAttrName, step.getDictionary(context));
  return success();
}

SmallVector<StringRef> mlir::train::getStepEntries(ModuleOp module) {
  SmallVector<StringRef> entries;
  auto step =
      module->getAttrOfType<DictionaryAttr>(TrainDialect::kStepAttrName);
  if (!step)
    return entries;
  if (auto entry = step.getAs<StringAttr>(kEntry))
    entries.push_back(entry.getValue());
  if (auto programs = step.getAs<ArrayAttr>(kPrograms))
    for (auto program : programs.getAsRange<DictionaryAttr>())
      if (auto entry = program.getAs<StringAttr>(kEntry))
        entries.push_back(entry.getValue());
  return entries;
}

FailureOr<StepSignature> mlir::train::readStepSignature(ModuleOp module) {
  auto step =
      module->getAttrOfType<DictionaryAttr>(TrainDialect::kStepAttrName);
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
  if (auto hosts = step.get(kHostAxes)) {
    auto list = dyn_cast<ArrayAttr>(hosts);
    if (!list || !shape)
      return malformed() << "'" << kHostAxes
                         << "' must be an array of mesh axes, with a mesh";
    for (Attribute axis : list) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name || signature.getAxisIndex(name.getValue()) ==
                       static_cast<int64_t>(signature.meshAxes.size()))
        return malformed() << "'" << kHostAxes << "' holds " << axis
                           << ", not an axis of the mesh";
      signature.hostAxes.push_back(name.str());
    }
  }
  if (Attribute options = step.get(kMixedPrecision)) {
    auto text = dyn_cast<StringAttr>(options);
    if (!text)
      return malformed() << "'" << kMixedPrecision << "' must be a string";
    signature.mixedPrecision = text.str();
  }
  // The arguments and results of `dict` (the step's or a program's).
  auto readValues = [&](DictionaryAttr dict,
                        SmallVector<StepSignature::Value> &arguments,
                        SmallVector<StepSignature::Value> &results,
                        const Twine &where) -> LogicalResult {
    for (auto [listName, values, key] :
         {std::make_tuple(kArguments, &arguments, "argument"),
          std::make_tuple(kResults, &results, "result")}) {
      auto entries = dict.getAs<ArrayAttr>(listName);
      if (!entries)
        return malformed() << where << "no '" << listName << "' array";
      for (auto [i, attr] : llvm::enumerate(entries)) {
        auto fields = dyn_cast<DictionaryAttr>(attr);
        auto type = fields ? fields.getAs<TypeAttr>(kType) : nullptr;
        auto tensor =
            type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
        if (!tensor)
          return malformed() << where << key << " #" << i
                             << " must be a dictionary with a ranked tensor '"
                             << kType << "'";
        StepSignature::Value value;
        value.index = i;
        value.type = tensor;
        if (auto role = fields.getAs<StringAttr>(kRole)) {
          value.role = symbolizeRole(role.getValue());
          if (!value.role)
            return malformed() << where << key << " #" << i
                               << " has the unknown role " << role;
        }
        if (auto name = fields.getAs<StringAttr>(kName))
          value.name = name.str();
        if (Attribute classes = fields.get(kClasses)) {
          auto count = dyn_cast<IntegerAttr>(classes);
          if (!count || count.getInt() < 1)
            return malformed() << where << key << " #" << i << " has classes "
                               << classes << ", not a positive integer";
          value.classes = count.getInt();
        }
        value.split = fields.getAs<ArrayAttr>(kSplit);
        if (value.split) {
          if (!shape)
            return malformed() << where << key << " #" << i
                               << " is split but no mesh is recorded";
          if (static_cast<int64_t>(value.split.size()) != tensor.getRank())
            return malformed()
                   << where << key << " #" << i << " has " << value.split.size()
                   << " split dims for " << tensor;
          for (Attribute dim : value.split) {
            auto axes = dyn_cast<ArrayAttr>(dim);
            if (!axes)
              return malformed()
                     << where << key << " #" << i
                     << " must split each dim over an array of axes";
            for (Attribute axis : axes) {
              auto axisName = dyn_cast<StringAttr>(axis);
              if (!axisName ||
                  signature.getAxisIndex(axisName.getValue()) ==
                      static_cast<int64_t>(signature.meshAxes.size()))
                return malformed()
                       << where << key << " #" << i << " is split over " << axis
                       << ", not an axis of the mesh";
            }
          }
        }
        auto block = fields.getAs<DenseI64ArrayAttr>(kBlock);
        auto global = fields.getAs<DenseI64ArrayAttr>(kGlobalShape);
        if (block || global) {
          if (!block || !global || value.split ||
              static_cast<int64_t>(block.size()) != tensor.getRank() ||
              static_cast<int64_t>(global.size()) != tensor.getRank())
            return malformed() << where << key << " #" << i << " needs '"
                               << kBlock << "' and '" << kGlobalShape
                               << "' with one entry per dim of " << tensor
                               << " (and no '" << kSplit << "')";
          for (auto [offset, size, whole] : llvm::zip_equal(
                   block.asArrayRef(), tensor.getShape(), global.asArrayRef()))
            if (offset < 0 || offset + size > whole)
              return malformed() << where << key << " #" << i
                                 << ": its block does not fit the global "
                                    "shape";
          value.blockOffsets.assign(block.asArrayRef().begin(),
                                    block.asArrayRef().end());
          value.globalShape.assign(global.asArrayRef().begin(),
                                   global.asArrayRef().end());
        }
        value.cache = fields.get(kCache) != nullptr;
        values->push_back(value);
      }
    }
    return success();
  };
  if (failed(readValues(step, signature.arguments, signature.results, "")))
    return failure();
  if (auto evalAttr = step.get(kEval)) {
    auto dict = dyn_cast<DictionaryAttr>(evalAttr);
    auto name = dict ? dict.getAs<StringAttr>(kEntry) : nullptr;
    if (!name)
      return malformed() << "'" << kEval << "' must be a dictionary with an '"
                         << kEntry << "' string";
    StepSignature::Program eval;
    eval.entry = name.str();
    if (failed(readValues(dict, eval.arguments, eval.results, "eval: ")))
      return failure();
    signature.eval = std::move(eval);
  }
  auto programs = step.get(kPrograms);
  if (!programs)
    return signature;
  auto programList = dyn_cast<ArrayAttr>(programs);
  if (!programList || programList.empty())
    return malformed() << "'" << kPrograms
                       << "' must be a non-empty array of programs";
  if (!shape)
    return malformed() << "'" << kPrograms << "' need a recorded mesh";
  int64_t devices = signature.getNumDevices();
  SmallVector<bool> covered(devices, false);
  for (auto [i, attr] : llvm::enumerate(programList)) {
    std::string where = "program #" + std::to_string(i) + ": ";
    auto dict = dyn_cast<DictionaryAttr>(attr);
    auto name = dict ? dict.getAs<StringAttr>(kEntry) : nullptr;
    auto ranks = dict ? dict.getAs<DenseI64ArrayAttr>(kDevices) : nullptr;
    if (!name || !ranks || ranks.empty())
      return malformed() << where << "must be a dictionary with an '" << kEntry
                         << "' string and non-empty '" << kDevices << "'";
    StepSignature::Program program;
    program.entry = name.str();
    for (int64_t device : ranks.asArrayRef()) {
      if (device < 0 || device >= devices || covered[device])
        return malformed() << where << "device " << device
                           << (device < 0 || device >= devices
                                   ? " is not a device of the mesh"
                                   : " runs another program too");
      covered[device] = true;
      program.devices.push_back(device);
    }
    if (failed(readValues(dict, program.arguments, program.results, where)))
      return failure();
    signature.programs.push_back(std::move(program));
  }
  return signature;
}

const StepSignature::Program *StepSignature::getProgram(int64_t device) const {
  for (const Program &program : programs)
    if (llvm::is_contained(program.devices, device))
      return &program;
  return nullptr;
}

StepSignature StepSignature::getEvalStep() const {
  StepSignature step = *this;
  step.entry = eval->entry;
  step.arguments = eval->arguments;
  step.results = eval->results;
  step.eval.reset();
  if (isEvalGathered()) {
    step.programs.clear();
    step.meshShape.clear();
    step.meshAxes.clear();
    step.hostAxes.clear();
  }
  return step;
}

StepSignature StepSignature::getDeviceStep(int64_t device) const {
  StepSignature step = *this;
  if (const Program *program = getProgram(device)) {
    step.entry = program->entry;
    step.arguments = program->arguments;
    step.results = program->results;
  }
  return step;
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
    dropRolesAndNames(func);
    auto eval = step.getAs<DictionaryAttr>(kEval);
    auto evalName = eval ? eval.getAs<StringAttr>(kEntry) : nullptr;
    if (auto evalFunc =
            evalName ? module.lookupSymbol<func::FuncOp>(evalName) : nullptr)
      dropRolesAndNames(evalFunc);
  }

  /// Rewrites all argument and result attributes at once (removing them
  /// one by one rebuilds the whole list each time: quadratic in a large
  /// step's arguments).
  static void dropRolesAndNames(func::FuncOp func) {
    MLIRContext *context = func.getContext();
    auto drop = [&](MutableArrayRef<DictionaryAttr> dicts) {
      for (DictionaryAttr &dict : dicts) {
        NamedAttrList list(dict);
        list.erase(TrainDialect::kRoleAttrName);
        list.erase(TrainDialect::kNameAttrName);
        dict = list.getDictionary(context);
      }
    };
    SmallVector<DictionaryAttr> arguments, results;
    func.getAllArgAttrs(arguments);
    func.getAllResultAttrs(results);
    drop(arguments);
    drop(results);
    func.setAllArgAttrs(arguments);
    func.setAllResultAttrs(results);
  }
};
} // namespace
