//===- Sharding.h - shardings as axis indices, factor algebra ---*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The algorithms of sharding propagation and partitioning on plain data:
// a tensor's sharding as mesh-axis indices, the factor shardings an op's rule
// implies, and the resharding planner (a chain of small detect/emit steps).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_IR_SHARDING_H
#define DISTOPT_DIALECT_DIST_IR_SHARDING_H

#include "distopt/Interfaces/ShardingRule.h"

#include <optional>
#include <string>

namespace mlir::dist {

/// Mesh axes by index into the mesh's axes, major to minor.
using AxisIndices = SmallVector<int64_t, 2>;

/// How one tensor is split: the axes of each dim and the axes over which it
/// is a pending partial sum.
struct TensorSharding {
  SmallVector<AxisIndices> dims;
  AxisIndices partial;

  static TensorSharding replicated(int64_t rank) {
    return {SmallVector<AxisIndices>(rank), {}};
  }
  bool isReplicated() const;
  /// True when `axis` is used by a dim or as a partial axis.
  bool usesAxis(int64_t axis) const;
  bool operator==(const TensorSharding &other) const {
    return dims == other.dims && partial == other.partial;
  }
  bool operator!=(const TensorSharding &other) const {
    return !(*this == other);
  }
  /// Prints `[[0], []] partial [1]` (axis indices) for messages and tests.
  std::string str() const;
};

/// The product of the sizes of `axes` on a mesh of shape `meshShape`.
int64_t getGroupSize(ArrayRef<int64_t> meshShape, ArrayRef<int64_t> axes);

/// The shard shape of `shape` under `sharding` (dims must divide).
SmallVector<int64_t> getLocalShape(ArrayRef<int64_t> shape,
                                   const TensorSharding &sharding,
                                   ArrayRef<int64_t> meshShape);

/// The axes each factor of an op is sharded on (empty: not sharded).
using FactorAxes = SmallVector<AxisIndices>;

/// Reads the factor shardings implied by one tensor's sharding: for each
/// factor the tensor maps, the axes of its dim (a compound dim gives its axes
/// to its factors major to minor, as long as the factor sizes divide).
/// Factors the tensor does not map are nullopt.
SmallVector<std::optional<AxisIndices>>
getFactorAxesOf(const ShardingRule &rule, const TensorMapping &mapping,
                const TensorSharding &sharding, ArrayRef<int64_t> meshShape);

/// Drops the splits of factors that no tensor of the op can hold: in a
/// compound dim (a reshape's merged dims), a factor can be split only when
/// every more-major factor of the dim is split down to one index per shard;
/// otherwise its shards would interleave the dim. Apply before projecting,
/// so that every tensor of the op agrees.
void normalizeFactorAxes(const ShardingRule &rule, FactorAxes &factors,
                         ArrayRef<int64_t> meshShape);

/// The sharding of operand `operand` when the op's factors are sharded as
/// `factors` (never partial).
TensorSharding projectOperand(const ShardingRule &rule,
                              const FactorAxes &factors, int64_t operand);
/// The sharding of result `result`: its dims from `factors`, partial over the
/// axes of the reduction factors it does not map (none when the rule
/// combines by max / min: see getCombinedAxes).
/// The mesh axes over which result `result` of an op combining by max / min
/// must be combined right after the op: those of the reduction factors it
/// does not map. Empty for a sum.
AxisIndices getCombinedAxes(const ShardingRule &rule, const FactorAxes &factors,
                            int64_t result);
TensorSharding projectResult(const ShardingRule &rule,
                             const FactorAxes &factors, int64_t result);

//===----------------------------------------------------------------------===//
// Resharding planner
//===----------------------------------------------------------------------===//

/// One collective of a resharding.
struct ReshardStep {
  enum class Kind {
    /// Sum the partial value over `axes`.
    AllReduce,
    /// Sum over `axes` and keep this device's slice of `dim`.
    ReduceScatter,
    /// Concatenate the shards of `dim` over `axes` (the minor-most axes of
    /// the dim).
    AllGather,
    /// Move `axes` from dim `dim` (concatenated) to dim `toDim` (split).
    AllToAll,
    /// Keep this device's slice of `dim` over `axes` (no communication).
    LocalSlice,
  };
  Kind kind;
  AxisIndices axes;
  int64_t dim = -1;
  int64_t toDim = -1;

  bool operator==(const ReshardStep &other) const {
    return kind == other.kind && axes == other.axes && dim == other.dim &&
           toDim == other.toDim;
  }
  std::string str() const;
};

/// Plans the collectives that turn a value sharded as `from` into one
/// sharded as `to`: partial sums are reduced first (reduce-scatter where the
/// target splits a dim over the partial axes, all-reduce otherwise), axes
/// that move between dims use all-to-all, then minor-most axes are gathered
/// and missing ones sliced locally. Fails (with a reason) when `to` is
/// partial over axes `from` is not.
FailureOr<SmallVector<ReshardStep>>
planResharding(const TensorSharding &from, const TensorSharding &to,
               std::string *reason = nullptr);

/// Applies `step` to `sharding` (what the value looks like after it).
void applyReshardStep(TensorSharding &sharding, const ReshardStep &step);

} // namespace mlir::dist

#endif // DISTOPT_DIALECT_DIST_IR_SHARDING_H
