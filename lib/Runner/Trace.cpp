//===- Trace.cpp - the measured timeline of a run (--trace) ---------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Trace.h"
#include "distopt/Runner/Error.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

using namespace distopt::runner;
using namespace distopt;
namespace json = llvm::json;

/// Message tags of the gather (the state uses 1, the losses 2).
static constexpr int64_t kCountTag = 3, kEventsTag = 4;

/// Every rank's events, on rank 0 (empty elsewhere).
static llvm::Expected<std::vector<std::vector<distrt_event>>> gatherEvents() {
  int64_t rank = distrt_rank(), size = distrt_size();
  int64_t count = 0;
  const distrt_event *mine = distrt_trace_events(&count);
  std::vector<std::vector<distrt_event>> all;
  if (rank != 0) {
    if (distrt_send(&count, 1, DISTRT_I64, 0, kCountTag) != 0 ||
        distrt_send(mine, count * sizeof(distrt_event), DISTRT_I8, 0,
                    kEventsTag) != 0)
      return makeRuntimeError();
    return all;
  }
  all.emplace_back(mine, mine + count);
  for (int64_t from = 1; from < size; ++from) {
    int64_t theirs = 0;
    if (distrt_recv(&theirs, 1, DISTRT_I64, from, kCountTag) != 0)
      return makeRuntimeError();
    std::vector<distrt_event> events(theirs);
    if (distrt_recv(events.data(), theirs * sizeof(distrt_event), DISTRT_I8,
                    from, kEventsTag) != 0)
      return makeRuntimeError();
    all.push_back(std::move(events));
  }
  return std::move(all);
}

static const char *getUnitName(int32_t kind) {
  switch (kind) {
  case DISTRT_EVENT_FORWARD:
    return "F";
  case DISTRT_EVENT_BACKWARD:
    return "B";
  case DISTRT_EVENT_WEIGHT:
    return "W";
  case DISTRT_EVENT_UPDATE:
    return "U";
  case DISTRT_EVENT_SEND:
    return "send";
  case DISTRT_EVENT_RECV:
    return "recv";
  }
  return "?";
}

llvm::Error runner::writeTrace(const std::string &path) {
  llvm::Expected<std::vector<std::vector<distrt_event>>> gathered =
      gatherEvents();
  if (!gathered)
    return gathered.takeError();
  std::vector<std::vector<distrt_event>> all = std::move(*gathered);
  if (distrt_rank() != 0)
    return llvm::Error::success();
  double origin = 0;
  bool any = false;
  for (const auto &events : all)
    for (const distrt_event &event : events) {
      origin = any ? std::min(origin, event.begin) : event.begin;
      any = true;
    }
  auto micros = [&](double time) { return (time - origin) * 1e6; };

  json::Array out;
  // The n-th send from a to b on a tag meets the n-th receive there.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<double>> sends,
      receives;
  for (auto [rank, events] : llvm::enumerate(all)) {
    int64_t r = rank;
    out.push_back(json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", r},
        {"args", json::Object{{"name", llvm::formatv("rank {0}", r).str()}}}});
    for (const distrt_event &event : events) {
      bool transfer =
          event.kind == DISTRT_EVENT_SEND || event.kind == DISTRT_EVENT_RECV;
      std::string name =
          transfer
              ? llvm::formatv("{0} {1} {2}", getUnitName(event.kind),
                              event.kind == DISTRT_EVENT_SEND ? "to" : "from",
                              event.peer)
                    .str()
              : llvm::formatv("{0}{1}", getUnitName(event.kind),
                              event.microbatch)
                    .str();
      json::Object args;
      if (transfer) {
        args = json::Object{{"peer", event.peer},
                            {"channel", event.tag},
                            {"bytes", event.bytes}};
        if (event.kind == DISTRT_EVENT_SEND)
          sends[{r, event.peer, event.tag}].push_back(event.begin);
        else
          receives[{event.peer, r, event.tag}].push_back(event.end);
      } else {
        args = json::Object{{"stage", event.stage},
                            {"microbatch", event.microbatch}};
      }
      out.push_back(json::Object{{"name", name},
                                 {"cat", getUnitName(event.kind)},
                                 {"ph", "X"},
                                 {"pid", 0},
                                 {"tid", r},
                                 {"ts", micros(event.begin)},
                                 {"dur", (event.end - event.begin) * 1e6},
                                 {"args", std::move(args)}});
    }
  }
  // Arrows from each send to the end of its receive's wait.
  int64_t id = 0;
  for (const auto &[key, times] : sends) {
    auto received = receives.find(key);
    if (received == receives.end())
      continue;
    auto [from, to, tag] = key;
    for (size_t i = 0; i < std::min(times.size(), received->second.size());
         ++i, ++id) {
      out.push_back(json::Object{{"name", "transfer"},
                                 {"cat", "transfer"},
                                 {"ph", "s"},
                                 {"id", id},
                                 {"pid", 0},
                                 {"tid", from},
                                 {"ts", micros(times[i])},
                                 {"args", json::Object{{"channel", tag}}}});
      out.push_back(json::Object{{"name", "transfer"},
                                 {"cat", "transfer"},
                                 {"ph", "f"},
                                 {"bp", "e"},
                                 {"id", id},
                                 {"pid", 0},
                                 {"tid", to},
                                 {"ts", micros(received->second[i])}});
    }
  }
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << json::Value(
      json::Object{{"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"}});
  PartialFile file;
  std::string error;
  if (!file.create(path, error) ||
      !file.write(text.data(), text.size(), error) || !file.commit(error))
    return makeError("cannot write --trace '" + path + "': " + error);
  return llvm::Error::success();
}
