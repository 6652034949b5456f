//===- RunOptions.cpp - RunConfig from dist-run's option names ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/RunOptions.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>

using namespace distopt::runner;

static const llvm::StringRef kNames[] = {"module",
                                         "state",
                                         "data",
                                         "dataset",
                                         "steps",
                                         "epochs",
                                         "shuffle",
                                         "seed",
                                         "eval-dataset",
                                         "eval-every",
                                         "checkpoint-dir",
                                         "checkpoint-every",
                                         "keep",
                                         "resume",
                                         "allow-data-change",
                                         "on-nonfinite",
                                         "out",
                                         "metrics",
                                         "trace",
                                         "backend",
                                         "device",
                                         "flush-denormals",
                                         "entry",
                                         "collective-timeout",
                                         "opt-level",
                                         "ops-per-function",
                                         "parallel-min-iterations",
                                         "gpu-mapped",
                                         "step-graphs",
                                         "stage-batches",
                                         "num-threads",
                                         "profile",
                                         "cache",
                                         "cache-dir"};

llvm::ArrayRef<llvm::StringRef> distopt::runner::getRunOptionNames() {
  return kNames;
}

llvm::Error distopt::runner::setRunOption(RunConfig &config,
                                          llvm::StringRef name,
                                          llvm::StringRef value) {
  auto invalid = [&](llvm::StringRef expected) {
    return makeError("--" + name + " takes " + expected + ", not '" + value +
                     "'");
  };
  auto toBool = [&](bool &out) -> llvm::Error {
    if (value == "true" || value == "1" || value == "True") {
      out = true;
      return llvm::Error::success();
    }
    if (value == "false" || value == "0" || value == "False") {
      out = false;
      return llvm::Error::success();
    }
    return invalid("true or false");
  };
  auto toCount = [&](auto &out) -> llvm::Error {
    uint64_t count;
    if (!llvm::to_integer(value.trim(), count, 10) ||
        count > uint64_t(std::numeric_limits<
                         std::remove_reference_t<decltype(out)>>::max()))
      return invalid("a count (an integer >= 0)");
    out = count;
    return llvm::Error::success();
  };
  auto toOptionalCount = [&](auto &out) -> llvm::Error {
    typename std::remove_reference_t<decltype(out)>::value_type count = 0;
    if (llvm::Error error = toCount(count))
      return error;
    out = count;
    return llvm::Error::success();
  };
  auto path = [&](std::string &out) {
    out = value.str();
    return llvm::Error::success();
  };
  if (name == "module")
    return path(config.modulePath);
  if (name == "state")
    return path(config.statePath);
  if (name == "data")
    return path(config.dataPath);
  if (name == "dataset")
    return path(config.datasetPath);
  if (name == "eval-dataset")
    return path(config.evalDatasetPath);
  if (name == "checkpoint-dir")
    return path(config.checkpointDir);
  if (name == "out")
    return path(config.outPath);
  if (name == "metrics")
    return path(config.metricsPath);
  if (name == "trace")
    return path(config.tracePath);
  if (name == "entry")
    return path(config.entry);
  if (name == "cache-dir")
    return path(config.cacheDir);
  if (name == "steps")
    return toOptionalCount(config.steps);
  if (name == "epochs")
    return toOptionalCount(config.epochs);
  if (name == "eval-every")
    return toOptionalCount(config.evalEvery);
  if (name == "checkpoint-every")
    return toOptionalCount(config.checkpointEvery);
  if (name == "keep")
    return toOptionalCount(config.keep);
  if (name == "num-threads")
    return toOptionalCount(config.numThreads);
  if (name == "seed")
    return toCount(config.seed);
  if (name == "opt-level")
    return toCount(config.optLevel);
  if (name == "ops-per-function")
    return toCount(config.opsPerFunction);
  if (name == "shuffle") {
    bool shuffle;
    if (llvm::Error error = toBool(shuffle))
      return error;
    config.shuffle = shuffle;
    return llvm::Error::success();
  }
  if (name == "resume")
    return toBool(config.resume);
  if (name == "allow-data-change")
    return toBool(config.allowDataChange);
  if (name == "flush-denormals")
    return toBool(config.flushDenormals);
  if (name == "gpu-mapped")
    return toBool(config.gpuMapped);
  if (name == "step-graphs")
    return toBool(config.stepGraphs);
  if (name == "stage-batches")
    return toBool(config.stageBatches);
  if (name == "profile")
    return toBool(config.profile);
  if (name == "cache")
    return toBool(config.useCache);
  if (name == "on-nonfinite") {
    if (value == "stop")
      config.onNonFinite = OnNonFinite::stop;
    else if (value == "continue")
      config.onNonFinite = OnNonFinite::carryOn;
    else
      return invalid("stop or continue");
    return llvm::Error::success();
  }
  if (name == "backend") {
    config.backend = value.str();
    return llvm::Error::success();
  }
  if (name == "device") {
    if (value == "cpu")
      config.device = Device::cpu;
    else if (value == "cuda")
      config.device = Device::cuda;
    else
      return invalid("cpu or cuda");
    return llvm::Error::success();
  }
  if (name == "parallel-min-iterations") {
    int64_t count;
    if (!llvm::to_integer(value.trim(), count, 10) || count < 0)
      return invalid("a count (an integer >= 0)");
    config.parallelMinIterations = count;
    return llvm::Error::success();
  }
  if (name == "collective-timeout") {
    double seconds;
    if (!llvm::to_float(value.trim(), seconds))
      return invalid("a number of seconds");
    config.collectiveTimeout = seconds;
    return llvm::Error::success();
  }
  return makeError("unknown run option '" + name + "' (dist-run's options: " +
                   llvm::join(getRunOptionNames(), ", ") + ")");
}
