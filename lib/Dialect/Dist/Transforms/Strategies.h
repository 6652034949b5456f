//===- Strategies.h - shared pieces of the strategy passes ------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The annotate passes of the strategies (mirrored, multi-worker, ZeRO,
// tensor parallel, hybrid) declare a mesh and put `dist.sharding` on the
// arguments and results of training steps; propagation and partitioning do
// the rest. These are the steps they share.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_STRATEGIES_H
#define DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_STRATEGIES_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dist {

/// Returns the mesh `name` of `module` with `axes` and `shape`, creating it
/// at the top of the module when missing; fails when one with that name has
/// another shape.
FailureOr<MeshOp> getOrCreateMesh(ModuleOp module, StringRef name,
                                  ArrayRef<StringRef> axes,
                                  ArrayRef<int64_t> shape,
                                  ArrayRef<StringRef> hostAxes);

/// Where a bad option of a strategy is reported: the training step it
/// would distribute (the first one), else the module. An option belongs to
/// the command line, but the module's own location has no line ("FILE:0:0"
/// told the user nothing).
Location getOptionLocation(ModuleOp module);

/// Reports a bad option of strategy pass `pass` at getOptionLocation (one
/// line: the op itself is not printed).
InFlightDiagnostic emitOptionError(ModuleOp module, StringRef pass);

/// The most devices a strategy's mesh (or placed programs) may have, and
/// so the most any device-count option may ask for: far above the clusters
/// DistOpt runs on, low enough that the tables sized by a count stay small.
inline constexpr int64_t kMaxDevices = 65536;

/// Checks count option `option` (= `value`) of strategy pass `pass`
/// against `max`, which `what` describes ("the most devices a mesh may
/// have"): an error at `loc` naming the option, its value and the bound
/// when it is larger. Checked before anything is sized by the count.
LogicalResult checkCountBound(Location loc, StringRef pass, StringRef option,
                              int64_t value, int64_t max, const Twine &what);

/// Checks that each of `counts` (option name, value; all >= 1) is at most
/// kMaxDevices and that their product is too, without overflowing: an
/// error at `loc` naming the options otherwise.
LogicalResult checkDeviceCounts(Location loc, StringRef pass,
                                ArrayRef<std::pair<StringRef, int64_t>> counts);
/// checkDeviceCounts's message, empty when the counts are in bounds (for
/// pipeline builders, which report through an error handler).
std::string
getDeviceCountsError(StringRef pass,
                     ArrayRef<std::pair<StringRef, int64_t>> counts);

/// The global batch of `step` (see annotateDataParallel): the argument it
/// is read from and its size; none when the step has no batch argument.
/// Labels that disagree on it are an error.
FailureOr<std::optional<std::pair<const train::StepValue *, int64_t>>>
getStepBatch(const train::TrainingStep &step);

/// Checks that option `option` of strategy pass `pass`, `count` parts of
/// the batch (a `part` each: "microbatch", "worker", "replica"), leaves at
/// least one sample per part, on each of `replicas` data-parallel replicas,
/// in every training step of `module`: an error at the batch argument
/// naming the option, its value and the bound otherwise. `count` and
/// `replicas` must have passed checkDeviceCounts.
LogicalResult checkBatchBound(ModuleOp module, StringRef pass, StringRef option,
                              int64_t count, StringRef part,
                              int64_t replicas = 1);

/// Fails, naming the step, when a training step of `module` is already
/// partitioned: strategies apply to single-device steps.
LogicalResult checkSingleDevice(ModuleOp module);

/// Annotates every training step of `module` for data parallelism over
/// `batchAxes` of `mesh` (`replicas` devices in all): the batch arguments
/// split along dim 0. The batch is the leading dim of the labels (of the
/// inputs when there are none); an input whose leading dim differs (a
/// positional table, a mask shared by all samples) has no batch dim and
/// stays whole, with a remark. With `replicateState`, every other argument
/// and every result is annotated replicated; otherwise they are left to
/// propagation (so another strategy's shardings can reach them). A batch
/// that does not divide, or labels that disagree on it, are errors naming
/// the argument.
LogicalResult annotateDataParallel(ModuleOp module, MeshOp mesh,
                                   ArrayRef<int64_t> batchAxes,
                                   int64_t replicas, bool replicateState);

/// Annotates every training step of `module` for Megatron tensor
/// parallelism over axis `modelAxis` of `mesh` (column/row weight pairs,
/// vocabulary-parallel embeddings and cross-entropy; with
/// `sequenceParallel`, the token dim split between blocks). A head split
/// only over its classes (vocabulary-parallel cross-entropy) is split where
/// the cost model says it pays, or always with `forceVocabParallel`. Fails
/// when no weight of a step can be split.
LogicalResult annotateTensorParallel(ModuleOp module, MeshOp mesh,
                                     int64_t modelAxis, bool sequenceParallel,
                                     bool forceVocabParallel = false);

/// Applies ZeRO `stage` over mesh axes `dataAxes` (`replicas` devices) to
/// every parameter of every training step of `module` that an optimizer op
/// updates: optimizer state (stage 1), gradients (2) and parameters (3) are
/// split along the first dim that still divides, on top of the sharding
/// the parameter already has (tensor parallelism). Parameters it cannot
/// shard get a remark.
void applyZero(ModuleOp module, MeshOp mesh, int64_t stage,
               ArrayRef<int64_t> dataAxes, int64_t replicas);

/// The `dist.sharding` updates a strategy makes to one training step,
/// written back at once by `apply` (see FunctionShardingUpdate).
class StepShardings {
public:
  StepShardings(func::FuncOp func, const train::TrainingStep &step);

  /// Sets the sharding of step argument `arg` and of the results with the
  /// same `train.name` (its update).
  void setState(const train::StepValue &arg, ShardingAttr sharding);
  void setArgument(unsigned index, ShardingAttr sharding) {
    update.setArgument(index, sharding);
  }
  void setResult(unsigned index, ShardingAttr sharding) {
    update.setResult(index, sharding);
  }
  void apply() { update.apply(); }

private:
  FunctionShardingUpdate update;
  llvm::DenseMap<StringAttr, SmallVector<unsigned, 1>> resultsByName;
};

/// The optimizer op whose gradient `value` (the result of a reduction of a
/// partitioned step) is, directly or through elementwise single-result ops
/// that keep its shape (a widening convert, an unscaling multiply, a
/// select); null when it is not a gradient.
train::OptimizerOpInterface getGradientUpdate(Value value);

/// Estimated seconds of one run of `op` on one CPU core (a roofline of
/// 50 GFLOP/s and 10 GB/s over its CostOpInterface figures; 0 for ops
/// without a cost): what pipeline stages are balanced and simulated with.
double estimateOpSeconds(Operation *op);

/// True for an op that converts one tensor to a narrower float element type
/// of the same shape (a mixed-precision step's train.convert f32 -> bf16):
/// it runs where its operand is, so that the narrow value moves.
bool isNarrowingConversion(Operation *op);

} // namespace mlir::dist

#endif // DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_STRATEGIES_H
