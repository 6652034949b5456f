//===- ShardingRule.h - Einsum-like factor rules for sharding ---*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A sharding rule describes how the dimensions of an op's operands and results
// relate, as an einsum over named *factors*: matmul is `([i, k], [k, j]) ->
// ([i, j])` with `k` a reduction factor. Propagation and partitioning read only
// this rule, never the op name (model: Shardy's OpShardingRule).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_SHARDINGRULE_H
#define DISTOPT_INTERFACES_SHARDINGRULE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dist {

/// How a factor may be sharded.
enum class FactorKind {
  /// Sharding the factor shards every tensor that maps it; no communication.
  Pass,
  /// Every result that does not map the factor is a partial sum (or partial
  /// max/min) over the mesh axes the factor is sharded on.
  Reduction,
  /// The factor cannot be sharded: tensors mapping it must be replicated
  /// along it (softmax's class dim, a convolution's spatial dims).
  NeedReplication,
  /// The factor can be sharded, but the op moves data along it (a reverse or
  /// a cyclic shift), so sharding it needs communication.
  Permutation,
};

/// How an op combines the contributions of a sharded reduction factor.
enum class Combiner {
  /// A sum: each device's result is an addend, a pending partial sum that
  /// can wait (linear ops may run on it) until a user needs it whole.
  Sum,
  /// A maximum or minimum: shardings cannot express a pending max, so the
  /// partitioner combines the devices' results right after the op (one
  /// all-reduce with max / min) instead of gathering its operand.
  Max,
  Min,
};

/// Returns the keyword used when printing `kind` ("pass", "reduction", ...).
StringRef stringifyFactorKind(FactorKind kind);

/// Indices of the factors a tensor dimension maps to, major to minor. Empty
/// for a size-1 dimension that is broadcast; several entries for a compound
/// dimension (reshape, grouped convolution channels).
using DimMapping = SmallVector<int64_t, 2>;
/// The dimension mappings of one tensor, one entry per dimension.
using TensorMapping = SmallVector<DimMapping, 4>;

/// An einsum-like rule over factors. Build it with `ShardingRuleBuilder`.
class ShardingRule {
public:
  ArrayRef<int64_t> getFactorSizes() const { return factorSizes; }
  ArrayRef<FactorKind> getFactorKinds() const { return factorKinds; }
  int64_t getNumFactors() const { return factorSizes.size(); }
  ArrayRef<TensorMapping> getOperandMappings() const { return operands; }
  ArrayRef<TensorMapping> getResultMappings() const { return results; }

  /// Factors that no result maps.
  SmallVector<int64_t> getFactorsMissingFromResults() const;

  /// Factors the op averages over: it divides by their size, so when such a
  /// factor is sharded over `k` devices each shard's result must be scaled
  /// by `1 / k` (a partial mean, or a gradient of a mean).
  ArrayRef<int64_t> getMeanFactors() const { return meanFactors; }
  bool isMeanFactor(int64_t factor) const {
    return llvm::is_contained(meanFactors, factor);
  }

  /// Factors whose global position the op's result depends on (a dropout
  /// mask drawn from the global element index, an embedding lookup of
  /// global row ids): when such a factor is split, the op must be told where
  /// its shard starts (see ShardingRuleOpInterface::setShardOffsets).
  ArrayRef<int64_t> getPositionalFactors() const { return positionalFactors; }

  /// True when the op is linear in its operands jointly (add, sub, neg):
  /// applied to partial sums over the same axes it gives their partial sum,
  /// so pending reductions can wait until after it.
  bool isLinear() const { return linear; }

  /// The operands the op is linear in when every other operand is a
  /// scalar (x * s, s * x, x / s): a partial sum scaled by a whole scalar is
  /// the partial sum of the scaled parts.
  ArrayRef<unsigned> getScaledOperands() const { return scaledOperands; }

  /// How the reduction factors combine (a sum unless the op says otherwise).
  Combiner getCombiner() const { return combiner; }

  /// Checks that the rule is consistent with the given operand and result
  /// shapes: one mapping per tensor and per dimension, and the product of the
  /// sizes of the factors of every dimension equals its size. Reports through
  /// `emitError` and fails otherwise.
  LogicalResult verify(ArrayRef<ArrayRef<int64_t>> operandShapes,
                       ArrayRef<ArrayRef<int64_t>> resultShapes,
                       function_ref<InFlightDiagnostic()> emitError) const;

  /// Prints the rule as
  /// `([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k}`, followed
  /// by `mean={...}` when the op averages over some factors.
  /// Factors are named i, j, ..., z, a, ..., h, then z_1, z_2, ...; a dimension
  /// with no factor prints as `1`; a compound dimension concatenates its
  /// factors.
  void print(raw_ostream &os) const;
  std::string str() const;

  /// The name a factor prints with.
  static std::string getFactorName(int64_t factor);

private:
  friend class ShardingRuleBuilder;
  SmallVector<int64_t> factorSizes;
  SmallVector<FactorKind> factorKinds;
  SmallVector<TensorMapping> operands;
  SmallVector<TensorMapping> results;
  SmallVector<int64_t> meanFactors;
  SmallVector<int64_t> positionalFactors;
  bool linear = false;
  SmallVector<unsigned> scaledOperands;
  Combiner combiner = Combiner::Sum;
};

/// Fluent builder for `ShardingRule`s, created with the ranks of the operands
/// and results; all dimensions start unmapped.
///
///   ShardingRuleBuilder b({2, 2}, {2});
///   int64_t k = b.addFactor(K, FactorKind::Reduction);
///   b.mapOperand(0, 1, k).mapOperand(1, 0, k);
class ShardingRuleBuilder {
public:
  ShardingRuleBuilder(ArrayRef<int64_t> operandRanks,
                      ArrayRef<int64_t> resultRanks);

  /// Adds a factor of the given size and kind and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind = FactorKind::Pass);

  /// Appends `factor` (as the next-minor part) to operand `operand`, dim `dim`.
  ShardingRuleBuilder &mapOperand(int64_t operand, int64_t dim, int64_t factor);
  /// Appends `factor` to result `result`, dim `dim`.
  ShardingRuleBuilder &mapResult(int64_t result, int64_t dim, int64_t factor);

  /// Adds one pass factor per dimension of `shape` and maps it to the same
  /// dimension of every listed operand and result, skipping tensors whose
  /// corresponding dim (aligned at the trailing end) has size 1 where `shape`
  /// does not (broadcasting). `shapes` are the shapes of the operands and
  /// results in order.
  ShardingRuleBuilder &
  addBroadcastPointwise(ArrayRef<int64_t> shape,
                        ArrayRef<ArrayRef<int64_t>> operandShapes,
                        ArrayRef<ArrayRef<int64_t>> resultShapes);

  /// Marks `factor` as one the op averages over (see getMeanFactors).
  ShardingRuleBuilder &markMean(int64_t factor);

  /// Marks `factor` as positional (see getPositionalFactors); the op gets the
  /// offsets of its positional factors in the order they were marked.
  ShardingRuleBuilder &markPositional(int64_t factor) {
    rule.positionalFactors.push_back(factor);
    return *this;
  }

  /// Marks the op as linear in its operands jointly (see isLinear).
  ShardingRuleBuilder &markLinear() {
    rule.linear = true;
    return *this;
  }

  /// Marks the op linear in operand `index` scaled by scalars (see
  /// getScaledOperands).
  ShardingRuleBuilder &markScaled(unsigned index) {
    rule.scaledOperands.push_back(index);
    return *this;
  }

  /// Sets how the reduction factors combine (see getCombiner).
  ShardingRuleBuilder &setCombiner(Combiner combiner) {
    rule.combiner = combiner;
    return *this;
  }

  ShardingRule build() { return std::move(rule); }

private:
  ShardingRule rule;
};

} // namespace mlir::dist

#endif // DISTOPT_INTERFACES_SHARDINGRULE_H
