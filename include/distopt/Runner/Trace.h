//===- Trace.h - the measured timeline of a run (--trace) -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-run --trace=FILE: the runtime records each rank's units (the
// fragments of placed programs) and point-to-point transfers; rank 0
// gathers them and writes a Chrome trace (chrome://tracing, Perfetto) in
// the layout of dist-opt --dist-schedule-trace, so that the plan and the
// run can be put side by side.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_TRACE_H
#define DISTOPT_RUNNER_TRACE_H

#include "llvm/Support/Error.h"

#include <string>

namespace distopt::runner {

/// Gathers every rank's recorded events to rank 0, which writes them to
/// `path` (as a partial file renamed once complete); fails (fail()) on a
/// runtime or file error. Every rank calls it.
llvm::Error writeTrace(const std::string &path);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_TRACE_H
