//===- PipelineSchedule.h - pipeline schedules, simulated -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A pipeline step is a set of units: for every stage `s` (0..S-1, where
// S = ranks * virtual stages; stage `s` lives on rank `s % ranks`, chunk
// `s / ranks`) and microbatch `m` (0..M-1), a forward unit F(s, m), a
// backward unit B(s, m) and, when the backward is split (zero-bubble
// schedules), a weight-gradient unit W(s, m). A schedule is, per rank, the
// order in which that rank runs its units. The builders here produce the
// GPipe, 1F1B, interleaved-1F1B (Megatron) and ZB-H1 (Qi et al. 2024)
// orders for any microbatch count they support (or an error saying why
// not); the simulator runs any per-rank order against unit costs, and
// reports the timeline, the bubble and the activations alive per rank -
// or the deadlock, with the cycle of ranks waiting on each other.
//
// Dependencies between units (the only ones a pipeline has):
//   F(s, m) after F(s-1, m);
//   B(s, m) after F(s, m) and, for s < S-1, after B(s+1, m);
//   W(s, m) after B(s, m).
// A dependency between units of different ranks is a transfer (send/recv),
// which takes `transferTime`; sends never block (they are buffered), so a
// rank only ever waits for the unit at the head of its order.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_ANALYSIS_PIPELINESCHEDULE_H
#define DISTOPT_ANALYSIS_PIPELINESCHEDULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist::pipeline {

/// What a unit computes: the forward of a stage on one microbatch, its
/// backward (the input gradient and, unless the schedule splits it off,
/// the weight gradients), or the weight gradients alone.
enum class UnitKind { Forward, Backward, Weight };

/// "F", "B" or "W".
llvm::StringRef stringifyUnitKind(UnitKind kind);
std::optional<UnitKind> symbolizeUnitKind(llvm::StringRef text);

struct Unit {
  int64_t stage = 0;
  int64_t microbatch = 0;
  UnitKind kind = UnitKind::Forward;

  bool operator==(const Unit &other) const {
    return stage == other.stage && microbatch == other.microbatch &&
           kind == other.kind;
  }
  bool operator!=(const Unit &other) const { return !(*this == other); }
  /// `F(s1, mb2)`.
  std::string str() const;
};

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };

/// "gpipe", "1f1b", "interleaved", "zb-h1".
llvm::StringRef stringifyScheduleKind(ScheduleKind kind);
std::optional<ScheduleKind> symbolizeScheduleKind(llvm::StringRef text);

/// The time each unit takes, per stage (S entries each), and the time of
/// one transfer between ranks. When `weight` is empty the backward is not
/// split (B covers the weight gradients).
struct UnitCosts {
  std::vector<double> forward, backward, weight;
  double transferTime = 0;

  /// F = 1, B = 2 (or B = W = 1 when `split`) on every stage.
  static UnitCosts uniform(int64_t stages, bool split);
  bool isSplit() const { return !weight.empty(); }
  double get(const Unit &unit) const;
};

struct Schedule {
  int64_t numRanks = 1;
  int64_t numStages = 1;
  int64_t numMicrobatches = 1;
  /// True when backward units are split into B (input gradient) and W.
  bool splitBackward = false;
  /// Per rank, its units in the order it runs them.
  std::vector<std::vector<Unit>> ranks;

  int64_t getVirtualStages() const { return numStages / numRanks; }
  int64_t getRank(int64_t stage) const { return stage % numRanks; }
  /// The units `unit` depends on (see the file comment).
  llvm::SmallVector<Unit, 2> getDependencies(const Unit &unit) const;
  /// Checks that every rank lists exactly the units of its stages, each
  /// once; reports the first problem.
  llvm::Error verifyComplete() const;
};

/// Builds schedule `kind` over `ranks` ranks with `virtualStages` model
/// chunks per rank and `microbatches` microbatches. zb-h1 splits the
/// backward and places W units where the rank would otherwise wait,
/// using `costs` (uniform when null); the others do not need costs.
/// Errors name the constraint and a fix (e.g. interleaved with
/// microbatches not a multiple of the ranks; virtual stages > 1 with a
/// schedule other than interleaved). Interleaved with one virtual stage is
/// 1f1b.
llvm::Expected<Schedule> buildSchedule(ScheduleKind kind, int64_t ranks,
                                       int64_t virtualStages,
                                       int64_t microbatches,
                                       const UnitCosts *costs = nullptr);

/// One unit as the simulator ran it.
struct TimedUnit {
  Unit unit;
  int64_t rank = 0;
  double start = 0, end = 0;
};

/// One transfer: the result of `from` (on rank `fromRank`) reaching rank
/// `toRank` for `to`.
struct TimedTransfer {
  Unit from, to;
  int64_t fromRank = 0, toRank = 0;
  double start = 0, end = 0;
};

struct Simulation {
  double makespan = 0;
  /// Per rank, the time spent running units.
  std::vector<double> busy;
  /// Idle time over busy time, summed over ranks: (P*T - sum busy) / sum
  /// busy. (P-1)/M for GPipe and 1F1B on balanced stages without
  /// transfer time, (P-1)/(V*M) for interleaved.
  double bubbleFraction = 0;
  /// Per rank, the most (stage, microbatch) pairs whose activations are
  /// alive at once: F(s, m) has started and B(s, m) has not ended, for split
  /// and unsplit schedules alike. As in the ZB paper (Qi et al. 2024), the
  /// inputs a deferred W(s, m) keeps for the weight gradients are not
  /// counted: they are a smaller share of the activations.
  std::vector<int64_t> peakActivations;
  std::vector<TimedUnit> units;
  std::vector<TimedTransfer> transfers;
};

/// Runs `schedule` with `costs`. Fails when the schedule deadlocks, with a
/// message naming the cycle of waits: `rank 0 waits for B(s1, mb0) from
/// rank 1; rank 1 waits for F(s0, mb1) from rank 0`, or when a unit waits
/// for one that no rank runs. With split `costs`, an unsplit schedule's B
/// takes the B and W times; a split schedule needs split costs.
llvm::Expected<Simulation> simulate(const Schedule &schedule,
                                    const UnitCosts &costs);

/// The simulated (or measured) timeline as Chrome-trace JSON (opens in
/// Perfetto and chrome://tracing): one thread per rank, one complete event
/// per unit (`F3` ...) and a flow arrow per transfer. Times in `timeUnit`
/// seconds per simulation unit (1e-3: the costs are milliseconds).
llvm::json::Value toChromeTrace(const Simulation &simulation, int64_t numRanks,
                                double timeUnit = 1e-3);

/// The timeline as an SVG picture: a row per rank, a box per unit
/// labelled with its microbatch and kind (colours per kind), arrows for
/// transfers, idle time left blank, and a caption with `title` and the
/// bubble fraction.
void writeSVG(const Simulation &simulation, int64_t numRanks,
              llvm::StringRef title, llvm::raw_ostream &os);

} // namespace mlir::dist::pipeline

#endif // DISTOPT_ANALYSIS_PIPELINESCHEDULE_H
