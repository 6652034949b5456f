//===- Strategies.cpp - shared pieces of the strategy passes --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dist;

FailureOr<MeshOp> mlir::dist::getOrCreateMesh(ModuleOp module, StringRef name,
                                              ArrayRef<StringRef> axes,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<StringRef> hostAxes) {
  OpBuilder builder(module.getContext());
  auto names = [&](ArrayRef<StringRef> list) {
    SmallVector<Attribute> attrs;
    for (StringRef axis : list)
      attrs.push_back(builder.getStringAttr(axis));
    return builder.getArrayAttr(attrs);
  };
  // The generic bound, for strategies whose options reach here unchecked.
  SmallVector<std::pair<StringRef, int64_t>> counts;
  for (auto [axis, size] : llvm::zip(axes, shape))
    counts.push_back({axis, size});
  if (failed(checkDeviceCounts(getOptionLocation(module),
                               ("mesh '@" + name + "'").str(), counts)))
    return failure();
  ArrayAttr axesAttr = names(axes);
  ArrayAttr hostAxesAttr = hostAxes.empty() ? nullptr : names(hostAxes);
  if (auto mesh = module.lookupSymbol<MeshOp>(name)) {
    if (mesh.getAxes() != axesAttr || mesh.getShape() != shape)
      return mesh.emitOpError("exists with another shape than the strategy's ")
             << axesAttr << " x " << builder.getDenseI64ArrayAttr(shape);
    ArrayAttr existing = mesh.getHostAxesAttr();
    if (existing && existing.empty())
      existing = nullptr;
    if (existing != hostAxesAttr)
      return mesh.emitOpError("exists with other host axes than the "
                              "strategy's ")
             << (hostAxesAttr ? hostAxesAttr : builder.getArrayAttr({}));
    return mesh;
  }
  builder.setInsertionPointToStart(module.getBody());
  return MeshOp::create(builder, module.getLoc(), name, axesAttr,
                        builder.getDenseI64ArrayAttr(shape), hostAxesAttr,
                        nullptr, nullptr);
}

StepShardings::StepShardings(func::FuncOp func, const train::TrainingStep &step)
    : update(func) {
  for (const train::StepValue &result : step.results)
    if (result.name)
      resultsByName[result.name].push_back(result.index);
}

void StepShardings::setState(const train::StepValue &arg,
                             ShardingAttr sharding) {
  update.setArgument(arg.index, sharding);
  if (arg.name)
    for (unsigned result : resultsByName.lookup(arg.name))
      update.setResult(result, sharding);
}

Location mlir::dist::getOptionLocation(ModuleOp module) {
  Location loc = module.getLoc();
  module.walk([&](func::FuncOp func) {
    if (!train::TrainingStep::isTrainingStep(func))
      return WalkResult::advance();
    loc = func.getLoc();
    return WalkResult::interrupt();
  });
  return loc;
}

InFlightDiagnostic mlir::dist::emitOptionError(ModuleOp module,
                                               StringRef pass) {
  return mlir::emitError(getOptionLocation(module)) << pass << ": ";
}

LogicalResult mlir::dist::checkSingleDevice(ModuleOp module) {
  WalkResult result = module.walk([&](func::FuncOp func) {
    if (!func->hasAttr(DistDialect::kPartitionedAttrName) ||
        !train::TrainingStep::isTrainingStep(func))
      return WalkResult::advance();
    mlir::emitError(func.getLoc())
        << "training step '" << func.getSymName()
        << "' is already distributed (it carries '"
        << DistDialect::kPartitionedAttrName
        << "'): apply a strategy to the single-device step";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

FailureOr<std::optional<std::pair<const train::StepValue *, int64_t>>>
mlir::dist::getStepBatch(const train::TrainingStep &step) {
  using Batch = std::optional<std::pair<const train::StepValue *, int64_t>>;
  const train::StepValue *source = nullptr;
  for (train::Role role : {train::Role::label, train::Role::input}) {
    for (const train::StepValue &arg : step.arguments) {
      auto type = dyn_cast<RankedTensorType>(arg.type);
      if (arg.role != role || !type)
        continue;
      if (type.getRank() == 0) {
        if (role == train::Role::label)
          return step.emitArgumentError(arg)
                 << "has no batch dim: labels hold one entry per sample";
        continue;
      }
      if (!source) {
        source = &arg;
        continue;
      }
      int64_t batch = cast<RankedTensorType>(source->type).getDimSize(0);
      if (role == train::Role::label && type.getDimSize(0) != batch)
        return step.emitArgumentError(arg)
               << "has batch " << type.getDimSize(0) << " but "
               << train::TrainingStep::describe("argument", *source) << " has "
               << batch << ": labels must agree on the batch";
    }
    if (source)
      return Batch(
          {source, cast<RankedTensorType>(source->type).getDimSize(0)});
  }
  return Batch();
}

/// The global batch size of `step` (getStepBatch without the argument).
static FailureOr<std::optional<int64_t>>
getBatchSize(const train::TrainingStep &step) {
  auto batch = getStepBatch(step);
  if (failed(batch))
    return failure();
  if (!*batch)
    return std::optional<int64_t>();
  return std::optional<int64_t>((*batch)->second);
}

LogicalResult mlir::dist::checkCountBound(Location loc, StringRef pass,
                                          StringRef option, int64_t value,
                                          int64_t max, const Twine &what) {
  if (value <= max)
    return success();
  return mlir::emitError(loc) << pass << ": " << option << "=" << value
                              << " is more than " << max << ", " << what;
}

std::string mlir::dist::getDeviceCountsError(
    StringRef pass, ArrayRef<std::pair<StringRef, int64_t>> counts) {
  int64_t product = 1;
  std::string names;
  for (auto [option, value] : counts) {
    if (value > kMaxDevices)
      return llvm::formatv("{0}: {1}={2} is more than {3}, the most devices "
                           "a mesh may have",
                           pass, option, value, kMaxDevices)
          .str();
    // Both factors are at most kMaxDevices (2^16): no overflow.
    product *= std::max<int64_t>(value, 1);
    names += (names.empty() ? "" : " x ") + option.str() + "=" +
             std::to_string(value);
    if (product > kMaxDevices)
      return llvm::formatv("{0}: {1} is {2} devices, more than {3}, the most "
                           "devices a mesh may have",
                           pass, names, product, kMaxDevices)
          .str();
  }
  return "";
}

LogicalResult
mlir::dist::checkDeviceCounts(Location loc, StringRef pass,
                              ArrayRef<std::pair<StringRef, int64_t>> counts) {
  std::string error = getDeviceCountsError(pass, counts);
  if (error.empty())
    return success();
  return mlir::emitError(loc) << error;
}

LogicalResult mlir::dist::checkBatchBound(ModuleOp module, StringRef pass,
                                          StringRef option, int64_t count,
                                          StringRef part, int64_t replicas) {
  bool failedAny = false;
  module.walk([&](func::FuncOp func) {
    if (failedAny || !train::TrainingStep::isTrainingStep(func))
      return;
    train::TrainingStep step = train::TrainingStep::get(func);
    auto batch = getStepBatch(step);
    if (failed(batch)) {
      failedAny = true;
      return;
    }
    if (!*batch)
      return;
    auto [arg, size] = **batch;
    // Both counts are at most kMaxDevices (checked first): no overflow.
    if (count * replicas <= size)
      return;
    InFlightDiagnostic diag = step.emitArgumentError(*arg);
    diag << "has batch " << size << ": " << pass << "'s " << option << "="
         << count << " is more than " << size / replicas << ", one sample per "
         << part;
    if (replicas > 1)
      diag << " on each of dp=" << replicas << " replicas";
    failedAny = true;
  });
  return failure(failedAny);
}

LogicalResult mlir::dist::annotateDataParallel(ModuleOp module, MeshOp mesh,
                                               ArrayRef<int64_t> batchAxes,
                                               int64_t replicas,
                                               bool replicateState) {
  bool failedAny = false;
  module.walk([&](func::FuncOp func) {
    if (!train::TrainingStep::isTrainingStep(func))
      return;
    train::TrainingStep step = train::TrainingStep::get(func);
    FailureOr<std::optional<int64_t>> batch = getBatchSize(step);
    if (failed(batch)) {
      failedAny = true;
      return;
    }
    StepShardings shardings(func, step);
    for (const train::StepValue &arg : step.arguments) {
      auto type = dyn_cast<RankedTensorType>(arg.type);
      if (!type)
        continue;
      bool isData =
          arg.role == train::Role::input || arg.role == train::Role::label;
      bool isBatch = isData && type.getRank() > 0 &&
                     type.getDimSize(0) == batch->value_or(-1);
      if (isData && !isBatch) {
        InFlightDiagnostic remark = step.emitArgumentRemark(arg);
        remark << "has no batch dim (" << type;
        if (*batch)
          remark << ", the batch is " << **batch;
        remark << "): it stays whole on every replica";
      }
      if (!isBatch && !replicateState)
        continue;
      TensorSharding sharding = TensorSharding::replicated(type.getRank());
      if (isBatch) {
        if (type.getDimSize(0) % replicas) {
          step.emitArgumentError(arg)
              << "has batch " << type.getDimSize(0)
              << ", which does not divide over " << replicas << " replicas";
          failedAny = true;
          return;
        }
        sharding.dims[0].assign(batchAxes.begin(), batchAxes.end());
      }
      shardings.setArgument(arg.index, toShardingAttr(sharding, mesh));
    }
    if (replicateState)
      for (const train::StepValue &result : step.results)
        if (auto type = dyn_cast<RankedTensorType>(result.type))
          shardings.setResult(
              result.index,
              toShardingAttr(TensorSharding::replicated(type.getRank()), mesh));
    shardings.apply();
  });
  return failure(failedAny);
}

/// Inserts `dist.annotate` of `use`'s value with `sharding` before its
/// owner and makes the owner use it.
/// True when `use` is an elementwise op on the value alone (other operands
/// scalars, e.g. an L2 term's `2 * coef * w` or a zero gradient `w * 0`):
/// each dim of the value passes to the same dim of a result of its type, so
/// the op can run on a shard of it.
static bool isShardwise(OpOperand &use) {
  Operation *user = use.getOwner();
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(user);
  if (!ruleOp || user->getNumResults() != 1 ||
      user->getResult(0).getType() != use.get().getType())
    return false;
  for (OpOperand &other : user->getOpOperands())
    if (&other != &use) {
      auto type = dyn_cast<RankedTensorType>(other.get().getType());
      if (!type || type.getRank() != 0)
        return false;
    }
  ShardingRule rule = ruleOp.getShardingRule();
  const TensorMapping &operand =
      rule.getOperandMappings()[use.getOperandNumber()];
  const TensorMapping &result = rule.getResultMappings()[0];
  if (operand.size() != result.size())
    return false;
  for (auto [in, out] : llvm::zip(operand, result)) {
    if (in != out)
      return false;
    for (int64_t factor : in)
      if (rule.getFactorKinds()[factor] != FactorKind::Pass)
        return false;
  }
  return true;
}

bool mlir::dist::isNarrowingConversion(Operation *op) {
  if (op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      !isMemoryEffectFree(op))
    return false;
  auto from = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto to = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return from && to && from.getShape() == to.getShape() &&
         isa<FloatType>(from.getElementType()) &&
         isa<FloatType>(to.getElementType()) &&
         to.getElementTypeBitWidth() < from.getElementTypeBitWidth();
}

static void annotateUse(OpOperand &use, ShardingAttr sharding) {
  OpBuilder builder(use.getOwner());
  auto annotate = AnnotateOp::create(builder, use.getOwner()->getLoc(),
                                     use.get(), sharding);
  use.set(annotate);
}

/// Applies ZeRO `stage` to the parameter `param` (an argument) that the
/// optimizer update defining result `updated` of `func` updates.
static void shardParameter(func::FuncOp func, MeshOp mesh, int64_t stage,
                           ArrayRef<int64_t> dataAxes, int64_t replicas,
                           const train::TrainingStep &step,
                           StepShardings &shardings,
                           const train::StepValue &param,
                           const train::StepValue &updated) {
  auto type = cast<RankedTensorType>(param.type);
  Value arg = func.getArgument(param.index);
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  Value returned = ret.getOperand(updated.index);
  if (returned == arg)
    return; // Returned unchanged: nothing to update.
  // Behind a mixed-precision step's skip select too: its arguments are then
  // sharded as the update's, so the select runs on the shards.
  train::OptimizerOpInterface update = train::getUpdateOf(returned, arg);
  if (!update || update.getParam() != arg) {
    step.emitArgumentRemark(param)
        << "stays replicated: its result is not the update of the "
           "argument by an optimizer op";
    return;
  }
  // What the parameter looks like without ZeRO (tensor parallelism may have
  // split it already), and the first dim whose local size still divides.
  auto baseAttr = func.getArgAttrOfType<ShardingAttr>(
      param.index, DistDialect::kShardingAttrName);
  TensorSharding base = baseAttr ? toTensorSharding(baseAttr, mesh)
                                 : TensorSharding::replicated(type.getRank());
  SmallVector<int64_t> local =
      getLocalShape(type.getShape(), base, mesh.getShape());
  std::optional<int64_t> dim;
  for (int64_t d = 0; d < type.getRank() && !dim; ++d)
    if (local[d] % replicas == 0)
      dim = d;
  if (!dim) {
    step.emitArgumentRemark(param)
        << "of type " << type << " stays replicated: no dim divides over "
        << replicas << " replicas";
    return;
  }
  TensorSharding split = base;
  llvm::append_range(split.dims[*dim], dataAxes);
  ShardingAttr sharded = toShardingAttr(split, mesh);
  ShardingAttr whole = toShardingAttr(base, mesh);

  SmallVector<Value> state = update.getParamShapedState();
  Value grad = update.getGrad();
  for (OpOperand &operand : update->getOpOperands()) {
    Value value = operand.get();
    if (value == arg) {
      annotateUse(operand, sharded);
      continue;
    }
    if (value == grad) {
      // Reduce-scattered at every stage: with the all-gather of the updated
      // slice this moves one all-reduce's bytes, as data parallelism does.
      // Every reader of the gradient sees the shard (dynamic loss scaling's
      // finiteness sum adds the shards' sums, a scalar all-reduce), unless
      // the gradient is an argument.
      if (auto result = dyn_cast<OpResult>(value)) {
        OpBuilder builder(func.getContext());
        builder.setInsertionPointAfterValue(result);
        auto annotate =
            AnnotateOp::create(builder, result.getLoc(), result, sharded);
        result.replaceAllUsesExcept(annotate, annotate);
        continue;
      }
      annotateUse(operand, sharded);
      continue;
    }
    if (!llvm::is_contained(state, value))
      continue;
    // Optimizer state of this parameter: sharded at the boundary when it is
    // an argument (and so is its returned update), else where it is used.
    auto blockArg = dyn_cast<BlockArgument>(value);
    if (!blockArg || blockArg.getOwner()->getParentOp() != func) {
      annotateUse(operand, sharded);
      continue;
    }
    shardings.setState(step.arguments[blockArg.getArgNumber()], sharded);
  }
  // Below stage 3 the parameter stays whole at the step's boundary: the
  // update runs on this rank's slice and its result is all-gathered back,
  // whatever propagation would infer from the sliced update.
  if (stage < 3) {
    shardings.setState(param, whole);
    return;
  }
  shardings.setState(param, sharded);
  SmallVector<OpOperand *> otherUses;
  // Gathered before each use, except by elementwise ops on the parameter
  // alone, which run on its shard.
  // The skip select of a mixed-precision step keeps the argument's shard.
  Operation *skip = train::getUnskipped(returned, arg) != returned
                        ? returned.getDefiningOp()
                        : nullptr;
  for (OpOperand &use : arg.getUses())
    if (use.getOwner() != update && use.getOwner() != skip &&
        !isa<AnnotateOp>(use.getOwner()) && !isShardwise(use))
      otherUses.push_back(&use);
  for (OpOperand *use : otherUses) {
    Operation *user = use->getOwner();
    if (!isNarrowingConversion(user)) {
      annotateUse(*use, whole);
      continue;
    }
    // A mixed-precision step's 16-bit copy is made on the shard and
    // gathered in 16 bits: half the bytes of gathering the float32 master.
    Value narrow = user->getResult(0);
    OpBuilder builder(func.getContext());
    builder.setInsertionPointAfter(user);
    auto annotate = AnnotateOp::create(builder, user->getLoc(), narrow, whole);
    narrow.replaceAllUsesExcept(annotate, annotate);
  }
}

void mlir::dist::applyZero(ModuleOp module, MeshOp mesh, int64_t stage,
                           ArrayRef<int64_t> dataAxes, int64_t replicas) {
  module.walk([&](func::FuncOp func) {
    if (!train::TrainingStep::isTrainingStep(func))
      return;
    train::TrainingStep step = train::TrainingStep::get(func);
    StepShardings shardings(func, step);
    llvm::DenseMap<StringAttr, const train::StepValue *> params;
    for (const train::StepValue &arg : step.arguments)
      if (arg.role == train::Role::param && arg.name &&
          isa<RankedTensorType>(arg.type))
        params.try_emplace(arg.name, &arg);
    for (const train::StepValue &result : step.results) {
      if (result.role != train::Role::param || !result.name)
        continue;
      if (const train::StepValue *arg = params.lookup(result.name))
        shardParameter(func, mesh, stage, dataAxes, replicas, step, shardings,
                       *arg, result);
    }
    shardings.apply();
  });
}
