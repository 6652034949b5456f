//===- Cluster.h - the job's layout over nodes against the mesh -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A multi-host strategy names the mesh axes that cross hosts (`host_axes`);
// the ranks that differ only along the others are meant to share a node.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_CLUSTER_H
#define DISTOPT_RUNNER_CLUSTER_H

#include "distopt/Conversion/StepSignature.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace distopt::runner {

/// Warns (rank 0) when the job's real layout over nodes (hosts) does not
/// match the mesh's: the ranks that differ only along axes that stay
/// within a host (every axis but `host_axes`) must share a node, or their
/// collectives cross the network the strategy meant to avoid. Every rank
/// calls it.
llvm::Error checkClusterLayout(const mlir::train::StepSignature &step);

/// Sets the OpenMP team of this rank's step (the environment libomp reads
/// when the step's first parallel loop or product starts the team): its
/// size `requested` (dist-run --num-threads), else OMP_NUM_THREADS as set,
/// else the cores this process may use divided among the ranks on its node
/// (the ranks may differ: nodes of different sizes). Fails on a count of 0
/// or above kThreadsPerCore x the machine's cores, and on an
/// OMP_NUM_THREADS that is not such a count. A collective: every rank
/// calls it.
llvm::Error setThreads(std::optional<unsigned> requested,
                       bool bindThreads = true);

/// The most threads per core of the machine a rank may ask for.
constexpr unsigned kThreadsPerCore = 4;

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_CLUSTER_H
