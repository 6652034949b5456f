//===- ClusterTest.cpp - cluster descriptions and presets -----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Analysis/Cluster.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir::dist;

namespace {

/// The error message of parsing `text`, or "" when it parses.
std::string parseError(const std::string &text) {
  llvm::Expected<ClusterSpec> cluster = parseCluster(text, "c.json");
  return cluster ? "" : llvm::toString(cluster.takeError());
}

const char *const kValid = R"({
  "name": "two-node", "nodes": 2, "devices_per_node": 4,
  "device": {"name": "gpu", "memory_bytes": 1000,
             "memory_bandwidth_gb_per_s": 100,
             "peak_tflops": {"f32": 10, "bf16": 100}},
  "intra_node": {"bandwidth_gb_per_s": 50, "latency_us": 2},
  "inter_node": {"bandwidth_gb_per_s": 10, "latency_us": 8}
})";

TEST(ClusterTest, PresetsRoundTripThroughJSON) {
  for (const std::string &name : getClusterPresetNames()) {
    llvm::Expected<ClusterSpec> preset = getClusterPreset(name);
    ASSERT_TRUE(bool(preset)) << name;
    std::string text = llvm::formatv("{0}", toJSON(*preset));
    llvm::Expected<ClusterSpec> parsed = parseCluster(text, name);
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    EXPECT_EQ(llvm::formatv("{0}", toJSON(*parsed)).str(), text);
    EXPECT_TRUE(preset->device.getPeakFlops("f32").has_value()) << name;
  }
}

TEST(ClusterTest, PublishedFigures) {
  llvm::Expected<ClusterSpec> a100 = getClusterPreset("dgx-a100");
  ASSERT_TRUE(bool(a100));
  EXPECT_EQ(a100->getNumDevices(), 8);
  EXPECT_DOUBLE_EQ(*a100->device.getPeakFlops("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(*a100->device.getPeakFlops("f32"), 19.5e12);
  EXPECT_EQ(a100->device.memoryBytes, int64_t(80) << 30);
  llvm::Expected<ClusterSpec> h100 = getClusterPreset("dgx-h100");
  ASSERT_TRUE(bool(h100));
  EXPECT_DOUBLE_EQ(*h100->device.getPeakFlops("bf16"), 989.4e12);
  EXPECT_FALSE(h100->device.getPeakFlops("fp8").has_value());
}

TEST(ClusterTest, ParsesADescription) {
  llvm::Expected<ClusterSpec> cluster = parseCluster(kValid, "c.json");
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  EXPECT_EQ(cluster->getNumDevices(), 8);
  EXPECT_EQ(cluster->device.memoryBytes, 1000);
  EXPECT_DOUBLE_EQ(cluster->interNode.latencyUs, 8);
  EXPECT_DOUBLE_EQ(*cluster->device.getPeakFlops("bf16"), 100e12);
  EXPECT_FALSE(cluster->device.getPeakFlops("f16").has_value());
}

TEST(ClusterTest, ErrorsNameTheField) {
  std::string text = kValid;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string copy = text;
    copy.replace(copy.find(from), from.size(), to);
    return copy;
  };
  EXPECT_EQ(parseError(replace("\"nodes\": 2", "\"node\": 2")),
            "c.json: cluster: unknown key 'node' (expected name, nodes, "
            "devices_per_node, device, intra_node, inter_node, source)");
  EXPECT_EQ(parseError(replace("\"bf16\": 100", "\"bf16\": -1")),
            "c.json: cluster.device.peak_tflops.bf16: expected a positive "
            "number");
  EXPECT_EQ(parseError(replace("\"memory_bytes\": 1000,", "")),
            "c.json: cluster.device.memory_bytes: missing");
  EXPECT_EQ(parseError(replace("\"devices_per_node\": 4",
                               "\"devices_per_node\": 1.5")),
            "c.json: cluster.devices_per_node: expected an integer from 1 "
            "to 65536");
  // Two nodes need the link between them.
  EXPECT_EQ(
      parseError(replace(",\n  \"inter_node\": {\"bandwidth_gb_per_s\": 10, "
                         "\"latency_us\": 8}",
                         "")),
      "c.json: cluster.inter_node: missing");
  EXPECT_EQ(parseError(replace("\"nodes\": 2", "\"nodes\": 65536")),
            "c.json: cluster: 65536 nodes x 4 devices is more than the 65536 "
            "devices a cluster may have");
  EXPECT_EQ(parseError("[1, 2]"), "c.json: cluster: expected an object");
  EXPECT_NE(parseError("{\"name\": ").find("c.json: not JSON: "),
            std::string::npos);
}

TEST(ClusterTest, BoundsTheInput) {
  EXPECT_EQ(parseError(std::string(100, '[') + std::string(100, ']')),
            "c.json: JSON nests deeper than 64 levels");
  // Brackets inside strings do not nest.
  EXPECT_EQ(parseError("{\"name\": \"" + std::string(100, '[') + "\"}"),
            "c.json: cluster.nodes: missing");
  EXPECT_EQ(parseError(std::string((1 << 20) + 1, ' ')),
            "c.json: 1048577 bytes, more than the 1048576 a cluster "
            "description may have");
}

TEST(ClusterTest, LoadsPresetsAndScalesNodes) {
  llvm::Expected<ClusterSpec> cluster = loadCluster("dgx-h100", 4);
  ASSERT_TRUE(bool(cluster));
  EXPECT_EQ(cluster->getNumDevices(), 32);
  llvm::Expected<ClusterSpec> missing =
      loadCluster("/nonexistent/cluster.json", std::nullopt);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("cannot read cluster description "
                      "'/nonexistent/cluster.json'"),
            std::string::npos);
  llvm::Expected<ClusterSpec> tooMany = loadCluster("dgx-a100", 10000);
  ASSERT_FALSE(bool(tooMany));
  EXPECT_EQ(llvm::toString(tooMany.takeError()),
            "nodes=10000: expected 1 to 8192 nodes of 8 devices");
  llvm::Expected<ClusterSpec> unknown = getClusterPreset("tpu");
  ASSERT_FALSE(bool(unknown));
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "no cluster preset 'tpu' (presets: cpu, dgx-a100, dgx-h100)");
}

} // namespace
