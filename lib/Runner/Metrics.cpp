//===- Metrics.cpp - dist-run --metrics: one JSON line per event ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Metrics.h"
#include "distopt/Runner/Error.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Runtime/CpuKernels.h"

#include "llvm/Support/FileSystem.h"

#include <sys/resource.h>

using namespace distopt::runner;
using namespace distopt;

llvm::Error MetricsFile::open(const std::string &path, bool resumed) {
  if (path.empty() || distrt_rank() != 0)
    return llvm::Error::success();
  // Written in place, never a device or FIFO (distopt/Support/SafeOutput.h).
  llvm::Expected<int> fd = openOutputInPlace("--metrics", path, resumed);
  if (!fd)
    return makeError(llvm::toString(fd.takeError()));
  stream = std::make_unique<llvm::raw_fd_ostream>(*fd, /*shouldClose=*/true);
  return llvm::Error::success();
}

void MetricsFile::write(llvm::json::Object line) {
  if (!stream)
    return;
  *stream << llvm::json::Value(std::move(line)) << "\n";
  stream->flush();
}

double runner::getPeakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

void MetricsFile::writeStep(const StepReport &report) {
  if (!stream)
    return;
  write(llvm::json::Object{
      {"step", report.step},
      {"loss", report.loss},
      {"step_ms", report.ms},
      {"comm_ms", report.comm.comm_seconds * 1e3},
      {"collective_bytes", report.comm.collective_bytes},
      {"sent_bytes", report.comm.sent_bytes},
      {"peak_rss_mb", getPeakRssMiB()},
      // libdistopt_cpu's products and convolutions
      // (OpenBLAS's core, LIBXSMM's target).
      {"cpu_kernels", distopt_cpu_kernel_info()},
      // Its bf16 / f16 products (oneDNN, or f32).
      {"cpu_sixteen_bit_kernels", distopt_cpu_sixteen_bit_info()}});
}
