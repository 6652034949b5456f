//===- MixedPrecision.cpp - 16-bit compute, float32 master weights --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Rewrites a float32 training step to compute in bfloat16 or float16 with
// float32 master parameters and optimizer state, and scales the loss (a
// fixed scale, or torch.amp.GradScaler's dynamic one with skipped steps).
//
//===----------------------------------------------------------------------===//

#include "LossSeed.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace mlir::train {
#define GEN_PASS_DEF_TRAINMIXEDPRECISIONPASS
#include "distopt/Dialect/Train/Transforms/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::mixed_precision;

namespace {

/// Where an op computes under mixed precision.
enum class OpClass {
  /// Products and convolutions: float32 operands go to 16 bits.
  Narrow,
  /// Reductions, normalizations, losses and transcendental functions:
  /// 16-bit operands go back to float32.
  Wide,
  /// Elementwise and data movement: 16 bits when a float operand is.
  Follow,
  /// Left as written (constants, iota, conversions).
  Keep,
  /// A strategy's collective (after dist-partition): result i is operand
  /// i summed or moved across devices, in operand i's precision; a sum
  /// that only float32 work reads runs in float32 (see isCarry).
  Carry,
};

enum class LossScale { none, fixed, dynamic };

/// The options, checked.
struct Precision {
  FloatType compute;
  LossScale lossScale;
  double initScale, growthFactor, backoffFactor;
  int64_t growthInterval;
};

} // namespace

/// The class of `op`; `master` holds the ops that update parameters or
/// optimizer state without being optimizer ops (see StepRewriter::analyze).
static OpClass classify(Operation *op,
                        const llvm::DenseSet<Operation *> &master) {
  if (master.contains(op))
    return OpClass::Wide;
  if (isCarry(op))
    return OpClass::Carry;
  return llvm::TypeSwitch<Operation *, OpClass>(op)
      .Case<MatmulOp, Conv2dOp, Conv2dBackwardInputOp, Conv2dBackwardFilterOp>(
          [](Operation *) { return OpClass::Narrow; })
      .Case<ReduceOp, SoftmaxOp, LogSoftmaxOp, SoftmaxBackwardOp,
            LogSoftmaxBackwardOp, LayerNormOp, LayerNormBackwardOp, BatchNormOp,
            BatchNormBackwardOp, CrossEntropyOp, CrossEntropyBackwardOp, ExpOp,
            LogOp, Log1pOp, Expm1Op, PowOp, SqrtOp, RsqrtOp, ScatterAddOp>(
          [](Operation *) { return OpClass::Wide; })
      .Case<ConstantOp, IotaOp, ConvertOp>(
          [](Operation *) { return OpClass::Keep; })
      .Default([](Operation *op) {
        // Optimizer updates and anything outside the train dialect (the
        // return, calls) see their operands' original types.
        if (isa<OptimizerOpInterface>(op) ||
            !isa<TrainDialect>(op->getDialect()))
          return OpClass::Wide;
        return OpClass::Follow;
      });
}

static bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

namespace {
class StepRewriter {
public:
  /// `mesh`: the mesh a strategy partitioned `func` over (null: a
  /// single-device step).
  StepRewriter(func::FuncOp func, const Precision &precision, dist::MeshOp mesh)
      : func(func), precision(precision), builder(func.getContext()),
        mesh(mesh) {}

  /// Finds the backward's seed and what reads the gradients: optimizer
  /// ops, or the ops that depend on the seed but not linearly (an
  /// optimizer written as elementwise ops, weight decay added to a
  /// gradient, clipping), which compute in float32 as master ops. Without
  /// a seed (not needed when `scaling` is false) only optimizer ops do.
  LogicalResult analyze(bool scaling);
  /// Puts every op of the function in its class's precision.
  LogicalResult rewritePrecision();
  /// Loss scaling, before the precision rewrite (a training step only):
  /// the scale's state and the backward's seed times the scale.
  LogicalResult scaleSeed();
  /// After it: gradients unscaled, and with dynamic scaling the skip of a
  /// step with a non-finite gradient and the scale's update.
  LogicalResult unscaleGradients();

private:
  /// `value` as a tensor of `element`, converted once next to its
  /// definition.
  Value convert(Value value, Type element);
  /// The element type `value` had before the pass.
  Type originalElement(Value value) const;
  /// True when every op that reads `value` computes in float32 or leaves
  /// it as written.
  bool readsWide(Value value) const;
  Value scalar(Location loc, double x) {
    auto type = RankedTensorType::get({}, builder.getF32Type());
    return ConstantOp::create(builder, loc,
                              DenseElementsAttr::get(type, float(x)));
  }
  Value add(Location loc, Value a, Value b) {
    return AddOp::create(builder, loc, a, b);
  }
  Value mul(Location loc, Value a, Value b) {
    return MulOp::create(builder, loc, a, b);
  }
  Value select(Location loc, Value c, Value a, Value b) {
    return SelectOp::create(builder, loc, c, a, b);
  }
  Value compare(Location loc, Value a, Value b, CompareDirection d) {
    return CompareOp::create(builder, loc, a, b, d);
  }
  /// Appends a scalar float32 opt_state argument and result named `name`.
  FailureOr<BlockArgument> addScalarState(StringRef name,
                                          std::optional<double> init);
  /// In a partitioned step (after a strategy), the mesh axes the gradient
  /// `grad` that `user` reads is split over, in mesh order: those of the
  /// parameter an optimizer updates (its dist.sharding, and a ZeRO
  /// slice's); of a reduce-scatter or slice that makes the gradient; else
  /// every axis of the mesh. None in a single-device step.
  SmallVector<StringAttr> getSplitAxes(Operation *user, Value grad);

  func::FuncOp func;
  const Precision &precision;
  OpBuilder builder;
  /// A partitioned step's mesh (null in a single-device step).
  dist::MeshOp mesh;
  llvm::DenseSet<Value> narrowed;
  DenseMap<std::pair<Value, Type>, Value> conversions;
  Operation *lastArgumentConversion = nullptr;
  /// Gathers whose narrowed copies convert() made (erased when unused).
  SmallVector<Operation *> gathersNarrowed;
  /// Loss scaling: the scale and tracker arguments (dynamic scaling) and
  /// the scaled seed.
  Value scale, tracker, scaledSeed;
  /// From analyze(): the seed and its linear images, the master ops, and
  /// the operands through which updates read gradients.
  std::optional<Linearity> seed;
  llvm::DenseSet<Operation *> master;
  SmallVector<std::pair<Operation *, unsigned>> gradientUses;
};
} // namespace

Type StepRewriter::originalElement(Value value) const {
  Type element = getElementTypeOrSelf(value.getType());
  return narrowed.contains(value) ? Float32Type::get(value.getContext())
                                  : element;
}

bool StepRewriter::readsWide(Value value) const {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    switch (classify(user, master)) {
    case OpClass::Wide:
    case OpClass::Keep:
      continue;
    case OpClass::Carry:
      if (readsWide(user->getResult(use.getOperandNumber())))
        continue;
      return false;
    case OpClass::Narrow:
    case OpClass::Follow:
      return false;
    }
  }
  return true;
}

Value StepRewriter::convert(Value value, Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == element)
    return value;
  if (Value converted = conversions.lookup({value, element}))
    return converted;
  OpBuilder::InsertionGuard guard(builder);
  if (auto gather = value.getDefiningOp<dist::AllGatherOp>();
      gather && element.getIntOrFloatBitWidth() <
                    type.getElementType().getIntOrFloatBitWidth()) {
    // A gathered value narrowed is the narrowed shard gathered (a ZeRO-3
    // weight's 16-bit copy: half the bytes), as when the strategy
    // partitions a step already mixed; the float32 gather goes if nothing
    // else reads it.
    Value shard = convert(gather.getInput(), element);
    builder.setInsertionPointAfter(gather);
    Operation *narrow = builder.clone(*gather);
    narrow->setOperand(0, shard);
    narrow->getResult(0).setType(type.clone(element));
    narrowed.insert(narrow->getResult(0));
    gathersNarrowed.push_back(gather);
    return conversions[{value, element}] = narrow->getResult(0);
  }
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // Arguments' conversions at the top, in the order first needed.
    if (lastArgumentConversion)
      builder.setInsertionPointAfter(lastArgumentConversion);
    else
      builder.setInsertionPointToStart(arg.getOwner());
  } else {
    builder.setInsertionPointAfter(value.getDefiningOp());
  }
  Value result =
      ConvertOp::create(builder, value.getLoc(), type.clone(element), value);
  if (isa<BlockArgument>(value))
    lastArgumentConversion = result.getDefiningOp();
  return conversions[{value, element}] = result;
}

LogicalResult StepRewriter::rewritePrecision() {
  Type narrow = precision.compute;
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (op->getNumRegions() != 0)
      return op->emitOpError()
             << "train-mixed-precision: ops with regions are not handled";
    OpClass opClass = classify(op, master);
    if (opClass == OpClass::Keep)
      continue;
    if (opClass == OpClass::Carry) {
      // Result i in operand i's precision. A sum that only float32 work
      // reads sums float32 values, as when the strategy partitions a step
      // already in mixed precision: the widening sits at the value's
      // definition, before the collective.
      for (auto [use, result] :
           llvm::zip(op->getOpOperands(), op->getResults())) {
        Value v = use.get();
        if (!narrowed.contains(v))
          continue;
        if (isSumCarry(op) && readsWide(result)) {
          use.set(convert(v, originalElement(v)));
          continue;
        }
        result.setType(cast<RankedTensorType>(result.getType())
                           .clone(getElementTypeOrSelf(v.getType())));
        narrowed.insert(result);
      }
      continue;
    }
    bool toNarrow = opClass == OpClass::Narrow;
    if (opClass == OpClass::Follow)
      toNarrow = llvm::any_of(op->getOperands(),
                              [&](Value v) { return narrowed.contains(v); });
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (toNarrow ? !isF32Tensor(v.getType()) : !narrowed.contains(v))
        continue;
      operand.set(convert(v, toNarrow ? narrow : originalElement(v)));
    }
    if (!toNarrow)
      continue;
    for (Value result : op->getResults()) {
      if (!isF32Tensor(result.getType()))
        continue;
      result.setType(cast<RankedTensorType>(result.getType()).clone(narrow));
      narrowed.insert(result);
    }
  }
  for (Operation *gather : gathersNarrowed)
    if (gather->use_empty())
      gather->erase();
  // A float32 parameter or state whose new value came out of 16-bit work
  // loses every update below 16-bit resolution: an update the analysis did
  // not find (no seed to tell it by), which is said, not passed over.
  TrainingStep step = TrainingStep::get(func);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (const StepValue &value : step.results) {
    // (Loss scaling's own state is returned after this rewrite.)
    if ((value.role != Role::param && value.role != Role::opt_state) ||
        value.index >= ret.getNumOperands())
      continue;
    auto widened = ret.getOperand(value.index).getDefiningOp<ConvertOp>();
    if (!widened || !narrowed.contains(widened.getOperand()))
      continue;
    emitWarning(ret.getOperand(value.index).getLoc())
        << "train-mixed-precision: the new value of '" << value.name.getValue()
        << "' is computed in " << narrow
        << " and rounded into its float32 result: no update reading its "
           "gradient was found (mark the backward's seed with '"
        << TrainDialect::kLossSeedAttrName
        << "', or update it with train.sgd, train.adam or train.adamw)";
  }
  return success();
}

FailureOr<BlockArgument>
StepRewriter::addScalarState(StringRef name, std::optional<double> init) {
  TrainingStep step = TrainingStep::get(func);
  for (const StepValue &value : step.arguments)
    if (value.name && value.name.getValue() == name)
      return emitError(func.getLoc())
             << "train-mixed-precision: the step already has an argument '"
             << name << "'; loss scaling names its state so";
  MLIRContext *context = func.getContext();
  auto type = RankedTensorType::get({}, builder.getF32Type());
  NamedAttrList attrs;
  attrs.set(TrainDialect::kRoleAttrName,
            RoleAttr::get(context, Role::opt_state));
  attrs.set(TrainDialect::kNameAttrName, builder.getStringAttr(name));
  if (mesh) // Replicated, as the strategy lays out scalar state.
    attrs.set(dist::DistDialect::kShardingAttrName,
              dist::ShardingAttr::get(
                  context, FlatSymbolRefAttr::get(mesh.getSymNameAttr()), {},
                  builder.getArrayAttr({})));
  NamedAttrList resultAttrs = attrs;
  if (init)
    attrs.set(TrainDialect::kInitAttrName, builder.getF64FloatAttr(*init));
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, type, attrs.getDictionary(context),
                                 func.getLoc())))
    return failure();
  if (failed(func.insertResult(func.getNumResults(), type,
                               resultAttrs.getDictionary(context))))
    return failure();
  return func.getArgument(index);
}

SmallVector<StringAttr> StepRewriter::getSplitAxes(Operation *user,
                                                   Value grad) {
  if (!mesh)
    return {};
  llvm::SmallDenseSet<StringAttr> axes;
  bool found = false;
  auto addSliceAxes = [&](Value &value) {
    while (auto slice = value.getDefiningOp<dist::LocalSliceOp>()) {
      for (auto axis : slice.getAxes().getAsRange<StringAttr>())
        axes.insert(axis);
      value = slice.getInput();
      found = true;
    }
  };
  if (auto update = dyn_cast<OptimizerOpInterface>(user)) {
    Value param = update.getParam();
    addSliceAxes(param);
    if (auto arg = dyn_cast<BlockArgument>(param)) {
      found = true;
      if (auto sharding = func.getArgAttrOfType<dist::ShardingAttr>(
              arg.getArgNumber(), dist::DistDialect::kShardingAttrName))
        for (ArrayAttr dim : sharding.getDims())
          for (auto axis : dim.getAsRange<StringAttr>())
            axes.insert(axis);
    }
  } else if (auto scatter = grad.getDefiningOp<dist::ReduceScatterOp>()) {
    for (auto axis : scatter.getAxes().getAsRange<StringAttr>())
      axes.insert(axis);
    found = true;
  } else {
    addSliceAxes(grad);
  }
  SmallVector<StringAttr> ordered;
  for (auto axis : mesh.getAxes().getAsRange<StringAttr>())
    if (!found || axes.contains(axis))
      ordered.push_back(axis);
  return ordered;
}

LogicalResult StepRewriter::analyze(bool scaling) {
  Value loss = getStepLoss(func);
  if (!loss && scaling)
    return emitError(func.getLoc())
           << "train-mixed-precision: loss scaling needs the step's loss "
              "result";
  if (!loss)
    return success();
  if (scaling &&
      loss.getType() != RankedTensorType::get({}, builder.getF32Type()))
    return emitError(loss.getLoc())
           << "train-mixed-precision: loss scaling needs a float32 scalar "
              "loss; this one is "
           << loss.getType();
  FailureOr<Linearity> found =
      findSeed(func, loss, getUpdateGradients(func), scaling);
  if (failed(found))
    return failure(scaling);
  seed = std::move(*found);
  // Master ops: those that read the gradients other than linearly.
  for (Operation &op : func.getBody().front()) {
    // (A collective carrying a gradient with the loss is linear in the
    // gradient and independent of the seed in the loss.)
    if (llvm::none_of(op.getResults(), [&](Value r) {
          return seed->dependent.contains(r) && !seed->linear.contains(r);
        }))
      continue;
    if (!isa<OptimizerOpInterface>(op) && !isa<func::ReturnOp>(op))
      master.insert(&op);
    for (OpOperand &operand : op.getOpOperands())
      if (seed->linear.contains(operand.get()))
        gradientUses.push_back({&op, operand.getOperandNumber()});
  }
  if (scaling && gradientUses.empty())
    return emitError(func.getLoc())
           << "train-mixed-precision: loss scaling finds no update that "
              "reads the gradients (an optimizer op, or ops that depend on "
              "the backward's seed other than linearly)";
  if (scaling)
    for (auto [op, index] : gradientUses)
      if (!isF32Tensor(op->getOperand(index).getType()))
        return emitError(op->getLoc())
               << "train-mixed-precision: loss scaling needs float32 "
                  "gradients; '"
               << op->getName() << "' reads "
               << op->getOperand(index).getType();
  return success();
}

LogicalResult StepRewriter::scaleSeed() {
  Location loc = func.getLoc();
  bool dynamic = precision.lossScale == LossScale::dynamic;
  if (dynamic) {
    FailureOr<BlockArgument> scaleArg =
        addScalarState(TrainDialect::kLossScaleStateName, precision.initScale);
    if (failed(scaleArg))
      return failure();
    FailureOr<BlockArgument> trackerArg =
        addScalarState(TrainDialect::kGrowthTrackerStateName, std::nullopt);
    if (failed(trackerArg))
      return failure();
    scale = *scaleArg;
    tracker = *trackerArg;
  }

  // The seed times the scale, for the uses that carry it to the gradients.
  builder.setInsertionPointAfterValue(seed->seed);
  Value scaleValue = dynamic ? scale : scalar(loc, precision.initScale);
  scaledSeed = mul(seed->seed.getLoc(), seed->seed, scaleValue);
  for (OpOperand *use : seed->seedUses)
    use->set(scaledSeed);

  return success();
}

LogicalResult StepRewriter::unscaleGradients() {
  Location loc = func.getLoc();
  bool dynamic = precision.lossScale == LossScale::dynamic;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // Unscale each gradient once, where it is made; PyTorch multiplies by
  // the reciprocal, computed once.
  builder.setInsertionPointAfterValue(scaledSeed);
  Value inverse =
      dynamic ? Value(DivOp::create(builder, loc, scalar(loc, 1.0), scale))
              : scalar(loc, double(1.0f / float(precision.initScale)));
  Value zero = scalar(loc, 0.0);
  DenseMap<Value, Value> unscaledOf;
  // The finiteness sums, with the mesh axes their gradients are split over,
  // in the order of gradientUses.
  SmallVector<std::pair<SmallVector<StringAttr>, Value>> sums(
      gradientUses.size());
  // The gradients a collective sums are checked after it in its results'
  // order, as when the strategy partitions a step already mixed.
  auto carrierIndex = [&](unsigned i) -> int64_t {
    auto [op, index] = gradientUses[i];
    auto carried = dyn_cast<OpResult>(op->getOperand(index));
    return carried && isSumCarry(carried.getOwner()) ? carried.getResultNumber()
                                                     : -1;
  };
  SmallVector<unsigned> order =
      llvm::to_vector(llvm::seq<unsigned>(0, gradientUses.size()));
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return carrierIndex(a) < carrierIndex(b);
  });
  DenseMap<Operation *, Operation *> lastCheckAfter;
  for (unsigned i : order) {
    auto [op, index] = gradientUses[i];
    Value grad = op->getOperand(index);
    if (Value unscaled = unscaledOf.lookup(grad)) {
      op->setOperand(index, unscaled);
      continue;
    }
    Location gradLoc = grad.getLoc();
    Value unscaled;
    auto carried = dyn_cast<OpResult>(grad);
    if (carried && isSumCarry(carried.getOwner())) {
      // Summed across devices by a strategy: each device's part is
      // unscaled before the sum, as in a step made mixed before the
      // strategy (the product by a whole scalar stays a partial sum).
      OpOperand &part =
          carried.getOwner()->getOpOperand(carried.getResultNumber());
      builder.setInsertionPointAfterValue(part.get());
      part.set(mul(gradLoc, part.get(), inverse));
      unscaled = grad;
    } else {
      builder.setInsertionPointAfterValue(grad);
      unscaled = mul(gradLoc, grad, inverse);
      op->setOperand(index, unscaled);
    }
    unscaledOf[grad] = unscaled;
    if (!dynamic)
      continue;
    // Any infinite or NaN element makes the sum of g * 0 NaN. It reads the
    // gradient the update reads (which a strategy shards as the update's
    // operand: ZeRO reduce-scatters it and sums the shards), not the scaled
    // one GradScaler reads: they differ only when a scale below 1 makes a
    // finite gradient infinite, a step this skips instead of applying.
    Operation *carrier = carried && isSumCarry(carried.getOwner())
                             ? carried.getOwner()
                             : nullptr;
    if (Operation *last = lastCheckAfter.lookup(carrier); carrier && last)
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPointAfterValue(unscaled);
    auto gradType = cast<RankedTensorType>(grad.getType());
    SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(0, gradType.getRank()));
    Value zeros = mul(gradLoc, unscaled, zero);
    Value sum = dims.empty() ? zeros
                             : Value(ReduceOp::create(builder, gradLoc, zeros,
                                                      ReduceKind::sum, dims));
    if (carrier)
      lastCheckAfter[carrier] = sum.getDefiningOp();
    sums[i] = {getSplitAxes(op, grad), sum};
  }
  // (A gradient read twice is checked once.)
  llvm::erase_if(sums, [](auto &entry) { return !entry.second; });
  if (!dynamic)
    return success();

  // After the last update: keep every param and state on a bad step, and
  // move the scale as GradScaler's _amp_update_scale_ does. The sums of
  // gradients split over mesh axes are added up there first (each device
  // holds its shard's part), per set of axes.
  builder.setInsertionPoint(func.getBody().front().getTerminator());
  SmallVector<std::pair<SmallVector<StringAttr>, Value>> groups;
  for (auto &[axes, sum] : sums) {
    auto group =
        llvm::find_if(groups, [&](auto &g) { return g.first == axes; });
    if (group == groups.end())
      groups.push_back({axes, sum});
    else
      group->second = add(loc, group->second, sum);
  }
  Value nonFinite;
  for (auto &[axes, sum] : groups) {
    Value total = sum;
    if (!axes.empty())
      total = dist::AllReduceOp::create(
                  builder, loc, TypeRange{sum.getType()}, ValueRange{sum},
                  dist::ReductionKind::sum, mesh.getSymName(),
                  builder.getArrayAttr(
                      SmallVector<Attribute>(axes.begin(), axes.end())))
                  .getResult(0);
    nonFinite = nonFinite ? add(loc, nonFinite, total) : total;
  }
  Value finite = compare(loc, nonFinite, nonFinite, CompareDirection::eq);
  Value one = scalar(loc, 1.0);
  TrainingStep step = TrainingStep::get(func);
  llvm::StringMap<Value> argumentsByName;
  for (const StepValue &value : step.arguments)
    if (value.name)
      argumentsByName[value.name.getValue()] = func.getArgument(value.index);
  for (const StepValue &value : step.results) {
    if ((value.role != Role::param && value.role != Role::opt_state) ||
        !value.name)
      continue;
    Value old = argumentsByName.lookup(value.name.getValue());
    if (!old || old == scale || old == tracker)
      continue;
    OpOperand &operand = ret->getOpOperand(value.index);
    operand.set(select(loc, finite, operand.get(), old));
  }
  Value successful = add(loc, tracker, one);
  Value grow =
      compare(loc, successful, scalar(loc, double(precision.growthInterval)),
              CompareDirection::eq);
  Value grown = mul(loc, scale, scalar(loc, precision.growthFactor));
  Value grownFinite =
      compare(loc, grown, scalar(loc, std::numeric_limits<float>::max()),
              CompareDirection::le);
  Value cleanScale =
      select(loc, grow, select(loc, grownFinite, grown, scale), scale);
  Value newScale =
      select(loc, finite, cleanScale,
             mul(loc, scale, scalar(loc, precision.backoffFactor)));
  Value newTracker =
      select(loc, finite, select(loc, grow, zero, successful), zero);
  ret->insertOperands(ret.getNumOperands(), {newScale, newTracker});
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// The mesh a strategy partitioned `func` over (dist-mirrored, dist-zero,
/// dist-tensor-parallel, dist-hybrid: one SPMD program of sums and
/// movements), or null for a single-device step. Fails, naming what to do,
/// on collectives a later pass split or overlapped.
static FailureOr<dist::MeshOp> getPartitionMesh(func::FuncOp func) {
  Operation *unhandled = nullptr, *carry = nullptr;
  dist::MeshOp mesh;
  func.walk([&](Operation *op) {
    if (!isa_and_nonnull<dist::DistDialect>(op->getDialect()) ||
        isa<dist::AnnotateOp, dist::ShardOffsetOp>(op))
      return WalkResult::advance();
    if (!isCarry(op)) {
      unhandled = op;
      return WalkResult::interrupt();
    }
    if (!carry)
      carry = op;
    if (auto name = op->getAttrOfType<FlatSymbolRefAttr>("mesh"); !mesh && name)
      mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(func, name);
    return WalkResult::advance();
  });
  if (unhandled)
    return emitError(unhandled->getLoc())
           << "train-mixed-precision rewrites a single-device step or one a "
              "strategy partitioned (sums and movements of its values); '"
           << func.getSymName() << "' has '" << unhandled->getName()
           << "' from a later pass: run train-mixed-precision before it";
  if (!func->hasAttr(dist::DistDialect::kPartitionedAttrName)) {
    if (carry)
      return emitError(carry->getLoc())
             << "train-mixed-precision: '" << func.getSymName() << "' has '"
             << carry->getName() << "' but is not a partitioned step (no '"
             << dist::DistDialect::kPartitionedAttrName
             << "'): it cannot tell the values' layout";
    return dist::MeshOp();
  }
  for (unsigned i = 0; !mesh && i < func.getNumArguments(); ++i)
    if (auto sharding = func.getArgAttrOfType<dist::ShardingAttr>(
            i, dist::DistDialect::kShardingAttrName))
      mesh = SymbolTable::lookupNearestSymbolFrom<dist::MeshOp>(
          func, sharding.getMesh());
  if (!mesh)
    return emitError(func.getLoc())
           << "train-mixed-precision: '" << func.getSymName()
           << "' is partitioned but names no mesh in its shardings";
  return mesh;
}

namespace {
struct TrainMixedPrecisionPass
    : public train::impl::TrainMixedPrecisionPassBase<TrainMixedPrecisionPass> {
  using Base::Base;

  FailureOr<Precision> getPrecision(ModuleOp module);
  std::string canonicalOptions(const Precision &precision) const;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<Precision> precision = getPrecision(module);
    if (failed(precision))
      return signalPassFailure();
    auto programs = module.getOps<func::FuncOp>();
    auto placed = llvm::find_if(programs, [](func::FuncOp func) {
      return func->hasAttr(dist::DistDialect::kPlaceAttrName);
    });
    if (failed(placed == programs.end()
                   ? rewriteSteps(module, *precision)
                   : rewritePlaced(module, *placed, *precision)))
      return signalPassFailure();
  }

  /// Rewrites every training step of `module` (single-device or
  /// partitioned by an SPMD strategy).
  LogicalResult rewriteSteps(ModuleOp module, const Precision &precision) {
    std::string text = canonicalOptions(precision);
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && TrainingStep::isTrainingStep(func))
        steps.push_back(func);
    for (func::FuncOp func : steps) {
      if (func->hasAttr(TrainDialect::kMixedPrecisionAttrName))
        return emitError(func.getLoc())
               << "train-mixed-precision: '" << func.getSymName()
               << "' already computes in mixed precision ("
               << func->getAttr(TrainDialect::kMixedPrecisionAttrName) << ")";
      FailureOr<dist::MeshOp> mesh = getPartitionMesh(func);
      if (failed(mesh))
        return failure();
      // The seed is found on the float32 step; unscaling and the
      // finiteness check read the float32 gradients the updates see.
      StepRewriter rewriter(func, precision, *mesh);
      bool scaling = precision.lossScale != LossScale::none &&
                     !TrainingStep::isEvalFunction(func);
      if ((!TrainingStep::isEvalFunction(func) &&
           failed(rewriter.analyze(scaling))) ||
          (scaling && failed(rewriter.scaleSeed())) ||
          failed(rewriter.rewritePrecision()) ||
          (scaling && failed(rewriter.unscaleGradients())) ||
          failed(verify(func)))
        return failure();
      func->setAttr(TrainDialect::kMixedPrecisionAttrName,
                    StringAttr::get(&getContext(), text));
    }
    return success();
  }

  /// Placed programs (dist-pipeline, dist-parameter-server; `program` is
  /// one) are not rewritten one by one: the module they were placed from
  /// (PlacementSource.h) is rewritten and placed again by the recorded
  /// pipeline, which gives the program the other order gives. Fails when
  /// the module keeps no source or a later pass changed the programs.
  LogicalResult rewritePlaced(ModuleOp module, func::FuncOp program,
                              const Precision &precision);
};
} // namespace

LogicalResult
TrainMixedPrecisionPass::rewritePlaced(ModuleOp module, func::FuncOp program,
                                       const Precision &precision) {
  ModuleOp source = dist::getPlacementSource(module);
  if (!source)
    return emitError(program.getLoc())
           << "train-mixed-precision: '" << program.getSymName()
           << "' is a placed program but its module keeps no '"
           << dist::DistDialect::kPlacementAttrName
           << "' module to place again (programs written by hand or by an "
              "older dist-opt): run train-mixed-precision before the "
              "strategy that placed them";
  auto placement = source->getAttrOfType<DictionaryAttr>(
      dist::DistDialect::kPlacementAttrName);
  StringRef pipeline = placement.getAs<StringAttr>("pipeline").getValue();
  if (dist::fingerprintPlacedModule(module, source) !=
      placement.getAs<StringAttr>("fingerprint").getValue())
    return emitError(program.getLoc())
           << "train-mixed-precision: the placed programs or their source "
              "changed after '"
           << pipeline
           << "' wrote them: run train-mixed-precision before the passes "
              "that ran after it";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  FailureOr<OpPassManager> placing = parsePassPipeline(pipeline, os);
  if (failed(placing) || placing->getOpName() != ModuleOp::getOperationName())
    return emitError(source.getLoc())
           << "train-mixed-precision: cannot read the placing pipeline '"
           << pipeline << "' (a pipeline on 'builtin.module')"
           << (errors.empty() ? "" : ": ")
           << StringRef(errors).split('\n').first.trim();
  // Rewritten and placed again where it is kept, then moved out over the
  // programs it replaces.
  source->removeAttr(dist::DistDialect::kPlacementAttrName);
  if (failed(rewriteSteps(source, precision)) ||
      failed(runPipeline(*placing, source)))
    return failure();
  Block *body = module.getBody();
  for (Operation &op : llvm::make_early_inc_range(body->getOperations()))
    if (&op != source.getOperation())
      op.erase();
  body->getOperations().splice(body->end(), source.getBody()->getOperations());
  NamedAttrList attrs(source->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  if (StringAttr name = module.getSymNameAttr())
    attrs.set(SymbolTable::getSymbolAttrName(), name);
  module->setAttrs(attrs.getDictionary(&getContext()));
  source.erase();
  return success();
}

FailureOr<Precision> TrainMixedPrecisionPass::getPrecision(ModuleOp module) {
  auto fail = [&](const Twine &message) {
    emitError(module.getLoc()) << "train-mixed-precision: " << message;
    return failure();
  };
  Precision p;
  MLIRContext *context = &getContext();
  if (compute == "bf16")
    p.compute = BFloat16Type::get(context);
  else if (compute == "f16")
    p.compute = Float16Type::get(context);
  else
    return fail("compute must be bf16 or f16, got '" + compute + "'");
  if (lossScale == "none")
    p.lossScale = LossScale::none;
  else if (lossScale == "static")
    p.lossScale = LossScale::fixed;
  else if (lossScale == "dynamic")
    p.lossScale = LossScale::dynamic;
  else
    return fail("loss-scale must be none, static or dynamic, got '" +
                lossScale + "'");
  auto fitsF32 = [](double x) {
    return std::isfinite(x) && std::abs(x) <= std::numeric_limits<float>::max();
  };
  if (!fitsF32(initScale) || initScale <= 0)
    return fail("init-scale must be a positive finite float32, got " +
                llvm::formatv("{0}", double(initScale)).str());
  if (!fitsF32(growthFactor) || growthFactor <= 1)
    return fail("growth-factor must be greater than 1, got " +
                llvm::formatv("{0}", double(growthFactor)).str());
  if (!(backoffFactor > 0 && backoffFactor < 1))
    return fail("backoff-factor must be in (0, 1), got " +
                llvm::formatv("{0}", double(backoffFactor)).str());
  if (growthInterval < 1 || growthInterval > (int64_t(1) << 24))
    return fail("growth-interval must be in [1, 2^24] (a float32 counter), "
                "got " +
                Twine(int64_t(growthInterval)));
  p.initScale = initScale;
  p.growthFactor = growthFactor;
  p.backoffFactor = backoffFactor;
  p.growthInterval = growthInterval;
  return p;
}

/// The shortest decimal text that reads back as `x`.
static std::string formatNumber(double x) {
  for (int digits = 1;; ++digits) {
    std::string text = llvm::formatv("{0}", llvm::format("%.*g", digits, x));
    if (std::strtod(text.c_str(), nullptr) == x || digits >= 17)
      return text;
  }
}

std::string
TrainMixedPrecisionPass::canonicalOptions(const Precision &p) const {
  std::string text = "compute=" + compute.getValue();
  text += " loss-scale=" + lossScale.getValue();
  if (p.lossScale != LossScale::none)
    text += " init-scale=" + formatNumber(p.initScale);
  if (p.lossScale == LossScale::dynamic)
    text += " growth-factor=" + formatNumber(p.growthFactor) +
            " backoff-factor=" + formatNumber(p.backoffFactor) +
            " growth-interval=" + std::to_string(p.growthInterval);
  return text;
}
