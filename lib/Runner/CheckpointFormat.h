//===- CheckpointFormat.h - what the checkpoint files share -----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Part of the DistOpt project.
//
// Private to lib/Runner: the names and hashes both halves of the
// checkpoints (Checkpoint.cpp writes, CheckpointReading.cpp reads) agree on.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_RUNNER_CHECKPOINTFORMAT_H
#define DISTOPT_LIB_RUNNER_CHECKPOINTFORMAT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace distopt::runner::checkpoint {

inline constexpr llvm::StringLiteral kFormat = "distopt-checkpoint";
/// 2: each shard carries its binding (getShardBinding) and the index the
/// fingerprint of the run's data.
inline constexpr int64_t kVersion = 2;

/// What binds a shard to its place: a hash (xxh3, 16 hex digits) of its
/// array's name, dtype and global shape, its box and its bytes' CRC-32. An
/// index whose records were swapped, copied or moved fails it.
std::string getShardBinding(llvm::StringRef name, llvm::StringRef dtype,
                            llvm::ArrayRef<int64_t> globalShape,
                            llvm::ArrayRef<int64_t> offsets,
                            llvm::ArrayRef<int64_t> shape, uint32_t checksum);

/// `directory`/`name`.
std::string join(llvm::StringRef directory, llvm::StringRef name);

/// The complete checkpoints of `directory`, newest first (`ckpt-<step>`
/// directories; partial ones start with a dot).
std::vector<std::pair<uint64_t, std::string>>
listCheckpoints(llvm::StringRef directory);

} // namespace distopt::runner::checkpoint

#endif // DISTOPT_LIB_RUNNER_CHECKPOINTFORMAT_H
