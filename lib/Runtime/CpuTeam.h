//===- CpuTeam.h - when a library kernel splits its work over the team ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The kernels of libdistopt_cpu (CpuKernels.cpp, ConvKernels.cpp) run on the
// OpenMP team of the compiled step's loops, and all decide alike whether a
// call is worth the team's fork and join.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_CPUTEAM_H
#define DISTOPT_LIB_RUNTIME_CPUTEAM_H

#include <omp.h>

#include <cstdint>

namespace distopt::cpu {

/// Below this many multiply-adds a call runs on the calling thread: the
/// team's fork and join would cost more than the split saves.
constexpr int64_t kMinParallelMacs = 1 << 18;

/// True when there is a team to split over: more than one thread, none
/// busy with an enclosing parallel region.
inline bool teamIsFree() {
  return omp_get_max_threads() > 1 && !omp_in_parallel();
}

/// True when a call of `macs` multiply-adds splits over the team: the team
/// is free and the work is large enough.
inline bool runsOnTeam(int64_t macs) {
  return teamIsFree() && macs >= kMinParallelMacs;
}

} // namespace distopt::cpu

#endif // DISTOPT_LIB_RUNTIME_CPUTEAM_H
