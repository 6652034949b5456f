//===- Bindings.h - the step's arrays on this rank --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// How the arguments and results of a training step map onto the global
// arrays of the npz files: each rank's block (from the value's split over
// the mesh), memref descriptors for the JIT, and the step contract a
// runner relies on to feed results back.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_BINDINGS_H
#define DISTOPT_RUNNER_BINDINGS_H

#include "distopt/Runner/Npz.h"

#include "distopt/Conversion/StepSignature.h"

#include "llvm/Support/Error.h"

namespace distopt::runner {

/// One argument or result of the step on this rank.
struct Binding {
  const mlir::train::StepSignature::Value *value;
  /// Per dim, the mesh axes the value is split over (null: whole).
  mlir::ArrayAttr split;
  mlir::RankedTensorType localType;
  std::vector<int64_t> globalShape;
  /// Where this rank's block starts in the global array.
  std::vector<int64_t> offsets;
  std::string dtype;
  Array local;
};

/// An error naming `value` when its element type is not one the runner
/// moves (f32, f64, i32, i64); check before bind().
llvm::Error checkBindable(const mlir::train::StepSignature::Value &value);

/// The binding of `value` on rank `rank` (checkBindable() first).
Binding bind(const mlir::train::StepSignature::Value &value,
             const mlir::train::StepSignature &step, int64_t rank);

/// The offsets of rank `rank`'s block of a value split as `split` (per dim,
/// the mesh axes it is split over).
std::vector<int64_t> getBlockOffsets(mlir::ArrayAttr split,
                                     const mlir::train::StepSignature &step,
                                     int64_t rank,
                                     llvm::ArrayRef<int64_t> localShape);

/// Copies the overlap of two row-major boxes of one global array: `source`
/// holds the box at `sourceOffsets` of shape `sourceShape`, `target` the
/// box at `targetOffsets` of `targetShape`; nothing when they are disjoint.
void copyOverlap(const char *source, llvm::ArrayRef<int64_t> sourceOffsets,
                 llvm::ArrayRef<int64_t> sourceShape, char *target,
                 llvm::ArrayRef<int64_t> targetOffsets,
                 llvm::ArrayRef<int64_t> targetShape, int64_t elementBytes);

/// Copies the block of `global` at `offsets` with `local`'s shape
/// (row-major) into `local`, or back with `toGlobal`.
void copyBlock(Array &global, Array &local, llvm::ArrayRef<int64_t> offsets,
               bool toGlobal);

/// A memref descriptor of `array`: allocated, aligned, offset, sizes,
/// strides (all 8-byte words).
std::vector<int64_t> describe(Array &array);

/// True for the arguments a batch gives (input, label).
bool isData(const Binding &binding);

/// True for the roles of state a step returns updated (param, opt_state).
bool isState(const mlir::train::StepSignature::Value &value);

/// An error (every rank's) unless every state result named as an argument
/// comes back with exactly the argument's local type and split: the runner
/// feeds it back into the next step as that argument.
llvm::Error checkStepContract(const mlir::train::StepSignature &step);

/// "4x3" for a shape.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_BINDINGS_H
