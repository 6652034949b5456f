//===- AnnotateTensorParallel.cpp - Megatron tensor parallelism, hybrid ---===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Finds Megatron's column-then-row pairs of contraction weights through the
// sharding-rule interface: a weight whose output feature is split
// (column-parallel) gives a split activation; the split follows the forward
// pass through the ops' rules until it meets a contraction that reduces
// over it with another weight (row-parallel), whose result is a partial sum
// that partitioning all-reduces once. No op names are involved.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Analysis/CostModel.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Interfaces/ShardingRuleOpInterface.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTANNOTATETENSORPARALLELPASS
#define GEN_PASS_DEF_DISTANNOTATEHYBRIDPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
/// How operand `operand` of a contraction is a weight: its dim `inDim` maps
/// the reduction factor `inFactor` that another operand maps too, its dim
/// `outDim` the factor `outFactor` that only it and result 0 map.
struct WeightUse {
  unsigned operand;
  int64_t inFactor, outFactor;
  int64_t inDim, outDim;
};

/// Megatron's plan for one training step.
struct TensorParallelPlan {
  /// Parameter argument -> its sharding (weights and the parameters that
  /// follow them, such as the biases of column-parallel layers).
  llvm::MapVector<unsigned, TensorSharding> params;
  /// Column-parallel contractions of the forward pass, with their weight.
  SmallVector<std::pair<Operation *, WeightUse>> columns;
  /// Row-parallel contractions (their result is a partial sum), with their
  /// weight.
  SmallVector<std::pair<Operation *, WeightUse>> rows;
  /// Ops that reduce alone over a split dim of a parameter (the lookups of a
  /// vocabulary-parallel embedding), with that parameter's operand number.
  SmallVector<std::pair<Operation *, unsigned>> lookups;
  /// Ops that need the split dim whole but decompose into ops that do not
  /// (the cross-entropy of an LM head split over its vocabulary).
  SmallVector<Operation *> decomposed;
  /// The forward pass: the ops the loss depends on.
  llvm::DenseSet<Operation *> forward;
};

/// Plans one function.
class TensorParallelPlanner {
public:
  TensorParallelPlanner(func::FuncOp func, MeshOp mesh, int64_t modelAxis,
                        bool forceVocabParallel)
      : func(func), step(train::TrainingStep::get(func)),
        meshShape(mesh.getShape()), modelAxis(modelAxis),
        forceVocabParallel(forceVocabParallel) {}

  TensorParallelPlan run();

private:
  /// The parameter argument `value` is, or nullopt.
  std::optional<unsigned> getParamIndex(Value value);
  /// Follows the split of `result` (sharded as `sharding`) through the
  /// forward ops to the row-parallel contractions; fails with `reason`.
  LogicalResult followSplit(
      Value result, TensorSharding sharding, llvm::DenseSet<Value> &reached,
      SmallVector<std::pair<Operation *, WeightUse>> &rows,
      SmallVector<Operation *> &decomposed,
      llvm::MapVector<unsigned, TensorSharding> &params, std::string &reason);
  /// True when splitting `head` (a column-parallel contraction whose split
  /// ends only in decomposed cross-entropies) over its classes pays by the
  /// cost model; a remark says why not otherwise.
  bool isVocabularySplitWorth(Operation *head, const WeightUse &weight,
                              const train::StepValue &arg);

  func::FuncOp func;
  train::TrainingStep step;
  ArrayRef<int64_t> meshShape;
  int64_t modelAxis;
  bool forceVocabParallel;
  llvm::DenseSet<Operation *> forward;
};
} // namespace

/// The operand of `value`'s defining op when that op maps the elements of
/// that one operand alone into a result of its shape (a cast: the 16-bit copy
/// of a float32 master weight in a mixed-precision step), else null. Such an
/// op runs on any block of its operand, so it splits as its operand does.
static Value getUnaryElementwiseOperand(Value value) {
  auto op = value.getDefiningOp<train::ElementwiseOpInterface>();
  if (!op || op->getNumOperands() != 1 || !op.isElementwiseOnShapes())
    return nullptr;
  return op->getOperand(0);
}

std::optional<unsigned> TensorParallelPlanner::getParamIndex(Value value) {
  // A parameter read through a cast is split as the parameter.
  if (Value operand = getUnaryElementwiseOperand(value))
    value = operand;
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != func ||
      step.arguments[arg.getArgNumber()].role != train::Role::param)
    return std::nullopt;
  return arg.getArgNumber();
}

/// True when a dim of `tensor` maps `factor`.
static bool mapsFactor(const TensorMapping &tensor, int64_t factor) {
  return llvm::any_of(tensor, [&](const DimMapping &dim) {
    return llvm::is_contained(dim, factor);
  });
}

/// How operand `operand` of `op` (with rule `rule`) is a contraction
/// weight, or nullopt.
static std::optional<WeightUse> getWeightUse(const ShardingRule &rule,
                                             Operation *op, unsigned operand) {
  const TensorMapping &mapping = rule.getOperandMappings()[operand];
  if (mapping.size() != 2 || rule.getResultMappings().empty())
    return std::nullopt;
  auto otherOperandMaps = [&](int64_t factor) {
    for (auto [i, other] : llvm::enumerate(rule.getOperandMappings()))
      if (i != operand && mapsFactor(other, factor))
        return true;
    return false;
  };
  std::optional<WeightUse> use;
  for (int64_t inDim = 0; inDim < 2; ++inDim) {
    int64_t outDim = 1 - inDim;
    if (mapping[inDim].size() != 1 || mapping[outDim].size() != 1)
      return std::nullopt;
    int64_t in = mapping[inDim][0], out = mapping[outDim][0];
    if (rule.getFactorKinds()[in] == FactorKind::Reduction &&
        otherOperandMaps(in) &&
        rule.getFactorKinds()[out] == FactorKind::Pass &&
        !otherOperandMaps(out) && mapsFactor(rule.getResultMappings()[0], out))
      use = WeightUse{operand, in, out, inDim, outDim};
  }
  return use;
}

/// The dim of operand `operand` that maps, alone, a reduction factor that no
/// other operand and no result maps (the op reduces over it by itself), or
/// nullopt.
static std::optional<int64_t> getReducedAloneDim(const ShardingRule &rule,
                                                 unsigned operand) {
  for (auto [d, factors] :
       llvm::enumerate(rule.getOperandMappings()[operand])) {
    if (factors.size() != 1 ||
        rule.getFactorKinds()[factors[0]] != FactorKind::Reduction)
      continue;
    int64_t factor = factors[0];
    bool alone = true;
    for (auto [i, other] : llvm::enumerate(rule.getOperandMappings()))
      alone &= i == operand || !mapsFactor(other, factor);
    for (const TensorMapping &result : rule.getResultMappings())
      alone &= !mapsFactor(result, factor);
    if (alone)
      return d;
  }
  return std::nullopt;
}

/// The number of axes a sharding splits dims over.
static int64_t countSplitAxes(const TensorSharding &sharding) {
  int64_t count = 0;
  for (const AxisIndices &axes : sharding.dims)
    count += axes.size();
  return count;
}

LogicalResult TensorParallelPlanner::followSplit(
    Value result, TensorSharding sharding, llvm::DenseSet<Value> &reached,
    SmallVector<std::pair<Operation *, WeightUse>> &rows,
    SmallVector<Operation *> &decomposed,
    llvm::MapVector<unsigned, TensorSharding> &params, std::string &reason) {
  SmallVector<std::pair<Value, TensorSharding>> worklist;
  worklist.push_back({result, std::move(sharding)});
  reached.insert(result);
  auto fail = [&](Operation *op, const Twine &why) {
    reason = ("'" + op->getName().getStringRef() + "' at " +
              [&] {
                std::string loc;
                llvm::raw_string_ostream os(loc);
                op->getLoc().print(os);
                return loc;
              }() +
              " " + why)
                 .str();
    return failure();
  };
  while (!worklist.empty()) {
    auto [value, split] = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (!forward.contains(user))
        continue; // The backward pass follows the forward pass's shardings.
      auto ruleOp = dyn_cast<ShardingRuleOpInterface>(user);
      if (!ruleOp)
        return fail(user, "has no sharding rule");
      // An op that needs the split dim whole but decomposes into ops that
      // do not (a cross-entropy over split classes: Megatron's
      // vocabulary-parallel cross-entropy) ends the split like a row.
      std::optional<int64_t> splitDim;
      for (auto [d, dimAxes] : llvm::enumerate(split.dims))
        if (!dimAxes.empty())
          splitDim = splitDim ? -1 : int64_t(d);
      if (splitDim && *splitDim >= 0 &&
          ruleOp.isDecomposableOver(use.getOperandNumber(), *splitDim)) {
        if (!llvm::is_contained(decomposed, user))
          decomposed.push_back(user);
        continue;
      }
      ShardingRule rule = ruleOp.getShardingRule();
      SmallVector<std::optional<AxisIndices>> axes = getFactorAxesOf(
          rule, rule.getOperandMappings()[use.getOperandNumber()], split,
          meshShape);
      FactorAxes factors(rule.getNumFactors());
      std::optional<WeightUse> row;
      for (auto [f, factorAxes] : llvm::enumerate(axes)) {
        if (!factorAxes || factorAxes->empty())
          continue;
        switch (rule.getFactorKinds()[f]) {
        case FactorKind::NeedReplication:
        case FactorKind::Permutation:
          return fail(user, "needs the split dim whole");
        case FactorKind::Reduction:
          for (unsigned j = 0; j < user->getNumOperands() && !row; ++j)
            if (getParamIndex(user->getOperand(j)))
              if (std::optional<WeightUse> w = getWeightUse(rule, user, j))
                if (w->inFactor == int64_t(f))
                  row = w;
          if (!row)
            return fail(user, "reduces over the split dim without a weight");
          break;
        case FactorKind::Pass:
          break;
        }
        factors[f] = *factorAxes;
      }
      normalizeFactorAxes(rule, factors, meshShape);
      int64_t kept = 0;
      for (const AxisIndices &factorAxes : factors)
        kept += factorAxes.size();
      if (kept != countSplitAxes(split))
        return fail(user, "cannot keep the split (a dim does not divide)");
      if (row) {
        rows.push_back({user, *row});
        continue; // A partial sum: partitioning all-reduces it.
      }
      // Parameters the split reaches (a column-parallel layer's bias).
      for (unsigned j = 0; j < user->getNumOperands(); ++j)
        if (std::optional<unsigned> param =
                getParamIndex(user->getOperand(j))) {
          TensorSharding operandSharding = projectOperand(rule, factors, j);
          if (countSplitAxes(operandSharding) != 0)
            params.insert({*param, operandSharding});
        }
      for (unsigned i = 0; i < user->getNumResults(); ++i) {
        TensorSharding next = projectResult(rule, factors, i);
        Value out = user->getResult(i);
        if (countSplitAxes(next) != 0 && reached.insert(out).second)
          worklist.push_back({out, std::move(next)});
      }
    }
  }
  if (rows.empty() && decomposed.empty())
    return failure(); // Reason set by the caller.
  return success();
}

bool TensorParallelPlanner::isVocabularySplitWorth(
    Operation *head, const WeightUse &weight, const train::StepValue &arg) {
  auto weightType = cast<RankedTensorType>(arg.type);
  auto resultType = dyn_cast<RankedTensorType>(head->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape() ||
      !weightType.hasStaticShape() ||
      !weightType.getElementType().isIntOrFloat())
    return true; // No size to weigh: Megatron's split.
  int64_t classes = weightType.getDimSize(weight.outDim);
  int64_t hidden = weightType.getDimSize(weight.inDim);
  int64_t tokens = resultType.getNumElements() / std::max<int64_t>(classes, 1);
  int64_t elementBytes =
      std::max<int64_t>(weightType.getElementTypeBitWidth() / 8, 1);
  int64_t group = meshShape[modelAxis];
  VocabularySplitCost cost =
      getVocabularySplitCost(tokens, hidden, classes, elementBytes, group);
  if (cost.pays())
    return true;
  head->emitRemark("tensor parallelism keeps head '")
      << arg.name.getValue() << "' replicated: splitting its " << classes
      << " classes over " << group << " devices saves "
      << static_cast<int64_t>(cost.flopsSaved) << " FLOPs and "
      << static_cast<int64_t>(cost.stateBytesSaved)
      << " bytes of state per rank but all-reduces "
      << static_cast<int64_t>(cost.busBytesAdded)
      << " more bytes (it pays from "
      << static_cast<int64_t>(VocabularySplitCost::kFlopsPerBusByte)
      << " FLOPs per byte; force-vocab-parallel splits it)";
  return false;
}

TensorParallelPlan TensorParallelPlanner::run() {
  TensorParallelPlan plan;
  // The forward pass: every op the loss depends on.
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  SmallVector<Operation *> stack;
  for (const train::StepValue &result : step.results)
    if (result.role == train::Role::loss)
      if (Operation *def = ret.getOperand(result.index).getDefiningOp())
        stack.push_back(def);
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        stack.push_back(def);
  }

  llvm::DenseSet<Value> split;
  llvm::DenseSet<Operation *> rowOps;
  for (Operation &op : func.getBody().front()) {
    auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
    if (!ruleOp || !forward.contains(&op) || rowOps.contains(&op))
      continue;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return split.contains(v); }))
      continue; // Downstream of a column-parallel weight.
    if (op.getNumResults() == 1 && getUnaryElementwiseOperand(op.getResult(0)))
      continue; // A cast of a parameter: its users tell how it splits.
    ShardingRule rule = ruleOp.getShardingRule();
    for (unsigned j = 0; j < op.getNumOperands(); ++j) {
      std::optional<unsigned> param = getParamIndex(op.getOperand(j));
      if (!param)
        continue;
      const train::StepValue &arg = step.arguments[*param];
      std::optional<WeightUse> weight = getWeightUse(rule, &op, j);
      int64_t group = meshShape[modelAxis];
      // A parameter already split is a column-parallel weight here only when
      // its split dim is this op's output dim: an embedding table used again
      // as the LM head (tied weights), split over the vocabulary.
      bool tied = false;
      if (auto planned = plan.params.find(*param);
          planned != plan.params.end()) {
        if (!weight || countSplitAxes(planned->second) != 1 ||
            planned->second.dims[weight->outDim] != AxisIndices{modelAxis})
          continue;
        tied = true;
      }
      if (!weight) {
        // A parameter the op reduces over alone (an embedding table's rows,
        // Megatron's vocabulary-parallel embedding): splitting that dim
        // leaves a partial result, all-reduced once.
        std::optional<int64_t> dim = getReducedAloneDim(rule, j);
        auto type = cast<RankedTensorType>(arg.type);
        if (dim && type.getDimSize(*dim) % group == 0) {
          TensorSharding sharding = TensorSharding::replicated(type.getRank());
          sharding.dims[*dim].push_back(modelAxis);
          plan.params.insert({*param, sharding});
          plan.lookups.push_back({&op, j});
          continue;
        }
        if (dim)
          op.emitRemark("tensor parallelism leaves parameter '")
              << arg.name.getValue() << "' replicated: its dim " << *dim
              << " of size " << type.getDimSize(*dim)
              << " does not divide over " << group << " devices";
        else if (type.getRank() >= 2)
          op.emitRemark("tensor parallelism leaves parameter '")
              << arg.name.getValue()
              << "' replicated: it is neither the weight of a contraction "
                 "nor reduced over alone";
        continue;
      }
      int64_t size =
          cast<RankedTensorType>(arg.type).getDimSize(weight->outDim);
      if (size % group) {
        op.emitRemark("tensor parallelism leaves parameter '")
            << arg.name.getValue() << "' replicated: its output dim "
            << weight->outDim << " of size " << static_cast<int64_t>(size)
            << " does not divide over " << group << " devices";
        continue;
      }
      FactorAxes factors(rule.getNumFactors());
      factors[weight->outFactor] = {modelAxis};
      llvm::DenseSet<Value> reached;
      SmallVector<std::pair<Operation *, WeightUse>> rows;
      SmallVector<Operation *> decomposed;
      llvm::MapVector<unsigned, TensorSharding> reachedParams;
      std::string reason = "its split output never meets a contraction with "
                           "another weight or a cross-entropy";
      if (failed(followSplit(op.getResult(0), projectResult(rule, factors, 0),
                             reached, rows, decomposed, reachedParams,
                             reason))) {
        if (tied)
          op.emitRemark("tensor parallelism gathers the output of the split "
                        "parameter '")
              << arg.name.getValue() << "' here: the split of its dim "
              << weight->outDim << " stops: " << reason;
        else
          op.emitRemark("tensor parallelism leaves parameter '")
              << arg.name.getValue()
              << "' replicated: the split of its output dim " << weight->outDim
              << " stops: " << reason;
        continue;
      }
      // A head whose split only ends in a cross-entropy (no row-parallel
      // partner) is split over its classes only where that pays: a small
      // classification head stays whole at no communication cost.
      if (!tied && rows.empty() && !forceVocabParallel &&
          !isVocabularySplitWorth(&op, *weight, arg))
        continue;
      for (Operation *op : decomposed)
        if (!llvm::is_contained(plan.decomposed, op))
          plan.decomposed.push_back(op);
      auto splitDim = [&](unsigned index, int64_t dim) {
        TensorSharding sharding = TensorSharding::replicated(
            cast<RankedTensorType>(step.arguments[index].type).getRank());
        sharding.dims[dim].push_back(modelAxis);
        return sharding;
      };
      plan.params.insert({*param, splitDim(*param, weight->outDim)});
      plan.columns.push_back({&op, *weight});
      for (auto [rowOp, rowWeight] : rows) {
        if (!rowOps.insert(rowOp).second)
          continue; // Also reached from another column (q, k and v).
        plan.rows.push_back({rowOp, rowWeight});
        unsigned rowParam =
            *getParamIndex(rowOp->getOperand(rowWeight.operand));
        plan.params.insert({rowParam, splitDim(rowParam, rowWeight.inDim)});
      }
      for (auto &[index, sharding] : reachedParams)
        plan.params.insert({index, sharding});
      split.insert(reached.begin(), reached.end());
      break;
    }
  }
  plan.forward = std::move(forward);
  return plan;
}

/// Annotates `value` with `sharding` once, right after its definition, for
/// the uses `select` accepts (one resharding shared by all of them).
static void annotateUses(Value value, ShardingAttr sharding,
                         function_ref<bool(OpOperand &)> select) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : value.getUses())
    if (select(use))
      uses.push_back(&use);
  if (uses.empty())
    return;
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  auto annotate = AnnotateOp::create(builder, value.getLoc(), value, sharding);
  for (OpOperand *use : uses)
    use->set(annotate);
}

/// True when `op` combines several tensors token by token without reducing
/// any of them (a residual add): a token split passes through it, so it
/// keeps the split operand rather than a gathered one.
static bool isTokenwise(Operation *op) {
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruleOp || op->getNumOperands() < 2)
    return false;
  ShardingRule rule = ruleOp.getShardingRule();
  return llvm::none_of(rule.getFactorKinds(), [](FactorKind kind) {
    return kind != FactorKind::Pass;
  });
}

/// The dim of result 0 of `op` that maps `factor`, or -1.
static int64_t getResultDimOf(const ShardingRule &rule, int64_t factor) {
  for (auto [d, factors] : llvm::enumerate(rule.getResultMappings()[0]))
    if (llvm::is_contained(factors, factor))
      return d;
  return -1;
}

/// The factor dim `dim` of operand `operand` maps (one factor), or -1.
static int64_t getOperandFactor(const ShardingRule &rule, unsigned operand,
                                int64_t dim) {
  const DimMapping &factors = rule.getOperandMappings()[operand][dim];
  return factors.size() == 1 ? factors[0] : -1;
}

namespace {
/// Megatron-LM's sequence parallelism on top of a tensor-parallel plan.
class SequenceParallelizer {
public:
  SequenceParallelizer(MeshOp mesh, int64_t modelAxis,
                       const TensorParallelPlan &plan)
      : mesh(mesh), modelAxis(modelAxis), plan(plan) {
    for (auto [op, weight] : plan.columns)
      columnOps.insert(op);
  }

  void run();

private:
  /// Splits every use of result 0 of `op` (a partial sum) along a token dim
  /// before `hiddenDim`, so partitioning reduce-scatters it.
  void scatterTokens(Operation *op, int64_t hiddenDim);
  /// Gathers the operands of `op` other than `weight` that map `factor`,
  /// once for every use that needs all the tokens.
  void gatherActivations(Operation *op, unsigned weight, int64_t factor);

  MeshOp mesh;
  int64_t modelAxis;
  const TensorParallelPlan &plan;
  llvm::DenseSet<Operation *> columnOps;
};
} // namespace

void SequenceParallelizer::scatterTokens(Operation *op, int64_t hiddenDim) {
  Value result = op->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  int64_t group = mesh.getShape()[modelAxis];
  // The token dims are the dims before the hidden one; the major-most that
  // divides is split, so that a reshape merging the token dims (the weight
  // gradients' [b * s, h] views) keeps contiguous blocks of tokens: Megatron
  // splits the major dim s of its [s, b, h] activations for the same reason.
  int64_t tokens = 0;
  while (tokens < hiddenDim && type.getDimSize(tokens) % group)
    ++tokens;
  if (tokens >= hiddenDim) {
    op->emitRemark("sequence parallelism keeps the all-reduce of this "
                   "partial sum: ")
        << type << " has no token dim before dim " << hiddenDim
        << " that divides over " << group << " devices";
    return;
  }
  TensorSharding split = TensorSharding::replicated(type.getRank());
  split.dims[tokens].push_back(modelAxis);
  annotateUses(result, toShardingAttr(split, mesh),
               [](OpOperand &) { return true; });
}

void SequenceParallelizer::gatherActivations(Operation *op, unsigned weight,
                                             int64_t factor) {
  ShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  for (OpOperand &operand : op->getOpOperands()) {
    if (operand.getOperandNumber() == weight)
      continue;
    if (auto annotate = operand.get().getDefiningOp<AnnotateOp>())
      if (llvm::all_of(annotate.getSharding().getDims(), [](Attribute dim) {
            return cast<ArrayAttr>(dim).empty();
          }))
        continue; // Already gathered for another layer.
    bool maps = llvm::any_of(
        rule.getOperandMappings()[operand.getOperandNumber()],
        [&](const DimMapping &dim) { return llvm::is_contained(dim, factor); });
    if (!maps)
      continue;
    auto type = cast<RankedTensorType>(operand.get().getType());
    ShardingAttr whole =
        toShardingAttr(TensorSharding::replicated(type.getRank()), mesh);
    // The tensor-parallel layers that read it, and the backward ops that
    // contract over its tokens (weight gradients), share one all-gather; a
    // residual add keeps the split tokens.
    annotateUses(operand.get(), whole, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (plan.forward.contains(user))
        return columnOps.contains(user);
      return !isTokenwise(user);
    });
  }
}

void SequenceParallelizer::run() {
  // Forward: reduce-scatter the row-parallel results, all-gather the
  // column-parallel inputs.
  for (auto [op, weight] : plan.rows) {
    ShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
    scatterTokens(op, getResultDimOf(rule, weight.outFactor));
  }
  for (auto [op, weight] : plan.columns)
    gatherActivations(op, weight.operand, weight.inFactor);

  // Backward: the input gradient of a column-parallel layer (a contraction
  // with its weight over the weight's split output dim: a partial sum) is
  // split along its tokens like the forward activations, so it is
  // reduce-scattered; the output gradient reaching a row-parallel layer (a
  // contraction with its weight over the weight's output dim) is gathered
  // once for all its uses but the residual (the weight gradient needs it
  // whole too).
  auto backwardUses = [&](Operation *forwardOp, unsigned operand) {
    SmallVector<std::pair<Operation *, unsigned>> uses;
    for (OpOperand &use : forwardOp->getOperand(operand).getUses()) {
      Operation *user = use.getOwner();
      if (user != forwardOp && !plan.forward.contains(user) &&
          isa<ShardingRuleOpInterface>(user))
        uses.push_back({user, use.getOperandNumber()});
    }
    return uses;
  };
  for (auto [op, weight] : plan.rows)
    for (auto [user, operand] : backwardUses(op, weight.operand)) {
      ShardingRule rule = cast<ShardingRuleOpInterface>(user).getShardingRule();
      int64_t out = getOperandFactor(rule, operand, weight.outDim);
      if (out < 0 || rule.getFactorKinds()[out] != FactorKind::Reduction)
        continue; // Not the input gradient.
      gatherActivations(user, operand, out);
    }
  // The backward of a vocabulary-parallel embedding (an op outside the
  // forward pass reading the lookup's indices) adds the gradient of every
  // token into the local rows: its token-indexed operands are gathered
  // (Megatron's all-gather before the embedding's backward), so the indices
  // stay whole.
  for (auto [lookup, table] : plan.lookups) {
    for (OpOperand &indices : lookup->getOpOperands()) {
      if (indices.getOperandNumber() == table ||
          !isa<RankedTensorType>(indices.get().getType()))
        continue;
      SmallVector<std::pair<Operation *, unsigned>> backward;
      for (OpOperand &use : indices.get().getUses())
        if (isa<ShardingRuleOpInterface>(use.getOwner()) &&
            !plan.forward.contains(use.getOwner()))
          backward.push_back({use.getOwner(), use.getOperandNumber()});
      for (auto [user, operand] : backward) {
        ShardingRule rule =
            cast<ShardingRuleOpInterface>(user).getShardingRule();
        for (const DimMapping &dim : rule.getOperandMappings()[operand])
          for (int64_t factor : dim)
            gatherActivations(user, operand, factor);
      }
    }
  }

  // The input gradients of column-parallel layers are partial sums; those
  // added together (q, k and v share their input) stay partial through the
  // adds, and the total is split along its tokens: one reduce-scatter.
  llvm::SetVector<Value> gradients;
  DenseMap<Value, int64_t> hiddenDims;
  for (auto [op, weight] : plan.columns)
    for (auto [user, operand] : backwardUses(op, weight.operand)) {
      ShardingRule rule = cast<ShardingRuleOpInterface>(user).getShardingRule();
      int64_t out = getOperandFactor(rule, operand, weight.outDim);
      int64_t in = getOperandFactor(rule, operand, weight.inDim);
      if (out < 0 || in < 0 ||
          rule.getFactorKinds()[out] != FactorKind::Reduction)
        continue; // Not the input gradient.
      gradients.insert(user->getResult(0));
      hiddenDims[user->getResult(0)] = getResultDimOf(rule, in);
    }
  llvm::SetVector<Operation *> totals;
  // By index: following a sum adds its result to `gradients`.
  for (size_t i = 0; i < gradients.size(); ++i) {
    Value total = gradients[i];
    while (total.hasOneUse()) {
      Operation *user = *total.getUsers().begin();
      auto ruleOp = dyn_cast<ShardingRuleOpInterface>(user);
      if (!ruleOp || !ruleOp.getShardingRule().isLinear() ||
          user->getNumResults() != 1 ||
          !llvm::all_of(user->getOperands(),
                        [&](Value v) { return gradients.contains(v); }))
        break;
      gradients.insert(user->getResult(0));
      hiddenDims[user->getResult(0)] = hiddenDims.lookup(total);
      total = user->getResult(0);
    }
    totals.insert(total.getDefiningOp());
  }
  for (Operation *total : totals)
    scatterTokens(total, hiddenDims.lookup(total->getResult(0)));
}

/// Annotates every training step of `module` with Megatron's plan over axis
/// `modelAxis` of `mesh`, with sequence parallelism when asked. A step in
/// which nothing can be split over more than one device is an error: the
/// devices of the model axis would all compute the same thing.
LogicalResult mlir::dist::annotateTensorParallel(ModuleOp module, MeshOp mesh,
                                                 int64_t modelAxis,
                                                 bool sequenceParallel,
                                                 bool forceVocabParallel) {
  int64_t size = mesh.getShape()[modelAxis];
  WalkResult result = module.walk([&](func::FuncOp func) {
    if (!train::TrainingStep::isTrainingStep(func) || func.isExternal())
      return WalkResult::advance();
    // One device per model group: nothing to split (every parameter whole).
    TensorParallelPlan plan =
        size == 1
            ? TensorParallelPlan()
            : TensorParallelPlanner(func, mesh, modelAxis, forceVocabParallel)
                  .run();
    if (plan.params.empty() && size > 1) {
      mlir::emitError(func.getLoc())
          << "tensor parallelism finds nothing to split over " << size
          << " devices in training step '" << func.getSymName()
          << "' (no column/row weight pair or embedding table divides; the "
             "remarks say why for each weight)";
      return WalkResult::interrupt();
    }
    train::TrainingStep step = train::TrainingStep::get(func);
    StepShardings shardings(func, step);
    for (auto &[index, sharding] : plan.params)
      shardings.setState(step.arguments[index], toShardingAttr(sharding, mesh));
    // The other parameters stay whole, updates included: left to
    // propagation, the update of a row-parallel layer's bias could follow
    // its split gradient and no longer match the argument.
    for (const train::StepValue &arg : step.arguments)
      if (arg.role == train::Role::param && !plan.params.count(arg.index))
        if (auto type = dyn_cast<RankedTensorType>(arg.type))
          shardings.setState(
              arg,
              toShardingAttr(TensorSharding::replicated(type.getRank()), mesh));
    shardings.apply();
    if (sequenceParallel)
      SequenceParallelizer(mesh, modelAxis, plan).run();
    // Megatron's vocabulary-parallel cross-entropy: the logits stay split;
    // the per-token maximum and sums are all-reduced.
    // One at a time, in program order: a decomposition may also rewrite
    // (erase) other recorded ops, such as a second loss of the same logits.
    llvm::SmallPtrSet<Operation *, 4> pending(plan.decomposed.begin(),
                                              plan.decomposed.end());
    while (!pending.empty()) {
      ShardingRuleOpInterface next;
      func.walk([&](ShardingRuleOpInterface op) {
        if (!next && pending.contains(op))
          next = op;
      });
      if (!next)
        break;
      pending.erase(next);
      next.decompose();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct DistAnnotateTensorParallelPass
    : public mlir::dist::impl::DistAnnotateTensorParallelPassBase<
          DistAnnotateTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (size < 1) {
      emitOptionError(module, "dist-annotate-tensor-parallel")
          << "needs size >= 1, got " << static_cast<int64_t>(size);
      return signalPassFailure();
    }
    if (failed(checkSingleDevice(module)))
      return signalPassFailure();
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", {"model"}, {size}, {});
    if (failed(mesh))
      return signalPassFailure();
    if (failed(annotateTensorParallel(module, *mesh, /*modelAxis=*/0,
                                      sequenceParallel, forceVocabParallel)))
      return signalPassFailure();
  }
};

struct DistAnnotateHybridPass
    : public mlir::dist::impl::DistAnnotateHybridPassBase<
          DistAnnotateHybridPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (hosts < 1 || dp < 1 || tp < 1 || zero < 0 || zero > 3) {
      emitOptionError(module, "dist-annotate-hybrid")
          << "needs hosts >= 1, dp >= 1, tp >= 1 and zero 0, 1, 2 or 3, got "
             "hosts "
          << static_cast<int64_t>(hosts) << ", dp " << static_cast<int64_t>(dp)
          << ", tp " << static_cast<int64_t>(tp) << " and zero "
          << static_cast<int64_t>(zero);
      return signalPassFailure();
    }
    if (failed(checkSingleDevice(module)))
      return signalPassFailure();
    // 2-D data x model, or 3-D hosts x data x model across hosts.
    bool multiHost = hosts > 1;
    SmallVector<StringRef> axes = {"data", "model"};
    SmallVector<int64_t> shape = {dp, tp};
    SmallVector<StringRef> hostAxes;
    if (multiHost) {
      axes.insert(axes.begin(), "hosts");
      shape.insert(shape.begin(), hosts);
      hostAxes.push_back("hosts");
    }
    SmallVector<int64_t> dataAxes =
        multiHost ? SmallVector<int64_t>{0, 1} : SmallVector<int64_t>{0};
    int64_t modelAxis = multiHost ? 2 : 1;
    int64_t replicas = hosts * dp;
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", axes, shape, hostAxes);
    if (failed(mesh))
      return signalPassFailure();
    if (failed(annotateTensorParallel(module, *mesh, modelAxis,
                                      /*sequenceParallel=*/false)) ||
        failed(annotateDataParallel(module, *mesh, dataAxes, replicas,
                                    /*replicateState=*/false)))
      return signalPassFailure();
    if (zero > 0)
      applyZero(module, *mesh, zero, dataAxes, replicas);
  }
};
} // namespace
