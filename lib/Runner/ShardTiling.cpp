//===- ShardTiling.cpp - do a checkpoint's shards tile their array? -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/ShardTiling.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace distopt;
using namespace distopt::runner;

/// "[0, 64]".
static std::string formatPoint(llvm::ArrayRef<int64_t> point) {
  std::string text = "[";
  for (auto [i, value] : llvm::enumerate(point))
    text += (i ? ", " : "") + std::to_string(value);
  return text + "]";
}

/// "[64-127, 0-783]": the elements from `lower` up to (not including)
/// `upper` in each dim.
static std::string formatBox(llvm::ArrayRef<int64_t> lower,
                             llvm::ArrayRef<int64_t> upper) {
  std::string text = "[";
  for (size_t d = 0; d < lower.size(); ++d) {
    text += d ? ", " : "";
    text += std::to_string(lower[d]);
    if (upper[d] - lower[d] > 1)
      text += "-" + std::to_string(upper[d] - 1);
  }
  return text + "]";
}

/// The product of `sizes`, or none when it overflows.
static std::optional<int64_t> getVolume(llvm::ArrayRef<int64_t> sizes) {
  int64_t volume = 1;
  for (int64_t size : sizes)
    if (llvm::MulOverflow(volume, size, volume))
      return std::nullopt;
  return volume;
}

static bool contains(const ShardBox &box, llvm::ArrayRef<int64_t> point) {
  for (size_t d = 0; d < point.size(); ++d)
    if (point[d] < box.offsets[d] || point[d] >= box.offsets[d] + box.shape[d])
      return false;
  return true;
}

/// The elements of `shape` that no box of `boxes` (disjoint, inside the
/// array, holding fewer elements than it) covers, as one box: the first
/// uncovered cell of the grid the boxes' edges cut (row-major), grown dim
/// by dim, last dim first, while the cells it takes in stay uncovered.
/// Empty when the grid is too large to walk.
static std::string describeGap(llvm::ArrayRef<int64_t> shape,
                               llvm::ArrayRef<ShardBox> boxes) {
  size_t rank = shape.size();
  std::vector<std::vector<int64_t>> cuts(rank);
  uint64_t cells = 1;
  for (size_t d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (const ShardBox &box : boxes) {
      cuts[d].push_back(box.offsets[d]);
      cuts[d].push_back(box.offsets[d] + box.shape[d]);
    }
    llvm::sort(cuts[d]);
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
    cells *= cuts[d].size() - 1;
    if (cells * (boxes.size() + 1) > (1u << 24))
      return "";
  }
  // A cell is uncovered when no box holds its first element.
  auto isUncovered = [&](llvm::ArrayRef<size_t> cell) {
    std::vector<int64_t> point(rank);
    for (size_t d = 0; d < rank; ++d)
      point[d] = cuts[d][cell[d]];
    return llvm::none_of(
        boxes, [&](const ShardBox &box) { return contains(box, point); });
  };
  std::vector<size_t> cell(rank, 0);
  for (uint64_t c = 0; c < cells; ++c) {
    uint64_t rest = c;
    for (size_t d = rank; d-- > 0;) {
      cell[d] = rest % (cuts[d].size() - 1);
      rest /= cuts[d].size() - 1;
    }
    if (isUncovered(cell))
      break;
  }
  // Grow [lower, upper) over whole cells.
  std::vector<size_t> lower = cell, upper = cell;
  for (size_t &u : upper)
    ++u;
  auto allUncovered = [&](llvm::ArrayRef<size_t> from,
                          llvm::ArrayRef<size_t> to) {
    std::vector<size_t> at(from.begin(), from.end());
    while (true) {
      if (!isUncovered(at))
        return false;
      size_t d = rank;
      while (d-- > 0) {
        if (++at[d] < to[d])
          break;
        at[d] = from[d];
      }
      if (d == size_t(-1))
        return true;
    }
  };
  for (size_t d = rank; d-- > 0;) {
    while (upper[d] + 1 < cuts[d].size()) {
      std::vector<size_t> from = lower, to = upper;
      from[d] = upper[d];
      to[d] = upper[d] + 1;
      if (!allUncovered(from, to))
        break;
      ++upper[d];
    }
  }
  std::vector<int64_t> first(rank), last(rank);
  for (size_t d = 0; d < rank; ++d) {
    first[d] = cuts[d][lower[d]];
    last[d] = cuts[d][upper[d]];
  }
  return formatBox(first, last);
}

std::string runner::checkTiling(llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<ShardBox> boxes) {
  std::optional<int64_t> total = getVolume(shape);
  if (!total)
    return "describe an array of " + formatPoint(shape) +
           ", more elements than 2^63";
  // Inside the array (an empty box anywhere is harmless but still wrong).
  for (const ShardBox &box : boxes)
    for (size_t d = 0; d < shape.size(); ++d)
      if (box.shape[d] > shape[d] || box.offsets[d] > shape[d] - box.shape[d])
        return "include " + formatPoint(box.shape) + " at " +
               formatPoint(box.offsets) + ", outside " + formatPoint(shape);
  // Pairwise disjoint: the first element two boxes share.
  int64_t covered = 0;
  for (auto [i, a] : llvm::enumerate(boxes)) {
    int64_t volume = *getVolume(a.shape);
    covered += volume;
    if (volume == 0)
      continue;
    for (const ShardBox &b : boxes.drop_front(i + 1)) {
      std::vector<int64_t> start(shape.size());
      bool disjoint = false;
      for (size_t d = 0; d < shape.size() && !disjoint; ++d) {
        start[d] = std::max(a.offsets[d], b.offsets[d]);
        disjoint = start[d] >= std::min(a.offsets[d] + a.shape[d],
                                        b.offsets[d] + b.shape[d]);
      }
      if (!disjoint)
        return "overlap at " + formatPoint(start);
    }
  }
  // Disjoint boxes inside the array: they cover it when their volumes add
  // up to its volume.
  if (covered == *total)
    return "";
  std::string gap = describeGap(shape, boxes);
  if (gap.empty())
    return "leave " + std::to_string(*total - covered) + " of " +
           std::to_string(*total) + " elements uncovered";
  return "leave " + gap + " uncovered";
}
