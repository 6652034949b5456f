//===- Cluster.cpp - the machines a plan is made for ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using llvm::StringRef;

/// The most devices a cluster may have: the most a mesh may have.
static constexpr int64_t kMaxClusterDevices = 65536;
/// A description is read only this large and nested this deep (the JSON
/// parser recurses once per level).
static constexpr size_t kMaxBytes = 1 << 20;
static constexpr int kMaxDepth = 64;

std::optional<double> DeviceSpec::getPeakFlops(StringRef type) const {
  auto it = peakTflops.find(type.str());
  if (it == peakTflops.end())
    return std::nullopt;
  return it->second * 1e12;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

static ClusterSpec getCpuPreset() {
  ClusterSpec c;
  c.name = "cpu";
  c.nodes = 1;
  // One rank per core, as the tests and benchmarks run.
  c.devicesPerNode = 2;
  c.device.name = "x86-64 core (AVX-512, avx512_bf16, AMX)";
  // 24 GB of memory shared by the two ranks.
  c.device.memoryBytes = 12LL << 30;
  c.device.memoryGBPerSecond = 10;
  // One thread: OpenBLAS sgemm ~85-95 GFLOP/s, oneDNN bf16 products about
  // twice that (bench/README.md).
  c.device.peakTflops = {{"f32", 0.09}, {"bf16", 0.18}, {"f16", 0.09}};
  // MPICH over shared memory.
  c.intraNode = {5, 1};
  c.interNode = {1.25, 20};
  c.source = "this machine, measured (bench/README.md): one rank per core";
  return c;
}

/// A DGX node: eight GPUs of `memoryGB` GiB at `memoryGBPerSecond`, linked
/// by NVLink at `nvlink` GB/s per direction and one InfiniBand adapter of
/// `infiniband` GB/s per GPU.
static ClusterSpec getDgxPreset(StringRef name, StringRef device,
                                double memoryGBPerSecond,
                                std::map<std::string, double> tflops,
                                double nvlink, double infiniband,
                                StringRef source) {
  ClusterSpec c;
  c.name = name.str();
  c.devicesPerNode = 8;
  c.device.name = device.str();
  c.device.memoryBytes = 80LL << 30;
  c.device.memoryGBPerSecond = memoryGBPerSecond;
  c.device.peakTflops = std::move(tflops);
  c.intraNode = {nvlink, 3};
  c.interNode = {infiniband, 5};
  c.source = source.str();
  return c;
}

std::vector<std::string> mlir::dist::getClusterPresetNames() {
  return {"cpu", "dgx-a100", "dgx-h100"};
}

llvm::Expected<ClusterSpec> mlir::dist::getClusterPreset(StringRef name) {
  if (name == "cpu")
    return getCpuPreset();
  // Third-generation NVLink through NVSwitch: 600 GB/s per GPU in both
  // directions together; eight 200 Gb/s HDR InfiniBand adapters per node.
  if (name == "dgx-a100")
    return getDgxPreset(
        name, "NVIDIA A100-SXM4-80GB", 2039,
        {{"f32", 19.5}, {"tf32", 156}, {"bf16", 312}, {"f16", 312}}, 300, 25,
        "NVIDIA DGX A100 and A100 datasheets (dense peaks)");
  // Fourth-generation NVLink: 900 GB/s per GPU in both directions; eight
  // 400 Gb/s NDR InfiniBand adapters per node.
  if (name == "dgx-h100")
    return getDgxPreset(
        name, "NVIDIA H100-SXM5-80GB", 3350,
        {{"f32", 67}, {"tf32", 494.7}, {"bf16", 989.4}, {"f16", 989.4}}, 450,
        50, "NVIDIA DGX H100 and H100 datasheets (dense peaks)");
  return llvm::createStringError(
      "no cluster preset '%s' (presets: %s)", name.str().c_str(),
      llvm::join(getClusterPresetNames(), ", ").c_str());
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {
/// Reads the fields of a description, keeping the first error with the
/// path of the field it is about.
class Reader {
public:
  explicit Reader(StringRef where) : where(where.str()) {}

  /// The object at `path`, or null (an error) when `value` is not one or
  /// has a key outside `known`.
  const llvm::json::Object *getObject(const llvm::json::Value *value,
                                      const std::string &path,
                                      llvm::ArrayRef<StringRef> known) {
    const llvm::json::Object *object = value ? value->getAsObject() : nullptr;
    if (!object) {
      fail(path, value ? "expected an object" : "missing");
      return nullptr;
    }
    for (const auto &entry : *object)
      if (!llvm::is_contained(known, StringRef(entry.first))) {
        fail(path, "unknown key '" + entry.first.str() + "' (expected " +
                       llvm::join(known, ", ") + ")");
        return nullptr;
      }
    return object;
  }

  /// The positive finite number at `object[key]` (at most `max`).
  double getPositive(const llvm::json::Object &object, StringRef key,
                     const std::string &path, double max = 1e30) {
    const llvm::json::Value *value = object.get(key);
    std::optional<double> number = value ? value->getAsNumber() : std::nullopt;
    std::string at = path + "." + key.str();
    if (!value)
      fail(at, "missing");
    else if (!number || !std::isfinite(*number) || *number <= 0 ||
             *number > max)
      fail(at, "expected a positive number");
    else
      return *number;
    return 1;
  }

  /// The positive integer at `object[key]` (at most `max`).
  int64_t getCount(const llvm::json::Object &object, StringRef key,
                   const std::string &path, int64_t max) {
    const llvm::json::Value *value = object.get(key);
    std::optional<int64_t> number =
        value ? value->getAsInteger() : std::nullopt;
    std::string at = path + "." + key.str();
    if (!value)
      fail(at, "missing");
    else if (!number || *number < 1 || *number > max)
      fail(at, llvm::formatv("expected an integer from 1 to {0}", max));
    else
      return *number;
    return 1;
  }

  /// The string at `object[key]`, "" when absent and not `required`.
  std::string getString(const llvm::json::Object &object, StringRef key,
                        const std::string &path, bool required) {
    const llvm::json::Value *value = object.get(key);
    std::optional<StringRef> text = value ? value->getAsString() : std::nullopt;
    if (text)
      return text->str();
    if (value || required)
      fail(path + "." + key.str(), value ? "expected a string" : "missing");
    return "";
  }

  void fail(const std::string &path, const llvm::Twine &message) {
    if (!error)
      error = where + ": " + path + ": " + message.str();
  }

  llvm::Error takeError() {
    return error ? llvm::createStringError(*error) : llvm::Error::success();
  }

private:
  std::string where;
  std::optional<std::string> error;
};
} // namespace

/// The deepest nesting of arrays and objects in `text` (strings skipped).
static int getJsonDepth(StringRef text) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth) {
      --depth;
    }
  }
  return deepest;
}

static LinkSpec readLink(Reader &reader, const llvm::json::Object &cluster,
                         StringRef key, const std::string &path) {
  LinkSpec link;
  const llvm::json::Object *object =
      reader.getObject(cluster.get(key), path + "." + key.str(),
                       {"bandwidth_gb_per_s", "latency_us"});
  if (!object)
    return link;
  std::string at = path + "." + key.str();
  link.gbPerSecond = reader.getPositive(*object, "bandwidth_gb_per_s", at);
  link.latencyUs = reader.getPositive(*object, "latency_us", at);
  return link;
}

llvm::Expected<ClusterSpec> mlir::dist::parseCluster(StringRef text,
                                                     StringRef where) {
  if (text.size() > kMaxBytes)
    return llvm::createStringError(
        llvm::formatv("{0}: {1} bytes, more than the {2} a cluster "
                      "description may have",
                      where, text.size(), kMaxBytes)
            .str());
  if (getJsonDepth(text) > kMaxDepth)
    return llvm::createStringError(
        llvm::formatv("{0}: JSON nests deeper than {1} levels", where,
                      kMaxDepth)
            .str());
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return llvm::createStringError(
        (where + ": not JSON: " + llvm::toString(json.takeError())).str());
  Reader reader(where);
  ClusterSpec c;
  const std::string path = "cluster";
  const llvm::json::Object *cluster =
      reader.getObject(&*json, path,
                       {"name", "nodes", "devices_per_node", "device",
                        "intra_node", "inter_node", "source"});
  if (!cluster)
    return reader.takeError();
  c.name = reader.getString(*cluster, "name", path, /*required=*/true);
  c.source = reader.getString(*cluster, "source", path, /*required=*/false);
  c.nodes = reader.getCount(*cluster, "nodes", path, kMaxClusterDevices);
  c.devicesPerNode =
      reader.getCount(*cluster, "devices_per_node", path, kMaxClusterDevices);
  std::string at = path + ".device";
  if (const llvm::json::Object *device =
          reader.getObject(cluster->get("device"), at,
                           {"name", "memory_bytes", "memory_bandwidth_gb_per_s",
                            "peak_tflops"})) {
    c.device.name = reader.getString(*device, "name", at, /*required=*/true);
    c.device.memoryBytes =
        reader.getCount(*device, "memory_bytes", at, int64_t(1) << 60);
    c.device.memoryGBPerSecond =
        reader.getPositive(*device, "memory_bandwidth_gb_per_s", at);
    std::string peaks = at + ".peak_tflops";
    if (const llvm::json::Object *tflops = reader.getObject(
            device->get("peak_tflops"), peaks, {"f32", "tf32", "bf16", "f16"}))
      for (StringRef type : {"f32", "tf32", "bf16", "f16"})
        if (tflops->get(type) || type == "f32")
          c.device.peakTflops[type.str()] =
              reader.getPositive(*tflops, type, peaks);
  }
  c.intraNode = readLink(reader, *cluster, "intra_node", path);
  if (cluster->get("inter_node") || c.nodes > 1)
    c.interNode = readLink(reader, *cluster, "inter_node", path);
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  if (c.nodes * c.devicesPerNode > kMaxClusterDevices)
    return llvm::createStringError(
        llvm::formatv("{0}: cluster: {1} nodes x {2} devices is more than "
                      "the {3} devices a cluster may have",
                      where, c.nodes, c.devicesPerNode, kMaxClusterDevices)
            .str());
  return c;
}

llvm::Expected<ClusterSpec>
mlir::dist::loadCluster(StringRef fileOrPreset, std::optional<int64_t> nodes) {
  llvm::Expected<ClusterSpec> cluster = [&]() -> llvm::Expected<ClusterSpec> {
    if (llvm::is_contained(getClusterPresetNames(), fileOrPreset))
      return getClusterPreset(fileOrPreset);
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(fileOrPreset, /*IsText=*/true);
    if (!buffer)
      return llvm::createStringError(
          "cannot read cluster description '%s' (%s; presets: %s)",
          fileOrPreset.str().c_str(), buffer.getError().message().c_str(),
          llvm::join(getClusterPresetNames(), ", ").c_str());
    return parseCluster((*buffer)->getBuffer(), fileOrPreset);
  }();
  if (!cluster || !nodes)
    return cluster;
  if (*nodes < 1 || *nodes * cluster->devicesPerNode > kMaxClusterDevices)
    return llvm::createStringError(
        llvm::formatv("nodes={0}: expected 1 to {1} nodes of {2} devices",
                      *nodes, kMaxClusterDevices / cluster->devicesPerNode,
                      cluster->devicesPerNode)
            .str());
  if (*nodes > 1 && cluster->interNode.gbPerSecond <= 0)
    return llvm::createStringError(
        llvm::formatv("nodes={0}: cluster '{1}' describes no inter_node link "
                      "to join its nodes with",
                      *nodes, cluster->name)
            .str());
  cluster->nodes = *nodes;
  return cluster;
}

llvm::json::Value mlir::dist::toJSON(const ClusterSpec &c) {
  llvm::json::Object tflops;
  for (const auto &[type, value] : c.device.peakTflops)
    tflops[type] = value;
  auto link = [](const LinkSpec &l) {
    return llvm::json::Object{{"bandwidth_gb_per_s", l.gbPerSecond},
                              {"latency_us", l.latencyUs}};
  };
  llvm::json::Object object{
      {"name", c.name},
      {"nodes", c.nodes},
      {"devices_per_node", c.devicesPerNode},
      {"device", llvm::json::Object{{"name", c.device.name},
                                    {"memory_bytes", c.device.memoryBytes},
                                    {"memory_bandwidth_gb_per_s",
                                     c.device.memoryGBPerSecond},
                                    {"peak_tflops", std::move(tflops)}}},
      {"intra_node", link(c.intraNode)},
      {"inter_node", link(c.interNode)}};
  if (!c.source.empty())
    object["source"] = c.source;
  return object;
}
