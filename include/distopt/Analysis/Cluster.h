//===- Cluster.h - the machines a plan is made for --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A cluster description: nodes of identical devices, each device's memory,
// memory bandwidth and peak FLOP/s per element type, and the links within
// and across nodes (bandwidth per direction per device, latency). The
// planner (dist-auto) predicts a plan's step time and memory with it.
// Read from a JSON file (docs/guides/auto-parallel.md has the format) or
// taken from a preset: `cpu` (this machine, measured), `dgx-a100` and
// `dgx-h100` (NVIDIA's published figures).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_ANALYSIS_CLUSTER_H
#define DISTOPT_ANALYSIS_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

/// One link class (within a node, across nodes).
struct LinkSpec {
  /// Gigabytes per second each device sends (and receives) at once.
  double gbPerSecond = 0;
  /// Microseconds a message takes before its first byte arrives.
  double latencyUs = 0;
};

/// One device (a GPU, or a CPU core running one rank).
struct DeviceSpec {
  std::string name;
  int64_t memoryBytes = 0;
  /// Gigabytes per second the device reads or writes its memory at.
  double memoryGBPerSecond = 0;
  /// Peak TFLOP/s of dense products by element type (`f32`, `tf32`, `bf16`,
  /// `f16`).
  std::map<std::string, double> peakTflops;

  /// Peak FLOP/s of products in `type` (`f32`, `bf16`, `f16`), if known.
  std::optional<double> getPeakFlops(llvm::StringRef type) const;
};

/// A cluster of `nodes` nodes of `devicesPerNode` identical devices.
struct ClusterSpec {
  std::string name;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  DeviceSpec device;
  LinkSpec intraNode;
  /// Unused with one node.
  LinkSpec interNode;
  /// Where the figures come from.
  std::string source;

  int64_t getNumDevices() const { return nodes * devicesPerNode; }
  /// The link a group of `span` consecutive ranks communicates over: within
  /// a node when it fits in one, else across nodes.
  const LinkSpec &getLink(int64_t span) const {
    return span > devicesPerNode ? interNode : intraNode;
  }
};

/// The names of the presets, in order.
std::vector<std::string> getClusterPresetNames();

/// The preset `name`, or an error naming the presets.
llvm::Expected<ClusterSpec> getClusterPreset(llvm::StringRef name);

/// Parses a cluster description from JSON `text`; errors name the field
/// (`cluster.device.peak_tflops.bf16: ...`) and `where` (the file).
llvm::Expected<ClusterSpec> parseCluster(llvm::StringRef text,
                                         llvm::StringRef where);

/// The preset `fileOrPreset` names, else the description in that file; with
/// `nodes`, that many nodes of it.
llvm::Expected<ClusterSpec> loadCluster(llvm::StringRef fileOrPreset,
                                        std::optional<int64_t> nodes);

/// The JSON form parseCluster reads.
llvm::json::Value toJSON(const ClusterSpec &cluster);

} // namespace mlir::dist

#endif // DISTOPT_ANALYSIS_CLUSTER_H
