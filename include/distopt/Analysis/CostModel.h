//===- CostModel.h - per-rank compute, communication, memory ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The cost of one SPMD training step on one rank: FLOPs from each op's
// CostOpInterface, every collective with its ring bus bytes, and a memory
// estimate (state by role, gradients, activations by liveness). The
// `dist-cost-report` pass prints it; strategies and benchmarks compare it.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_ANALYSIS_COSTMODEL_H
#define DISTOPT_ANALYSIS_COSTMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::dist {

/// The communicating collectives of the dist dialect.
enum class CollectiveKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Broadcast
};

/// `all_reduce`, `reduce_scatter`, ...
StringRef stringifyCollectiveKind(CollectiveKind kind);

/// Bytes each rank sends (and receives) when a ring implementation runs a
/// collective of `payloadBytes` (the whole tensor: the input of an
/// all-reduce, reduce-scatter or all-to-all, the output of an all-gather)
/// over `groupSize` ranks: all_reduce `2(n-1)/n * S`, reduce_scatter,
/// all_gather and all_to_all `(n-1)/n * S`, broadcast `S` (0 when n = 1).
double getRingBusBytes(CollectiveKind kind, int64_t groupSize,
                       int64_t payloadBytes);

/// Seconds a ring implementation of a collective takes over links of
/// `gbPerSecond` GB/s with `latencyUs` microseconds per step: the bus bytes
/// over the bandwidth plus one latency per ring step (an all-reduce takes
/// 2(n-1) steps, the others n-1).
double getRingSeconds(CollectiveKind kind, int64_t groupSize, double busBytes,
                      double gbPerSecond, double latencyUs);

/// What splitting a classification or LM head over its `classes` on
/// `groupSize` ranks (Megatron's vocabulary-parallel head and
/// cross-entropy) saves and adds per rank against keeping it replicated,
/// for `tokens` rows of `hidden` features in `elementBytes`-byte elements.
struct VocabularySplitCost {
  /// The head's products, forward and backward (6 * tokens * hidden *
  /// classes), less this rank's share.
  double flopsSaved = 0;
  /// The head's weight and its gradient, less this rank's share.
  double stateBytesSaved = 0;
  /// Ring bus bytes of the all-reduces the split adds: the head's input
  /// gradient [tokens, hidden] and three per-token values (the maximum,
  /// the sums of exponentials and of the target logits).
  double busBytesAdded = 0;

  /// True when the split pays: it saves at least kFlopsPerBusByte FLOPs
  /// per byte it moves (a device is taken to compute that many in the
  /// time its link moves one byte), or more bytes of state than it moves
  /// per step. A 16-class head over 256 features saves 12 FLOPs per byte
  /// and stays whole; the ratio is about 3/4 of the classes, so heads from
  /// about 90 classes are split.
  bool pays() const;

  /// FLOPs per moved byte from which the split pays: the balance of an
  /// A100 in fp32 over NVLink (19.5 TFLOP/s over 300 GB/s), the lowest of
  /// the accelerators targeted (tensor-core rates are 8-30x higher).
  static constexpr double kFlopsPerBusByte = 64;
};

VocabularySplitCost getVocabularySplitCost(int64_t tokens, int64_t hidden,
                                           int64_t classes,
                                           int64_t elementBytes,
                                           int64_t groupSize);

/// A value live from program point `begin` to `end` (inclusive).
struct LiveInterval {
  int64_t begin;
  int64_t end;
  int64_t bytes;
};

/// The largest total of `bytes` over intervals live at one program point.
int64_t getPeakLiveBytes(ArrayRef<LiveInterval> intervals);

/// One collective of a step.
struct CollectiveCost {
  CollectiveKind kind;
  Location loc;
  SmallVector<std::string> axes;
  int64_t groupSize;
  /// Tensors moved by the op (a gradient bucket moves several).
  int64_t tensors;
  int64_t payloadBytes;
  double busBytes;
  /// Estimated time when the mesh gives the bandwidths of the op's axes
  /// (the slowest axis's bandwidth, the largest latency).
  std::optional<double> seconds;
};

/// The cost of collective `op` (a `dist` collective, or the start of an
/// asynchronous one); nullopt for other ops.
std::optional<CollectiveCost> getCollectiveCost(Operation *op);

/// The per-rank cost of one function (a training step after partitioning).
struct StepCost {
  std::string function;
  int64_t flops = 0;
  /// Bytes read and written by the compute ops.
  int64_t bytesAccessed = 0;
  SmallVector<CollectiveCost> collectives;
  double commBytes = 0;
  /// The sum of the collectives' estimated times, when every one has one.
  std::optional<double> commSeconds;

  // Memory per rank, in bytes.
  int64_t paramBytes = 0;
  int64_t optStateBytes = 0;
  /// Inputs and labels.
  int64_t inputBytes = 0;
  /// Hyper-parameters and arguments without a role.
  int64_t otherArgumentBytes = 0;
  /// Each update's gradient as the data-parallel reduction delivers it.
  int64_t gradientBytes = 0;
  /// The largest sum of live intermediate values (in a placed program:
  /// the fragments' results, e.g. the activations a stage keeps between a
  /// microbatch's forward and backward, plus the fragment's own peak).
  int64_t activationPeakBytes = 0;

  /// Point-to-point transfers (placed programs): their count and bytes.
  int64_t sends = 0, sendBytes = 0, recvs = 0, recvBytes = 0;

  /// Params + gradients + optimizer state (the ZeRO paper's model states).
  int64_t getModelStateBytes() const {
    return paramBytes + gradientBytes + optStateBytes;
  }
  /// Every argument plus the activation peak.
  int64_t getPeakMemoryBytes() const {
    return paramBytes + optStateBytes + inputBytes + otherArgumentBytes +
           activationPeakBytes;
  }
};

/// Computes the cost of `func`, whose body must be one block.
StepCost analyzeStepCost(func::FuncOp func);

/// The JSON form: totals `flops_per_rank`, `comm_bytes_per_rank`,
/// `collective_count`, `peak_memory_bytes_per_rank`, a `memory` object and a
/// `collectives` list.
llvm::json::Value toJSON(const StepCost &cost);

/// A readable table of `cost`.
void printStepCostTable(const StepCost &cost, raw_ostream &os);

} // namespace mlir::dist

#endif // DISTOPT_ANALYSIS_COSTMODEL_H
