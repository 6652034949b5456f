//===- PipelineScheduleTest.cpp - pipeline schedules and their simulation -===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/PipelineSchedule.h"

#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <map>

using namespace mlir::dist::pipeline;

namespace {

constexpr UnitKind F = UnitKind::Forward, B = UnitKind::Backward,
                   W = UnitKind::Weight;

/// The message of `error`, or "" on success.
std::string getMessage(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

Schedule build(ScheduleKind kind, int64_t ranks, int64_t microbatches,
               int64_t virtualStages = 1, const UnitCosts *costs = nullptr) {
  llvm::Expected<Schedule> schedule =
      buildSchedule(kind, ranks, virtualStages, microbatches, costs);
  if (!schedule) {
    ADD_FAILURE() << llvm::toString(schedule.takeError());
    return {};
  }
  return std::move(*schedule);
}

Simulation run(const Schedule &schedule, const UnitCosts &costs) {
  llvm::Expected<Simulation> simulation = simulate(schedule, costs);
  if (!simulation) {
    ADD_FAILURE() << llvm::toString(simulation.takeError());
    return {};
  }
  return std::move(*simulation);
}

/// Costs of a model cut into `stages` chunks whose whole-model stage costs
/// F = 1, B = 2 (each of `virtualStages` chunks a rank holds costs its share).
UnitCosts chunkCosts(int64_t stages, int64_t virtualStages) {
  UnitCosts costs;
  costs.forward.assign(stages, 1.0 / virtualStages);
  costs.backward.assign(stages, 2.0 / virtualStages);
  return costs;
}

TEST(PipelineScheduleNamesTest, RoundTrip) {
  for (UnitKind kind : {F, B, W})
    EXPECT_EQ(symbolizeUnitKind(stringifyUnitKind(kind)), kind);
  EXPECT_EQ(stringifyUnitKind(W), "W");
  EXPECT_EQ(symbolizeUnitKind("X"), std::nullopt);
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
        ScheduleKind::ZeroBubbleH1})
    EXPECT_EQ(symbolizeScheduleKind(stringifyScheduleKind(kind)), kind);
  EXPECT_EQ(stringifyScheduleKind(ScheduleKind::ZeroBubbleH1), "zb-h1");
  EXPECT_EQ(symbolizeScheduleKind("1F1B"), std::nullopt);
  EXPECT_EQ((Unit{1, 2, F}).str(), "F(s1, mb2)");
}

TEST(PipelineScheduleCostsTest, Uniform) {
  UnitCosts merged = UnitCosts::uniform(2, /*split=*/false);
  EXPECT_FALSE(merged.isSplit());
  EXPECT_EQ(merged.get({1, 0, F}), 1);
  EXPECT_EQ(merged.get({1, 0, B}), 2);
  UnitCosts split = UnitCosts::uniform(2, /*split=*/true);
  EXPECT_TRUE(split.isSplit());
  EXPECT_EQ(split.get({0, 3, B}), 1);
  EXPECT_EQ(split.get({0, 3, W}), 1);
}

TEST(PipelineScheduleTest, Dependencies) {
  Schedule schedule;
  schedule.numRanks = 2;
  schedule.numStages = 4;
  auto deps = [&](Unit unit) {
    std::string text;
    for (const Unit &dep : schedule.getDependencies(unit))
      text += (text.empty() ? "" : " ") + dep.str();
    return text;
  };
  EXPECT_EQ(deps({0, 1, F}), "");
  EXPECT_EQ(deps({2, 1, F}), "F(s1, mb1)");
  EXPECT_EQ(deps({3, 0, B}), "F(s3, mb0)");
  EXPECT_EQ(deps({1, 0, B}), "F(s1, mb0) B(s2, mb0)");
  EXPECT_EQ(deps({1, 0, W}), "B(s1, mb0)");
}

TEST(PipelineScheduleTest, VerifyComplete) {
  Schedule schedule = build(ScheduleKind::OneFOneB, 2, 2);
  EXPECT_EQ(getMessage(schedule.verifyComplete()), "");

  Schedule missing = schedule;
  missing.ranks[1].pop_back();
  EXPECT_EQ(getMessage(missing.verifyComplete()),
            "rank 1 does not list B(s1, mb1)");
  // The simulator names the unit no rank runs.
  llvm::Expected<Simulation> simulation =
      simulate(missing, UnitCosts::uniform(2, /*split=*/false));
  ASSERT_FALSE(simulation);
  EXPECT_NE(llvm::toString(simulation.takeError()).find("B(s1, mb1)"),
            std::string::npos);

  Schedule duplicated = schedule;
  duplicated.ranks[0].push_back(duplicated.ranks[0].front());
  EXPECT_EQ(getMessage(duplicated.verifyComplete()),
            "rank 0 lists F(s0, mb0) twice");

  Schedule misplaced = schedule;
  misplaced.ranks[0].push_back({1, 0, F});
  EXPECT_EQ(getMessage(misplaced.verifyComplete()),
            "rank 0 lists F(s1, mb0), which belongs to rank 1");

  Schedule unsplit = schedule;
  unsplit.ranks[0].push_back({0, 0, W});
  EXPECT_EQ(getMessage(unsplit.verifyComplete()),
            "rank 0 lists W(s0, mb0) but the schedule does not split the "
            "backward");
}

TEST(PipelineScheduleBuildTest, Errors) {
  auto error = [](ScheduleKind kind, int64_t ranks, int64_t virtualStages,
                  int64_t microbatches) {
    llvm::Expected<Schedule> schedule =
        buildSchedule(kind, ranks, virtualStages, microbatches);
    return schedule ? std::string() : llvm::toString(schedule.takeError());
  };
  EXPECT_EQ(error(ScheduleKind::OneFOneB, 0, 1, 4),
            "a pipeline needs at least one rank (got 0)");
  EXPECT_EQ(error(ScheduleKind::GPipe, 2, 1, 0),
            "a pipeline needs at least one microbatch (got 0)");
  EXPECT_EQ(error(ScheduleKind::Interleaved, 2, 0, 4),
            "a pipeline needs at least one virtual stage per rank (got 0)");
  EXPECT_EQ(error(ScheduleKind::OneFOneB, 2, 2, 4),
            "schedule=1f1b runs one stage per rank (got 2 virtual stages): "
            "use 1 virtual stage, or schedule=interleaved");
  EXPECT_EQ(error(ScheduleKind::Interleaved, 2, 2, 3),
            "interleaved schedule needs microbatches to be a multiple of the "
            "2 pipeline ranks (got 3): use 2 or 4 microbatches, or "
            "schedule=1f1b");
  EXPECT_NE(error(ScheduleKind::Interleaved, 4, 2, 2).find("multiple"),
            std::string::npos);

  UnitCosts unsplit = UnitCosts::uniform(2, /*split=*/false);
  llvm::Expected<Schedule> zb =
      buildSchedule(ScheduleKind::ZeroBubbleH1, 2, 1, 2, &unsplit);
  ASSERT_FALSE(zb);
  EXPECT_NE(llvm::toString(zb.takeError()).find("weight-gradient"),
            std::string::npos);
}

// GPipe and 1F1B on balanced stages without transfer time idle (P-1)/M of
// their busy time; 1F1B keeps at most P microbatches alive on rank 0 where
// GPipe keeps all M.
TEST(PipelineScheduleBubbleTest, GPipeAndOneFOneB) {
  for (int64_t p : {2, 4}) {
    for (int64_t m : {int64_t(1), p, 2 * p, int64_t(3)}) {
      SCOPED_TRACE(testing::Message() << "P=" << p << " M=" << m);
      UnitCosts costs = UnitCosts::uniform(p, /*split=*/false);
      Simulation gpipe = run(build(ScheduleKind::GPipe, p, m), costs);
      Simulation oneFOneB = run(build(ScheduleKind::OneFOneB, p, m), costs);
      double expected = double(p - 1) / m;
      EXPECT_NEAR(gpipe.bubbleFraction, expected, 1e-9);
      EXPECT_NEAR(oneFOneB.bubbleFraction, expected, 1e-9);
      EXPECT_NEAR(oneFOneB.makespan, 3.0 * (m + p - 1), 1e-9);
      ASSERT_EQ(gpipe.peakActivations.size(), size_t(p));
      ASSERT_EQ(oneFOneB.peakActivations.size(), size_t(p));
      EXPECT_EQ(gpipe.peakActivations[0], m);
      EXPECT_EQ(oneFOneB.peakActivations[0], std::min(p, m));
      for (int64_t r = 0; r < p; ++r)
        EXPECT_LE(oneFOneB.peakActivations[r], p - r);
      // One transfer per cross-rank dependency: F(s>0) and B(s<P-1).
      EXPECT_EQ(oneFOneB.transfers.size(), size_t(2 * (p - 1) * m));
    }
  }
}

// Interleaving V chunks per rank divides the bubble by V.
TEST(PipelineScheduleBubbleTest, Interleaved) {
  for (int64_t p : {2, 4}) {
    for (int64_t v : {2, 4}) {
      for (int64_t m : {p, 2 * p}) {
        SCOPED_TRACE(testing::Message()
                     << "P=" << p << " V=" << v << " M=" << m);
        Schedule schedule = build(ScheduleKind::Interleaved, p, m, v);
        EXPECT_EQ(schedule.numStages, p * v);
        Simulation simulation = run(schedule, chunkCosts(p * v, v));
        EXPECT_NEAR(simulation.bubbleFraction, double(p - 1) / (v * m), 1e-9);
      }
    }
  }
}

// With one chunk per rank, interleaved is 1F1B.
TEST(PipelineScheduleBuildTest, InterleavedWithOneChunkIsOneFOneB) {
  Schedule interleaved = build(ScheduleKind::Interleaved, 4, 3, 1);
  Schedule oneFOneB = build(ScheduleKind::OneFOneB, 4, 3);
  EXPECT_EQ(interleaved.ranks, oneFOneB.ranks);
}

// ZB-H1 fills 1F1B's bubbles with weight-gradient units while keeping its
// activation bound (activations count from F to the end of B; a deferred W
// keeps only its smaller inputs). With F = B = W and at least as many
// microbatches as ranks, its bubble is a third of 1F1B's: (P-1)(F+B-W)
// idle per rank against (P-1)(F+B+W).
TEST(PipelineScheduleBubbleTest, ZeroBubbleH1) {
  for (int64_t p : {2, 4}) {
    for (int64_t m : {int64_t(1), int64_t(3), p, 2 * p}) {
      SCOPED_TRACE(testing::Message() << "P=" << p << " M=" << m);
      UnitCosts split = UnitCosts::uniform(p, /*split=*/true);
      Schedule zb = build(ScheduleKind::ZeroBubbleH1, p, m);
      EXPECT_TRUE(zb.splitBackward);
      Simulation zbSim = run(zb, split);
      Simulation oneFOneB = run(build(ScheduleKind::OneFOneB, p, m),
                                UnitCosts::uniform(p, /*split=*/false));
      ASSERT_EQ(zbSim.peakActivations.size(), size_t(p));
      for (int64_t r = 0; r < p; ++r)
        EXPECT_LE(zbSim.peakActivations[r], p - r);
      // F and B keep 1F1B's order, so its activation peaks.
      EXPECT_EQ(zbSim.peakActivations, oneFOneB.peakActivations);
      if (m >= p)
        EXPECT_NEAR(zbSim.bubbleFraction, oneFOneB.bubbleFraction / 3, 1e-9);
      else
        EXPECT_LE(zbSim.bubbleFraction, oneFOneB.bubbleFraction);
      // The same split costs charge an unsplit B its W too, and count its
      // activations the same way.
      Simulation oneFOneBSplit =
          run(build(ScheduleKind::OneFOneB, p, m), split);
      EXPECT_NEAR(oneFOneBSplit.makespan, oneFOneB.makespan, 1e-9);
      EXPECT_EQ(oneFOneBSplit.peakActivations, oneFOneB.peakActivations);

      // At most P microbatches between their F and their W on any rank.
      for (int64_t r = 0; r < p; ++r) {
        int64_t inFlight = 0, peak = 0;
        for (const Unit &unit : zb.ranks[r]) {
          if (unit.kind == F)
            peak = std::max(peak, ++inFlight);
          else if (unit.kind == W)
            --inFlight;
        }
        EXPECT_LE(peak, p) << "rank " << r;
      }
    }
  }
}

// The paper's numbers: a third of 1F1B's bubble, with 1F1B's activations.
TEST(PipelineScheduleBubbleTest, ZeroBubbleH1Values) {
  struct Case {
    int64_t ranks, microbatches;
    double bubble;
    std::vector<int64_t> peaks;
  };
  for (const Case &c :
       {Case{4, 8, 0.125, {4, 3, 2, 1}}, Case{2, 4, 0.25 / 3, {2, 1}}}) {
    SCOPED_TRACE(testing::Message()
                 << "P=" << c.ranks << " M=" << c.microbatches);
    Simulation zb =
        run(build(ScheduleKind::ZeroBubbleH1, c.ranks, c.microbatches),
            UnitCosts::uniform(c.ranks, /*split=*/true));
    Simulation oneFOneB =
        run(build(ScheduleKind::OneFOneB, c.ranks, c.microbatches),
            UnitCosts::uniform(c.ranks, /*split=*/false));
    EXPECT_NEAR(oneFOneB.bubbleFraction, 3 * c.bubble, 1e-9);
    EXPECT_NEAR(zb.bubbleFraction, oneFOneB.bubbleFraction / 3, 1e-9);
    EXPECT_NEAR(zb.bubbleFraction, c.bubble, 1e-9);
    EXPECT_EQ(zb.peakActivations, c.peaks);
  }
}

// The builder and the simulator agree on ZB-H1's timeline, also with uneven
// costs and transfer time.
TEST(PipelineScheduleBuildTest, ZeroBubbleH1UnevenCosts) {
  UnitCosts costs = UnitCosts::uniform(4, /*split=*/true);
  costs.forward = {1.0, 1.5, 1.0, 2.0};
  costs.weight = {0.5, 1.0, 2.0, 1.0};
  costs.transferTime = 0.25;
  Schedule zb = build(ScheduleKind::ZeroBubbleH1, 4, 8, 1, &costs);
  Simulation simulation = run(zb, costs);
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_LE(simulation.peakActivations[r], 4 - r);
  UnitCosts merged = costs;
  merged.weight.clear();
  for (int64_t s = 0; s < 4; ++s)
    merged.backward[s] += costs.weight[s];
  Simulation oneFOneB = run(build(ScheduleKind::OneFOneB, 4, 8), merged);
  EXPECT_LT(simulation.makespan, oneFOneB.makespan);
  EXPECT_EQ(simulation.peakActivations, oneFOneB.peakActivations);
}

TEST(PipelineScheduleSimulateTest, TransferTime) {
  UnitCosts costs = UnitCosts::uniform(2, /*split=*/false);
  costs.transferTime = 0.5;
  Simulation simulation = run(build(ScheduleKind::OneFOneB, 2, 1), costs);
  // F(s0) [0, 1], F(s1) [1.5, 2.5], B(s1) [2.5, 4.5], B(s0) [5, 7].
  EXPECT_NEAR(simulation.makespan, 7, 1e-9);
  ASSERT_EQ(simulation.transfers.size(), 2u);
  EXPECT_EQ(simulation.transfers[0].from, (Unit{0, 0, F}));
  EXPECT_EQ(simulation.transfers[0].to, (Unit{1, 0, F}));
  EXPECT_NEAR(simulation.transfers[0].start, 1, 1e-9);
  EXPECT_NEAR(simulation.transfers[0].end, 1.5, 1e-9);
  EXPECT_EQ(simulation.transfers[1].fromRank, 1);
  EXPECT_EQ(simulation.transfers[1].toRank, 0);
  EXPECT_EQ(simulation.busy, (std::vector<double>{3, 3}));
}

// Rank 0 runs B(s0, mb0) before F(s0, mb1), but rank 1 only runs
// B(s1, mb0) after F(s1, mb1), which needs F(s0, mb1).
TEST(PipelineScheduleSimulateTest, Deadlock) {
  Schedule schedule;
  schedule.numRanks = schedule.numStages = schedule.numMicrobatches = 2;
  schedule.ranks = {{{0, 0, F}, {0, 0, B}, {0, 1, F}, {0, 1, B}},
                    {{1, 1, F}, {1, 1, B}, {1, 0, F}, {1, 0, B}}};
  llvm::Expected<Simulation> simulation =
      simulate(schedule, UnitCosts::uniform(2, /*split=*/false));
  ASSERT_FALSE(simulation);
  EXPECT_EQ(llvm::toString(simulation.takeError()),
            "the schedule deadlocks: rank 0 waits for B(s1, mb0) from rank 1; "
            "rank 1 waits for F(s0, mb1) from rank 0");
}

// A rank whose backward comes before its own forward waits for itself.
TEST(PipelineScheduleSimulateTest, SelfDeadlock) {
  Schedule schedule;
  schedule.numRanks = schedule.numStages = 1;
  schedule.ranks = {{{0, 0, B}, {0, 0, F}}};
  llvm::Expected<Simulation> simulation =
      simulate(schedule, UnitCosts::uniform(1, /*split=*/false));
  ASSERT_FALSE(simulation);
  std::string message = llvm::toString(simulation.takeError());
  EXPECT_NE(message.find("waits for"), std::string::npos);
  EXPECT_EQ(message, "the schedule deadlocks: rank 0 waits for F(s0, mb0) "
                     "from rank 0");
}

TEST(PipelineScheduleOutputTest, ChromeTrace) {
  Simulation simulation = run(build(ScheduleKind::OneFOneB, 2, 2),
                              UnitCosts::uniform(2, /*split=*/false));
  llvm::json::Value trace = toChromeTrace(simulation, 2);
  const llvm::json::Object *root = trace.getAsObject();
  ASSERT_TRUE(root);
  EXPECT_EQ(root->getString("displayTimeUnit"), "ms");
  const llvm::json::Array *events = root->getArray("traceEvents");
  ASSERT_TRUE(events);
  std::map<std::string, int> phases;
  for (const llvm::json::Value &event : *events)
    ++phases[event.getAsObject()->getString("ph")->str()];
  EXPECT_EQ(phases["M"], 2);
  EXPECT_EQ(phases["X"], int(simulation.units.size()));
  EXPECT_EQ(phases["s"], int(simulation.transfers.size()));
  EXPECT_EQ(phases["f"], int(simulation.transfers.size()));

  // The first unit: F(s0, mb0) on rank 0 for 1 ms.
  const llvm::json::Object *first = (*events)[2].getAsObject();
  EXPECT_EQ(first->getString("name"), "F0");
  EXPECT_EQ(first->getString("cat"), "F");
  EXPECT_EQ(first->getInteger("tid"), 0);
  EXPECT_EQ(first->getNumber("ts"), 0.0);
  EXPECT_EQ(first->getNumber("dur"), 1000.0);
  EXPECT_EQ(first->getObject("args")->getInteger("stage"), 0);

  // Deterministic output.
  std::string once, twice;
  llvm::raw_string_ostream(once) << trace;
  llvm::raw_string_ostream(twice) << toChromeTrace(simulation, 2);
  EXPECT_EQ(once, twice);
}

TEST(PipelineScheduleOutputTest, SVG) {
  Simulation simulation =
      run(build(ScheduleKind::Interleaved, 2, 4, 2), chunkCosts(4, 2));
  std::string svg;
  llvm::raw_string_ostream os(svg);
  writeSVG(simulation, 2, "interleaved <P=2>", os);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos;
       at = svg.find("<rect", at + 1))
    ++rects;
  EXPECT_EQ(rects, simulation.units.size());
  EXPECT_NE(svg.find("interleaved &lt;P=2&gt; &#8212; bubble 12.50%"),
            std::string::npos);
  EXPECT_NE(svg.find("marker-end=\"url(#arrow)\""), std::string::npos);
  EXPECT_NE(svg.find(">rank 1</text>"), std::string::npos);
}

} // namespace
