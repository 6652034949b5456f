//===- ShardingRule.cpp - Einsum-like factor rules for sharding -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Interfaces/ShardingRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dist;

StringRef mlir::dist::stringifyFactorKind(FactorKind kind) {
  switch (kind) {
  case FactorKind::Pass:
    return "pass";
  case FactorKind::Reduction:
    return "reduction";
  case FactorKind::NeedReplication:
    return "need_replication";
  case FactorKind::Permutation:
    return "permutation";
  }
  llvm_unreachable("unknown factor kind");
}

std::string ShardingRule::getFactorName(int64_t factor) {
  // i..z first (the einsum habit), then a..h, then z_1, z_2, ...
  static constexpr StringLiteral kLetters = "ijklmnopqrstuvwxyzabcdefgh";
  if (factor < static_cast<int64_t>(kLetters.size()))
    return std::string(1, kLetters[factor]);
  return llvm::formatv("z_{0}", factor - kLetters.size() + 1).str();
}

SmallVector<int64_t> ShardingRule::getFactorsMissingFromResults() const {
  SmallVector<bool> inResult(getNumFactors(), false);
  for (const TensorMapping &tensor : results)
    for (const DimMapping &dim : tensor)
      for (int64_t factor : dim)
        inResult[factor] = true;
  SmallVector<int64_t> missing;
  for (int64_t factor = 0; factor < getNumFactors(); ++factor)
    if (!inResult[factor])
      missing.push_back(factor);
  return missing;
}

static LogicalResult
verifyTensorMappings(StringRef what, ArrayRef<TensorMapping> mappings,
                     ArrayRef<ArrayRef<int64_t>> shapes,
                     ArrayRef<int64_t> factorSizes,
                     function_ref<InFlightDiagnostic()> emitError) {
  if (mappings.size() != shapes.size())
    return emitError() << "sharding rule maps " << mappings.size() << " "
                       << what << "s but the op has " << shapes.size();
  for (auto [index, mapping, shape] : llvm::enumerate(mappings, shapes)) {
    if (mapping.size() != shape.size())
      return emitError() << "sharding rule maps " << mapping.size()
                         << " dims of " << what << " #" << index
                         << " but it has rank " << shape.size();
    for (auto [dim, factors] : llvm::enumerate(mapping)) {
      int64_t product = 1;
      for (int64_t factor : factors)
        product *= factorSizes[factor];
      if (product != shape[dim])
        return emitError() << "sharding rule gives dim " << dim << " of "
                           << what << " #" << index << " size " << product
                           << " but it has size " << shape[dim];
    }
  }
  return success();
}

LogicalResult
ShardingRule::verify(ArrayRef<ArrayRef<int64_t>> operandShapes,
                     ArrayRef<ArrayRef<int64_t>> resultShapes,
                     function_ref<InFlightDiagnostic()> emitError) const {
  if (failed(verifyTensorMappings("operand", operands, operandShapes,
                                  factorSizes, emitError)) ||
      failed(verifyTensorMappings("result", results, resultShapes, factorSizes,
                                  emitError)))
    return failure();
  // Every factor must be used somewhere, and at most once per tensor.
  SmallVector<bool> used(getNumFactors(), false);
  for (ArrayRef<TensorMapping> group : {ArrayRef(operands), ArrayRef(results)})
    for (const TensorMapping &tensor : group) {
      SmallVector<bool> seen(getNumFactors(), false);
      for (const DimMapping &dim : tensor)
        for (int64_t factor : dim) {
          if (seen[factor])
            return emitError()
                   << "sharding rule maps factor '" << getFactorName(factor)
                   << "' twice in one tensor";
          seen[factor] = used[factor] = true;
        }
    }
  for (int64_t factor = 0; factor < getNumFactors(); ++factor)
    if (!used[factor])
      return emitError() << "sharding rule factor '" << getFactorName(factor)
                         << "' is not mapped by any tensor";
  return success();
}

static void printTensorMappings(raw_ostream &os,
                                ArrayRef<TensorMapping> mappings) {
  os << '(';
  llvm::interleaveComma(mappings, os, [&](const TensorMapping &tensor) {
    os << '[';
    llvm::interleaveComma(tensor, os, [&](const DimMapping &dim) {
      if (dim.empty())
        os << '1';
      for (int64_t factor : dim)
        os << ShardingRule::getFactorName(factor);
    });
    os << ']';
  });
  os << ')';
}

void ShardingRule::print(raw_ostream &os) const {
  printTensorMappings(os, operands);
  os << "->";
  printTensorMappings(os, results);
  os << " {";
  llvm::interleaveComma(
      llvm::seq<int64_t>(0, getNumFactors()), os, [&](int64_t factor) {
        os << getFactorName(factor) << '=' << factorSizes[factor];
      });
  os << '}';
  for (FactorKind kind : {FactorKind::Reduction, FactorKind::NeedReplication,
                          FactorKind::Permutation}) {
    SmallVector<int64_t> ofKind;
    for (int64_t factor = 0; factor < getNumFactors(); ++factor)
      if (factorKinds[factor] == kind)
        ofKind.push_back(factor);
    if (ofKind.empty())
      continue;
    os << ' ' << stringifyFactorKind(kind) << "={";
    llvm::interleaveComma(ofKind, os,
                          [&](int64_t factor) { os << getFactorName(factor); });
    os << '}';
  }
  if (!meanFactors.empty()) {
    os << " mean={";
    llvm::interleaveComma(meanFactors, os,
                          [&](int64_t factor) { os << getFactorName(factor); });
    os << '}';
  }
  if (!positionalFactors.empty()) {
    os << " positional={";
    llvm::interleaveComma(positionalFactors, os,
                          [&](int64_t factor) { os << getFactorName(factor); });
    os << '}';
  }
  if (linear)
    os << " linear";
  if (combiner != Combiner::Sum)
    os << " combiner=" << (combiner == Combiner::Max ? "max" : "min");
}

std::string ShardingRule::str() const {
  std::string result;
  llvm::raw_string_ostream os(result);
  print(os);
  return result;
}

//===----------------------------------------------------------------------===//
// ShardingRuleBuilder
//===----------------------------------------------------------------------===//

ShardingRuleBuilder::ShardingRuleBuilder(ArrayRef<int64_t> operandRanks,
                                         ArrayRef<int64_t> resultRanks) {
  for (int64_t rank : operandRanks)
    rule.operands.emplace_back(rank);
  for (int64_t rank : resultRanks)
    rule.results.emplace_back(rank);
}

int64_t ShardingRuleBuilder::addFactor(int64_t size, FactorKind kind) {
  rule.factorSizes.push_back(size);
  rule.factorKinds.push_back(kind);
  return rule.factorSizes.size() - 1;
}

ShardingRuleBuilder &ShardingRuleBuilder::markMean(int64_t factor) {
  assert(factor < rule.getNumFactors() && "unknown factor");
  if (!rule.isMeanFactor(factor))
    rule.meanFactors.push_back(factor);
  return *this;
}

ShardingRuleBuilder &
ShardingRuleBuilder::mapOperand(int64_t operand, int64_t dim, int64_t factor) {
  assert(factor < rule.getNumFactors() && "unknown factor");
  rule.operands[operand][dim].push_back(factor);
  return *this;
}

ShardingRuleBuilder &ShardingRuleBuilder::mapResult(int64_t result, int64_t dim,
                                                    int64_t factor) {
  assert(factor < rule.getNumFactors() && "unknown factor");
  rule.results[result][dim].push_back(factor);
  return *this;
}

ShardingRuleBuilder &ShardingRuleBuilder::addBroadcastPointwise(
    ArrayRef<int64_t> shape, ArrayRef<ArrayRef<int64_t>> operandShapes,
    ArrayRef<ArrayRef<int64_t>> resultShapes) {
  int64_t rank = shape.size();
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t factor = addFactor(shape[dim]);
    auto mapAligned = [&](ArrayRef<int64_t> other,
                          function_ref<void(int64_t)> map) {
      int64_t otherDim = dim - (rank - static_cast<int64_t>(other.size()));
      if (otherDim < 0)
        return;
      // A size-1 dim broadcast to a larger one is not sharded with it.
      if (other[otherDim] != shape[dim])
        return;
      map(otherDim);
    };
    for (auto [index, other] : llvm::enumerate(operandShapes))
      mapAligned(other, [&, index = index](int64_t d) {
        mapOperand(index, d, factor);
      });
    for (auto [index, other] : llvm::enumerate(resultShapes))
      mapAligned(other, [&, index = index](int64_t d) {
        mapResult(index, d, factor);
      });
  }
  return *this;
}
