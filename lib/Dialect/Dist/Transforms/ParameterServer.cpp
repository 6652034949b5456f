//===- ParameterServer.cpp - parameter servers (dist-parameter-server) ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// tf.distribute's ParameterServerStrategy as placed programs on a 1-D mesh
// of tasks: servers `0..ps-1` hold the parameters and their optimizer state
// (a large variable split by rows across servers, as TF's
// MinSizePartitioner / FixedShardsPartitioner split it), workers
// `ps..ps+workers-1` each compute the gradients of their block of the
// batch. Per step:
//
//   - pull: each server sends its shards to every worker, which
//     concatenates a variable's shards in its forward fragment;
//   - compute: each worker runs the forward (F) and backward (B) of its
//     block;
//   - push: each worker sends each gradient shard (a slice of rows) to the
//     server that holds it, and its part of the loss to server 0;
//   - update (U): each server sums the workers' parts in worker order and
//     applies the optimizer to its shards (`mode=sync`: the step equals the
//     single-device step).
//
// Which values are sums over the batch (gradients, the loss) and which ops
// are per sample is decided as the pipeline decides it (PipelineBuilder):
// the step partitioned over `workers` parts of the batch.
//
//===----------------------------------------------------------------------===//

#include "ParameterServerBuilder.h"
#include "Strategies.h"

#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/OpCost.h"

#include "llvm/Support/Debug.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPARAMETERSERVERPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-parameter-server"

using namespace mlir;
using namespace mlir::dist;

PlaceAttr ParameterServerBuilder::placeOfTask(int64_t task) const {
  MLIRContext *context = builder.getContext();
  return PlaceAttr::get(context, FlatSymbolRefAttr::get(context, kClusterMesh),
                        {StringAttr::get(context, kTaskAxis)}, {task});
}

SmallVector<int64_t>
ParameterServerBuilder::splitRows(int64_t rows, int64_t bytes,
                                  const PartitionPolicy &policy) const {
  int64_t count = 1;
  if (rows > 1) {
    if (policy.kind == PartitionPolicy::Kind::fixed)
      count = std::min(policy.shards, rows);
    else
      count = std::max<int64_t>(
          1, std::min({rows, bytes / std::max<int64_t>(policy.minShardBytes, 1),
                       policy.shards}));
  }
  // As evenly as possible, the first shards one row larger (TF's order).
  SmallVector<int64_t> sizes(count, rows / count);
  for (int64_t i = 0; i < rows % count; ++i)
    ++sizes[i];
  return sizes;
}

void ParameterServerBuilder::accumulateWholeBatchValues() {
  assert(workers == 1 && "only one worker's values are sums over the batch");
  Builder attrs(module.getContext());
  ArrayAttr axes = attrs.getStrArrayAttr({kMicrobatchAxis});
  auto accumulate = [&](Operation *before, Value value) -> Value {
    Operation *def = value.getDefiningOp();
    if (!def || !mbOps.contains(def) || isFree(def))
      return nullptr;
    OpBuilder b(before);
    auto acc = AllReduceOp::create(
        b, value.getLoc(), TypeRange{value.getType()}, ValueRange{value},
        ReductionKind::sum, kMicrobatchMesh, axes);
    accumulations.push_back(acc);
    return acc.getResult(0);
  };
  for (Operation &op : func.front().without_terminator()) {
    auto optimizer = dyn_cast<train::OptimizerOpInterface>(&op);
    if (!optimizer || !mbOps.contains(&op))
      continue;
    Value grad = optimizer.getGrad();
    if (Value sum = accumulate(&op, grad))
      for (OpOperand &operand : op.getOpOperands())
        if (operand.get() == grad)
          operand.set(sum);
  }
  // The loss, the metrics and state the step computes without an
  // optimizer (a batch norm's running statistics and its step count): on
  // server 0 as the loss.
  Operation *ret = func.front().getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    if (isa_and_nonnull<train::OptimizerOpInterface>(
            operand.get().getDefiningOp()))
      continue;
    if (Value sum = accumulate(ret, operand.get()))
      operand.set(sum);
  }
}

LogicalResult
ParameterServerBuilder::placeVariables(const PartitionPolicy &policy) {
  shardsOf.assign(func.getNumArguments(), {});
  placeLossScaleUpdate();
  if (failed(classifyUpdateOps()))
    return failure();
  // The servers' ops leave the workers.
  for (train::OptimizerOpInterface optimizer : optimizers)
    mbOps.remove(optimizer);
  for (auto [op, param] : shardwiseOf)
    mbOps.remove(op);
  if (failed(classifyFiniteness()) || failed(checkGradientInputs()) ||
      failed(assignLossPath()))
    return failure();
  // A gradient summed in another shape than its variable's (a bias's, as
  // [1, C, 1, 1]) is not split by rows: the variable stays whole.
  for (auto [acc, param] : gradientOf)
    if (param >= 0 && cast<AllReduceOp>(acc).getOperand(0).getType() !=
                          func.getArgument(param).getType())
      wholeOnly.insert(param);
  if (failed(placeAll(policy)))
    return failure();
  findSparseTables();
  assignWorkerValues();
  return success();
}

void ParameterServerBuilder::placeLossScaleUpdate() {
  findLossScaling();
  if (lossScaling.scaleOps.empty())
    return;
  // The scale's and the tracker's new values and the ops only they read
  // run on server 0, which holds the scale; the seed and the scale's
  // reciprocal stay with the workers, which read them.
  SmallVector<Operation *> body;
  for (Operation &op : func.front().without_terminator())
    body.push_back(&op);
  DenseSet<Operation *> onServer;
  for (Operation *op : llvm::reverse(body))
    if (lossScaling.scaleOps.contains(op) &&
        llvm::all_of(op->getUsers(), [&](Operation *user) {
          return isa<func::ReturnOp>(user) || onServer.contains(user);
        }))
      onServer.insert(op);
  llvm::SetVector<Operation *> update;
  for (Operation *op : body) {
    if (onServer.contains(op) && mbOps.remove(op))
      unitKind[op] = UnitKind::update;
    if (stepOps.contains(op) || onServer.contains(op))
      update.insert(op);
  }
  stepOps = std::move(update);
}

/// Whether a server may run `op` on any shard of a variable: an op that
/// maps elements (train's ElementwiseOpInterface, upstream's Elementwise
/// trait) on operands of its result's shape or scalars.
static bool isElementwise(Operation *op) {
  if (auto elementwise = dyn_cast<train::ElementwiseOpInterface>(op))
    return elementwise.isElementwiseOnShapes();
  return op->hasTrait<OpTrait::Elementwise>() &&
         train::hasElementwiseShapes(op);
}

LogicalResult ParameterServerBuilder::classifyUpdateOps() {
  // The update: optimizers on summed gradients, elementwise ops on a
  // gradient before its optimizer, and the loss path.
  // Every optimizer runs on the servers, also one whose gradient does not
  // depend on the batch (a parameter the loss does not read, updated with
  // a zero gradient), and so do the elementwise ops that feed only one
  // variable's gradient, on the batch's sum or on the parameters.
  SmallVector<Operation *> body;
  for (Operation &op : func.front().without_terminator())
    body.push_back(&op);
  for (Operation *op : llvm::reverse(body)) {
    bool perSample = mbOps.contains(op);
    if (!perSample && !stepOps.contains(op))
      continue;
    // The gradients' finiteness (classifyFiniteness), and the loss
    // scale's ops that the workers run (the seed, the scale's reciprocal,
    // even when one variable's unscaling alone reads it: only server 0
    // holds the scale).
    if (lossScaling.sums.contains(op) ||
        (perSample && lossScaling.scaleOps.contains(op)))
      continue;
    // A variable or its state kept when a gradient is not finite: with
    // the variable's shards (a variable the step does not change, with its
    // own).
    if (BlockArgument kept = train::getKeptArgument(op)) {
      std::optional<unsigned> variable;
      if (cast<train::SelectOp>(op).getOnTrue() == kept)
        variable = kept.getArgNumber();
      else if (train::OptimizerOpInterface update =
                   train::getUpdateOf(op->getResult(0), kept))
        if (auto param = dyn_cast<BlockArgument>(update.getParam()))
          variable = param.getArgNumber();
      if (variable) {
        skipping.keptOf[op] = *variable;
        continue;
      }
    }
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op)) {
      auto param = dyn_cast<BlockArgument>(optimizer.getParam());
      if (!param)
        return op->emitError() << "dist-parameter-server: a server applies "
                                  "the optimizer to a parameter argument; "
                                  "this optimizer's parameter is computed";
      for (Value state : optimizer.getParamShapedState())
        if (!isa<BlockArgument>(state))
          return op->emitError() << "dist-parameter-server: this optimizer's "
                                    "state is computed, not a step argument";
      optimizers.insert(optimizers.begin(), optimizer);
      paramOf[op] = param.getArgNumber();
      continue;
    }
    if (perSample && (batchOps.contains(op) || isFree(op)))
      continue;
    // Feeds only the gradient of one variable's optimizers (directly or
    // through other such ops)?
    std::optional<unsigned> variable;
    bool onlyGradient = !op->use_empty();
    for (OpOperand &use : op->getUses()) {
      Operation *user = use.getOwner();
      // (The finiteness of an unscaled gradient is its variable's too.)
      if (lossScaling.sums.contains(user))
        continue;
      std::optional<unsigned> of;
      if (auto next = dyn_cast<train::OptimizerOpInterface>(user);
          next && next.getGrad() == use.get())
        of = paramOf.lookup(user);
      else if (shardwiseOf.count(user))
        of = shardwiseOf.lookup(user);
      if (!of || (variable && *variable != *of)) {
        onlyGradient = false;
        break;
      }
      variable = of;
    }
    onlyGradient = onlyGradient && variable;
    auto paramType =
        onlyGradient
            ? dyn_cast<RankedTensorType>(func.getArgument(*variable).getType())
            : nullptr;
    // Elementwise ops run on any shard; others (a reshape of a bias's
    // gradient) keep their variable whole on one server.
    bool rowwise = onlyGradient && isElementwise(op) &&
                   op->getResult(0).getType() == paramType;
    bool shardwise = onlyGradient;
    if (shardwise && !rowwise)
      wholeOnly.insert(*variable);
    if (perSample) {
      // The workers compute it unless it is a gradient term of one
      // variable that its servers can compute on their shards.
      if (shardwise && llvm::none_of(op->getOperands(), [&](Value operand) {
            Operation *def = operand.getDefiningOp();
            return def && mbOps.contains(def) && !isFree(def) &&
                   !shardwiseOf.count(def);
          }))
        shardwiseOf[op] = *variable;
      continue;
    }
    bool feedsOptimizer = llvm::any_of(op->getUsers(), [&](Operation *user) {
      return isa<train::OptimizerOpInterface>(user) || shardwiseOf.count(user);
    });
    if (!feedsOptimizer) {
      lossOps.insert(lossOps.begin(), op);
      continue;
    }
    if (!shardwise)
      return op->emitError()
             << "dist-parameter-server: this op changes the gradients of "
                "several parameters after their sum over the batch "
                "(clipping by the global norm does, for example): each "
                "server updates its own variables alone";
    shardwiseOf[op] = *variable;
  }
  return success();
}

LogicalResult ParameterServerBuilder::classifyFiniteness() {
  // The flag: the condition the selects keep the variables and state on
  // (those of no optimizer's variable, as a batch norm's running
  // statistics, are server 0's).
  for (Operation &op : func.front().without_terminator()) {
    if (!train::getKeptArgument(&op))
      continue;
    Value condition = cast<train::SelectOp>(op).getCondition();
    if (skipping.flag && skipping.flag != condition)
      return op.emitError() << "dist-parameter-server: this select keeps a "
                               "variable on another condition than the "
                               "others; a parameter-server step keeps every "
                               "variable on one flag";
    skipping.flag = condition;
  }
  if (!skipping.flag)
    return success();
  skipping.flagOp = skipping.flag.getDefiningOp();
  if (!skipping.flagOp || !lossScaling.sums.contains(skipping.flagOp))
    return mlir::emitError(skipping.flag.getLoc())
           << "dist-parameter-server: the flag the variables are kept on "
              "(dynamic loss scaling) is not computed from the gradients "
              "summed over the batch";
  // The variable whose gradient `value` is, or is computed from.
  auto variableOf = [&](Value value) -> std::optional<unsigned> {
    Operation *def = value.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto it = shardwiseOf.find(def); it != shardwiseOf.end())
      return it->second;
    if (auto it = skipping.partOf.find(def); it != skipping.partOf.end())
      return it->second;
    if (auto acc = dyn_cast<AllReduceOp>(def);
        acc && llvm::is_contained(accumulations, acc))
      for (Operation *user : acc->getUsers()) {
        if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(user);
            optimizer && optimizer.getGrad() == value)
          return paramOf.lookup(user);
        if (shardwiseOf.count(user))
          return shardwiseOf.lookup(user);
      }
    return std::nullopt;
  };
  // Each variable's part (on its shards: elementwise in its shape, or a
  // sum of all its elements; else the variable stays whole), and the
  // adds of the parts.
  auto isPart = [&](Value value) {
    Operation *def = value.getDefiningOp();
    return def && (skipping.combine.contains(def) ||
                   (skipping.partOf.count(def) &&
                    cast<RankedTensorType>(value.getType()).getRank() == 0));
  };
  for (Operation &each : func.front().without_terminator()) {
    Operation *op = &each;
    if (!lossScaling.sums.contains(op) || op == skipping.flagOp)
      continue;
    if (isa<train::AddOp>(op) && llvm::all_of(op->getOperands(), isPart)) {
      skipping.combine.insert(op);
      continue;
    }
    std::optional<unsigned> variable;
    bool one = true;
    for (Value operand : op->getOperands())
      if (skipping.combine.contains(operand.getDefiningOp()))
        one = false;
      else if (std::optional<unsigned> of = variableOf(operand)) {
        one = one && (!variable || *variable == *of);
        variable = of;
      }
    if (!variable || !one)
      return op->emitError()
             << "dist-parameter-server: the finiteness of the gradients "
                "(dynamic loss scaling) must be a sum of one part per "
                "variable's gradient, each server adding its own; this op "
                "is neither on one variable's gradient alone nor an add of "
                "such parts";
    Type paramType = func.getArgument(*variable).getType();
    auto reduce = dyn_cast<train::ReduceOp>(op);
    bool sumOfAll = reduce && reduce.getKind() == train::ReduceKind::sum &&
                    cast<RankedTensorType>(reduce.getType()).getRank() == 0 &&
                    reduce.getOperand().getType() == paramType;
    if (!sumOfAll &&
        !(isElementwise(op) && op->getResult(0).getType() == paramType))
      wholeOnly.insert(*variable);
    skipping.partOf[op] = *variable;
  }
  // The flag reads the sum of every part, each once.
  Value root = skipping.flagOp->getOperand(0);
  if (!llvm::all_equal(skipping.flagOp->getOperands()) || !isPart(root))
    return skipping.flagOp->emitError()
           << "dist-parameter-server: the flag the variables are kept on "
              "(dynamic loss scaling) must read the sum of the gradients' "
              "parts alone";
  DenseMap<Operation *, int64_t> added;
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (skipping.combine.contains(def))
      llvm::append_range(worklist, def->getOperands());
    else
      ++added[def];
  }
  for (Operation &op : func.front().without_terminator()) {
    int64_t count = added.lookup(&op);
    if (count > 1)
      return op.emitError() << "dist-parameter-server: this part of the "
                               "gradients' finiteness is added "
                            << count << " times; each server adds its own once";
    if (count == 1)
      skipping.parts.push_back(&op);
  }
  return success();
}

LogicalResult ParameterServerBuilder::checkGradientInputs() {
  // What the gradient ops read: the summed gradient, the variable and its
  // state, scalars (anything on the server for a variable kept whole).
  SmallVector<std::pair<Operation *, unsigned>> onGradients;
  for (Operation &op : func.front().without_terminator()) {
    if (auto it = shardwiseOf.find(&op); it != shardwiseOf.end())
      onGradients.push_back({&op, it->second});
    if (auto it = skipping.partOf.find(&op); it != skipping.partOf.end())
      onGradients.push_back({&op, it->second});
  }
  for (auto [op, param] : onGradients)
    for (Value operand : op->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      Operation *def = operand.getDefiningOp();
      if (auto acc = dyn_cast_or_null<AllReduceOp>(def);
          acc && llvm::is_contained(accumulations, acc)) {
        if (auto [it, fresh] = gradientOf.try_emplace(acc, param);
            !fresh && it->second != param)
          return op->emitError() << "dist-parameter-server: two parameters "
                                    "are updated with the same gradient";
        continue;
      }
      if (type.getRank() == 0 ||
          (def && (shardwiseOf.count(def) || skipping.partOf.count(def))) ||
          isa<BlockArgument>(operand) || (def && isShardableConstant(def)) ||
          (wholeOnly.contains(param) && def && isFree(def)))
        continue;
      return op->emitError()
             << "dist-parameter-server: this op on a summed gradient reads a "
                "whole tensor computed elsewhere; a server applies the update "
                "to its shard alone";
    }
  for (train::OptimizerOpInterface optimizer : optimizers) {
    unsigned param = paramOf.lookup(optimizer);
    Value grad = optimizer.getGrad();
    auto acc = grad.getDefiningOp<AllReduceOp>();
    if (acc && llvm::is_contained(accumulations, acc)) {
      if (auto [it, fresh] = gradientOf.try_emplace(acc, param);
          !fresh && it->second != param)
        return optimizer->emitError() << "dist-parameter-server: two "
                                         "parameters are updated with the "
                                         "same gradient";
    } else if (Operation *def = grad.getDefiningOp();
               !def || !(shardwiseOf.count(def) || isShardableConstant(def))) {
      return optimizer->emitError()
             << "dist-parameter-server: a server applies the optimizer to "
                "the gradient summed over the batch; this optimizer's "
                "gradient is not that sum";
    }
  }
  return success();
}

LogicalResult ParameterServerBuilder::assignLossPath() {
  for (AllReduceOp acc : accumulations) {
    if (gradientOf.count(acc)) {
      for (Operation *user : acc->getUsers())
        if (!isa<train::OptimizerOpInterface>(user) &&
            !shardwiseOf.count(user) && !skipping.partOf.count(user))
          return user->emitError()
                 << "dist-parameter-server: this op reads a summed gradient "
                    "that a server also applies; only the optimizer may";
      continue;
    }
    gradientOf[acc] = -1;
  }
  return success();
}

bool ParameterServerBuilder::runsOn(Operation *op, int64_t s) const {
  if (auto it = paramOf.find(op); it != paramOf.end())
    return shardOn(it->second, s);
  for (const DenseMap<Operation *, unsigned> *ofVariable :
       {&shardwiseOf, &skipping.partOf, &skipping.keptOf})
    if (auto it = ofVariable->find(op); it != ofVariable->end())
      return shardOn(it->second, s);
  // Server 0 sums the parts of the flag its own way (writeGate).
  if (skipping.combine.contains(op) || op == skipping.flagOp)
    return false;
  return s == 0 && stepOps.contains(op);
}

void ParameterServerBuilder::assignWorkerValues() {
  for (Operation &op : func.front().without_terminator())
    for (int64_t s = 0; s < servers; ++s) {
      if (!runsOn(&op, s))
        continue;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && mbOps.contains(def) && !isFree(def)) {
          fromWorker0.insert(operand);
          SmallVector<int64_t> &to = fromWorker0To[operand];
          if (!llvm::is_contained(to, s))
            to.push_back(s);
        }
    }
  for (auto &[value, to] : fromWorker0To)
    llvm::sort(to);
}

LogicalResult ParameterServerBuilder::placeShards(unsigned arg,
                                                  ArrayRef<Value> with,
                                                  const PartitionPolicy &policy,
                                                  int64_t &next) {
  auto type = dyn_cast<RankedTensorType>(func.getArgument(arg).getType());
  if (!type)
    return func.emitError() << "dist-parameter-server: argument #" << arg
                            << " is not a ranked tensor";
  int64_t rows = type.getRank() ? type.getDimSize(0) : 1;
  SmallVector<int64_t> sizes = splitRows(rows, getTensorBytes(type), policy);
  if (type.getRank() == 0)
    sizes = {1};
  if (sizes.size() > 1 && wholeOnly.contains(arg)) {
    mlir::emitRemark(func.getArgument(arg).getLoc())
        << "dist-parameter-server: " << argAttrs[arg].get("train.name")
        << " stays whole on one server (the partitioner would split it "
           "into "
        << sizes.size()
        << "): its gradient is summed in another shape or changed by an op "
           "that is not elementwise";
    sizes = {rows};
  }
  int64_t begin = 0;
  SmallVector<Shard> shards;
  for (int64_t size : sizes) {
    shards.push_back({next++ % servers, begin, begin + size});
    begin += size;
  }
  shardsOf[arg] = shards;
  for (Value state : with) {
    unsigned index = cast<BlockArgument>(state).getArgNumber();
    if (!shardsOf[index].empty())
      return func.emitError()
             << "dist-parameter-server: optimizer state argument #" << index
             << " belongs to two parameters";
    shardsOf[index] = shards;
  }
  return success();
}

LogicalResult ParameterServerBuilder::placeAll(const PartitionPolicy &policy) {
  // Variables in argument order, their shards round robin over the
  // servers (TF places partitions round robin): a parameter and its
  // optimizer state share shards.
  int64_t next = 0;
  for (BlockArgument arg : func.getArguments()) {
    if (argRoles[arg.getArgNumber()] != train::Role::param)
      continue;
    SmallVector<Value> state;
    for (train::OptimizerOpInterface optimizer : optimizers)
      if (paramOf[optimizer] == arg.getArgNumber())
        llvm::append_range(state, optimizer.getParamShapedState());
    if (failed(placeShards(arg.getArgNumber(), state, policy, next)))
      return failure();
  }
  // Optimizer state of no parameter (a step count) is copied to every
  // server that updates with it; other state lives on server 0.
  for (BlockArgument arg : func.getArguments())
    if (argRoles[arg.getArgNumber()] == train::Role::opt_state &&
        shardsOf[arg.getArgNumber()].empty() &&
        isa<RankedTensorType>(arg.getType()))
      if (!llvm::any_of(arg.getUsers(), [&](Operation *user) {
            return isa<train::OptimizerOpInterface>(user);
          }))
        shardsOf[arg.getArgNumber()] = {
            {0, 0,
             cast<RankedTensorType>(arg.getType()).getRank()
                 ? cast<RankedTensorType>(arg.getType()).getDimSize(0)
                 : 1}};
  return success();
}

void ParameterServerBuilder::findSparseTables() {
  for (AllReduceOp acc : accumulations) {
    int64_t param = gradientOf.lookup(acc);
    if (param < 0)
      continue;
    BlockArgument table = func.getArgument(param);
    auto scatter = acc.getOperand(0).getDefiningOp<train::ScatterAddOp>();
    auto indices = scatter ? dyn_cast<BlockArgument>(scatter.getIndices())
                           : BlockArgument();
    SparseTable entry;
    bool lookupsOnly = llvm::all_of(table.getUsers(), [&](Operation *user) {
      if (!mbOps.contains(user))
        return true;
      auto lookup = dyn_cast<train::GatherOp>(user);
      if (!lookup || lookup.getTable() != table ||
          lookup.getIndices() != indices || lookup.getRowOffset())
        return false;
      entry.lookups.push_back(lookup);
      return true;
    });
    // A variable no per-sample op gathers rows of is not a table.
    bool gathered = llvm::any_of(table.getUsers(), [&](Operation *user) {
      auto lookup = dyn_cast<train::GatherOp>(user);
      return lookup && mbOps.contains(user) && lookup.getTable() == table;
    });
    if (!gathered)
      continue;
    if (!scatter || !lookupsOnly || !indices ||
        microbatchDim[indices.getArgNumber()] < 0 || scatter.getRowOffset() ||
        !scatter->hasOneUse() ||
        !matchPattern(scatter.getInit(), m_AnyZeroFloat())) {
      mlir::emitRemark(table.getLoc())
          << "dist-parameter-server: embedding table "
          << argAttrs[param].get("train.name")
          << " is pulled and pushed whole: its rows are looked up sparsely "
             "only when every use gathers rows of it by one batch argument "
             "and its gradient is a scatter-add of those rows into zeros";
      continue;
    }
    entry.gradient = scatter;
    entry.indices = indices.getArgNumber();
    serverOnly.insert(scatter);
    sparse[param] = entry;
  }
}

RankedTensorType ParameterServerBuilder::shardType(unsigned arg,
                                                   const Shard &shard) const {
  auto type =
      cast<RankedTensorType>(func::FuncOp(func).getArgument(arg).getType());
  if (type.getRank() == 0)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = shard.end - shard.begin;
  return type.clone(shape);
}

DictionaryAttr
ParameterServerBuilder::attrsWithBlock(DictionaryAttr attrs, Type global,
                                       const Shard *shard) const {
  MLIRContext *context = builder.getContext();
  NamedAttrList kept = getTrainAttrs(attrs);
  auto type = cast<RankedTensorType>(global);
  if (shard && type.getRank() > 0 &&
      shard->end - shard->begin != type.getDimSize(0)) {
    SmallVector<int64_t> offsets(type.getRank(), 0);
    offsets[0] = shard->begin;
    kept.set(DistDialect::kBlockAttrName,
             BlockAttr::get(context, offsets, type.getShape()));
  }
  return kept.getDictionary(context);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct DistParameterServerPass
    : public mlir::dist::impl::DistParameterServerPassBase<
          DistParameterServerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PartitionPolicy policy;
    policy.shards =
        shards > 0 ? static_cast<int64_t>(shards) : static_cast<int64_t>(ps);
    policy.minShardBytes = minShardBytes;
    policy.kind = partitioner == "fixed" ? PartitionPolicy::Kind::fixed
                                         : PartitionPolicy::Kind::minSize;
    if (ps < 1 || workers < 1 || shards < 0 || minShardBytes < 1 ||
        (partitioner != "min-size" && partitioner != "fixed") ||
        (mode != "sync" && mode != "async")) {
      emitOptionError(module, "dist-parameter-server")
          << "needs ps >= 1, workers >= 1, shards >= 0, min-shard-bytes >= 1, "
             "partitioner=min-size|fixed and mode=sync|async, got ps="
          << static_cast<int64_t>(ps)
          << " workers=" << static_cast<int64_t>(workers)
          << " shards=" << static_cast<int64_t>(shards)
          << " min-shard-bytes=" << static_cast<int64_t>(minShardBytes)
          << " partitioner=" << partitioner << " mode=" << mode;
      return signalPassFailure();
    }
    if (policy.shards > ps) {
      emitOptionError(module, "dist-parameter-server")
          << "shards=" << policy.shards
          << " is more than ps=" << static_cast<int64_t>(ps)
          << ": each server holds at most one shard of a variable";
      return signalPassFailure();
    }
    if (failed(checkDeviceCounts(getOptionLocation(module),
                                 "dist-parameter-server", {{"ps", ps}})) ||
        failed(checkDeviceCounts(getOptionLocation(module),
                                 "dist-parameter-server",
                                 {{"workers", workers}})) ||
        failed(checkCountBound(
            getOptionLocation(module), "dist-parameter-server", "ps + workers",
            ps + workers, kMaxDevices, "the most devices a mesh may have")))
      return signalPassFailure();
    FailureOr<func::FuncOp> step =
        getSingleTrainingStep(module, "dist-parameter-server");
    if (failed(step) || failed(checkBatchBound(module, "dist-parameter-server",
                                               "workers", workers, "worker")))
      return signalPassFailure();
    func::FuncOp func = *step;
    train::TrainingStep trainingStep = train::TrainingStep::get(func);
    // Each request of mode=async updates the variables alone: no step's
    // gradients decide one skip.
    if (const train::StepValue *skipped = trainingStep.getSkippedUpdate();
        skipped && mode == "async") {
      trainingStep.emitResultError(*skipped)
          << "is kept when a gradient is not finite (dynamic loss scaling, "
             "train-mixed-precision loss-scale=dynamic): "
             "dist-parameter-server mode=async applies each worker's "
             "gradients as they arrive, so no one step's gradients decide "
             "whether to skip the update; use mode=sync with dynamic loss "
             "scaling, or loss-scale=static (or compute=bf16 "
             "loss-scale=none) with mode=async";
      return signalPassFailure();
    }
    // A server holds at least one row of a variable.
    int64_t rows = 0;
    for (const train::StepValue &arg : trainingStep.arguments)
      if (auto type = dyn_cast<RankedTensorType>(arg.type);
          type && arg.role == train::Role::param)
        rows += type.getRank() ? type.getDimSize(0) : 1;
    if (ps > rows) {
      mlir::emitError(func.getLoc())
          << "dist-parameter-server: ps=" << static_cast<int64_t>(ps)
          << " is more than " << rows
          << ", the rows of the parameters of step '" << func.getSymName()
          << "' (a server holds at least one row)";
      return signalPassFailure();
    }
    // The module as it was, kept with the programs (PlacementSource.h).
    OwningOpRef<ModuleOp> source = module.clone();
    SetAsideEvaluation evaluation(module, "dist-parameter-server");
    ParameterServerBuilder builder(module, func, ps, workers);
    auto run = [&](OpPassManager &pm) { return runPipeline(pm, module); };
    if (failed(builder.partitionMicrobatches(run)) ||
        failed(builder.analyzePhases()))
      return signalPassFailure();
    if (workers == 1)
      builder.accumulateWholeBatchValues();
    if (failed(builder.placeVariables(policy)) ||
        failed(getOrCreateMesh(module, kClusterMesh, {kTaskAxis},
                               {ps + workers}, {})) ||
        failed(builder.writeServerPrograms(mode)))
      return signalPassFailure();
    if (failed(finishPrograms(module, func)))
      return signalPassFailure();
    // The fingerprint covers the evaluation functions too.
    evaluation.restore();
    keepPlacementSource(module, std::move(source), getPipelineText(*this));
    LLVM_DEBUG({
      CommunicationTally tally = tallyCommunication(module);
      llvm::dbgs() << DEBUG_TYPE << ": " << builder.getNumVariables()
                   << " variables in " << builder.getNumShards() << " shards, "
                   << builder.getNumSparseTables() << " sparse tables, "
                   << tally.transfers << " sends of " << tally.transferBytes
                   << " bytes\n";
    });
  }
};
} // namespace
