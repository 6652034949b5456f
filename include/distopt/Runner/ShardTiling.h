//===- ShardTiling.h - do a checkpoint's shards tile an array? -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A checkpoint lists each array's shards as boxes (offsets and shape) of
// its global shape. Restoring copies every box into place, so the index
// must prove the boxes cover the array exactly once: each lies inside the
// array, no two share an element, and their volumes add up to the array's.
// checkTiling() decides that and, when the boxes do not tile, names the
// first fault: a box outside the array, the first element two boxes share,
// or a box of elements no shard holds.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_SHARDTILING_H
#define DISTOPT_RUNNER_SHARDTILING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace distopt::runner {

/// One shard's box of a global array.
struct ShardBox {
  std::vector<int64_t> offsets, shape;
};

/// Empty when `boxes` (each of rank `shape.size()`, sizes >= 0) cover an
/// array of `shape` exactly once; else what is wrong, worded to follow
/// "the shards of 'NAME' ": "overlap at [0, 0]", "leave [64-127, 0-783]
/// uncovered", "include [0, 0] + [130, 784], outside [128, 784]",
/// "hold 2^70 elements"... Quadratic in the boxes (a checkpoint has one per
/// distinct block: at most the devices that wrote it).
std::string checkTiling(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<ShardBox> boxes);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_SHARDTILING_H
