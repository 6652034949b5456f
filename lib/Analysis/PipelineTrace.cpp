//===- PipelineTrace.cpp - pipeline timelines as Chrome traces and SVG ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Renders a simulated (or measured) pipeline timeline: as Chrome-trace JSON
// for Perfetto and chrome://tracing, and as an SVG picture.
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/PipelineSchedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace llvm;
using namespace mlir::dist;
using namespace mlir::dist::pipeline;

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

json::Value pipeline::toChromeTrace(const Simulation &simulation,
                                    int64_t numRanks, double timeUnit) {
  auto micros = [&](double time) { return time * timeUnit * 1e6; };
  json::Array events;
  for (int64_t rank = 0; rank < numRanks; ++rank)
    events.push_back(json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", rank},
        {"args", json::Object{{"name", formatv("rank {0}", rank).str()}}}});

  for (const TimedUnit &timed : simulation.units) {
    StringRef kind = stringifyUnitKind(timed.unit.kind);
    events.push_back(json::Object{
        {"name", (kind + Twine(timed.unit.microbatch)).str()},
        {"cat", kind},
        {"ph", "X"},
        {"pid", 0},
        {"tid", timed.rank},
        {"ts", micros(timed.start)},
        {"dur", micros(timed.end - timed.start)},
        {"args", json::Object{{"stage", timed.unit.stage},
                              {"microbatch", timed.unit.microbatch}}}});
  }

  // Viewers bind a flow's ends to the slices enclosing their timestamps; a
  // slice's end is shared with the next slice on the rank, so the arrow
  // leaves from the start of the producing unit and enters at the start of
  // the consuming one. The transfer's own times are in the arguments.
  auto getKey = [](const Unit &unit) {
    return std::make_tuple(static_cast<int>(unit.kind), unit.stage,
                           unit.microbatch);
  };
  DenseMap<std::tuple<int, int64_t, int64_t>, double> starts;
  for (const TimedUnit &timed : simulation.units)
    starts[getKey(timed.unit)] = timed.start;
  auto flowEvent = [&](StringRef phase, size_t id, int64_t rank,
                       const Unit &unit) {
    return json::Object{{"name", "transfer"},
                        {"cat", "transfer"},
                        {"ph", phase},
                        {"id", static_cast<int64_t>(id)},
                        {"pid", 0},
                        {"tid", rank},
                        {"ts", micros(starts.at(getKey(unit)))}};
  };
  for (auto [id, transfer] : llvm::enumerate(simulation.transfers)) {
    json::Object send = flowEvent("s", id, transfer.fromRank, transfer.from);
    send["args"] = json::Object{{"from", transfer.from.str()},
                                {"to", transfer.to.str()},
                                {"start", micros(transfer.start)},
                                {"end", micros(transfer.end)}};
    json::Object receive = flowEvent("f", id, transfer.toRank, transfer.to);
    receive["bp"] = "e";
    events.push_back(std::move(send));
    events.push_back(std::move(receive));
  }
  return json::Object{{"traceEvents", std::move(events)},
                      {"displayTimeUnit", "ms"}};
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

/// Fill colours per unit kind, a darker and a lighter shade alternating
/// with the chunk so interleaved stages stand apart.
static StringRef getFill(UnitKind kind, int64_t chunk) {
  static const char *const fills[3][2] = {
      {"#4e79a7", "#a0cbe8"}, {"#59a14f", "#8cd17d"}, {"#f28e2b", "#ffbe7d"}};
  return fills[static_cast<int>(kind)][chunk % 2];
}

/// A round step giving about ten ticks over `span`.
static double getTickStep(double span) {
  double raw = span / 10;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0})
    if (factor * magnitude >= raw)
      return factor * magnitude;
  return 10 * magnitude;
}

void pipeline::writeSVG(const Simulation &simulation, int64_t numRanks,
                        StringRef title, raw_ostream &os) {
  constexpr double left = 70, top = 34, right = 20, rowHeight = 36,
                   boxHeight = 26, axisHeight = 34;
  double makespan = simulation.makespan > 0 ? simulation.makespan : 1;
  // Wide enough for the shortest unit's label, within 800 to 4000 pixels.
  double shortest = makespan;
  for (const TimedUnit &timed : simulation.units)
    if (timed.end > timed.start)
      shortest = std::min(shortest, timed.end - timed.start);
  double scale =
      std::min(std::max(800 / makespan, 26 / shortest), 4000 / makespan);
  auto x = [&](double time) { return left + time * scale; };
  auto rowTop = [&](int64_t rank) {
    return top + rank * rowHeight + (rowHeight - boxHeight) / 2;
  };
  double width = x(makespan) + right;
  double axisY = top + numRanks * rowHeight + 4;
  double height = axisY + axisHeight;

  os << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:F0}\" "
                "height=\"{1:F0}\" viewBox=\"0 0 {0:F0} {1:F0}\" "
                "font-family=\"sans-serif\">\n",
                width, height);
  os << "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" "
        "refY=\"4\" markerWidth=\"6\" markerHeight=\"6\" "
        "orient=\"auto-start-reverse\"><path d=\"M0,0 L8,4 L0,8 z\" "
        "fill=\"#444\"/></marker></defs>\n";
  os << formatv("<text x=\"{0:F1}\" y=\"20\" font-size=\"14\">", left);
  printHTMLEscaped(title, os);
  os << formatv(" &#8212; bubble {0:F2}%</text>\n",
                simulation.bubbleFraction * 100);

  for (int64_t rank = 0; rank < numRanks; ++rank)
    os << formatv("<text x=\"8\" y=\"{0:F1}\" font-size=\"12\">rank "
                  "{1}</text>\n",
                  rowTop(rank) + boxHeight / 2 + 4, rank);

  for (const TimedUnit &timed : simulation.units) {
    const Unit &unit = timed.unit;
    int64_t chunk = numRanks > 0 ? unit.stage / numRanks : 0;
    double boxWidth = (timed.end - timed.start) * scale;
    os << formatv("<rect x=\"{0:F1}\" y=\"{1:F1}\" width=\"{2:F1}\" "
                  "height=\"{3:F1}\" fill=\"{4}\" stroke=\"#fff\">"
                  "<title>{5} [{6:F2}, {7:F2}]</title></rect>\n",
                  x(timed.start), rowTop(timed.rank), boxWidth, boxHeight,
                  getFill(unit.kind, chunk), unit.str(), timed.start,
                  timed.end);
    os << formatv("<text x=\"{0:F1}\" y=\"{1:F1}\" font-size=\"11\" "
                  "text-anchor=\"middle\">{2}{3}</text>\n",
                  x(timed.start) + boxWidth / 2,
                  rowTop(timed.rank) + boxHeight / 2 + 4,
                  stringifyUnitKind(unit.kind), unit.microbatch);
  }

  // Arrows leave the producer's box edge facing the consumer's row.
  for (const TimedTransfer &transfer : simulation.transfers) {
    bool down = transfer.toRank > transfer.fromRank;
    double fromY = rowTop(transfer.fromRank) + (down ? boxHeight : 0);
    double toY = rowTop(transfer.toRank) + (down ? 0 : boxHeight);
    os << formatv("<line x1=\"{0:F1}\" y1=\"{1:F1}\" x2=\"{2:F1}\" "
                  "y2=\"{3:F1}\" stroke=\"#444\" stroke-width=\"1\" "
                  "marker-end=\"url(#arrow)\"/>\n",
                  x(transfer.start), fromY, x(transfer.end), toY);
  }

  os << formatv("<line x1=\"{0:F1}\" y1=\"{1:F1}\" x2=\"{2:F1}\" "
                "y2=\"{1:F1}\" stroke=\"#000\"/>\n",
                left, axisY, x(makespan));
  double step = getTickStep(makespan);
  for (int64_t i = 0; i * step <= makespan * (1 + 1e-9); ++i) {
    double time = i * step;
    std::string label = step >= 1 ? formatv("{0}", std::llround(time)).str()
                                  : formatv("{0:F2}", time).str();
    os << formatv("<line x1=\"{0:F1}\" y1=\"{1:F1}\" x2=\"{0:F1}\" "
                  "y2=\"{2:F1}\" stroke=\"#000\"/>\n"
                  "<text x=\"{0:F1}\" y=\"{3:F1}\" font-size=\"10\" "
                  "text-anchor=\"middle\">{4}</text>\n",
                  x(time), axisY, axisY + 4, axisY + 16, label);
  }
  os << "</svg>\n";
}
