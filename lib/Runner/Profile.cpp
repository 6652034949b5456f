//===- Profile.cpp - dist-run --profile -----------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Profile.h"
#include "distopt/Runner/Error.h"

#include "distopt/Runtime/CpuKernels.h"
#include "distopt/Runtime/distrt.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

llvm::Expected<std::unique_ptr<StepProfile>>
StepProfile::create(ModuleOp module) {
  std::unique_ptr<StepProfile> profile(new StepProfile());
  if (llvm::Error error = profile->readTable(module))
    return std::move(error);
  return std::move(profile);
}

llvm::Error StepProfile::readTable(ModuleOp module) {
  auto table = module->getAttrOfType<ArrayAttr>("distopt.profile");
  if (!table)
    return makeError(
        "the compiled step has no profile table (distopt.profile)");
  for (Attribute attr : table) {
    auto fields = dyn_cast<DictionaryAttr>(attr);
    auto family = fields ? fields.getAs<StringAttr>("family") : nullptr;
    auto flops = fields ? fields.getAs<IntegerAttr>("flops") : nullptr;
    auto bytes = fields ? fields.getAs<IntegerAttr>("bytes") : nullptr;
    if (!family || !flops || !bytes)
      return makeError("malformed profile table (distopt.profile)");
    std::string loops;
    if (auto ranges = fields.getAs<DenseI64ArrayAttr>("loops"))
      for (auto [i, range] : llvm::enumerate(ranges.asArrayRef()))
        loops += (i ? "x" : "") + std::to_string(range);
    sites.push_back({family.str(), flops.getInt(), bytes.getInt(), loops});
  }
  calls.assign(sites.size(), 0);
  seconds.assign(sites.size(), 0);
  return llvm::Error::success();
}

void StepProfile::beforeStep() { distrt_profile_reset(); }

void StepProfile::afterStep(const StepReport &report, bool skip) {
  if (skip)
    return;
  std::vector<int64_t> stepCalls(sites.size());
  std::vector<double> stepSeconds(sites.size());
  distrt_profile_read(sites.size(), stepCalls.data(), stepSeconds.data());
  for (size_t i = 0; i < sites.size(); ++i) {
    calls[i] += stepCalls[i];
    seconds[i] += stepSeconds[i];
  }
  ++steps;
  stepMs += report.ms;
}

void StepProfile::print(llvm::raw_ostream &os) const {
  if (steps == 0)
    return;
  struct Family {
    std::string name;
    int64_t ops = 0, calls = 0;
    double seconds = 0, flops = 0, bytes = 0;
  };
  llvm::StringMap<size_t> index;
  std::vector<Family> families;
  double profiled = 0;
  for (auto [i, site] : llvm::enumerate(sites)) {
    auto [it, fresh] = index.try_emplace(site.family, families.size());
    if (fresh)
      families.push_back({site.family});
    Family &family = families[it->second];
    ++family.ops;
    family.calls += calls[i];
    family.seconds += seconds[i];
    // Per call of the site (a part's site may run several times a step).
    family.flops += double(site.flops) * calls[i];
    family.bytes += double(site.bytes) * calls[i];
    profiled += seconds[i];
  }
  llvm::sort(families, [](const Family &a, const Family &b) {
    return a.seconds > b.seconds;
  });
  double perStepMs = stepMs / steps;
  // The kernels behind the products' rates (OpenBLAS's core, LIBXSMM's
  // target): a CPU they do not know ran generic kernels, ~4x slower.
  os << "kernels: " << distopt_cpu_kernel_info()
     << "; 16-bit products: " << distopt_cpu_sixteen_bit_info() << "\n";
  os << llvm::formatv("profile of rank {0}, {1} step(s): {2:F3} ms per step, "
                      "{3:F1}% of it inside {4} profiled ops\n",
                      distrt_rank(), steps, perStepMs,
                      100 * profiled * 1e3 / stepMs, sites.size());
  os << "| family | ops | calls/step | ms/step | % of step | MFLOP/step | "
        "MB/step | GFLOP/s | GB/s |\n";
  os << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Family &family : families) {
    double ms = family.seconds * 1e3 / steps;
    double flops = family.flops / steps, bytes = family.bytes / steps;
    auto rate = [&](double total) {
      return family.seconds > 0 ? total / family.seconds / 1e9 : 0;
    };
    os << llvm::formatv("| {0} | {1} | {2} | {3:F3} | {4:F1} | {5:F2} | "
                        "{6:F2} | {7:F2} | {8:F2} |\n",
                        family.name, family.ops, family.calls / steps, ms,
                        100 * ms / perStepMs, flops / 1e6, bytes / 1e6,
                        rate(family.flops), rate(family.bytes));
  }
  // The sites that took the most time.
  std::vector<size_t> order(sites.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::sort(order,
             [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  order.resize(std::min(order.size(), kSlowestSites));
  os << llvm::formatv("\nthe {0} slowest ops:\n", order.size());
  os << "| site | family | loops | ms/step | GFLOP/s | GB/s |\n";
  os << "|---:|---|---|---:|---:|---:|\n";
  for (size_t i : order) {
    const Site &site = sites[i];
    double perCall = seconds[i] > 0 && calls[i] > 0 ? seconds[i] / calls[i] : 0;
    auto rate = [&](int64_t amount) {
      return perCall > 0 ? amount / perCall / 1e9 : 0;
    };
    os << llvm::formatv("| {0} | {1} | {2} | {3:F3} | {4:F2} | {5:F2} |\n", i,
                        site.family, site.loops.empty() ? "-" : site.loops,
                        seconds[i] * 1e3 / steps, rate(site.flops),
                        rate(site.bytes));
  }
  os.flush();
}
