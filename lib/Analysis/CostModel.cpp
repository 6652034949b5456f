//===- CostModel.cpp - per-rank compute, communication, memory ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/CostModel.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/CostOpInterface.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::dist;

StringRef mlir::dist::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  }
  llvm_unreachable("unknown collective kind");
}

double mlir::dist::getRingBusBytes(CollectiveKind kind, int64_t groupSize,
                                   int64_t payloadBytes) {
  if (groupSize <= 1)
    return 0;
  double share = double(groupSize - 1) / double(groupSize);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * share * payloadBytes;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
    return share * payloadBytes;
  case CollectiveKind::Broadcast:
    return payloadBytes;
  }
  llvm_unreachable("unknown collective kind");
}

bool VocabularySplitCost::pays() const {
  return flopsSaved >= kFlopsPerBusByte * busBytesAdded ||
         stateBytesSaved > busBytesAdded;
}

VocabularySplitCost mlir::dist::getVocabularySplitCost(int64_t tokens,
                                                       int64_t hidden,
                                                       int64_t classes,
                                                       int64_t elementBytes,
                                                       int64_t groupSize) {
  VocabularySplitCost cost;
  if (groupSize <= 1)
    return cost;
  double saved = double(groupSize - 1) / double(groupSize);
  double weight = double(hidden) * double(classes);
  cost.flopsSaved = 6 * double(tokens) * weight * saved;
  cost.stateBytesSaved = 2 * weight * double(elementBytes) * saved;
  cost.busBytesAdded =
      getRingBusBytes(CollectiveKind::AllReduce, groupSize,
                      (tokens * hidden + 3 * tokens) * elementBytes);
  return cost;
}

double mlir::dist::getRingSeconds(CollectiveKind kind, int64_t groupSize,
                                  double busBytes, double gbPerSecond,
                                  double latencyUs) {
  if (groupSize <= 1)
    return 0;
  int64_t steps =
      kind == CollectiveKind::AllReduce ? 2 * (groupSize - 1) : groupSize - 1;
  return busBytes / (gbPerSecond * 1e9) + steps * latencyUs * 1e-6;
}

/// The estimated time of `entry` on `mesh`, when the mesh has bandwidths.
static std::optional<double> estimateSeconds(const CollectiveCost &entry,
                                             MeshOp mesh) {
  std::optional<ArrayAttr> bandwidths = mesh.getBandwidths();
  if (!bandwidths)
    return std::nullopt;
  std::optional<ArrayAttr> latencies = mesh.getLatencies();
  double bandwidth = std::numeric_limits<double>::infinity(), latency = 0;
  for (const std::string &axis : entry.axes) {
    int64_t index = *mesh.getAxisIndex(axis);
    bandwidth = std::min(
        bandwidth, cast<FloatAttr>((*bandwidths)[index]).getValueAsDouble());
    if (latencies)
      latency = std::max(
          latency, cast<FloatAttr>((*latencies)[index]).getValueAsDouble());
  }
  return getRingSeconds(entry.kind, entry.groupSize, entry.busBytes, bandwidth,
                        latency);
}

int64_t mlir::dist::getPeakLiveBytes(ArrayRef<LiveInterval> intervals) {
  // +bytes at begin, -bytes after end; at equal points births come first.
  SmallVector<std::pair<int64_t, int64_t>> events;
  for (const LiveInterval &interval : intervals) {
    events.push_back({interval.begin, interval.bytes});
    events.push_back({interval.end + 1, -interval.bytes});
  }
  llvm::sort(events, [](auto a, auto b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  int64_t live = 0, peak = 0;
  for (auto [point, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

/// Bytes of the values of `types`; a future counts as the tensor it will
/// hold (its buffer is in flight).
static int64_t getValueBytes(TypeRange types) {
  int64_t bytes = 0;
  for (Type type : types)
    bytes += getTensorBytes(
        isa<FutureType>(type) ? cast<FutureType>(type).getValueType() : type);
  return bytes;
}

/// The collective `op` is, with its payload, or nullopt for other ops.
static std::optional<std::pair<CollectiveKind, int64_t>>
classifyCollective(Operation *op) {
  using Result = std::optional<std::pair<CollectiveKind, int64_t>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([](AllReduceOp op) -> Result {
        int64_t bytes = 0;
        for (Type type : op.getInputs().getTypes())
          bytes += getTensorBytes(type);
        return std::make_pair(CollectiveKind::AllReduce, bytes);
      })
      .Case([](ReduceScatterOp op) -> Result {
        int64_t bytes = 0;
        for (Type type : op.getInputs().getTypes())
          bytes += getTensorBytes(type);
        return std::make_pair(CollectiveKind::ReduceScatter, bytes);
      })
      .Case([](AllGatherOp op) -> Result {
        return std::make_pair(CollectiveKind::AllGather,
                              getTensorBytes(op.getResult().getType()));
      })
      .Case([](AllToAllOp op) -> Result {
        return std::make_pair(CollectiveKind::AllToAll,
                              getTensorBytes(op.getInput().getType()));
      })
      .Case([](BroadcastOp op) -> Result {
        return std::make_pair(CollectiveKind::Broadcast,
                              getTensorBytes(op.getInput().getType()));
      })
      .Case([](AllReduceStartOp op) -> Result {
        return std::make_pair(CollectiveKind::AllReduce,
                              getValueBytes(op.getInputs().getTypes()));
      })
      .Case([](ReduceScatterStartOp op) -> Result {
        return std::make_pair(CollectiveKind::ReduceScatter,
                              getValueBytes(op.getInputs().getTypes()));
      })
      .Case([](AllGatherStartOp op) -> Result {
        return std::make_pair(CollectiveKind::AllGather,
                              getValueBytes(op.getFuture().getType()));
      })
      .Default([](Operation *) -> Result { return std::nullopt; });
}

/// The gradient as the reduction delivers it: through local slices up to
/// the last communicating collective (or the wait for one), else the value
/// itself.
static int64_t getDeliveredGradientBytes(Value grad) {
  Value value = grad;
  while (Operation *def = value.getDefiningOp()) {
    if (auto slice = dyn_cast<LocalSliceOp>(def)) {
      value = slice.getInput();
      continue;
    }
    if (classifyCollective(def) || isa<WaitOp>(def))
      return getTensorBytes(value.getType());
    break;
  }
  return getTensorBytes(grad.getType());
}

static void addArgumentBytes(func::FuncOp func, StepCost &cost) {
  train::TrainingStep step = train::TrainingStep::get(func);
  for (const train::StepValue &arg : step.arguments) {
    int64_t bytes = getTensorBytes(arg.type);
    if (!arg.role) {
      cost.otherArgumentBytes += bytes;
      continue;
    }
    switch (*arg.role) {
    case train::Role::param:
      cost.paramBytes += bytes;
      break;
    case train::Role::opt_state:
      cost.optStateBytes += bytes;
      break;
    case train::Role::input:
    case train::Role::label:
      cost.inputBytes += bytes;
      break;
    default:
      cost.otherArgumentBytes += bytes;
      break;
    }
  }
}

/// Adds the cost of `block`'s ops (and of the ops nested in them: the
/// fragments of a placed program) to `cost`; returns the block's peak of
/// live intermediate values in program order, a nested block's own peak
/// counted at its op.
static int64_t analyzeBlock(Block &block, StepCost &cost) {
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(block))
    position[&op] = i;
  SmallVector<LiveInterval> intervals;
  for (Operation &op : block) {
    int64_t begin = position.lookup(&op);
    for (Value result : op.getResults()) {
      int64_t end = begin;
      for (Operation *user : result.getUsers())
        if (Operation *inBlock = block.findAncestorOpInBlock(*user))
          end = std::max(end, position.lookup(inBlock));
      intervals.push_back({begin, end, getValueBytes(result.getType())});
    }
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        intervals.push_back({begin, begin, analyzeBlock(nested, cost)});
    if (auto costOp = dyn_cast<CostOpInterface>(op)) {
      OpCost opCost = costOp.getCost();
      cost.flops += opCost.flops;
      cost.bytesAccessed += opCost.bytesRead + opCost.bytesWritten;
    }
    if (auto update = dyn_cast<train::OptimizerOpInterface>(op))
      cost.gradientBytes += getDeliveredGradientBytes(update.getGrad());
    if (auto send = dyn_cast<SendOp>(op)) {
      cost.sendBytes += getTensorBytes(send.getInput().getType());
      ++cost.sends;
    }
    if (auto recv = dyn_cast<RecvOp>(op)) {
      cost.recvBytes += getTensorBytes(recv.getType());
      ++cost.recvs;
    }
    std::optional<CollectiveCost> entry = getCollectiveCost(&op);
    if (!entry)
      continue;
    cost.commBytes += entry->busBytes;
    cost.collectives.push_back(std::move(*entry));
  }
  return getPeakLiveBytes(intervals);
}

std::optional<CollectiveCost> mlir::dist::getCollectiveCost(Operation *op) {
  std::optional<std::pair<CollectiveKind, int64_t>> collective =
      classifyCollective(op);
  if (!collective)
    return std::nullopt;
  auto [kind, payload] = *collective;
  CollectiveCost entry{kind, op->getLoc(), {}, 1, 0, payload, 0};
  for (Attribute axis : op->getAttrOfType<ArrayAttr>("axes"))
    entry.axes.push_back(cast<StringAttr>(axis).str());
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("mesh"));
  if (mesh)
    entry.groupSize = mesh.getGroupSize(op->getAttrOfType<ArrayAttr>("axes"));
  entry.tensors = op->getNumOperands();
  entry.busBytes = getRingBusBytes(kind, entry.groupSize, payload);
  if (mesh)
    entry.seconds = estimateSeconds(entry, mesh);
  return entry;
}

StepCost mlir::dist::analyzeStepCost(func::FuncOp func) {
  StepCost cost;
  cost.function = func.getSymName().str();
  addArgumentBytes(func, cost);
  cost.activationPeakBytes = analyzeBlock(func.getBody().front(), cost);
  if (!cost.collectives.empty() &&
      llvm::all_of(cost.collectives,
                   [](const CollectiveCost &c) { return c.seconds; })) {
    cost.commSeconds = 0;
    for (const CollectiveCost &c : cost.collectives)
      *cost.commSeconds += *c.seconds;
  }
  return cost;
}

static std::string formatLocation(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}:{2}", fileLoc.getFilename().getValue(),
                         fileLoc.getLine(), fileLoc.getColumn());
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

llvm::json::Value mlir::dist::toJSON(const StepCost &cost) {
  llvm::json::Array collectives;
  for (const CollectiveCost &c : cost.collectives) {
    llvm::json::Array axes;
    for (const std::string &axis : c.axes)
      axes.push_back(axis);
    llvm::json::Object entry{
        {"kind", stringifyCollectiveKind(c.kind)},
        {"axes", std::move(axes)},
        {"group_size", c.groupSize},
        {"tensors", c.tensors},
        {"payload_bytes", c.payloadBytes},
        {"bus_bytes", c.busBytes},
        {"loc", formatLocation(c.loc)},
    };
    if (c.seconds)
      entry["seconds"] = *c.seconds;
    collectives.push_back(std::move(entry));
  }
  llvm::json::Object object{
      {"function", cost.function},
      {"flops_per_rank", cost.flops},
      {"bytes_accessed_per_rank", cost.bytesAccessed},
      {"comm_bytes_per_rank", cost.commBytes},
      {"collective_count", int64_t(cost.collectives.size())},
      {"sends", cost.sends},
      {"send_bytes", cost.sendBytes},
      {"recvs", cost.recvs},
      {"recv_bytes", cost.recvBytes},
      {"peak_memory_bytes_per_rank", cost.getPeakMemoryBytes()},
      {"memory",
       llvm::json::Object{
           {"param_bytes", cost.paramBytes},
           {"gradient_bytes", cost.gradientBytes},
           {"opt_state_bytes", cost.optStateBytes},
           {"model_state_bytes_per_rank", cost.getModelStateBytes()},
           {"input_bytes", cost.inputBytes},
           {"other_argument_bytes", cost.otherArgumentBytes},
           {"activation_peak_bytes", cost.activationPeakBytes},
       }},
      {"collectives", std::move(collectives)},
  };
  if (cost.commSeconds)
    object["comm_seconds_per_rank"] = *cost.commSeconds;
  return object;
}

/// `1234567` as `1.23 M`.
static std::string human(double value) {
  const char *units[] = {"", " K", " M", " G", " T", " P"};
  int unit = 0;
  while (std::abs(value) >= 1000 && unit < 5) {
    value /= 1000;
    ++unit;
  }
  return llvm::formatv("{0:F2}{1}", value, units[unit]);
}

void mlir::dist::printStepCostTable(const StepCost &cost, raw_ostream &os) {
  auto row = [&](StringRef name, double value) {
    os << llvm::formatv("  {0,-28} {1,18:F0}  ({2})\n", name, value,
                        human(value));
  };
  os << "cost of @" << cost.function << " per rank\n";
  row("flops", cost.flops);
  row("bytes accessed", cost.bytesAccessed);
  row("comm bytes (ring bus)", cost.commBytes);
  if (cost.commSeconds)
    os << llvm::formatv("  {0,-28} {1,18:F1}  (mesh bandwidths)\n",
                        "comm time (us, estimated)", *cost.commSeconds * 1e6);
  row("params", cost.paramBytes);
  row("gradients", cost.gradientBytes);
  row("optimizer state", cost.optStateBytes);
  row("model state", cost.getModelStateBytes());
  row("inputs and labels", cost.inputBytes);
  row("other arguments", cost.otherArgumentBytes);
  row("activation peak", cost.activationPeakBytes);
  row("peak memory", cost.getPeakMemoryBytes());
  if (cost.sends || cost.recvs) {
    os << llvm::formatv("  {0,-28} {1,18}\n", "sends", cost.sends);
    row("send bytes", cost.sendBytes);
    os << llvm::formatv("  {0,-28} {1,18}\n", "receives", cost.recvs);
    row("receive bytes", cost.recvBytes);
  }
  os << llvm::formatv("  {0,-28} {1,18}\n", "collectives",
                      cost.collectives.size());
  if (cost.collectives.empty())
    return;
  os << llvm::formatv(
      "  {0,-15} {1,-20} {2,5} {3,7} {4,14} {5,16} {6,10}  {7}\n", "collective",
      "axes", "group", "tensors", "payload bytes", "bus bytes", "time us",
      "location");
  for (const CollectiveCost &c : cost.collectives)
    os << llvm::formatv(
        "  {0,-15} {1,-20} {2,5} {3,7} {4,14} {5,16:F1} {6,10}  {7}\n",
        stringifyCollectiveKind(c.kind), "[" + llvm::join(c.axes, ", ") + "]",
        c.groupSize, c.tensors, c.payloadBytes, c.busBytes,
        c.seconds ? llvm::formatv("{0:F2}", *c.seconds * 1e6).str()
                  : std::string("-"),
        formatLocation(c.loc));
}
