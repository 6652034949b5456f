//===- Dataset.cpp - a dataset directory read step by step ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Dataset.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/StepInputs.h"
#include "distopt/Support/InputFile.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <random>
#include <unistd.h>

using namespace mlir;
using namespace distopt::runner;
using namespace distopt;

std::vector<DataSpec> runner::getDataSpecs(const train::StepSignature &step) {
  std::vector<DataSpec> specs;
  auto add = [&](const train::StepSignature::Value &value, int64_t device) {
    if ((value.role != train::Role::input &&
         value.role != train::Role::label) ||
        llvm::any_of(specs,
                     [&](const DataSpec &s) { return s.name == value.name; }))
      return;
    Binding binding = bind(value, step, device);
    specs.push_back({value.name, binding.dtype, binding.globalShape});
  };
  if (step.isMPMD()) {
    for (const train::StepSignature::Program &program : step.programs)
      for (const train::StepSignature::Value &value : program.arguments)
        add(value, program.devices.front());
  } else {
    for (const train::StepSignature::Value &value : step.arguments)
      add(value, 0);
  }
  return specs;
}

llvm::Expected<std::unique_ptr<Dataset>>
Dataset::open(llvm::StringRef option, const std::string &directory,
              llvm::ArrayRef<DataSpec> specs, uint64_t seed, bool shuffle) {
  std::unique_ptr<Dataset> dataset(new Dataset(directory, seed, shuffle));
  if (llvm::Error error = dataset->openFiles(option, specs))
    return std::move(error);
  return std::move(dataset);
}

llvm::Error Dataset::openFiles(llvm::StringRef option,
                               llvm::ArrayRef<DataSpec> specs) {
  if (!llvm::sys::fs::is_directory(directory))
    return makeEveryRankError(
        option + " '" + directory +
        "' is not a directory (one .npy file "
        "per input and label name; see python -m distopt.datasets)");
  std::string first;
  for (const DataSpec &spec : specs) {
    if (spec.globalShape.empty())
      return makeEveryRankError("the step's '" + spec.name +
                                "' is a scalar: a dataset feeds "
                                "arrays whose leading dim is the batch");
    if (batch >= 0 && spec.globalShape[0] != batch)
      return makeEveryRankError(
          "the step's data arrays disagree on the batch (leading dim): '" +
          first + "' takes " + llvm::Twine(batch) + " samples, '" + spec.name +
          "' " + llvm::Twine(spec.globalShape[0]));
    SmallString<256> path(directory);
    llvm::sys::path::append(path, spec.name + ".npy");
    File file;
    file.path = path.str().str();
    // Only a regular file: a FIFO named like a member would block the
    // open (and then every step) forever.
    std::error_code exists =
        llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Exist);
    llvm::Expected<int> opened = openRegularFile(path, "an .npy file");
    if (!opened) {
      std::string why = llvm::toString(opened.takeError());
      return makeEveryRankError("the dataset '" + directory +
                                "' has no readable '" + spec.name +
                                ".npy' for the step's '" + spec.name +
                                "': " + (exists ? exists.message() : why));
    }
    int fd = *opened;
    // An output must not replace it (PartialFile.h).
    protectInput(option.str() + " member", file.path);
    uint64_t size = 0;
    std::error_code ec = llvm::sys::fs::file_size(path, size);
    if (!ec && size > 0)
      file.region = llvm::sys::fs::mapped_file_region(
          llvm::sys::fs::convertFDToNativeFile(fd),
          llvm::sys::fs::mapped_file_region::readonly, size, 0, ec);
    ::close(fd);
    if (ec)
      return makeEveryRankError("cannot map '" + file.path +
                                "': " + ec.message());
    NpyLayout layout;
    std::string problem;
    llvm::StringRef bytes(size ? file.region.const_data() : "", size);
    if (!parseNpyHeader(bytes, layout, problem))
      return makeEveryRankError("'" + file.path + "': " + problem);
    std::vector<int64_t> sampleShape(spec.globalShape.begin() + 1,
                                     spec.globalShape.end());
    if (layout.shape.empty() || layout.dtype != spec.dtype ||
        std::vector<int64_t>(layout.shape.begin() + 1, layout.shape.end()) !=
            sampleShape)
      return makeEveryRankError(
          "'" + file.path + "' holds " + layout.dtype + " [" +
          formatShape(layout.shape) + "] but the step takes " + spec.dtype +
          " samples of shape [" + formatShape(sampleShape) +
          "] (leading dim: the samples)");
    if (samples >= 0 && layout.shape[0] != samples)
      return makeEveryRankError("'" + file.path + "' has " +
                                llvm::Twine(layout.shape[0]) +
                                " samples but '" + files.at(first).path +
                                "' has " + llvm::Twine(samples));
    samples = layout.shape[0];
    batch = spec.globalShape[0];
    if (first.empty())
      first = spec.name;
    file.data = bytes.data() + layout.dataStart;
    file.dtype = layout.dtype;
    file.shape = layout.shape;
    file.rowBytes = getElementBytes(spec.dtype);
    for (int64_t size : sampleShape)
      file.rowBytes *= size;
    files.emplace(spec.name, std::move(file));
  }
  if (files.empty())
    return makeEveryRankError(option + " '" + directory +
                              "': the step takes no input or label");
  if (batch == 0 || samples < batch)
    return makeEveryRankError(
        "the dataset '" + directory + "' has " + llvm::Twine(samples) +
        " samples, fewer than one global batch of " + llvm::Twine(batch));
  return llvm::Error::success();
}

/// A uniform draw from [0, bound) without modulo bias: 64-bit draws below
/// the largest multiple of `bound` (std::uniform_int_distribution differs
/// between standard libraries).
static uint64_t drawBelow(std::mt19937_64 &random, uint64_t bound) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t value;
  do
    value = random();
  while (value >= limit);
  return value % bound;
}

std::vector<int64_t> Dataset::getOrder(uint64_t epoch) const {
  std::vector<int64_t> result(samples);
  for (int64_t i = 0; i < samples; ++i)
    result[i] = i;
  if (!shuffle)
    return result;
  // One stream per (seed, epoch), seeded through a seed sequence.
  std::seed_seq sequence{uint32_t(seed), uint32_t(seed >> 32), uint32_t(epoch),
                         uint32_t(epoch >> 32)};
  std::mt19937_64 random(sequence);
  for (int64_t i = samples - 1; i > 0; --i)
    std::swap(result[i], result[drawBelow(random, uint64_t(i) + 1)]);
  return result;
}

void Dataset::fill(uint64_t step, const Binding &binding, char *target) {
  const File &file = files.at(binding.value->name);
  uint64_t epoch = step / getStepsPerEpoch();
  if (order.empty() || epoch != orderEpoch) {
    order = getOrder(epoch);
    orderEpoch = epoch;
  }
  int64_t start = int64_t(step % getStepsPerEpoch()) * batch;
  ArrayRef<int64_t> localShape = binding.local.shape;
  ArrayRef<int64_t> offsets = binding.offsets;
  std::vector<int64_t> sampleShape(binding.globalShape.begin() + 1,
                                   binding.globalShape.end());
  int64_t localRowBytes = binding.local.bytes.size() / localShape[0];
  for (int64_t r = 0; r < localShape[0]; ++r) {
    int64_t sample = order[start + offsets[0] + r];
    copyOverlap(file.data + sample * file.rowBytes,
                std::vector<int64_t>(sampleShape.size(), 0), sampleShape,
                target + r * localRowBytes, offsets.drop_front(),
                localShape.drop_front(), getElementBytes(binding.dtype));
  }
}

llvm::Error Dataset::checkRange(const Binding &binding,
                                const IndexRange &range) {
  const File &file = files.at(binding.value->name);
  return checkIndexRange(binding, file.dtype, file.shape, file.data, range,
                         " in '" + file.path + "'");
}
