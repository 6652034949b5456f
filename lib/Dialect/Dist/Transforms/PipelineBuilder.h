//===- PipelineBuilder.h - dist-pipeline's state ----------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The state `dist-pipeline` builds up while it cuts a training step into
// pipeline stages and writes each device's program (Pipeline.cpp: phases,
// units, schedule and the pass; PipelineStages.cpp: stages;
// PipelinePrograms.cpp: the programs).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PIPELINEBUILDER_H
#define DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PIPELINEBUILDER_H

#include "Strategies.h"

#include "distopt/Analysis/PipelineSchedule.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Interfaces/PartBuilderInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace mlir::dist {

/// The pipeline's mesh and its axis.
static constexpr llvm::StringLiteral kPipeMesh = "pipe", kPipeAxis = "pipe";
/// The temporary mesh the step is partitioned over to find the sums over
/// the batch (microbatches, a parameter server's workers).
static constexpr llvm::StringLiteral kMicrobatchMesh = "pipeline_microbatches";
/// That mesh's axis of the microbatches (the workers).
static constexpr llvm::StringLiteral kMicrobatchAxis = "microbatch";

/// The schedule library's unit kinds and the IR's (F, B, W; the update U
/// is not scheduled by the library).
inline pipeline::UnitKind toScheduleKind(UnitKind kind) {
  switch (kind) {
  case UnitKind::forward:
    return pipeline::UnitKind::Forward;
  case UnitKind::backward:
    return pipeline::UnitKind::Backward;
  case UnitKind::weight:
  case UnitKind::update:
    break;
  }
  assert(kind == UnitKind::weight && "the update is not a scheduled unit");
  return pipeline::UnitKind::Weight;
}

inline UnitKind fromScheduleKind(pipeline::UnitKind kind) {
  switch (kind) {
  case pipeline::UnitKind::Forward:
    return UnitKind::forward;
  case pipeline::UnitKind::Backward:
    return UnitKind::backward;
  case pipeline::UnitKind::Weight:
    break;
  }
  return UnitKind::weight;
}

/// The schedule of a module's placed programs as the schedule library sees
/// it: each program's scheduled units in order (the device is the
/// program's coordinate on the first axis its place fixes) and each
/// (stage, kind)'s estimated milliseconds per microbatch.
struct ProgramSchedule {
  pipeline::Schedule plan;
  pipeline::UnitCosts costs;
  /// The schedule's name from the programs' `dist.schedule` ("" if none).
  std::string kind;
};

/// The one training step of `module`, which must be single-device; fails
/// with an error naming `pass` otherwise. Evaluation functions
/// (train-derive-eval) are not training steps here: see SetAsideEvaluation.
FailureOr<func::FuncOp> getSingleTrainingStep(ModuleOp module, StringRef pass);

/// Keeps the step's evaluation functions (train-derive-eval) out of the
/// module while a placing pass (dist-pipeline, dist-parameter-server)
/// annotates, partitions and replaces the step, and puts them back
/// unchanged when it goes out of scope. Placed programs evaluate on one
/// device, TensorFlow's side-car evaluator: dist-run gathers the parameters
/// to rank 0 for each evaluation and runs the single-device function there.
/// Says so with a remark naming `pass`.
class SetAsideEvaluation {
public:
  SetAsideEvaluation(ModuleOp module, StringRef pass);
  ~SetAsideEvaluation();
  SetAsideEvaluation(const SetAsideEvaluation &) = delete;
  SetAsideEvaluation &operator=(const SetAsideEvaluation &) = delete;
  /// Puts the functions back now (the destructor then does nothing).
  void restore();

private:
  ModuleOp module;
  SmallVector<func::FuncOp> functions;
};

/// Erases `step` (replaced by the placed programs) and the partitioning
/// mesh, and checks the programs as `dist-verify` does: each program's step
/// contract, one loss, matched transfers, no deadlock.
LogicalResult finishPrograms(ModuleOp module, func::FuncOp step);

/// `pass` with its options as a textual pipeline on a module
/// (`builtin.module(dist-pipeline{...})`), as the placement source records
/// it.
std::string getPipelineText(Pass &pass);

/// The `train.*` attributes (role, name) of a single-device argument or
/// result, which its program keeps (its shardings stay behind).
inline NamedAttrList getTrainAttrs(DictionaryAttr attrs) {
  NamedAttrList kept;
  if (attrs)
    for (NamedAttribute attr : attrs)
      if (attr.getName().getValue().starts_with("train."))
        kept.push_back(attr);
  return kept;
}

/// True when `module`'s placed programs are a pipeline's (not a parameter
/// server's): their `dist.schedule` says so.
bool isPipelineProgram(ModuleOp module);

/// Reads the schedule of `module`'s placed programs, each unit's time the
/// sum of `opSeconds` over its ops (by default the pipeline's estimate);
/// fails, with an error naming `pass`, when it has none.
FailureOr<ProgramSchedule> readProgramSchedule(
    ModuleOp module, StringRef pass,
    function_ref<double(Operation *)> opSeconds = estimateOpSeconds);

/// Cuts `weights` (in order) into `parts` non-empty contiguous groups whose
/// largest sum is as small as possible; returns each group's first index.
SmallVector<size_t> cutEvenly(ArrayRef<double> weights, int64_t parts);

/// Charges each op of `others` (in program order; those of `forward` are
/// skipped) to the forward op whose work it belongs to, as an index into
/// `forward`: the latest forward op whose value or parameter it reads,
/// else the earliest op the gradients it reads were charged to (both: the
/// earlier), else the last forward op.
DenseMap<Operation *, size_t> chargeToForward(ArrayRef<Operation *> forward,
                                              ArrayRef<Operation *> others);

/// The ops of one (stage, kind) in program order: the body of its
/// fragments, one per microbatch (one in all for U).
struct UnitOps {
  SmallVector<Operation *> ops;
  /// Values the ops read that other units (or arguments) define.
  llvm::SetVector<Value> inputs;
  /// Values the ops define that other units or the return read.
  llvm::SetVector<Value> outputs;
  /// The accumulations (all-reduces over the microbatches) of values the
  /// ops define.
  SmallVector<AllReduceOp> accumulations;
};

class PipelineBuilder {
public:
  /// `dp` and `tp`: the data- and tensor-parallel devices of each stage;
  /// `zero`: the ZeRO stage over the data axis.
  PipelineBuilder(ModuleOp module, func::FuncOp func, int64_t ranks,
                  int64_t virtualStages, int64_t microbatches,
                  pipeline::ScheduleKind kind, int64_t dp = 1, int64_t tp = 1,
                  int64_t zero = 0)
      : module(module), func(func), ranks(ranks),
        numStages(ranks * virtualStages), microbatches(microbatches), dp(dp),
        tp(tp), zero(zero), kind(kind), builder(module.getContext()),
        partBuilder(findPartBuilder(module.getContext())) {
    assert(partBuilder && "no loaded dialect builds programs' ops (the passes "
                          "depend on the train dialect)");
  }

  /// Records the single-device signature, then partitions the step over
  /// the microbatches (and the data and model axes of each stage).
  LogicalResult
  partitionMicrobatches(function_ref<LogicalResult(OpPassManager &)> run);
  /// Creates the programs' mesh `@pipe`: `[pipe, data, model]`, the axes of
  /// size 1 left out.
  LogicalResult createProgramMesh();
  LogicalResult analyzePhases();
  FailureOr<AllReduceOp> classifyOps();
  LogicalResult assignStages();
  LogicalResult collectUnits();
  LogicalResult buildSchedule();
  LogicalResult writePrograms();
  /// The simulated bubble of the schedule buildSchedule made.
  double getBubble() const { return bubble; }
  /// Whether the forward ops' stages were cut by the cost model (no
  /// 'train.stage' annotation).
  bool isAutoCut() const { return autoCut; }

protected:
  /// What the batch is split into, in diagnostics: the pipeline's
  /// microbatches, a parameter server's workers.
  struct {
    StringRef singular = "microbatch", plural = "microbatches";
  } parts;

  /// Clones per-microbatch op `op` into `body` for part `part` of the
  /// batch (a microbatch, a parameter-server worker's block): first the
  /// operand-free ops it reads (a shard offset over the parts becomes the
  /// part's first index), then the op (a local slice over the parts
  /// becomes the part's slice).
  void clonePerPart(OpBuilder &body, Operation *op, IRMapping &mapping,
                    int64_t part) const;
  /// Part `part` of `whole` along `dim`, in parts of `size`.
  Value slicePart(OpBuilder &body, Location loc, Value whole, int64_t dim,
                  int64_t size, int64_t part) const;

  int64_t rankOf(int64_t stage) const { return stage % ranks; }
  bool isMicrobatchCollective(Operation *op) const;
  /// Splits the collectives over the microbatches and other axes (a
  /// gradient summed over `[data, microbatch]`) into one over the
  /// microbatches and one over the others, and records the programs'
  /// argument types (local but for the microbatches).
  LogicalResult splitMicrobatchAxis();
  /// `sharding` (on the partitioning mesh) on the programs' mesh, without
  /// the microbatch axis; null when nothing else splits the value.
  ShardingAttr toProgramSharding(ShardingAttr sharding) const;
  bool isFree(Operation *op) const {
    return mbOps.contains(op) && op->getNumOperands() == 0;
  }
  std::optional<int64_t> annotatedStage(Operation *op) const;
  LogicalResult assignForwardStages();
  void autoForwardStages(ArrayRef<Operation *> forward);
  void splitWeightGradients();
  LogicalResult checkParameters();
  /// Finds a step's dynamic loss scaling (see `LossScaling`).
  void findLossScaling();
  /// The stage of the op computing the loss (the last forward stage).
  int64_t lossStage() const;
  PlaceAttr placeOf(int64_t rank) const;
  /// The device whose program defines `value` (an argument: -1, every
  /// device that needs it has it).
  int64_t producerRank(Value value) const;
  Value getOrReceive(int64_t rank, Value value, int64_t microbatch,
                     Location loc);
  int64_t getChannel(Value value, int64_t microbatch, int64_t toRank);
  LogicalResult writeUnit(int64_t rank, int64_t unitStage, UnitKind unitKind,
                          int64_t microbatch);
  /// Writes `unit`, of stage `unitStage`, on device `rank`.
  LogicalResult writeUnit(int64_t rank, UnitOps &unit, int64_t unitStage,
                          UnitKind unitKind, int64_t microbatch);
  void sendOutputs(int64_t rank, Value value, Value local, int64_t microbatch,
                   Location loc);

  ModuleOp module;
  func::FuncOp func;
  int64_t ranks, numStages, microbatches, dp, tp, zero;
  pipeline::ScheduleKind kind;
  OpBuilder builder;
  /// Builds the ops the programs add (sums, slices, ...) in the step's
  /// dialect.
  const PartBuilderDialectInterface *partBuilder;

  /// The single-device arguments' and results' attributes.
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  SmallVector<std::optional<train::Role>> argRoles, resultRoles;
  /// The partitioned arguments' and results' shardings (on the partitioning
  /// mesh; null: none), each argument's type in the programs (local but
  /// for the microbatches) and the dim split over the microbatches (-1:
  /// none).
  SmallVector<ShardingAttr> argShardings, resultShardings;
  SmallVector<Type> programArgTypes;
  SmallVector<int64_t> microbatchDim;

  /// The per-microbatch ops, those of them that depend on the batch, and
  /// the once-per-step update.
  llvm::SetVector<Operation *> mbOps, batchOps, stepOps;
  SmallVector<AllReduceOp> accumulations;
  DenseMap<Operation *, int64_t> stage;
  DenseMap<Operation *, UnitKind> unitKind;
  /// Per argument, its stage (-1: not bound to one, as hyper-parameters
  /// and the batch).
  SmallVector<int64_t> argStage;
  /// Where the accumulated value of an all-reduce is needed first.
  DenseMap<Operation *, int64_t> accumulationStage;
  std::map<std::pair<int64_t, UnitKind>, UnitOps> units;

  /// A step that skips its update when a gradient is not finite
  /// (train-mixed-precision's dynamic loss scaling). Every stage keeps or
  /// updates its own parameters on one flag, the finiteness of every
  /// stage's gradients: each stage sums its gradients' part of it, the
  /// partial sums flow to later stages only, and the stages' updates wait
  /// for the flag. The loss scale and its growth live on the loss's stage,
  /// which scales the seed and sends the scale's reciprocal back with the
  /// gradients.
  struct {
    /// The update ops the flag is computed from, in a unit of their own
    /// per stage (`gateUnits`) that runs before the stage's update.
    llvm::SetVector<Operation *> gate;
    /// Those of them that only the flag reads (the partial sums and their
    /// sum): on the latest stage of their operands.
    DenseSet<Operation *> sums;
    /// The loss scale's state and the ops on it alone (and the flag): on
    /// the loss's stage.
    DenseSet<Operation *> scaleOps;
    SmallVector<unsigned> scaleArgs;
  } lossScaling;
  std::map<int64_t, UnitOps> gateUnits;

  pipeline::Schedule plan;
  pipeline::UnitCosts costs;
  double bubble = 0;
  bool autoCut = false;

  /// Per device: its program, argument of each single-device argument,
  /// and the values it holds, by (single-device value, microbatch).
  SmallVector<func::FuncOp> programs;
  SmallVector<DenseMap<unsigned, Value>> programArgs;
  SmallVector<DenseMap<std::pair<Value, int64_t>, Value>> held;
  /// Per device, the running sums of the accumulations, by microbatch.
  SmallVector<DenseMap<std::pair<Operation *, int64_t>, Value>> partialSums;
  /// The channel of each transfer: (value, microbatch, receiving device).
  DenseMap<std::tuple<Value, int64_t, int64_t>, int64_t> channels;
};

} // namespace mlir::dist

#endif // DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PIPELINEBUILDER_H
