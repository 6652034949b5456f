//===- Sharding.cpp - shardings as axis indices, factor algebra -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/Sharding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;

bool TensorSharding::isReplicated() const {
  return partial.empty() && llvm::all_of(dims, [](const AxisIndices &axes) {
           return axes.empty();
         });
}

bool TensorSharding::usesAxis(int64_t axis) const {
  return llvm::is_contained(partial, axis) ||
         llvm::any_of(dims, [&](const AxisIndices &axes) {
           return llvm::is_contained(axes, axis);
         });
}

static void printAxes(raw_ostream &os, ArrayRef<int64_t> axes) {
  os << '[';
  llvm::interleaveComma(axes, os);
  os << ']';
}

std::string TensorSharding::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(dims, os,
                        [&](const AxisIndices &axes) { printAxes(os, axes); });
  os << ']';
  if (!partial.empty()) {
    os << " partial ";
    printAxes(os, partial);
  }
  return text;
}

int64_t mlir::dist::getGroupSize(ArrayRef<int64_t> meshShape,
                                 ArrayRef<int64_t> axes) {
  int64_t size = 1;
  for (int64_t axis : axes)
    size *= meshShape[axis];
  return size;
}

SmallVector<int64_t> mlir::dist::getLocalShape(ArrayRef<int64_t> shape,
                                               const TensorSharding &sharding,
                                               ArrayRef<int64_t> meshShape) {
  SmallVector<int64_t> local(shape);
  for (auto [dim, axes] : llvm::enumerate(sharding.dims))
    local[dim] /= getGroupSize(meshShape, axes);
  return local;
}

SmallVector<std::optional<AxisIndices>> mlir::dist::getFactorAxesOf(
    const ShardingRule &rule, const TensorMapping &mapping,
    const TensorSharding &sharding, ArrayRef<int64_t> meshShape) {
  SmallVector<std::optional<AxisIndices>> result(rule.getNumFactors());
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  for (auto [factors, axes] : llvm::zip(mapping, sharding.dims)) {
    // Major factors must be split completely before a minor one is split.
    ArrayRef<int64_t> rest = axes;
    SmallVector<std::pair<int64_t, AxisIndices>> taken;
    bool valid = true;
    for (int64_t factor : factors) {
      AxisIndices take;
      while (!rest.empty() && sizes[factor] % (getGroupSize(meshShape, take) *
                                               meshShape[rest.front()]) ==
                                  0) {
        take.push_back(rest.front());
        rest = rest.drop_front();
      }
      taken.push_back({factor, take});
      if (!rest.empty() && getGroupSize(meshShape, take) != sizes[factor]) {
        valid = false;
        break;
      }
    }
    if (!valid || !rest.empty())
      continue; // The dim's split does not follow its factors: no opinion.
    for (auto &[factor, take] : taken)
      result[factor] = take;
  }
  return result;
}

void mlir::dist::normalizeFactorAxes(const ShardingRule &rule,
                                     FactorAxes &factors,
                                     ArrayRef<int64_t> meshShape) {
  ArrayRef<int64_t> sizes = rule.getFactorSizes();
  auto normalize = [&](const TensorMapping &mapping) {
    for (const DimMapping &dim : mapping) {
      // After a factor whose shards still hold more than one index, a more
      // minor factor's split would interleave the dim: it cannot be split.
      bool blocked = false;
      for (int64_t factor : dim) {
        if (blocked) {
          factors[factor].clear();
          continue;
        }
        if (sizes[factor] / getGroupSize(meshShape, factors[factor]) > 1)
          blocked = true;
      }
    }
  };
  for (const TensorMapping &mapping : rule.getOperandMappings())
    normalize(mapping);
  for (const TensorMapping &mapping : rule.getResultMappings())
    normalize(mapping);
}

static TensorSharding project(const TensorMapping &mapping,
                              const FactorAxes &factors) {
  TensorSharding sharding = TensorSharding::replicated(mapping.size());
  for (auto [dim, mapped] : llvm::enumerate(mapping))
    for (int64_t factor : mapped)
      llvm::append_range(sharding.dims[dim], factors[factor]);
  return sharding;
}

TensorSharding mlir::dist::projectOperand(const ShardingRule &rule,
                                          const FactorAxes &factors,
                                          int64_t operand) {
  return project(rule.getOperandMappings()[operand], factors);
}

/// The axes of the reduction factors result `result` does not map.
static AxisIndices getReducedAxes(const ShardingRule &rule,
                                  const FactorAxes &factors, int64_t result) {
  const TensorMapping &mapping = rule.getResultMappings()[result];
  AxisIndices axes;
  for (int64_t factor = 0; factor < rule.getNumFactors(); ++factor) {
    if (rule.getFactorKinds()[factor] != FactorKind::Reduction)
      continue;
    bool mapped = llvm::any_of(mapping, [&](const DimMapping &dim) {
      return llvm::is_contained(dim, factor);
    });
    if (!mapped)
      llvm::append_range(axes, factors[factor]);
  }
  return axes;
}

AxisIndices mlir::dist::getCombinedAxes(const ShardingRule &rule,
                                        const FactorAxes &factors,
                                        int64_t result) {
  if (rule.getCombiner() == Combiner::Sum)
    return {};
  return getReducedAxes(rule, factors, result);
}

TensorSharding mlir::dist::projectResult(const ShardingRule &rule,
                                         const FactorAxes &factors,
                                         int64_t result) {
  const TensorMapping &mapping = rule.getResultMappings()[result];
  TensorSharding sharding = project(mapping, factors);
  // A max / min is combined right after the op (see Combiner): never
  // pending.
  if (rule.getCombiner() == Combiner::Sum)
    sharding.partial = getReducedAxes(rule, factors, result);
  return sharding;
}

//===----------------------------------------------------------------------===//
// Resharding planner
//===----------------------------------------------------------------------===//

std::string ReshardStep::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  switch (kind) {
  case Kind::AllReduce:
    os << "all_reduce";
    break;
  case Kind::ReduceScatter:
    os << "reduce_scatter dim " << dim;
    break;
  case Kind::AllGather:
    os << "all_gather dim " << dim;
    break;
  case Kind::AllToAll:
    os << "all_to_all dim " << dim << " -> " << toDim;
    break;
  case Kind::LocalSlice:
    os << "local_slice dim " << dim;
    break;
  }
  os << " axes ";
  printAxes(os, axes);
  return text;
}

void mlir::dist::applyReshardStep(TensorSharding &sharding,
                                  const ReshardStep &step) {
  auto removePartial = [&]() {
    llvm::erase_if(sharding.partial, [&](int64_t axis) {
      return llvm::is_contained(step.axes, axis);
    });
  };
  auto &dims = sharding.dims;
  switch (step.kind) {
  case ReshardStep::Kind::AllReduce:
    removePartial();
    return;
  case ReshardStep::Kind::ReduceScatter:
    removePartial();
    llvm::append_range(dims[step.dim], step.axes);
    return;
  case ReshardStep::Kind::AllGather:
    dims[step.dim].resize(dims[step.dim].size() - step.axes.size());
    return;
  case ReshardStep::Kind::AllToAll:
    dims[step.dim].resize(dims[step.dim].size() - step.axes.size());
    llvm::append_range(dims[step.toDim], step.axes);
    return;
  case ReshardStep::Kind::LocalSlice:
    llvm::append_range(dims[step.dim], step.axes);
    return;
  }
}

/// True when `prefix` is a prefix of `axes`.
static bool isPrefix(ArrayRef<int64_t> prefix, ArrayRef<int64_t> axes) {
  return prefix.size() <= axes.size() &&
         prefix == axes.take_front(prefix.size());
}

/// Partial axes the target keeps split along a dim: reduce-scatter them.
static std::optional<ReshardStep>
detectReduceScatter(const TensorSharding &cur, const TensorSharding &to) {
  for (auto [dim, axes] : llvm::enumerate(cur.dims)) {
    ArrayRef<int64_t> target = to.dims[dim];
    if (!isPrefix(axes, target))
      continue;
    AxisIndices run;
    for (int64_t axis : target.drop_front(axes.size())) {
      if (!llvm::is_contained(cur.partial, axis) ||
          llvm::is_contained(to.partial, axis))
        break;
      run.push_back(axis);
    }
    if (!run.empty())
      return ReshardStep{ReshardStep::Kind::ReduceScatter, run,
                         static_cast<int64_t>(dim)};
  }
  return std::nullopt;
}

/// Partial axes the target does not keep: all-reduce them.
static std::optional<ReshardStep> detectAllReduce(const TensorSharding &cur,
                                                  const TensorSharding &to) {
  AxisIndices axes;
  for (int64_t axis : cur.partial)
    if (!llvm::is_contained(to.partial, axis))
      axes.push_back(axis);
  if (axes.empty())
    return std::nullopt;
  return ReshardStep{ReshardStep::Kind::AllReduce, axes};
}

/// The minor-most axis of one dim is the next axis another dim needs: move
/// it with an all-to-all.
static std::optional<ReshardStep> detectAllToAll(const TensorSharding &cur,
                                                 const TensorSharding &to) {
  for (auto [dim, axes] : llvm::enumerate(cur.dims)) {
    ArrayRef<int64_t> target = to.dims[dim];
    if (!isPrefix(axes, target) || axes.size() == target.size())
      continue;
    int64_t next = target[axes.size()];
    for (auto [from, fromAxes] : llvm::enumerate(cur.dims))
      if (from != dim && !fromAxes.empty() && fromAxes.back() == next)
        return ReshardStep{ReshardStep::Kind::AllToAll,
                           {next},
                           static_cast<int64_t>(from),
                           static_cast<int64_t>(dim)};
  }
  return std::nullopt;
}

/// A dim split over axes the target does not have (in that position):
/// gather everything after the common prefix.
static std::optional<ReshardStep> detectAllGather(const TensorSharding &cur,
                                                  const TensorSharding &to) {
  for (auto [dim, axes] : llvm::enumerate(cur.dims)) {
    ArrayRef<int64_t> target = to.dims[dim];
    if (isPrefix(axes, target))
      continue;
    size_t common = 0;
    while (common < axes.size() && common < target.size() &&
           axes[common] == target[common])
      ++common;
    return ReshardStep{ReshardStep::Kind::AllGather,
                       AxisIndices(ArrayRef(axes).drop_front(common)),
                       static_cast<int64_t>(dim)};
  }
  return std::nullopt;
}

/// A dim split over fewer axes than the target, the rest unused: slice.
static std::optional<ReshardStep> detectLocalSlice(const TensorSharding &cur,
                                                   const TensorSharding &to) {
  for (auto [dim, axes] : llvm::enumerate(cur.dims)) {
    ArrayRef<int64_t> target = to.dims[dim];
    if (!isPrefix(axes, target) || axes.size() == target.size())
      continue;
    AxisIndices rest(target.drop_front(axes.size()));
    if (llvm::any_of(rest, [&](int64_t axis) { return cur.usesAxis(axis); }))
      continue;
    return ReshardStep{ReshardStep::Kind::LocalSlice, rest,
                       static_cast<int64_t>(dim)};
  }
  return std::nullopt;
}

FailureOr<SmallVector<ReshardStep>>
mlir::dist::planResharding(const TensorSharding &from, const TensorSharding &to,
                           std::string *reason) {
  auto fail = [&](const Twine &message) {
    if (reason)
      *reason = message.str();
    return failure();
  };
  if (from.dims.size() != to.dims.size())
    return fail("shardings of different ranks");
  for (int64_t axis : to.partial)
    if (!llvm::is_contained(from.partial, axis))
      return fail("cannot make a value partial over axis " + Twine(axis));

  // Detectors in priority order; each step strictly approaches `to`.
  using Detector = std::optional<ReshardStep> (*)(const TensorSharding &,
                                                  const TensorSharding &);
  static constexpr Detector detectors[] = {detectReduceScatter, detectAllReduce,
                                           detectAllToAll, detectAllGather,
                                           detectLocalSlice};
  SmallVector<ReshardStep> steps;
  TensorSharding cur = from;
  // Each step removes or places at least one axis: a bound keeps a bug from
  // looping.
  for (int iteration = 0; cur != to; ++iteration) {
    if (iteration > 64)
      return fail("resharding does not converge");
    std::optional<ReshardStep> step;
    for (Detector detect : detectors)
      if ((step = detect(cur, to)))
        break;
    if (!step)
      return fail("no collective moves " + cur.str() + " to " + to.str());
    applyReshardStep(cur, *step);
    steps.push_back(*step);
  }
  return steps;
}
