//===- Cluster.cpp - the job's layout over nodes against the mesh ---------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Cluster.h"
#include "distopt/Runner/Error.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

llvm::Error runner::checkClusterLayout(const train::StepSignature &step) {
  int64_t worldSize = distrt_size();
  if (worldSize == 1)
    return llvm::Error::success();
  std::vector<int64_t> nodes(worldSize);
  int64_t nodeCount = distrt_get_nodes(nodes.data());
  if (nodeCount < 0)
    return makeRuntimeError();
  if (distrt_rank() != 0 || nodeCount == 1 || step.meshShape.empty())
    return llvm::Error::success();
  auto describeNodes = [&](ArrayRef<int64_t> ranks) {
    std::map<int64_t, std::vector<std::string>> byNode;
    for (int64_t r : ranks)
      byNode[nodes[r]].push_back(std::to_string(r));
    std::string text;
    for (auto &[node, members] : byNode)
      text += (text.empty() ? "" : ", ") + std::string(distrt_node_name(node)) +
              " (ranks " + llvm::join(members, " ") + ")";
    return text;
  };
  std::vector<int64_t> all(worldSize);
  for (int64_t r = 0; r < worldSize; ++r)
    all[r] = r;
  if (step.hostAxes.empty()) {
    warn("the job spans " + llvm::Twine(nodeCount) + " nodes (" +
         describeNodes(all) +
         ") but the mesh declares no host axes: collectives along every "
         "axis may cross the network (a multi-host strategy, e.g. "
         "--dist-multi-worker-mirrored or --dist-hybrid with hosts, keeps "
         "the heavy ones within a host)");
    return llvm::Error::success();
  }
  // Ranks grouped by their coordinates along the host axes.
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups;
  for (int64_t r = 0; r < worldSize; ++r) {
    std::vector<int64_t> coords(step.meshShape.size()), key;
    for (int64_t d = step.meshShape.size() - 1, rest = r; d >= 0; --d) {
      coords[d] = rest % step.meshShape[d];
      rest /= step.meshShape[d];
    }
    for (const std::string &axis : step.hostAxes)
      key.push_back(coords[step.getAxisIndex(axis)]);
    groups[key].push_back(r);
  }
  SmallVector<std::string> within;
  for (const std::string &axis : step.meshAxes)
    if (!llvm::is_contained(step.hostAxes, axis))
      within.push_back("'" + axis + "'");
  int reported = 0;
  for (auto &[key, ranks] : groups) {
    std::set<int64_t> used;
    for (int64_t r : ranks)
      used.insert(nodes[r]);
    if (used.size() == 1)
      continue;
    if (reported++ == 3)
      break;
    std::vector<std::string> members;
    for (int64_t r : ranks)
      members.push_back(std::to_string(r));
    warn("ranks " + llvm::join(members, ", ") +
         " form one host's group along mesh axes " + llvm::join(within, ", ") +
         " but run on " + llvm::Twine(used.size()) +
         " nodes: " + describeNodes(ranks) +
         "; their collectives cross the network. Place consecutive ranks "
         "on one node (mpirun -ppn " +
         llvm::Twine(ranks.size()) +
         ", or a hostfile listing each host once "
         "with its slots)");
  }
  return llvm::Error::success();
}

/// A rank alone on its node with more than one thread binds them to
/// distinct cores (OMP_PROC_BIND=true, unless OMP_PROC_BIND or OMP_PLACES is
/// set): unbound, the scheduler now and then left the team's two threads
/// sharing a core for a whole run (the MLP's step took 0.39 instead of 0.22
/// ms in 3 runs of 8). Ranks sharing a node stay unbound: each would bind
/// its first thread to the node's first core.
llvm::Error runner::setThreads(std::optional<unsigned> requested,
                               bool bindThreads) {
  unsigned cores = llvm::hardware_concurrency().compute_thread_count();
  int64_t worldSize = distrt_size(), ranksOnNode = 1;
  if (worldSize > 1) {
    std::vector<int64_t> nodes(worldSize);
    if (distrt_get_nodes(nodes.data()) < 0)
      return makeRuntimeError();
    ranksOnNode = llvm::count(nodes, nodes[distrt_rank()]);
  }
  unsigned threads = std::max<unsigned>(1, cores / ranksOnNode);
  // More threads than this only oversubscribe the cores; libomp aborts
  // on far more (100000).
  unsigned machineCores = std::max(1u, std::thread::hardware_concurrency());
  uint64_t limit = uint64_t(kThreadsPerCore) * machineCores;
  auto tooMany = [&](const llvm::Twine &what, uint64_t count) {
    return makeError(what + " must be at most " + llvm::Twine(limit) + " (" +
                     llvm::Twine(kThreadsPerCore) + " x the " +
                     llvm::Twine(machineCores) +
                     " cores of this machine), not " + llvm::Twine(count));
  };
  if (requested) {
    if (*requested == 0)
      return makeError("--num-threads must be at least 1");
    if (*requested > limit)
      return tooMany("--num-threads", *requested);
    threads = *requested;
  } else if (const char *set = std::getenv("OMP_NUM_THREADS"); set && *set) {
    // One count (OpenMP's nested lists have no use here).
    uint64_t count = 0;
    if (!llvm::to_integer(llvm::StringRef(set).trim(), count, 10) || count == 0)
      return makeError("OMP_NUM_THREADS='" + llvm::Twine(set) +
                       "' is not a thread count (a positive integer)");
    if (count > limit)
      return tooMany("OMP_NUM_THREADS", count);
    threads = count;
  }
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(),
           /*overwrite=*/1);
  // Pinning binds this thread too, and everything it starts later inherits
  // the mask: only a process of the runner's own (dist-run) pins.
  if (bindThreads && threads > 1 && ranksOnNode == 1 &&
      !std::getenv("OMP_PROC_BIND") && !std::getenv("OMP_PLACES"))
    ::setenv("OMP_PROC_BIND", "true", /*overwrite=*/0);
  return llvm::Error::success();
}
