//===- PipelineStages.cpp - dist-pipeline: which stage runs each op -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Forward ops take the stage of their `train.stage` annotation or of an even
// cut by estimated time; parameters, updates and backward ops follow them
// (see assignStages); zb-h1 splits each stage's backward into B and W.
//
//===----------------------------------------------------------------------===//

#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include <set>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

std::optional<int64_t> PipelineBuilder::annotatedStage(Operation *op) const {
  if (auto attr =
          op->getAttrOfType<IntegerAttr>(train::TrainDialect::kStageAttrName))
    return attr.getInt();
  return std::nullopt;
}

SmallVector<size_t> mlir::dist::cutEvenly(ArrayRef<double> weights,
                                          int64_t parts) {
  auto greedy = [&](double cap) {
    SmallVector<size_t> starts = {0};
    double sum = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (sum + weights[i] > cap && sum > 0) {
        starts.push_back(i);
        sum = 0;
      }
      sum += weights[i];
    }
    return starts;
  };
  double low = *llvm::max_element(weights), high = 0;
  for (double w : weights)
    high += w;
  for (int i = 0; i < 100 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    if (static_cast<int64_t>(greedy(mid).size()) <= parts)
      high = mid;
    else
      low = mid;
  }
  SmallVector<size_t> starts = greedy(high);
  // Fewer groups than parts: split the heaviest splittable group, which
  // keeps the largest sum within the bound.
  while (static_cast<int64_t>(starts.size()) < parts) {
    size_t best = 0;
    double bestSum = -1;
    for (size_t g = 0; g < starts.size(); ++g) {
      size_t end = g + 1 < starts.size() ? starts[g + 1] : weights.size();
      if (end - starts[g] < 2)
        continue;
      double sum = 0;
      for (size_t i = starts[g]; i < end; ++i)
        sum += weights[i];
      if (sum > bestSum) {
        bestSum = sum;
        best = g;
      }
    }
    size_t end = best + 1 < starts.size() ? starts[best + 1] : weights.size();
    double half = 0;
    size_t cut = starts[best] + 1;
    for (size_t i = starts[best]; i + 1 < end; ++i) {
      half += weights[i];
      cut = i + 1;
      if (half >= bestSum / 2)
        break;
    }
    starts.insert(starts.begin() + best + 1, cut);
  }
  return starts;
}

DenseMap<Operation *, size_t>
mlir::dist::chargeToForward(ArrayRef<Operation *> forward,
                            ArrayRef<Operation *> others) {
  DenseMap<Operation *, size_t> index, charged;
  for (auto [i, op] : llvm::enumerate(forward))
    index[op] = i;
  // A parameter's backward work (the input gradient through its weight)
  // goes with the forward op that reads it.
  DenseMap<Value, size_t> paramUser;
  for (auto [i, op] : llvm::enumerate(forward))
    for (Value operand : op->getOperands())
      if (isa<BlockArgument>(operand))
        paramUser.try_emplace(operand, i);
  for (Operation *op : others) {
    if (index.count(op))
      continue;
    std::optional<size_t> latest, fromGradients;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def) {
        if (auto it = paramUser.find(operand); it != paramUser.end())
          latest = std::max(latest.value_or(0), it->second);
        continue;
      }
      if (auto it = index.find(def); it != index.end())
        latest = std::max(latest.value_or(0), it->second);
      else if (auto it = charged.find(def); it != charged.end())
        fromGradients =
            std::min(fromGradients.value_or(it->second), it->second);
    }
    size_t at = latest ? *latest : fromGradients.value_or(forward.size() - 1);
    if (latest && fromGradients)
      at = std::min(*latest, *fromGradients);
    charged[op] = at;
  }
  return charged;
}

void PipelineBuilder::autoForwardStages(ArrayRef<Operation *> forward) {
  // Each forward op's weight is its own time plus the backward ops that
  // work on its values.
  SmallVector<double> weights;
  for (Operation *op : forward)
    weights.push_back(estimateOpSeconds(op));
  SmallVector<Operation *> others;
  for (Operation *op : mbOps)
    if (!isFree(op))
      others.push_back(op);
  DenseMap<Operation *, size_t> charged = chargeToForward(forward, others);
  for (Operation *op : others)
    if (auto it = charged.find(op); it != charged.end())
      weights[it->second] += estimateOpSeconds(op);
  SmallVector<size_t> starts = cutEvenly(weights, numStages);
  for (auto [g, start] : llvm::enumerate(starts)) {
    size_t end = g + 1 < starts.size() ? starts[g + 1] : forward.size();
    for (size_t i = start; i < end; ++i)
      stage[forward[i]] = g;
  }
}

LogicalResult PipelineBuilder::assignForwardStages() {
  SmallVector<Operation *> forward;
  bool annotated = false;
  for (Operation *op : batchOps) {
    if (unitKind[op] != UnitKind::forward)
      continue;
    forward.push_back(op);
    annotated |= annotatedStage(op).has_value();
  }
  if (static_cast<int64_t>(forward.size()) < numStages)
    return func.emitError() << "the step has " << forward.size()
                            << " forward ops on the batch, fewer than the "
                            << numStages << " pipeline stages";
  autoCut = !annotated;
  if (!annotated) {
    autoForwardStages(forward);
    return success();
  }
  SmallVector<bool> used(numStages, false);
  for (Operation *op : forward) {
    int64_t at = 0;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && stage.count(def))
        at = std::max(at, stage[def]);
    if (std::optional<int64_t> annotation = annotatedStage(op)) {
      if (*annotation >= numStages)
        return op->emitError()
               << "'" << train::TrainDialect::kStageAttrName << "' "
               << *annotation
               << " is not a stage of this pipeline (stages 0 to "
               << numStages - 1 << ")";
      if (*annotation < at)
        return op->emitError()
               << "is annotated stage " << *annotation
               << " but reads a value computed on stage " << at
               << ": stages must not decrease along the forward computation";
      at = *annotation;
    }
    stage[op] = at;
    used[at] = true;
  }
  for (auto [s, isUsed] : llvm::enumerate(used))
    if (!isUsed)
      return func.emitError() << "pipeline stage " << s << " of " << numStages
                              << " gets no forward op from the '"
                              << train::TrainDialect::kStageAttrName
                              << "' annotations: annotate an op of every stage";
  return success();
}

void PipelineBuilder::findLossScaling() {
  // The flag: the condition of the selects that keep a parameter or its
  // state.
  DenseSet<Value> flags;
  for (Operation *op : stepOps)
    if (train::getKeptArgument(op))
      flags.insert(cast<train::SelectOp>(op).getCondition());
  if (flags.empty())
    return;
  // The update ops the flag depends on, and those only it reads.
  llvm::SetVector<Operation *> gate;
  for (Operation *op : llvm::reverse(stepOps)) {
    bool defines = llvm::any_of(op->getResults(),
                                [&](Value v) { return flags.contains(v); });
    if (defines || llvm::any_of(op->getUsers(), [&](Operation *user) {
          return gate.contains(user);
        }))
      gate.insert(op);
    if (defines ||
        (!op->use_empty() && llvm::all_of(op->getUsers(), [&](Operation *user) {
          return lossScaling.sums.contains(user);
        })))
      lossScaling.sums.insert(op);
  }
  for (Operation *op : llvm::reverse(gate))
    lossScaling.gate.insert(op);
  // The scale's state: what the step returns on the flag, not kept by it.
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  llvm::StringMap<unsigned> argOfName;
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (auto name =
            attrs ? attrs.getAs<StringAttr>(train::TrainDialect::kNameAttrName)
                  : nullptr)
      argOfName[name.getValue()] = i;
  for (auto [i, role] : llvm::enumerate(resultRoles)) {
    if (role != train::Role::param && role != train::Role::opt_state)
      continue;
    auto select = ret.getOperand(i).getDefiningOp<train::SelectOp>();
    auto name = resultAttrs[i] ? resultAttrs[i].getAs<StringAttr>(
                                     train::TrainDialect::kNameAttrName)
                               : nullptr;
    if (!select || !flags.contains(select.getCondition()) ||
        train::getKeptArgument(select) || !name ||
        !argOfName.count(name.getValue()))
      continue;
    lossScaling.scaleArgs.push_back(argOfName[name.getValue()]);
  }
  // The ops on the scale alone (and the flag).
  for (Operation &op : func.front().without_terminator()) {
    if (batchOps.contains(&op) || gate.contains(&op) || isFree(&op) ||
        op.getNumOperands() == 0)
      continue;
    bool onScale = false, onlyScale = true;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      auto arg = dyn_cast<BlockArgument>(operand);
      if ((arg &&
           llvm::is_contained(lossScaling.scaleArgs, arg.getArgNumber())) ||
          flags.contains(operand) || lossScaling.scaleOps.contains(def))
        onScale = true;
      else if (!def || !isFree(def))
        onlyScale = false;
    }
    if (onScale && onlyScale)
      lossScaling.scaleOps.insert(&op);
  }
}

int64_t PipelineBuilder::lossStage() const {
  // The loss ends the forward: its last stage.
  int64_t last = 0;
  for (Operation *op : batchOps)
    if (auto it = stage.find(op);
        it != stage.end() && unitKind.lookup(op) == UnitKind::forward)
      last = std::max(last, it->second);
  return last;
}

LogicalResult PipelineBuilder::assignStages() {
  if (failed(assignForwardStages()))
    return failure();
  findLossScaling();
  auto isForwardBatch = [&](Operation *op) {
    return batchOps.contains(op) && unitKind[op] == UnitKind::forward;
  };
  for (Operation *op : mbOps)
    if (!isForwardBatch(op) && annotatedStage(op))
      op->emitRemark() << "'" << train::TrainDialect::kStageAttrName
                       << "' is ignored on this op: only forward ops take "
                          "stages, the others follow them";

  // Parameters: the first stage whose forward ops reach them.
  argStage.assign(func.getNumArguments(), -1);
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    if (role != train::Role::param && role != train::Role::opt_state)
      continue;
    SmallVector<Value> worklist = {arg};
    int64_t first = -1;
    DenseSet<Operation *> seen;
    while (!worklist.empty()) {
      for (Operation *user : worklist.pop_back_val().getUsers()) {
        if (!seen.insert(user).second)
          continue;
        if (isForwardBatch(user))
          first = first < 0 ? stage[user] : std::min(first, stage[user]);
        else if (mbOps.contains(user) && unitKind[user] == UnitKind::forward)
          llvm::append_range(worklist, user->getResults());
      }
    }
    argStage[arg.getArgNumber()] = first;
  }
  // The loss scale with the loss, which scales the seed.
  int64_t scaleStage = lossStage();
  for (unsigned arg : lossScaling.scaleArgs)
    argStage[arg] = scaleStage;
  for (Operation *op : lossScaling.scaleOps)
    stage[op] = scaleStage;

  auto stageOfUsers = [&](Operation *op) {
    int64_t at = -1;
    for (Operation *user : op->getUsers())
      if (auto it = stage.find(user); it != stage.end() && it->second >= 0)
        at = at < 0 ? it->second : std::min(at, it->second);
    return at;
  };
  // The update: optimizers on their parameter's stage, the rest with their
  // first user.
  for (Operation *op : llvm::reverse(stepOps)) {
    if (lossScaling.scaleOps.contains(op))
      continue;
    // The finiteness sums follow their operands (below).
    if (lossScaling.sums.contains(op)) {
      stage[op] = -1;
      continue;
    }
    int64_t at = -1;
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op)) {
      // The parameter, or this device's slice of it (ZeRO).
      Value param = optimizer.getParam();
      if (auto slice = param.getDefiningOp<LocalSliceOp>())
        param = slice.getInput();
      if (auto arg = dyn_cast<BlockArgument>(param))
        at = argStage[arg.getArgNumber()];
    } else if (BlockArgument kept = train::getKeptArgument(op)) {
      // A parameter or its state kept when a gradient is not finite: on
      // the stage of its update, which receives the finiteness of every
      // stage's gradients.
      at = argStage[kept.getArgNumber()];
      for (Operation *user : kept.getUsers())
        if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(user);
            at < 0 && optimizer) {
          Value param = optimizer.getParam();
          if (auto slice = param.getDefiningOp<LocalSliceOp>())
            param = slice.getInput();
          if (auto arg = dyn_cast<BlockArgument>(param))
            at = argStage[arg.getArgNumber()];
        }
    } else {
      at = stageOfUsers(op);
    }
    stage[op] = at;
  }
  for (AllReduceOp op : accumulations)
    accumulationStage[op] = stageOfUsers(op);

  // Forward ops that do not read the batch (a penalty on the parameters):
  // with the forward ops that read them, so that forward values only flow
  // to later stages; those only the update reads on the latest stage of
  // the parameters they read.
  DenseMap<Operation *, int64_t> lowest;
  auto isParameterForward = [&](Operation *op) {
    return mbOps.contains(op) && !batchOps.contains(op) && !isFree(op) &&
           unitKind[op] == UnitKind::forward;
  };
  for (Operation *op : mbOps) {
    if (!isParameterForward(op))
      continue;
    int64_t at = 0;
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand))
        at = std::max(at, argStage[arg.getArgNumber()]);
      else if (auto it = lowest.find(operand.getDefiningOp());
               it != lowest.end())
        at = std::max(at, it->second);
    }
    lowest[op] = at;
  }
  for (Operation *op : llvm::reverse(mbOps)) {
    if (!isParameterForward(op))
      continue;
    std::optional<int64_t> firstUser;
    for (Operation *user : op->getUsers())
      if (mbOps.contains(user) && unitKind[user] == UnitKind::forward)
        firstUser = std::min(firstUser.value_or(stage[user]), stage[user]);
    stage[op] = firstUser.value_or(lowest[op]);
  }

  // Backward ops: on the latest stage whose forward
  // values or parameters they read or whose ops read them, ...
  for (Operation *op : llvm::reverse(mbOps)) {
    if (isForwardBatch(op) || isParameterForward(op) || isFree(op) ||
        lossScaling.scaleOps.contains(op))
      continue;
    int64_t at = -1;
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        at = std::max(at, argStage[arg.getArgNumber()]);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      if (isForwardBatch(def))
        at = std::max(at, stage[def]);
    }
    for (Operation *user : op->getUsers()) {
      if (auto it = accumulationStage.find(user); it != accumulationStage.end())
        at = std::max(at, it->second);
      else if (auto it = stage.find(user); it != stage.end())
        at = std::max(at, it->second);
    }
    stage[op] = std::max<int64_t>(at, 0);
  }
  // ... but never later than the gradients they read (gradients flow to
  // earlier stages only, so a stage's backward never waits on its own
  // later work).
  for (Operation *op : mbOps) {
    if (unitKind[op] != UnitKind::backward || isFree(op) ||
        lossScaling.scaleOps.contains(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && mbOps.contains(def) && !isFree(def) &&
          unitKind[def] == UnitKind::backward)
        stage[op] = std::min(stage[op], stage[def]);
  }
  // A backward op reading a parameter runs on a device that holds it: one
  // whose forward ops read it. A tied parameter (an embedding and the LM
  // head reading it, stages 0 and 2 of one device when interleaved) may
  // have taken a stage of another device from the rules above: it moves to
  // the parameter's first such stage at or after its own (none: the check
  // below reports it).
  for (Operation *op : mbOps) {
    if (unitKind[op] != UnitKind::backward || isFree(op) ||
        lossScaling.scaleOps.contains(op))
      continue;
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || (argRoles[arg.getArgNumber()] != train::Role::param &&
                   argRoles[arg.getArgNumber()] != train::Role::opt_state))
        continue;
      std::set<int64_t> readers;
      for (Operation *user : arg.getUsers())
        if (isForwardBatch(user))
          readers.insert(stage[user]);
      if (readers.empty() || llvm::any_of(readers, [&](int64_t s) {
            return rankOf(s) == rankOf(stage[op]);
          }))
        continue;
      auto next = readers.lower_bound(stage[op]);
      if (next == readers.end())
        continue;
      // The gradients it reads must come from that stage or later (they
      // flow to earlier stages only): those made earlier (the partitioner's
      // scaling of the loss gradient) move with it, and theirs.
      SmallVector<Operation *> worklist = {op};
      while (!worklist.empty()) {
        Operation *user = worklist.pop_back_val();
        stage[user] = *next;
        for (Value v : user->getOperands())
          if (Operation *def = v.getDefiningOp();
              def && mbOps.contains(def) && !isFree(def) &&
              unitKind[def] == UnitKind::backward && stage[def] < *next)
            worklist.push_back(def);
      }
      break;
    }
  }
  // What is left: arguments only the backward or the update reads live
  // with their first user; updates only returned run where their operands
  // are; an accumulation only returned stays where it is made.
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    int64_t &at = argStage[arg.getArgNumber()];
    if (at >= 0 ||
        (role != train::Role::param && role != train::Role::opt_state))
      continue;
    for (Operation *user : arg.getUsers())
      if (auto it = stage.find(user); it != stage.end() && it->second >= 0)
        at = at < 0 ? it->second : std::min(at, it->second);
    at = std::max<int64_t>(at, 0);
  }
  for (AllReduceOp op : accumulations)
    if (accumulationStage[op] < 0)
      if (Operation *def = op.getOperand(0).getDefiningOp())
        accumulationStage[op] = stage.lookup(def);
  for (Operation *op : stepOps) {
    if (stage[op] >= 0)
      continue;
    int64_t at = 0;
    for (Value operand : op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(operand))
        at = std::max(at, argStage[arg.getArgNumber()]);
      else if (auto acc = operand.getDefiningOp<AllReduceOp>();
               acc && accumulationStage.count(acc))
        at = std::max(at, accumulationStage[acc]);
      else if (auto it = stage.find(operand.getDefiningOp()); it != stage.end())
        at = std::max(at, it->second);
    }
    stage[op] = at;
  }
  if (kind == pipeline::ScheduleKind::ZeroBubbleH1)
    splitWeightGradients();
  return checkParameters();
}

void PipelineBuilder::splitWeightGradients() {
  // The input gradient (B) of a stage is what another stage's backward
  // needs; the rest of its backward is weight gradients (W).
  DenseSet<Operation *> input;
  SmallVector<Operation *> worklist;
  for (Operation *op : mbOps) {
    if (unitKind[op] != UnitKind::backward || isFree(op))
      continue;
    for (Operation *user : op->getUsers())
      if (mbOps.contains(user) && stage.lookup(user) != stage[op])
        worklist.push_back(op);
  }
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!input.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && mbOps.contains(def) && !isFree(def) &&
          unitKind[def] == UnitKind::backward && stage[def] == stage[op])
        worklist.push_back(def);
  }
  for (Operation *op : mbOps)
    if (unitKind[op] == UnitKind::backward && !isFree(op) &&
        !input.contains(op))
      unitKind[op] = UnitKind::weight;
}

LogicalResult PipelineBuilder::checkParameters() {
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    if (role != train::Role::param && role != train::Role::opt_state)
      continue;
    // Where it is read, by device: the first reading op of each.
    std::map<int64_t, std::pair<int64_t, Operation *>> stageOfRank;
    for (Operation *user : arg.getUsers())
      if (auto it = stage.find(user); it != stage.end())
        stageOfRank.emplace(rankOf(it->second),
                            std::make_pair(it->second, user));
    if (stageOfRank.size() < 2)
      continue;
    auto first = stageOfRank.begin(), second = std::next(first);
    StringAttr name = argAttrs[arg.getArgNumber()]
                          ? argAttrs[arg.getArgNumber()].getAs<StringAttr>(
                                train::TrainDialect::kNameAttrName)
                          : nullptr;
    InFlightDiagnostic diag =
        mlir::emitError(arg.getLoc())
        << "parameter '" << (name ? name.getValue() : "?")
        << "' is used on pipeline devices " << first->first << " (stage "
        << first->second.first << ") and " << second->first << " (stage "
        << second->second.first
        << "): a parameter lives on one device; put the ops that use it "
           "on stages of one device with 'train.stage' (a tied embedding "
           "and LM head: untie them, or keep both on one device)";
    for (auto &[rank, use] : stageOfRank)
      diag.attachNote(use.second->getLoc())
          << "used here, on stage " << use.first << " (device " << rank << ")";
    return diag;
  }
  return success();
}
