//===- PipelineSchedule.cpp - pipeline schedules and their simulation -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The builders produce, per rank, the order of its units. GPipe, 1F1B and
// interleaved 1F1B are closed-form orders; ZB-H1 places its W units by
// running the 1F1B order and watching when each F and B becomes ready. That
// run and the simulator drive one event-driven engine, `Timeline`; they
// differ only in how a free rank picks the unit it starts next. The
// timeline's renderings (Chrome trace, SVG) are in PipelineTrace.cpp.
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/PipelineSchedule.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <numeric>
#include <queue>

using namespace llvm;
using namespace mlir::dist;
using namespace mlir::dist::pipeline;

//===----------------------------------------------------------------------===//
// Units, costs and schedules
//===----------------------------------------------------------------------===//

StringRef pipeline::stringifyUnitKind(UnitKind kind) {
  switch (kind) {
  case UnitKind::Forward:
    return "F";
  case UnitKind::Backward:
    return "B";
  case UnitKind::Weight:
    return "W";
  }
  llvm_unreachable("unknown unit kind");
}

std::optional<UnitKind> pipeline::symbolizeUnitKind(StringRef text) {
  return StringSwitch<std::optional<UnitKind>>(text)
      .Case("F", UnitKind::Forward)
      .Case("B", UnitKind::Backward)
      .Case("W", UnitKind::Weight)
      .Default(std::nullopt);
}

std::string Unit::str() const {
  return formatv("{0}(s{1}, mb{2})", stringifyUnitKind(kind), stage, microbatch)
      .str();
}

StringRef pipeline::stringifyScheduleKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  llvm_unreachable("unknown schedule kind");
}

std::optional<ScheduleKind> pipeline::symbolizeScheduleKind(StringRef text) {
  return StringSwitch<std::optional<ScheduleKind>>(text)
      .Case("gpipe", ScheduleKind::GPipe)
      .Case("1f1b", ScheduleKind::OneFOneB)
      .Case("interleaved", ScheduleKind::Interleaved)
      .Case("zb-h1", ScheduleKind::ZeroBubbleH1)
      .Default(std::nullopt);
}

UnitCosts UnitCosts::uniform(int64_t stages, bool split) {
  UnitCosts costs;
  costs.forward.assign(stages, 1.0);
  costs.backward.assign(stages, split ? 1.0 : 2.0);
  if (split)
    costs.weight.assign(stages, 1.0);
  return costs;
}

double UnitCosts::get(const Unit &unit) const {
  switch (unit.kind) {
  case UnitKind::Forward:
    return forward[unit.stage];
  case UnitKind::Backward:
    return backward[unit.stage];
  case UnitKind::Weight:
    assert(isSplit() && "a weight unit needs split costs");
    return weight[unit.stage];
  }
  llvm_unreachable("unknown unit kind");
}

SmallVector<Unit, 2> Schedule::getDependencies(const Unit &unit) const {
  int64_t s = unit.stage, m = unit.microbatch;
  SmallVector<Unit, 2> deps;
  switch (unit.kind) {
  case UnitKind::Forward:
    if (s > 0)
      deps.push_back({s - 1, m, UnitKind::Forward});
    break;
  case UnitKind::Backward:
    deps.push_back({s, m, UnitKind::Forward});
    if (s < numStages - 1)
      deps.push_back({s + 1, m, UnitKind::Backward});
    break;
  case UnitKind::Weight:
    deps.push_back({s, m, UnitKind::Backward});
    break;
  }
  return deps;
}

namespace {
/// A dense numbering of the units of a schedule, for per-unit tables.
struct UnitNumbering {
  int64_t numStages, numMicrobatches;

  explicit UnitNumbering(const Schedule &schedule)
      : numStages(schedule.numStages),
        numMicrobatches(schedule.numMicrobatches) {}
  size_t size() const { return 3 * numStages * numMicrobatches; }
  size_t operator()(const Unit &unit) const {
    return (static_cast<size_t>(unit.kind) * numStages + unit.stage) *
               numMicrobatches +
           unit.microbatch;
  }
};
} // namespace

Error Schedule::verifyComplete() const {
  if (numRanks < 1 || numMicrobatches < 1 || numStages < 1 ||
      numStages % numRanks != 0)
    return createStringError(
        formatv("a schedule needs at least one rank and one microbatch, and "
                "a positive multiple of the ranks as stages (got {0} ranks, "
                "{1} stages, {2} microbatches)",
                numRanks, numStages, numMicrobatches));
  if (static_cast<int64_t>(ranks.size()) != numRanks)
    return createStringError(formatv("the schedule has {0} ranks but lists "
                                     "the units of {1}",
                                     numRanks, ranks.size()));

  UnitNumbering number(*this);
  BitVector seen(number.size());
  for (auto [rank, units] : llvm::enumerate(ranks)) {
    for (const Unit &unit : units) {
      if (unit.stage < 0 || unit.stage >= numStages || unit.microbatch < 0 ||
          unit.microbatch >= numMicrobatches)
        return createStringError(
            formatv("rank {0} lists {1}, outside the {2} stages and {3} "
                    "microbatches of the schedule",
                    rank, unit.str(), numStages, numMicrobatches));
      if (unit.kind == UnitKind::Weight && !splitBackward)
        return createStringError(
            formatv("rank {0} lists {1} but the schedule does not split the "
                    "backward",
                    rank, unit.str()));
      if (getRank(unit.stage) != static_cast<int64_t>(rank))
        return createStringError(
            formatv("rank {0} lists {1}, which belongs to rank {2}", rank,
                    unit.str(), getRank(unit.stage)));
      if (seen.test(number(unit)))
        return createStringError(
            formatv("rank {0} lists {1} twice", rank, unit.str()));
      seen.set(number(unit));
    }
  }

  static constexpr UnitKind allKinds[] = {UnitKind::Forward, UnitKind::Backward,
                                          UnitKind::Weight};
  ArrayRef<UnitKind> kinds =
      ArrayRef(allKinds).take_front(splitBackward ? 3 : 2);
  for (int64_t rank = 0; rank < numRanks; ++rank)
    for (int64_t stage = rank; stage < numStages; stage += numRanks)
      for (int64_t m = 0; m < numMicrobatches; ++m)
        for (UnitKind kind : kinds)
          if (Unit unit{stage, m, kind}; !seen.test(number(unit)))
            return createStringError(
                formatv("rank {0} does not list {1}", rank, unit.str()));
  return Error::success();
}

//===----------------------------------------------------------------------===//
// The event-driven engine
//===----------------------------------------------------------------------===//

namespace {
/// Runs units on the ranks of a schedule in simulated time. Whenever a rank
/// is free, a policy picks the unit it starts now (or none: the rank waits
/// for the next event). Events are the times at which a rank becomes free
/// and at which a unit's result reaches another rank, so a unit that waits
/// for its dependencies starts exactly when the last of them arrives.
class Timeline {
public:
  using PickFn = function_ref<std::optional<Unit>(int64_t rank, double now)>;
  using CostFn = function_ref<double(const Unit &)>;

  Timeline(const Schedule &schedule, CostFn cost, double transferTime)
      : schedule(schedule), number(schedule), cost(cost),
        transferTime(transferTime), endTimes(number.size()),
        freeAt(schedule.numRanks, 0.0) {
    result.busy.assign(schedule.numRanks, 0.0);
  }

  bool hasStarted(const Unit &unit) const {
    return endTimes[number(unit)].has_value();
  }

  /// Whether every dependency of `unit` has reached its rank by `now`.
  bool isReady(const Unit &unit, double now) const {
    return llvm::all_of(schedule.getDependencies(unit), [&](const Unit &dep) {
      const std::optional<double> &end = endTimes[number(dep)];
      return end && getArrival(dep, *end, unit) <= now;
    });
  }

  /// Runs until `numUnits` units have started; false when no rank can start
  /// anything any more before then (a deadlock).
  bool run(size_t numUnits, PickFn pick) {
    double now = 0;
    while (result.units.size() < numUnits) {
      // Zero-cost units end when they start, so a rank may pick again at the
      // same time; sweep until nothing starts.
      for (bool started = true; started;) {
        started = false;
        for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
          if (freeAt[rank] > now)
            continue;
          if (std::optional<Unit> unit = pick(rank, now)) {
            start(*unit, rank, now);
            started = true;
          }
        }
      }
      if (result.units.size() == numUnits)
        break;
      while (!events.empty() && events.top() <= now)
        events.pop();
      if (events.empty())
        return false;
      now = events.top();
    }
    return true;
  }

  Simulation &getResult() { return result; }

private:
  double getArrival(const Unit &dep, double end, const Unit &user) const {
    bool crossRank =
        schedule.getRank(dep.stage) != schedule.getRank(user.stage);
    return crossRank ? end + transferTime : end;
  }

  /// Starts `unit` on `rank` at `now` and records it with the transfers of
  /// its cross-rank dependencies.
  void start(const Unit &unit, int64_t rank, double now) {
    double end = now + cost(unit);
    endTimes[number(unit)] = end;
    freeAt[rank] = end;
    result.busy[rank] += end - now;
    result.units.push_back({unit, rank, now, end});
    events.push(end);
    if (transferTime > 0)
      events.push(end + transferTime);
    for (const Unit &dep : schedule.getDependencies(unit)) {
      int64_t depRank = schedule.getRank(dep.stage);
      if (depRank == rank)
        continue;
      double depEnd = *endTimes[number(dep)];
      result.transfers.push_back(
          {dep, unit, depRank, rank, depEnd, depEnd + transferTime});
    }
  }

  const Schedule &schedule;
  UnitNumbering number;
  CostFn cost;
  double transferTime;
  /// Per unit, its end time once started.
  std::vector<std::optional<double>> endTimes;
  /// Per rank, when it finishes the unit it runs.
  std::vector<double> freeAt;
  std::priority_queue<double, std::vector<double>, std::greater<double>> events;
  Simulation result;
};
} // namespace

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

/// Checks that `costs` has a finite, non-negative time per stage for each
/// unit kind it times, and as transfer time.
static Error verifyCosts(const UnitCosts &costs, int64_t numStages) {
  auto isValid = [](double time) { return time >= 0 && !std::isinf(time); };
  auto verify = [&](StringRef name, ArrayRef<double> times) -> Error {
    if (static_cast<int64_t>(times.size()) != numStages)
      return createStringError(formatv("the {0} costs have {1} entries for "
                                       "{2} stages",
                                       name, times.size(), numStages));
    if (!llvm::all_of(times, isValid))
      return createStringError(
          formatv("the {0} costs must be finite and non-negative", name));
    return Error::success();
  };
  if (Error error = verify("forward", costs.forward))
    return error;
  if (Error error = verify("backward", costs.backward))
    return error;
  if (costs.isSplit())
    if (Error error = verify("weight", costs.weight))
      return error;
  if (!isValid(costs.transferTime))
    return createStringError(
        "the transfer time must be finite and non-negative");
  return Error::success();
}

/// The 1F1B order of one rank over `count` forward and as many backward
/// units: `warmup` forwards, then alternately one forward and one backward,
/// then the remaining backwards. `getUnit(k, kind)` is the rank's k-th unit
/// of that kind.
static std::vector<Unit>
getOneFOneBOrder(int64_t count, int64_t warmup,
                 function_ref<Unit(int64_t, UnitKind)> getUnit) {
  std::vector<Unit> order;
  order.reserve(2 * count);
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(getUnit(k, UnitKind::Forward));
  for (int64_t k = 0; k < count - warmup; ++k) {
    order.push_back(getUnit(warmup + k, UnitKind::Forward));
    order.push_back(getUnit(k, UnitKind::Backward));
  }
  for (int64_t k = count - warmup; k < count; ++k)
    order.push_back(getUnit(k, UnitKind::Backward));
  return order;
}

/// GPipe and non-interleaved 1F1B: rank r runs stage r. GPipe is 1F1B whose
/// warmup covers every microbatch; 1F1B warms up with the P-1-r forwards
/// that fill the pipeline below the rank, which bounds its activations alive
/// at once by P-r.
static Schedule buildOneFOneB(int64_t ranks, int64_t microbatches,
                              bool allForwardsFirst) {
  Schedule schedule;
  schedule.numRanks = schedule.numStages = ranks;
  schedule.numMicrobatches = microbatches;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    int64_t warmup = allForwardsFirst
                         ? microbatches
                         : std::min(ranks - 1 - rank, microbatches);
    schedule.ranks.push_back(
        getOneFOneBOrder(microbatches, warmup, [&](int64_t m, UnitKind kind) {
          return Unit{rank, m, kind};
        }));
  }
  return schedule;
}

/// Megatron's interleaved 1F1B: rank r runs the V stages c*P + r. Its k-th
/// forward is, within the group of P*V units k falls in, chunk (k mod P*V)/P
/// of microbatch (k div P*V)*P + k mod P: each chunk goes through P
/// microbatches before the next one starts. Backwards mirror that with the
/// chunks in reverse. The warmup runs (V-1)P forwards, taking the first P
/// microbatches through every chunk but the last, and 2(P-1-r) more, which
/// keep the rank busy while the first microbatch goes through the last
/// chunk on the P-1-r ranks after it and its backward comes back.
static Schedule buildInterleaved(int64_t ranks, int64_t virtualStages,
                                 int64_t microbatches) {
  Schedule schedule;
  schedule.numRanks = ranks;
  schedule.numStages = ranks * virtualStages;
  schedule.numMicrobatches = microbatches;
  int64_t count = microbatches * virtualStages;
  int64_t groupSize = ranks * virtualStages;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    auto getUnit = [&](int64_t k, UnitKind kind) {
      int64_t chunk = k % groupSize / ranks;
      if (kind == UnitKind::Backward)
        chunk = virtualStages - 1 - chunk;
      return Unit{chunk * ranks + rank, k / groupSize * ranks + k % ranks,
                  kind};
    };
    int64_t warmup =
        std::min((ranks - rank - 1) * 2 + (virtualStages - 1) * ranks, count);
    schedule.ranks.push_back(getOneFOneBOrder(count, warmup, getUnit));
  }
  return schedule;
}

/// ZB-H1 (Qi et al. 2024): the 1F1B order of F and B (input gradient) units,
/// with each W (weight gradient) deferred into time the rank would otherwise
/// wait. The order is found by running it: a free rank whose next F or B is
/// not ready runs its oldest pending W instead; before an F that would take
/// the rank past P microbatches in flight (F started, W not done) it runs a
/// pending W first; the Ws left at the end run last. Ws depend only on their
/// own rank's earlier Bs, so this keeps the 1F1B order deadlock-free.
///
/// F and B keep 1F1B's order, so at most P-r microbatches are between their
/// F and their B on rank r: 1F1B's peak activations. The up to r further
/// microbatches whose W is deferred hold only the inputs of the weight
/// gradients, which the paper counts as smaller than a microbatch's
/// activations. With F = B = W and at least P microbatches this bound gives
/// the paper's bubble, a third of 1F1B's: (P-1)(F+B-W) idle per rank against
/// (P-1)(F+B+W). A lower bound gives a larger bubble (P-r: 2/3 of 1F1B's at
/// P=4, M=8); a higher one gives no smaller bubble.
static Expected<Schedule> buildZeroBubbleH1(int64_t ranks, int64_t microbatches,
                                            const UnitCosts &costs) {
  Schedule base =
      buildOneFOneB(ranks, microbatches, /*allForwardsFirst=*/false);
  Schedule schedule = base;
  schedule.splitBackward = true;
  for (std::vector<Unit> &units : schedule.ranks)
    units.clear();

  std::vector<size_t> next(ranks, 0);
  std::vector<std::deque<Unit>> pendingWeights(ranks);
  std::vector<int64_t> inFlight(ranks, 0);
  auto cost = [&](const Unit &unit) { return costs.get(unit); };
  Timeline timeline(schedule, cost, costs.transferTime);
  auto pick = [&](int64_t rank, double now) -> std::optional<Unit> {
    std::deque<Unit> &pending = pendingWeights[rank];
    auto runWeight = [&]() {
      Unit weight = pending.front();
      pending.pop_front();
      --inFlight[rank];
      return weight;
    };
    const std::vector<Unit> &order = base.ranks[rank];
    if (next[rank] < order.size()) {
      const Unit &unit = order[next[rank]];
      bool isForward = unit.kind == UnitKind::Forward;
      if (isForward && inFlight[rank] >= ranks && !pending.empty())
        return runWeight();
      if (timeline.isReady(unit, now)) {
        ++next[rank];
        if (isForward)
          ++inFlight[rank];
        else
          pending.push_back({unit.stage, unit.microbatch, UnitKind::Weight});
        return unit;
      }
    }
    if (!pending.empty())
      return runWeight();
    return std::nullopt;
  };
  if (!timeline.run(3 * ranks * microbatches, pick))
    return createStringError("internal error: the zb-h1 order deadlocks");
  for (const TimedUnit &timed : timeline.getResult().units)
    schedule.ranks[timed.rank].push_back(timed.unit);
  return schedule;
}

Expected<Schedule> pipeline::buildSchedule(ScheduleKind kind, int64_t ranks,
                                           int64_t virtualStages,
                                           int64_t microbatches,
                                           const UnitCosts *costs) {
  StringRef name = stringifyScheduleKind(kind);
  if (ranks < 1)
    return createStringError(
        formatv("a pipeline needs at least one rank (got {0})", ranks));
  if (microbatches < 1)
    return createStringError(formatv(
        "a pipeline needs at least one microbatch (got {0})", microbatches));
  if (virtualStages < 1)
    return createStringError(
        formatv("a pipeline needs at least one virtual stage per rank (got "
                "{0})",
                virtualStages));
  if (virtualStages > 1 && kind != ScheduleKind::Interleaved)
    return createStringError(
        formatv("schedule={0} runs one stage per rank (got {1} virtual "
                "stages): use 1 virtual stage, or schedule=interleaved",
                name, virtualStages));

  switch (kind) {
  case ScheduleKind::GPipe:
    return buildOneFOneB(ranks, microbatches, /*allForwardsFirst=*/true);
  case ScheduleKind::OneFOneB:
    return buildOneFOneB(ranks, microbatches, /*allForwardsFirst=*/false);
  case ScheduleKind::Interleaved: {
    // With one chunk per rank there is nothing to interleave: that is 1F1B.
    if (virtualStages == 1)
      return buildOneFOneB(ranks, microbatches, /*allForwardsFirst=*/false);
    if (microbatches % ranks != 0) {
      int64_t below = microbatches / ranks * ranks;
      std::string fix = below == 0
                            ? formatv("{0}", ranks).str()
                            : formatv("{0} or {1}", below, below + ranks).str();
      return createStringError(
          formatv("interleaved schedule needs microbatches to be a multiple "
                  "of the {0} pipeline ranks (got {1}): use {2} microbatches, "
                  "or schedule=1f1b",
                  ranks, microbatches, fix));
    }
    return buildInterleaved(ranks, virtualStages, microbatches);
  }
  case ScheduleKind::ZeroBubbleH1: {
    UnitCosts uniform = UnitCosts::uniform(ranks, /*split=*/true);
    if (!costs)
      costs = &uniform;
    if (Error error = verifyCosts(*costs, ranks))
      return std::move(error);
    if (!costs->isSplit())
      return createStringError(
          "zb-h1 splits the backward: its costs need weight-gradient times "
          "(e.g. UnitCosts::uniform(stages, /*split=*/true))");
    return buildZeroBubbleH1(ranks, microbatches, *costs);
  }
  }
  llvm_unreachable("unknown schedule kind");
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

/// The message for a stuck timeline: the cycle of ranks each waiting for a
/// unit the next one has not run, starting at its lowest rank.
static std::string describeDeadlock(const Schedule &schedule,
                                    const Timeline &timeline,
                                    ArrayRef<size_t> next) {
  // In a deadlock nothing runs, so every rank with units left waits for an
  // unstarted dependency of its next unit, and that dependency's rank has
  // units left too: following the waits from any rank ends in a cycle.
  std::vector<std::optional<Unit>> waitsFor(schedule.numRanks);
  int64_t first = -1;
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
    if (next[rank] == schedule.ranks[rank].size())
      continue;
    for (const Unit &dep :
         schedule.getDependencies(schedule.ranks[rank][next[rank]])) {
      if (!timeline.hasStarted(dep)) {
        waitsFor[rank] = dep;
        break;
      }
    }
    assert(waitsFor[rank] && "a stuck rank waits for a dependency");
    if (first < 0)
      first = rank;
  }

  std::vector<int64_t> path, position(schedule.numRanks, -1);
  for (int64_t rank = first; position[rank] < 0;
       rank = schedule.getRank(waitsFor[rank]->stage)) {
    position[rank] = path.size();
    path.push_back(rank);
  }
  int64_t cycleStart = position[schedule.getRank(waitsFor[path.back()]->stage)];
  MutableArrayRef<int64_t> cycle = MutableArrayRef(path).drop_front(cycleStart);
  std::rotate(cycle.begin(), llvm::min_element(cycle), cycle.end());

  std::string message = "the schedule deadlocks: ";
  raw_string_ostream os(message);
  llvm::interleave(
      cycle, os,
      [&](int64_t rank) {
        const Unit &dep = *waitsFor[rank];
        os << formatv("rank {0} waits for {1} from rank {2}", rank, dep.str(),
                      schedule.getRank(dep.stage));
      },
      "; ");
  return message;
}

Expected<Simulation> pipeline::simulate(const Schedule &schedule,
                                        const UnitCosts &costs) {
  // A complete schedule lists every unit, so every dependency is run by
  // some rank; otherwise this names the unit missing.
  if (Error error = schedule.verifyComplete())
    return std::move(error);
  if (Error error = verifyCosts(costs, schedule.numStages))
    return std::move(error);
  if (schedule.splitBackward && !costs.isSplit())
    return createStringError("the schedule splits the backward but the costs "
                             "have no weight-gradient times");

  // An unsplit backward computes the weight gradients too.
  auto cost = [&](const Unit &unit) {
    double time = costs.get(unit);
    if (unit.kind == UnitKind::Backward && !schedule.splitBackward &&
        costs.isSplit())
      time += costs.weight[unit.stage];
    return time;
  };
  Timeline timeline(schedule, cost, costs.transferTime);
  std::vector<size_t> next(schedule.numRanks, 0);
  auto pick = [&](int64_t rank, double now) -> std::optional<Unit> {
    const std::vector<Unit> &order = schedule.ranks[rank];
    if (next[rank] == order.size() || !timeline.isReady(order[next[rank]], now))
      return std::nullopt;
    return order[next[rank]++];
  };
  size_t numUnits = 0;
  for (const std::vector<Unit> &units : schedule.ranks)
    numUnits += units.size();
  if (!timeline.run(numUnits, pick))
    return createStringError(describeDeadlock(schedule, timeline, next));

  Simulation simulation = std::move(timeline.getResult());
  for (const TimedUnit &timed : simulation.units)
    simulation.makespan = std::max(simulation.makespan, timed.end);
  double busy =
      std::accumulate(simulation.busy.begin(), simulation.busy.end(), 0.0);
  if (busy > 0)
    simulation.bubbleFraction =
        (schedule.numRanks * simulation.makespan - busy) / busy;

  // A rank runs its units one after another, so walking them in start order
  // sees each activation begin and end in time order. A microbatch-stage's
  // activations live from its F until its B (the input gradient) ends,
  // split or not; a deferred W's inputs are not counted.
  std::vector<int64_t> alive(schedule.numRanks, 0);
  simulation.peakActivations.assign(schedule.numRanks, 0);
  for (const TimedUnit &timed : simulation.units) {
    if (timed.unit.kind == UnitKind::Forward)
      simulation.peakActivations[timed.rank] =
          std::max(simulation.peakActivations[timed.rank], ++alive[timed.rank]);
    else if (timed.unit.kind == UnitKind::Backward)
      --alive[timed.rank];
  }
  return simulation;
}
