//===- Checkpoint.h - sharded checkpoints of a training run ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `dist-run --checkpoint-dir=DIR`: every N steps each rank writes the
// blocks of the state it holds (one .npy file per distinct block: a
// replicated array is written once, by the lowest rank holding it) into
// `DIR/.ckpt-<step>.partial`; rank 0 then writes `index.json` (the step,
// the dataset position, the shuffle's seed and epoch, the losses so far,
// the fingerprint of the data read, and per array its global shape, dtype,
// role, sharding and shards, each with its offsets, shape, CRC-32 and
// binding: a hash tying it to its array and box) and renames the
// directory to `DIR/ckpt-<step>`. A checkpoint therefore exists whole or
// not at all.
//
// Restoring reads the index and, on each rank, only the shards that
// overlap the blocks it holds, whatever strategy or mesh wrote them, each
// checked against its CRC-32 first; a checkpoint that fails (unreadable
// index, shards that do not hold an array exactly once or are not bound
// to it, a missing or corrupt shard) is skipped with a warning naming it.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_CHECKPOINT_H
#define DISTOPT_RUNNER_CHECKPOINT_H

#include "distopt/Runner/Bindings.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace distopt::runner {

struct ArrayPlan;

/// Where a run is: the steps done and, with a dataset, what it reads.
struct RunPosition {
  uint64_t step = 0;
  /// Empty without --dataset.
  std::string dataset;
  int64_t samples = 0, batch = 0;
  uint64_t seed = 0;
  bool shuffle = false;
  /// What fed the batches ("--data 'PATH'", "--dataset 'DIR'") and the
  /// fingerprint of its contents (Agreement.h's hashDataset/hashArrays as
  /// 16 hex digits); a resumed run must read the same (rank 0 compares).
  std::string dataSource, dataFingerprint;
};

/// The checkpoints of one directory.
class CheckpointDir {
public:
  /// `keep`: complete checkpoints kept (0: all).
  CheckpointDir(std::string directory, unsigned keep)
      : directory(std::move(directory)), keep(keep) {}

  /// Creates the directory (rank 0) when missing and fails unless every
  /// rank sees it (a file system all ranks share). Every rank calls it
  /// before save() or restore().
  llvm::Error open();

  /// The directory of the checkpoint after `step` steps.
  std::string getCheckpointPath(uint64_t step) const;

  /// Saves the state arguments in `args` (this rank's blocks of
  /// `wholeStep`) after `position.step` steps with the losses so far (rank
  /// 0's); every rank calls it. Nothing is written when that step's
  /// checkpoint exists. `beforeCommit` runs once this rank's part is
  /// written (tests interrupt there).
  llvm::Error save(const RunPosition &position, std::vector<Binding> &args,
                   const mlir::train::StepSignature &wholeStep,
                   llvm::ArrayRef<float> losses,
                   llvm::function_ref<void()> beforeCommit = {});

  /// Restores the newest complete checkpoint into the state (and cached)
  /// arguments of `args`; skips, with a warning, each that fails its index
  /// or checksums. Returns its position and sets `losses`, or none when no
  /// checkpoint is usable. Every rank calls it.
  llvm::Expected<std::optional<RunPosition>>
  restore(std::vector<Binding> &args, std::vector<float> &losses);

  /// --resume: restores the newest complete checkpoint and returns the
  /// position the run continues from (`fresh`, which holds this run's
  /// dataset, with the checkpoint's step; `fresh` itself when there is
  /// none), and the losses before it. Fails on every rank when the
  /// checkpoint read another dataset or order, or is past `totalSteps`;
  /// when it read data of another fingerprint, unless `allowDataChange`
  /// (then it warns).
  llvm::Expected<RunPosition> resume(const RunPosition &fresh,
                                     std::vector<Binding> &args,
                                     std::vector<float> &losses,
                                     uint64_t totalSteps,
                                     bool allowDataChange = false);

  /// The newest complete checkpoint's global arrays and losses (the --out
  /// layout), read by one process; `path` is set to it. False when there
  /// is none.
  bool exportNewest(Arrays &arrays, std::string &path);

  /// Rank 0 prints each checkpoint written and where a resume starts.
  bool print = true;

private:
  /// Rank 0's part of save(): the others' checksums, the losses, the index,
  /// the rename, and removing checkpoints beyond `keep`.
  llvm::Error commit(const RunPosition &position, const std::string &partial,
                     const std::string &final,
                     const mlir::train::StepSignature &wholeStep,
                     llvm::ArrayRef<ArrayPlan> plans,
                     std::vector<std::vector<uint32_t>> &checksums,
                     llvm::ArrayRef<float> losses);

  std::string directory;
  unsigned keep;
};

/// True for an argument restored from a checkpoint: state, and a worker's
/// cached copy (taken from the holder's saved array).
bool isRestored(const mlir::train::StepSignature::Value &value);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_CHECKPOINT_H
