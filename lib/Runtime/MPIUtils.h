//===- MPIUtils.h - MPI helpers of the mpi and nccl backends ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Error messages, completion within the timeout, the node layout and the
// job's end over MPI: the mpi backend's (MPIBackend.cpp, in libdistrt) and
// the nccl backend's, which bootstraps over MPI (NCCLBackend.cpp, in
// libdistrt_nccl). Only for code built with MPI.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNTIME_MPIUTILS_H
#define DISTOPT_LIB_RUNTIME_MPIUTILS_H

#include "Backend.h"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace distrt {

/// "" when `code` is MPI_SUCCESS, else "<call> failed: <MPI's message>".
Status checkMPI(int code, const char *call);

/// Completes `request` (of `call`) within `timeout` seconds (0: no limit).
/// A request still pending at the deadline is cancelled when `cancellable`
/// (a receive), else left in flight: the caller has to end the job.
Status completeMPI(MPI_Request &request, const char *call, double timeout,
                   bool cancellable = false);

/// Completes every one of `requests` (of `call`) within `timeout` seconds
/// (0: no limit); requests still pending at the deadline are left in
/// flight: the caller has to end the job.
Status completeAllMPI(std::vector<MPI_Request> &requests, const char *call,
                      double timeout);

/// Backend::getNodes over `comm` (a copy of MPI_COMM_WORLD): the ranks
/// sharing memory form a node, named by the host of its lowest rank.
Status getMPINodes(MPI_Comm comm, std::vector<int64_t> &nodes,
                   std::vector<std::string> &names);

/// Backend::abort under MPI: MPI_Abort of the world (`size` processes)
/// when MPI is running, _exit otherwise.
[[noreturn]] void abortMPI(int code, int64_t size);

} // namespace distrt

#endif // DISTOPT_LIB_RUNTIME_MPIUTILS_H
