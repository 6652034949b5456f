//===- StepSignature.h - a training step's interface ------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// What a runner (dist-run) needs to feed a training step: each argument's
// and result's role, name, type and, for a partitioned step, its sharding
// and the mesh. The function's attributes and the mesh are lowered away
// (dist-to-runtime drops shardings and meshes, the LLVM lowering drops
// argument attributes), so the signature is kept as the module attribute
// `train.step`, recorded before anything is lost.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_CONVERSION_STEPSIGNATURE_H
#define DISTOPT_CONVERSION_STEPSIGNATURE_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::train {

/// A training step's interface, as `train.step` records it:
///
///   train.step = {entry = "train_step",
///                 mesh_shape = array<i64: 2>, mesh_axes = ["data"],
///                 arguments = [{name = "x", role = "input",
///                               type = tensor<32x784xf32>,
///                               split = [["data"], []]}, ...],
///                 results = [...]}
///
/// in builtin attributes only, so that upstream tools (mlir-runner,
/// mlir-translate) read a lowered module. `mesh_*` and `split` (the mesh
/// axes each dim is split over, major to minor) only for a partitioned
/// step, whose types are one device's blocks.
///
/// A pipelined or parameter-server step (MPMD: different devices run
/// different functions, each placed with `dist.place`) records one program
/// per place:
///
///   train.step = {entry = "train_step_pipe0", mesh_shape = ..., mesh_axes =
///   ...,
///                 arguments = [...], results = [...],   // of `entry`
///                 programs = [{entry = "train_step_pipe0",
///                              devices = array<i64: 0>,
///                              arguments = [...], results = [...]}, ...]}
///
/// where each program's values are those it takes and returns (a
/// parameter, say, only on the device that holds it).
struct StepSignature {
  struct Value {
    unsigned index = 0;
    std::optional<Role> role;
    /// Empty when the value has no `train.name`.
    std::string name;
    RankedTensorType type;
    /// A label's class count (`classes`), when recorded.
    std::optional<int64_t> classes;
    /// Per dim, the mesh axes it is split over (ArrayAttrs of StringAttrs);
    /// null when the value is whole on every device.
    ArrayAttr split;
    /// A block of a global array (`#dist.block`, a placed program's uneven
    /// shard): its offsets and the global shape; empty otherwise.
    std::vector<int64_t> blockOffsets, globalShape;
    /// A copy of a variable another program holds (`dist.cache`): bound
    /// from the state and fed back, never saved.
    bool cache = false;

    /// Whether `other` holds the same part of the same named array (a
    /// state result and the argument it replaces).
    bool isSamePart(const Value &other) const {
      return name == other.name && blockOffsets == other.blockOffsets;
    }
  };
  /// One program of an MPMD step: its function and the devices (world
  /// ranks, ascending) that run it.
  struct Program {
    std::string entry;
    SmallVector<int64_t> devices;
    SmallVector<Value> arguments, results;
  };
  std::string entry;
  /// Empty for a step that is not partitioned (one device).
  SmallVector<int64_t> meshShape;
  SmallVector<std::string> meshAxes;
  /// The mesh axes that cross hosts (`host_axes` of the mesh); the others
  /// are meant to stay within a host.
  SmallVector<std::string> hostAxes;
  /// train-mixed-precision's options when the step computes in mixed
  /// precision ("compute=f16 loss-scale=dynamic ..."); empty otherwise.
  std::string mixedPrecision;
  /// True when the step scales its loss dynamically: its optimizer state
  /// `loss_scale` drops on a step it skipped.
  bool hasDynamicLossScale() const {
    return StringRef(mixedPrecision).contains("loss-scale=dynamic");
  }
  SmallVector<Value> arguments, results;
  /// Empty for an SPMD step (every device runs `entry`).
  std::vector<Program> programs;
  /// The step's evaluation function (train-derive-eval), recorded as
  /// `eval = {entry = ..., arguments = [...], results = [...]}`: for an
  /// SPMD step, a function on the step's mesh; for an MPMD step, a
  /// single-device function rank 0 runs on the gathered parameters
  /// (`devices` unused).
  std::optional<Program> eval;

  int64_t getNumDevices() const;
  bool isMPMD() const { return !programs.empty(); }
  /// The program device `device` runs (null for an SPMD step or a device no
  /// program runs).
  const Program *getProgram(int64_t device) const;
  /// The step as device `device` sees it: for an MPMD step, `entry`,
  /// `arguments` and `results` are those of its program; `programs` stays.
  StepSignature getDeviceStep(int64_t device) const;
  /// The evaluation function as a step of its own (`eval` must be set):
  /// a single-device step for an MPMD step.
  StepSignature getEvalStep() const;
  /// Whether the evaluation function runs on rank 0 alone, on parameters
  /// gathered from the programs (an MPMD step's).
  bool isEvalGathered() const { return eval && isMPMD(); }
  /// The position of mesh axis `axis`.
  int64_t getAxisIndex(StringRef axis) const;
  /// The product of the sizes of mesh axes `axes`.
  int64_t getGroupSize(ArrayAttr axes) const;
};

/// The functions the runner calls as `module`'s training step, as its
/// `train.step` records them: the entry of an SPMD step, each program's of
/// an MPMD step (none without a record).
SmallVector<StringRef> getStepEntries(ModuleOp module);

/// The class dim of the logits of the cross-entropy (or its backward) that
/// reads `label`, looking into the dist.fragments it is passed to and
/// through slices (microbatches) and reshapes; none when no such op reads
/// it.
std::optional<int64_t> getCrossEntropyClasses(Value label);

/// Records the signature of `entryName` (empty: the only function whose
/// arguments or results carry `train.role`) as `train.step` on `module`,
/// unless the module has one, and marks the entry `llvm.emit_c_interface`
/// (runners call it with memref descriptors). A module of placed programs
/// (functions with `dist.place`) records every program. Nothing happens
/// when no (or more than one) function is a training step; fails, with a
/// diagnostic, when `entryName` names no function or the step's types are
/// not ranked tensors.
LogicalResult recordStepSignature(ModuleOp module, StringRef entryName = "");

/// The signature `train.step` records, or failure with a diagnostic at the
/// module when it is absent or malformed.
FailureOr<StepSignature> readStepSignature(ModuleOp module);

} // namespace mlir::train

#endif // DISTOPT_CONVERSION_STEPSIGNATURE_H
