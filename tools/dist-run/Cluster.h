//===- Cluster.h - the job's layout over nodes against the mesh -*- C++ -*-===//
//
// A multi-host strategy names the mesh axes that cross hosts (`host_axes`);
// the ranks that differ only along the others are meant to share a node.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_CLUSTER_H
#define DISTOPT_TOOLS_DIST_RUN_CLUSTER_H

#include "distopt/Conversion/StepSignature.h"

namespace distrun {

/// Warns (rank 0) when the job's real layout over nodes (hosts) does not
/// match the mesh's: the ranks that differ only along axes that stay
/// within a host (every axis but `host_axes`) must share a node, or their
/// collectives cross the network the strategy meant to avoid. Every rank
/// calls it.
void checkClusterLayout(const mlir::train::StepSignature &step);

/// This rank's share of its node: the cores this process may use and the
/// ranks on its node (itself included). A collective: every rank calls it.
struct NodeShare {
  unsigned cores = 1;
  int64_t ranks = 1;

  /// The threads a rank should run its step on by default: the cores
  /// divided among the node's ranks (at least 1).
  unsigned getDefaultThreads() const;
};
NodeShare getNodeShare();

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_CLUSTER_H
