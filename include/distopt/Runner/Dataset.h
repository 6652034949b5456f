//===- Dataset.h - a dataset directory read step by step -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `dist-run --dataset=DIR`: one .npy file per input or label name of the
// step, leading dim = samples, memory-mapped (never read whole). Every
// step takes the next global batch of a per-epoch shuffle of the samples,
// and each rank copies only its own block of it (the rows and columns its
// bindings hold): the order depends on the seed and the step number only,
// so any strategy sees the same batches as the single-device run.
//
// drop_remainder: an epoch is floor(samples / batch) steps; the samples the
// shuffle puts past the last whole batch are skipped in that epoch (other
// samples each epoch).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_DATASET_H
#define DISTOPT_RUNNER_DATASET_H

#include "distopt/Runner/Bindings.h"
#include "distopt/Runner/StepInputs.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

#include <memory>

namespace distopt::runner {

/// One array a step reads from the dataset: its name and global type.
struct DataSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> globalShape;
};

/// The arrays a dataset feeds: every input and label of the whole step
/// (for an MPMD step, of every program), with their global types.
std::vector<DataSpec> getDataSpecs(const mlir::train::StepSignature &step);

class Dataset {
public:
  /// Opens `directory` (given by `option`, for messages) for the step's
  /// data arrays `specs` (of the whole step, every rank's); an error (every
  /// rank's, which all read the same files) naming the file on a missing,
  /// malformed or mismatched array, or when the arrays disagree on the
  /// batch (leading dim) or the dataset on the samples.
  static llvm::Expected<std::unique_ptr<Dataset>>
  open(llvm::StringRef option, const std::string &directory,
       llvm::ArrayRef<DataSpec> specs, uint64_t seed, bool shuffle);

  int64_t getNumSamples() const { return samples; }
  int64_t getBatchSize() const { return batch; }
  /// Whole batches per epoch (drop_remainder).
  int64_t getStepsPerEpoch() const { return samples / batch; }

  /// Fills `binding` (a data argument) with its block of global batch
  /// `step` (0-based, counted from the start of the run).
  void fill(uint64_t step, Binding &binding) {
    fill(step, binding, binding.local.bytes.data());
  }
  /// The same block written to `target` (of the binding's bytes).
  void fill(uint64_t step, const Binding &binding, char *target);

  /// An error (every rank's, which all read the same file) when the
  /// dataset array of `binding` (labels, token ids) holds a value outside
  /// `range`.
  llvm::Error checkRange(const Binding &binding, const IndexRange &range);

  /// The sample order of `epoch` (a permutation of [0, samples)): a
  /// Fisher-Yates shuffle driven by std::mt19937_64, seeded from the seed
  /// and the epoch, with unbiased bounded draws (the same on every
  /// platform); the identity without --shuffle.
  std::vector<int64_t> getOrder(uint64_t epoch) const;

private:
  Dataset(std::string directory, uint64_t seed, bool shuffle)
      : directory(std::move(directory)), seed(seed), shuffle(shuffle) {}
  llvm::Error openFiles(llvm::StringRef option, llvm::ArrayRef<DataSpec> specs);

  struct File {
    std::string path;
    llvm::sys::fs::mapped_file_region region;
    const char *data = nullptr;
    int64_t rowBytes = 0;
    std::string dtype;
    std::vector<int64_t> shape;
  };
  std::string directory;
  std::map<std::string, File> files;
  int64_t samples = -1, batch = -1;
  uint64_t seed;
  bool shuffle;
  /// The order of `orderEpoch` (cached: steps walk an epoch in order).
  std::vector<int64_t> order;
  uint64_t orderEpoch = 0;
};

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_DATASET_H
