//===- PipelinePrograms.cpp - dist-pipeline: each device's program --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Per device, a function placed on its coordinate of the `pipe` axis: per
// schedule unit a `dist.fragment` of the unit's ops on that microbatch,
// `dist.recv` before it for what other devices made, `dist.send` after it
// for what they need, accumulators threaded through the microbatches.
//
//===----------------------------------------------------------------------===//

#include "PipelineBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

#include <set>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

Value PipelineBuilder::slicePart(OpBuilder &body, Location loc, Value whole,
                                 int64_t dim, int64_t size,
                                 int64_t part) const {
  auto type = cast<RankedTensorType>(whole.getType());
  SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape());
  start[dim] = part * size;
  limit[dim] = start[dim] + size;
  return partBuilder->buildSlice(body, loc, whole, start, limit);
}

void PipelineBuilder::clonePerPart(OpBuilder &body, Operation *op,
                                   IRMapping &mapping, int64_t part) const {
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def || !isFree(def) || mapping.contains(operand))
      continue;
    if (auto offset = dyn_cast<ShardOffsetOp>(def);
        offset && isMicrobatchCollective(offset)) {
      // The part's first sample, a constant in its fragment.
      mapping.map(operand, arith::ConstantIndexOp::create(
                               body, def->getLoc(),
                               part * (offset.getSize() / microbatches)));
      continue;
    }
    Operation *clone = body.clone(*def);
    clone->removeAttr(DistDialect::kResultShardingsAttrName);
    mapping.map(def->getResults(), clone->getResults());
  }
  if (auto slice = dyn_cast<LocalSliceOp>(op);
      slice && isMicrobatchCollective(op)) {
    // The part's block of a value every part has whole.
    int64_t dim = slice.getDim();
    mapping.map(slice.getResult(),
                slicePart(body, slice.getLoc(),
                          mapping.lookup(slice.getInput()), dim,
                          slice.getType().getDimSize(dim), part));
    return;
  }
  Operation *clone = body.clone(*op, mapping);
  clone->removeAttr(DistDialect::kResultShardingsAttrName);
}

PlaceAttr PipelineBuilder::placeOf(int64_t rank) const {
  MLIRContext *context = builder.getContext();
  return PlaceAttr::get(context, FlatSymbolRefAttr::get(context, kPipeMesh),
                        {StringAttr::get(context, kPipeAxis)}, {rank});
}

int64_t PipelineBuilder::producerRank(Value value) const {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return argStage[arg.getArgNumber()] < 0
               ? -1
               : rankOf(argStage[arg.getArgNumber()]);
  Operation *def = value.getDefiningOp();
  if (auto acc = dyn_cast<AllReduceOp>(def);
      acc && llvm::is_contained(accumulations, acc))
    return rankOf(stage.lookup(acc.getOperand(0).getDefiningOp()));
  auto it = stage.find(def);
  return it == stage.end() ? -1 : rankOf(it->second);
}

/// The `train.*` attributes of a single-device argument or result and its
/// sharding in the program (`sharding`; null: none).
static DictionaryAttr programAttrs(MLIRContext *context, DictionaryAttr attrs,
                                   ShardingAttr sharding) {
  NamedAttrList kept = getTrainAttrs(attrs);
  if (sharding)
    kept.set(DistDialect::kShardingAttrName, sharding);
  return kept.getDictionary(context);
}

int64_t PipelineBuilder::getChannel(Value value, int64_t microbatch,
                                    int64_t toRank) {
  return channels.try_emplace({value, microbatch, toRank}, channels.size())
      .first->second;
}

Value PipelineBuilder::getOrReceive(int64_t rank, Value value,
                                    int64_t microbatch, Location loc) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return programArgs[rank].lookup(arg.getArgNumber());
  if (Value held = this->held[rank].lookup({value, microbatch}))
    return held;
  int64_t from = producerRank(value);
  assert(from != rank && "a value of this device is used before it is made");
  Value received = RecvOp::create(builder, loc, value.getType(), placeOf(from),
                                  getChannel(value, microbatch, rank));
  held[rank][{value, microbatch}] = received;
  return received;
}

void PipelineBuilder::sendOutputs(int64_t rank, Value value, Value local,
                                  int64_t microbatch, Location loc) {
  std::set<int64_t> to;
  for (Operation *user : value.getUsers()) {
    auto it = stage.find(user);
    if (it == stage.end() || (stepOps.contains(user) && microbatch != 0 &&
                              !isa<AllReduceOp>(value.getDefiningOp())))
      continue;
    to.insert(rankOf(it->second));
  }
  to.erase(rank);
  for (int64_t peer : to)
    SendOp::create(builder, loc, local, placeOf(peer),
                   getChannel(value, microbatch, peer));
}

LogicalResult PipelineBuilder::writeUnit(int64_t rank, int64_t unitStage,
                                         UnitKind unitKind,
                                         int64_t microbatch) {
  return writeUnit(rank, units[{unitStage, unitKind}], unitStage, unitKind,
                   microbatch);
}

LogicalResult PipelineBuilder::writeUnit(int64_t rank, UnitOps &unit,
                                         int64_t unitStage, UnitKind unitKind,
                                         int64_t microbatch) {
  MLIRContext *context = module.getContext();
  Location loc = unit.ops.empty() ? func.getLoc() : unit.ops.front()->getLoc();
  SmallVector<Value> operands;
  for (Value input : unit.inputs)
    operands.push_back(getOrReceive(rank, input, microbatch, loc));
  size_t numInputs = operands.size();
  for (AllReduceOp acc : unit.accumulations)
    if (microbatch > 0)
      operands.push_back(partialSums[rank].lookup({acc, microbatch - 1}));
  SmallVector<Type> resultTypes;
  for (Value output : unit.outputs)
    resultTypes.push_back(output.getType());
  for (AllReduceOp acc : unit.accumulations)
    resultTypes.push_back(acc.getOperand(0).getType());
  auto fragment = FragmentOp::create(
      builder, loc, resultTypes, operands, placeOf(rank),
      ScheduleUnitAttr::get(context, unitKind, unitStage, microbatch));
  fragment.setOriginAttr(builder.getStrArrayAttr(
      {(func.getSymName() + "/stage" + Twine(unitStage)).str()}));

  OpBuilder body = OpBuilder::atBlockBegin(&fragment.getBodyBlock());
  IRMapping mapping;
  for (auto [input, arg] :
       llvm::zip(unit.inputs, fragment.getBodyBlock().getArguments())) {
    auto funcArg = dyn_cast<BlockArgument>(input);
    if (funcArg && microbatches > 1 &&
        microbatchDim[funcArg.getArgNumber()] >= 0) {
      // This microbatch's block of the batch.
      int64_t dim = microbatchDim[funcArg.getArgNumber()];
      mapping.map(
          input,
          slicePart(body, input.getLoc(), arg, dim,
                    cast<RankedTensorType>(input.getType()).getDimSize(dim),
                    microbatch));
      continue;
    }
    mapping.map(input, arg);
  }
  for (Operation *op : unit.ops)
    clonePerPart(body, op, mapping, microbatch);
  SmallVector<Value> yielded;
  for (Value output : unit.outputs)
    yielded.push_back(mapping.lookup(output));
  for (auto [i, acc] : llvm::enumerate(unit.accumulations)) {
    Value addend = mapping.lookup(acc.getOperand(0));
    if (microbatch > 0)
      addend = partBuilder->buildAdd(
          body, acc.getLoc(),
          fragment.getBodyBlock().getArgument(numInputs + i), addend);
    yielded.push_back(addend);
  }
  YieldOp::create(body, loc, yielded);

  for (auto [output, result] : llvm::zip(unit.outputs, fragment.getResults())) {
    held[rank][{output, microbatch}] = result;
    sendOutputs(rank, output, result, microbatch, loc);
  }
  for (auto [i, acc] : llvm::enumerate(unit.accumulations)) {
    Value sum = fragment.getResult(unit.outputs.size() + i);
    if (microbatch + 1 < microbatches) {
      partialSums[rank][{acc, microbatch}] = sum;
      continue;
    }
    held[rank][{acc.getResult(0), 0}] = sum;
    sendOutputs(rank, acc.getResult(0), sum, 0, acc.getLoc());
  }
  return success();
}

LogicalResult PipelineBuilder::writePrograms() {
  // Which single-device arguments and results each device's program has.
  SmallVector<SmallVector<unsigned>> argsOf(ranks), resultsOf(ranks);
  SmallVector<llvm::SmallSetVector<unsigned, 8>> usedArgs(ranks);
  for (auto &[key, unit] : units)
    for (Value input : unit.inputs)
      if (auto arg = dyn_cast<BlockArgument>(input))
        usedArgs[rankOf(key.first)].insert(arg.getArgNumber());
  for (auto &[s, unit] : gateUnits)
    for (Value input : unit.inputs)
      if (auto arg = dyn_cast<BlockArgument>(input))
        usedArgs[rankOf(s)].insert(arg.getArgNumber());
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    int64_t rank = std::max<int64_t>(producerRank(operand), 0);
    resultsOf[rank].push_back(i);
    if (auto arg = dyn_cast<BlockArgument>(operand))
      usedArgs[rank].insert(arg.getArgNumber());
  }
  // State no op reads and the step does not return still belongs to the
  // step (runners save it): it lives on its stage, device 0 by default.
  for (BlockArgument arg : func.getArguments()) {
    std::optional<train::Role> role = argRoles[arg.getArgNumber()];
    if (arg.use_empty() &&
        (role == train::Role::param || role == train::Role::opt_state))
      usedArgs[rankOf(std::max<int64_t>(argStage[arg.getArgNumber()], 0))]
          .insert(arg.getArgNumber());
  }
  for (int64_t r = 0; r < ranks; ++r) {
    argsOf[r].assign(usedArgs[r].begin(), usedArgs[r].end());
    llvm::sort(argsOf[r]);
  }

  programArgs.resize(ranks);
  held.resize(ranks);
  partialSums.resize(ranks);
  builder.setInsertionPointAfter(func);
  for (int64_t r = 0; r < ranks; ++r) {
    SmallVector<Type> argTypes, resultTypes;
    for (unsigned i : argsOf[r])
      argTypes.push_back(programArgTypes[i]);
    for (unsigned i : resultsOf[r])
      resultTypes.push_back(func.getResultTypes()[i]);
    auto program = func::FuncOp::create(
        builder, func.getLoc(), (func.getSymName() + "_pipe" + Twine(r)).str(),
        builder.getFunctionType(argTypes, resultTypes));
    for (auto [j, i] : llvm::enumerate(argsOf[r]))
      if (DictionaryAttr attrs =
              programAttrs(builder.getContext(), argAttrs[i],
                           toProgramSharding(argShardings[i])))
        program.setArgAttrs(j, attrs);
    for (auto [j, i] : llvm::enumerate(resultsOf[r]))
      if (DictionaryAttr attrs =
              programAttrs(builder.getContext(), resultAttrs[i],
                           toProgramSharding(resultShardings[i])))
        program.setResultAttrs(j, attrs);
    program->setAttr(DistDialect::kPlaceAttrName, placeOf(r));
    // How the step computes (train-mixed-precision), which runners read.
    if (Attribute precision =
            func->getAttr(train::TrainDialect::kMixedPrecisionAttrName))
      program->setAttr(train::TrainDialect::kMixedPrecisionAttrName, precision);
    // Data or tensor parallelism inside the stage: the program is an SPMD
    // program on its devices, with local types.
    if (dp * tp > 1)
      program->setAttr(DistDialect::kPartitionedAttrName,
                       builder.getUnitAttr());
    program->setAttr(
        DistDialect::kScheduleAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("strategy", builder.getStringAttr("pipeline")),
            builder.getNamedAttr(
                "schedule",
                builder.getStringAttr(pipeline::stringifyScheduleKind(kind))),
            builder.getNamedAttr("stages", builder.getI64IntegerAttr(ranks)),
            builder.getNamedAttr("virtual_stages",
                                 builder.getI64IntegerAttr(numStages / ranks)),
            builder.getNamedAttr("microbatches",
                                 builder.getI64IntegerAttr(microbatches)),
        }));
    Block *entry = program.addEntryBlock();
    for (auto [j, i] : llvm::enumerate(argsOf[r]))
      programArgs[r][i] = entry->getArgument(j);
    programs.push_back(program);
  }

  for (int64_t r = 0; r < ranks; ++r) {
    builder.setInsertionPointToEnd(&programs[r].front());
    for (const pipeline::Unit &unit : plan.ranks[r])
      if (failed(writeUnit(r, unit.stage, fromScheduleKind(unit.kind),
                           unit.microbatch)))
        return failure();
    // The finiteness of the gradients (dynamic loss scaling) before any
    // update: every stage's updates wait for every stage's part of it.
    for (int64_t s = r; s < numStages; s += ranks)
      if (auto it = gateUnits.find(s);
          it != gateUnits.end() &&
          failed(writeUnit(r, it->second, s, UnitKind::update, 0)))
        return failure();
    for (int64_t s = r; s < numStages; s += ranks)
      if (failed(writeUnit(r, s, UnitKind::update, 0)))
        return failure();
    SmallVector<Value> results;
    for (unsigned i : resultsOf[r]) {
      Value operand = ret.getOperand(i);
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        results.push_back(programArgs[r].lookup(arg.getArgNumber()));
        continue;
      }
      Operation *def = operand.getDefiningOp();
      int64_t microbatch = mbOps.contains(def) ? microbatches - 1 : 0;
      Value value = held[r].lookup({operand, microbatch});
      if (!value)
        return ret.emitError() << "dist-pipeline: result #" << i
                               << " is not computed on pipeline device " << r;
      results.push_back(value);
    }
    func::ReturnOp::create(builder, ret.getLoc(), results);
  }
  // The collectives of each stage's data and tensor parallelism run on
  // the programs' mesh (the same axis names).
  auto programMesh = FlatSymbolRefAttr::get(module.getContext(), kPipeMesh);
  for (func::FuncOp program : programs)
    program.walk([&](Operation *op) {
      if (auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
          mesh && isa<DistDialect>(op->getDialect()))
        op->setAttr("mesh", programMesh);
    });
  return success();
}
