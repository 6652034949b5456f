//===- Trace.h - the measured timeline of a run (--trace) -------*- C++ -*-===//
//
// dist-run --trace=FILE: the runtime records each rank's units (the
// fragments of placed programs) and point-to-point transfers; rank 0
// gathers them and writes a Chrome trace (chrome://tracing, Perfetto) in
// the layout of dist-opt --dist-schedule-trace, so that the plan and the
// run can be put side by side.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_TRACE_H
#define DISTOPT_TOOLS_DIST_RUN_TRACE_H

#include <string>

namespace distrun {

/// Gathers every rank's recorded events to rank 0, which writes them to
/// `path` (as a partial file renamed once complete); fails (fail()) on a
/// runtime or file error. Every rank calls it.
void writeTrace(const std::string &path);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_TRACE_H
