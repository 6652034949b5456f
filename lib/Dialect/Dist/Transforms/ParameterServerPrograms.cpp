//===- ParameterServerPrograms.cpp - dist-parameter-server: programs ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The servers' and workers' programs of a parameter-server step: per worker
// the pulls, its forward and backward fragments on its block of the batch
// and the pushes; per server the pulls it serves, the lookups in its
// shards of embedding tables and the update of its shards.
//
//===----------------------------------------------------------------------===//

#include "ParameterServerBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// Sets `program`'s type from its entry block and return, and the
/// argument and result attributes.
static void finishProgram(func::FuncOp program,
                          ArrayRef<DictionaryAttr> argAttrs,
                          ArrayRef<DictionaryAttr> resultAttrs) {
  auto ret = cast<func::ReturnOp>(program.front().getTerminator());
  program.setType(FunctionType::get(program.getContext(),
                                    program.front().getArgumentTypes(),
                                    ret.getOperandTypes()));
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (attrs)
      program.setArgAttrs(i, attrs);
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    if (attrs)
      program.setResultAttrs(i, attrs);
}

DictionaryAttr ParameterServerBuilder::workerArgAttrs(unsigned index,
                                                      int64_t w) const {
  MLIRContext *context = builder.getContext();
  NamedAttrList attrs = getTrainAttrs(argAttrs[index]);
  if (int64_t dim = microbatchDim[index]; dim >= 0) {
    // This worker's block of the batch.
    auto local =
        cast<RankedTensorType>(func::FuncOp(func).getArgument(index).getType());
    SmallVector<int64_t> offsets(local.getRank(), 0);
    offsets[dim] = w * local.getDimSize(dim);
    attrs.set(DistDialect::kBlockAttrName,
              BlockAttr::get(
                  context, offsets,
                  cast<RankedTensorType>(programArgTypes[index]).getShape()));
  }
  return attrs.getDictionary(context);
}

void ParameterServerBuilder::writeWorker(int64_t w, func::FuncOp program) {
  WorkerProgram worker{w, ProgramArguments(), placeOfTask(servers + w),
                       OpBuilder::atBlockBegin(&program.front())};
  worker.args.program = program;
  pullVariables(worker);
  requestSparseRows(worker);
  for (UnitKind kind : {UnitKind::forward, UnitKind::backward})
    writeWorkerUnit(worker, kind);
  SmallVector<Value> returned;
  SmallVector<DictionaryAttr> returnedAttrs;
  receiveReplies(worker, returned, returnedAttrs);
  func::ReturnOp::create(worker.top, func.getLoc(), returned);
  finishProgram(program, worker.args.attrs, returnedAttrs);
}

void ParameterServerBuilder::pullVariables(WorkerProgram &worker) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  for (Operation *op : mbOps)
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || shardsOf[arg.getArgNumber()].empty() ||
          pulled.count(arg.getArgNumber()) || sparse.count(arg.getArgNumber()))
        continue;
      unsigned index = arg.getArgNumber();
      for (auto [k, shard] : llvm::enumerate(shardsOf[index]))
        pulled[index].push_back(
            async ? args.add(shardType(index, shard), cacheAttrs(index, shard))
                  : RecvOp::create(top, func.getLoc(), shardType(index, shard),
                                   placeOfTask(shard.server),
                                   channel(0, index, k, w))
                        .getResult());
    }
}

void ParameterServerBuilder::requestSparseRows(WorkerProgram &worker) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  // (Zeros come back for the rows a server does not hold.)
  for (auto &[param, table] : sparse) {
    BlockArgument ids = func.getArgument(table.indices);
    Value mine = args.get(table.indices, ids.getType(),
                          workerArgAttrs(table.indices, w));
    SmallVector<Value> rows;
    for (auto [k, shard] : llvm::enumerate(shardsOf[param])) {
      SendOp::create(top, func.getLoc(), mine, placeOfTask(shard.server),
                     channel(2, param, k, w));
      rows.push_back(
          RecvOp::create(top, func.getLoc(), table.lookups.front().getType(),
                         placeOfTask(shard.server), channel(3, param, k, w)));
    }
    for (train::GatherOp lookup : table.lookups)
      lookedUp[lookup] = rows;
  }
}

void ParameterServerBuilder::writeWorkerUnit(WorkerProgram &worker,
                                             UnitKind kind) {
  WorkerUnit unit;
  unit.kind = kind;
  if (!collectUnitOps(worker, unit))
    return;
  collectUnitOperands(worker, unit);
  collectUnitResults(worker, unit);
  FragmentOp fragment = writeUnitFragment(worker, unit);
  for (auto [output, result] : llvm::zip(unit.outputs, fragment.getResults()))
    worker.made[output] = result;
  sendUnitResults(worker, unit, fragment);
}

bool ParameterServerBuilder::collectUnitOps(WorkerProgram &worker,
                                            WorkerUnit &unit) {
  auto [ops, inUnit, inputs] = std::tie(unit.ops, unit.inUnit, unit.inputs);
  for (Operation *op : mbOps)
    if (!isFree(op) && unitKind[op] == unit.kind && !serverOnly.contains(op) &&
        !worker.lookedUp.count(op)) {
      ops.push_back(op);
      inUnit.insert(op);
    }
  if (ops.empty())
    return false;
  // Inputs: values from outside the unit (free ops are cloned inside).
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && (inUnit.contains(def) || isFree(def)))
        continue;
      inputs.insert(operand);
    }
  return true;
}

void ParameterServerBuilder::collectUnitOperands(WorkerProgram &worker,
                                                 WorkerUnit &unit) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  auto [inputs, operands, inputSlots] =
      std::tie(unit.inputs, unit.operands, unit.inputSlots);
  for (Value input : inputs) {
    inputSlots.push_back({input, static_cast<unsigned>(operands.size())});
    if (Value whole = made.lookup(input)) {
      operands.push_back(whole);
      continue;
    }
    if (auto arg = dyn_cast<BlockArgument>(input)) {
      unsigned index = arg.getArgNumber();
      if (!shardsOf[index].empty()) {
        llvm::append_range(operands, pulled[index]);
        continue;
      }
      operands.push_back(
          args.get(index, arg.getType(), workerArgAttrs(index, w)));
      continue;
    }
    if (Operation *lookup = input.getDefiningOp();
        lookup && lookedUp.count(lookup)) {
      llvm::append_range(operands, lookedUp[lookup]);
      continue;
    }
    operands.push_back(made.lookup(input));
  }
}

void ParameterServerBuilder::collectUnitResults(WorkerProgram &worker,
                                                WorkerUnit &unit) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  auto [ops, inUnit, inputs, outputs, resultTypes, pushes] =
      std::tie(unit.ops, unit.inUnit, unit.inputs, unit.outputs,
               unit.resultTypes, unit.pushes);
  for (Operation *op : ops)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!inUnit.contains(user) && !serverOnly.contains(user) &&
            !llvm::is_contained(accumulations, user) &&
            (mbOps.contains(user) || isa<func::ReturnOp>(user)))
          outputs.insert(result);
  if (w == 0)
    for (Value value : fromWorker0)
      if (inUnit.contains(value.getDefiningOp()))
        outputs.insert(value);
  // A variable pulled in shards is concatenated once: later units take
  // it whole from this one.
  for (Value input : inputs) {
    auto arg = dyn_cast<BlockArgument>(input);
    if (arg && pulled.lookup(arg.getArgNumber()).size() > 1 &&
        !made.count(input) &&
        llvm::any_of(arg.getUsers(), [&](Operation *user) {
          return mbOps.contains(user) && !inUnit.contains(user);
        }))
      outputs.insert(input);
  }
  for (Value output : outputs)
    resultTypes.push_back(output.getType());
  for (auto [a, acc] : llvm::enumerate(accumulations)) {
    int64_t param = gradientOf.lookup(acc);
    Value part = pushedPart(acc);
    Operation *def = part.getDefiningOp();
    if (!def || !inUnit.contains(def))
      continue;
    if (param >= 0 && sparse.count(param)) {
      // The looked-up rows' gradients, to every server of the table.
      for (const Shard &shard : shardsOf[param]) {
        pushes.push_back({acc, a, shard});
        resultTypes.push_back(part.getType());
      }
      continue;
    }
    if (param < 0) {
      pushes.push_back({acc, a, Shard{0, 0, 0}});
      resultTypes.push_back(acc.getOperand(0).getType());
      continue;
    }
    for (const Shard &shard : shardsOf[param]) {
      pushes.push_back({acc, a, shard});
      resultTypes.push_back(shardsOf[param].size() > 1
                                ? shardType(param, shard)
                                : acc.getOperand(0).getType());
    }
  }
}

FragmentOp ParameterServerBuilder::writeUnitFragment(WorkerProgram &worker,
                                                     WorkerUnit &unit) {
  MLIRContext *context = module.getContext();
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  auto fragment = FragmentOp::create(
      top, unit.ops.front()->getLoc(), unit.resultTypes, unit.operands, here,
      ScheduleUnitAttr::get(context, unit.kind, 0, w));
  fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
  OpBuilder body = OpBuilder::atBlockBegin(&fragment.getBodyBlock());
  IRMapping mapping;
  for (auto [input, first] : unit.inputSlots) {
    if (Operation *lookup = input.getDefiningOp();
        lookup && lookedUp.count(lookup)) {
      // The rows each server looked up, added in server order.
      Value sum = fragment.getBodyBlock().getArgument(first);
      for (unsigned k = 1; k < lookedUp[lookup].size(); ++k)
        sum = partBuilder->buildAdd(
            body, lookup->getLoc(), sum,
            fragment.getBodyBlock().getArgument(first + k));
      mapping.map(input, sum);
      continue;
    }
    auto arg = dyn_cast<BlockArgument>(input);
    if (arg && !made.count(input) && !shardsOf[arg.getArgNumber()].empty() &&
        pulled[arg.getArgNumber()].size() > 1) {
      // The variable, from its shards.
      SmallVector<Value> pieces;
      for (unsigned k = 0; k < pulled[arg.getArgNumber()].size(); ++k)
        pieces.push_back(fragment.getBodyBlock().getArgument(first + k));
      mapping.map(input, partBuilder->buildConcat(body, input.getLoc(), pieces,
                                                  /*dim=*/0));
      continue;
    }
    mapping.map(input, fragment.getBodyBlock().getArgument(first));
  }
  for (Operation *op : unit.ops)
    clonePerPart(body, op, mapping, w);
  SmallVector<Value> yielded;
  for (Value output : unit.outputs)
    yielded.push_back(mapping.lookup(output));
  for (auto &[acc, a, shard] : unit.pushes) {
    Value part = mapping.lookup(pushedPart(acc));
    int64_t param = gradientOf.lookup(acc);
    auto type = cast<RankedTensorType>(part.getType());
    if (param >= 0 && !sparse.count(param) && shardsOf[param].size() > 1) {
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape());
      start[0] = shard.begin;
      limit[0] = shard.end;
      part = partBuilder->buildSlice(body, acc.getLoc(), part, start, limit);
    }
    yielded.push_back(part);
  }
  YieldOp::create(body, fragment.getLoc(), yielded);
  return fragment;
}

void ParameterServerBuilder::sendUnitResults(WorkerProgram &worker,
                                             WorkerUnit &unit,
                                             FragmentOp fragment) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  if (w == 0)
    for (auto [i, value] : llvm::enumerate(fromWorker0))
      if (unit.inUnit.contains(value.getDefiningOp()))
        for (int64_t s : fromWorker0To.lookup(value))
          SendOp::create(top, value.getLoc(), made[value], placeOfTask(s),
                         channel(4, i, s, 0));
  // Push each part to its server.
  for (auto [i, push] : llvm::enumerate(unit.pushes)) {
    auto &[acc, a, shard] = push;
    int64_t k = 0;
    if (int64_t param = gradientOf.lookup(acc); param >= 0)
      k = llvm::find_if(
              shardsOf[param],
              [&](const Shard &s) { return s.begin == shard.begin; }) -
          shardsOf[param].begin();
    SendOp::create(top, acc.getLoc(),
                   fragment.getResult(unit.outputs.size() + i),
                   placeOfTask(shard.server), channel(1, a, k, w));
  }
}

void ParameterServerBuilder::receiveReplies(
    WorkerProgram &worker, SmallVectorImpl<Value> &returned,
    SmallVectorImpl<DictionaryAttr> &returnedAttrs) {
  auto &[w, args, here, top, pulled, lookedUp, made] = worker;
  // The worker keeps them for its next step.
  for (unsigned index = 0; index < shardsOf.size() && async; ++index) {
    if (!pulled.count(index))
      continue;
    for (auto [k, shard] : llvm::enumerate(shardsOf[index])) {
      returned.push_back(receivesPushes(shard.server)
                             ? RecvOp::create(top, func.getLoc(),
                                              shardType(index, shard),
                                              placeOfTask(shard.server),
                                              channel(5, index, k, w))
                                   .getResult()
                             : pulled[index][k]);
      returnedAttrs.push_back(cacheAttrs(index, shard));
    }
  }
}

void ParameterServerBuilder::cloneUpdate(OpBuilder &body,
                                         ArrayRef<Operation *> ops,
                                         IRMapping &mapping, int64_t s) {
  for (Operation *op : ops) {
    // On a shard, the values shaped like the variable are shard-shaped.
    std::optional<unsigned> variable;
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op))
      variable = paramOf[optimizer];
    else if (shardwiseOf.count(op))
      variable = shardwiseOf.lookup(op);
    else if (skipping.partOf.count(op))
      variable = skipping.partOf.lookup(op);
    else if (skipping.keptOf.count(op))
      variable = skipping.keptOf.lookup(op);
    // Constants and other operand-free ops, in the fragment (a splat of
    // the variable's shape at the shard's shape).
    IRMapping constants;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !isFree(def) || mapping.contains(operand))
        continue;
      DenseElementsAttr value;
      if (variable &&
          operand.getType() == func.getArgument(*variable).getType() &&
          matchPattern(operand, m_Constant(&value)) && value.isSplat()) {
        auto type = shardType(*variable, *shardOn(*variable, s));
        constants.map(operand,
                      partBuilder->buildConstant(
                          body, def->getLoc(),
                          DenseElementsAttr::get(
                              type, value.getSplatValue<Attribute>())));
        continue;
      }
      Operation *clone = body.clone(*def);
      clone->removeAttr(DistDialect::kResultShardingsAttrName);
      mapping.map(def->getResults(), clone->getResults());
    }
    for (auto [from, to] : constants.getValueMap())
      mapping.map(from, to);
    Operation *clone = body.clone(*op, mapping);
    for (auto [from, to] : constants.getValueMap())
      mapping.erase(from);
    clone->removeAttr(DistDialect::kResultShardingsAttrName);
    if (variable)
      for (auto [result, original] :
           llvm::zip(clone->getResults(), op->getResults()))
        if (original.getType() == func.getArgument(*variable).getType())
          result.setType(shardType(*variable, *shardOn(*variable, s)));
  }
}

Type ParameterServerBuilder::typeHere(Value value, int64_t s) {
  Type type = value.getType();
  auto optimizer = value.getDefiningOp<train::OptimizerOpInterface>();
  if (optimizer && type == optimizer.getParam().getType())
    type = shardType(paramOf[optimizer], *shardOn(paramOf[optimizer], s));
  // A variable's value kept when a gradient is not finite.
  if (auto it = skipping.keptOf.find(value.getDefiningOp());
      it != skipping.keptOf.end() &&
      type == func.getArgument(it->second).getType())
    type = shardType(it->second, *shardOn(it->second, s));
  return type;
}

// A worker's part `value` (of rows `indices`, sparse) added into `into`
// (null: the first part), times `scale`.
Value ParameterServerBuilder::addPart(OpBuilder &body, Sum &part, Value into,
                                      Value value, Value indices,
                                      int64_t scale) {
  Location loc = part.acc.getLoc();
  if (const Shard *shard = part.sparseShard) {
    // The looked-up rows' gradients, added into the shard.
    auto type =
        cast<RankedTensorType>(shardType(gradientOf.lookup(part.acc), *shard));
    if (!into)
      into = partBuilder->buildConstant(
          body, loc,
          DenseElementsAttr::get(type,
                                 body.getZeroAttr(type.getElementType())));
    Value offset = arith::ConstantIndexOp::create(body, loc, shard->begin);
    value = partBuilder->buildScatterAddRows(body, loc, type, into, indices,
                                             value, offset);
  } else if (into) {
    value = partBuilder->buildAdd(body, loc, into, value);
  }
  if (scale == 1)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value factor = partBuilder->buildConstant(
      body, loc,
      DenseElementsAttr::get(scalarType,
                             body.getFloatAttr(type.getElementType(),
                                               static_cast<double>(scale))));
  return partBuilder->buildMul(body, loc, value, factor);
}

LogicalResult ParameterServerBuilder::writeServer(int64_t s,
                                                  func::FuncOp program) {
  ServerProgram server{s, ProgramArguments(), placeOfTask(s),
                       OpBuilder::atBlockBegin(&program.front())};
  server.args.program = program;
  sendPulls(server);
  serveSparseLookups(server);
  collectUpdateOps(server);
  if (failed(collectReturns(server)))
    return failure();
  collectSums(server);
  if (async && !server.sums.empty() &&
      failed(writeServe(
          s, server.top, server.sums, server.ops,
          [&](unsigned index) { return serverArg(server, index); },
          server.indicesFrom, server.carriedResult, server.servedSums)))
    return failure();
  if (failed(checkAsyncUpdates(server)))
    return failure();
  UpdateInputs inputs;
  receiveUpdateInputs(server, inputs);
  // (mode=async refuses a step that skips its update.)
  bool gated = skipping.flagOp && !async;
  if (gated)
    writeGate(server, inputs);
  addArgumentInputs(server, server.ops, inputs);
  if (!server.ops.empty() || !server.sums.empty() ||
      (gated && !server.outputs.empty()))
    writeUpdateFragment(server, inputs);
  writeServerReturn(server, program);
  return success();
}

Value ParameterServerBuilder::serverArg(ServerProgram &server, unsigned index) {
  const Shard *shard = shardOn(index, server.s);
  Type global = func.getArgument(index).getType();
  return server.args.get(index, shard ? shardType(index, *shard) : global,
                         attrsWithBlock(argAttrs[index], global, shard));
}

void ParameterServerBuilder::sendPulls(ServerProgram &server) {
  int64_t s = server.s;
  OpBuilder &top = server.top;
  auto shardHere = [&](unsigned arg) { return shardOn(arg, s); };
  auto getArg = [&](unsigned index) { return serverArg(server, index); };
  // Every shard this server holds is an argument, also of state the step
  // neither reads nor returns (runners still save it).
  for (unsigned index = 0; index < shardsOf.size(); ++index)
    if (shardHere(index) && (argRoles[index] == train::Role::param ||
                             argRoles[index] == train::Role::opt_state))
      getArg(index);

  // Pull (sync): this server's shards to every worker that reads the
  // variable or state (a batch norm's running statistics, which one worker
  // updates) (async: the workers hold copies, see the replies below).
  for (unsigned index = 0; index < shardsOf.size() && !async; ++index) {
    const Shard *shard = shardHere(index);
    if (!shard ||
        (argRoles[index] != train::Role::param &&
         argRoles[index] != train::Role::opt_state) ||
        sparse.count(index) ||
        !llvm::any_of(func.getArgument(index).getUsers(),
                      [&](Operation *user) { return mbOps.contains(user); }))
      continue;
    Value value = getArg(index);
    for (int64_t w = 0; w < workers; ++w)
      SendOp::create(top, func.getLoc(), value, placeOfTask(servers + w),
                     channel(0, index, shardIndex(index, shard), w));
  }
}

void ParameterServerBuilder::serveSparseLookups(ServerProgram &server) {
  MLIRContext *context = module.getContext();
  int64_t s = server.s;
  OpBuilder &top = server.top;
  PlaceAttr here = server.here;
  for (auto &[param, table] : sparse) {
    const Shard *shard = shardOn(param, s);
    if (!shard)
      continue;
    int64_t k = shardIndex(param, shard);
    Value rows = serverArg(server, param);
    train::GatherOp lookup = table.lookups.front();
    for (int64_t w = 0; w < workers; ++w) {
      Value ids = RecvOp::create(
          top, lookup.getLoc(), func.getArgument(table.indices).getType(),
          placeOfTask(servers + w), channel(2, param, k, w));
      server.indicesFrom[{param, w}] = ids;
      auto fragment = FragmentOp::create(
          top, lookup.getLoc(), TypeRange{lookup.getType()},
          ValueRange{rows, ids}, here,
          ScheduleUnitAttr::get(context, UnitKind::forward, 0, w));
      fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
      Block &block = fragment.getBodyBlock();
      OpBuilder body = OpBuilder::atBlockBegin(&block);
      Value offset =
          arith::ConstantIndexOp::create(body, lookup.getLoc(), shard->begin);
      Value found = partBuilder->buildGatherRows(
          body, lookup.getLoc(), lookup.getType(), block.getArgument(0),
          block.getArgument(1), offset);
      YieldOp::create(body, lookup.getLoc(), found);
      SendOp::create(top, lookup.getLoc(), fragment.getResult(0),
                     placeOfTask(servers + w), channel(3, param, k, w));
    }
  }
}

void ParameterServerBuilder::collectUpdateOps(ServerProgram &server) {
  for (Operation &op : func.front().without_terminator())
    if (runsOn(&op, server.s))
      server.ops.push_back(&op);
}

LogicalResult ParameterServerBuilder::collectReturns(ServerProgram &server) {
  int64_t s = server.s;
  auto shardHere = [&](unsigned arg) { return shardOn(arg, s); };
  // A step argument returned unchanged, or a value of the update
  // (`outputs`).
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    Operation *def = operand.getDefiningOp();
    if (auto arg = dyn_cast<BlockArgument>(operand)) {
      const Shard *shard = shardHere(arg.getArgNumber());
      if (!shard && !(s == 0 && shardsOf[arg.getArgNumber()].empty()))
        continue;
      server.returnedHere.push_back({operand, true});
      server.resultAttrsHere.push_back(
          attrsWithBlock(resultAttrs[i], arg.getType(), shard));
      continue;
    }
    const Shard *shard = nullptr;
    if (auto optimizer = dyn_cast_or_null<train::OptimizerOpInterface>(def)) {
      shard = shardHere(paramOf[optimizer]);
      if (!shard)
        continue;
    } else if (auto kept = skipping.keptOf.find(def);
               kept != skipping.keptOf.end()) {
      shard = shardHere(kept->second);
      if (!shard)
        continue;
    } else if (!def || !(stepOps.contains(def) ||
                         llvm::is_contained(accumulations, def))) {
      return ret.emitError()
             << "dist-parameter-server: result #" << i
             << " is computed per sample; a parameter-server step returns "
                "its state and the loss";
    } else if (s != 0) {
      continue;
    }
    server.returnedHere.push_back({operand, false});
    server.outputs.push_back(operand);
    server.resultAttrsHere.push_back(
        attrsWithBlock(resultAttrs[i], operand.getType(), shard));
  }
  return success();
}

void ParameterServerBuilder::collectSums(ServerProgram &server) {
  int64_t s = server.s;
  for (auto [a, acc] : llvm::enumerate(accumulations)) {
    int64_t param = gradientOf.lookup(acc);
    const Shard *shard = param >= 0 ? shardOn(param, s) : nullptr;
    if (param >= 0 ? !shard : s != 0)
      continue;
    bool isSparse = param >= 0 && sparse.count(param);
    Type type = isSparse ? pushedPart(acc).getType()
                : shard && shardsOf[param].size() > 1
                    ? shardType(param, *shard)
                    : acc.getOperand(0).getType();
    server.sums.push_back({acc, static_cast<int64_t>(a),
                           shard ? shardIndex(param, shard) : 0, type,
                           isSparse ? shard : nullptr});
  }
}

LogicalResult ParameterServerBuilder::checkAsyncUpdates(ServerProgram &server) {
  // (The workers' copies are refreshed by the requests' replies.)
  for (Operation *op : server.ops)
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op);
        async && optimizer && isPulled(paramOf[optimizer]))
      return op->emitError()
             << "dist-parameter-server: mode=async keeps the workers' copies "
                "of a variable fresh through the replies to their gradients; "
                "this parameter is read by the workers but its gradient does "
                "not depend on the batch, so its update would never reach "
                "them";
  return success();
}

void ParameterServerBuilder::receiveUpdateInputs(ServerProgram &server,
                                                 UpdateInputs &inputs) {
  int64_t s = server.s;
  OpBuilder &top = server.top;
  auto &[operands, firstPart, firstIndices, fromWorker, carriedSlots,
         argSlots] = inputs;
  for (Sum &part : server.sums) {
    firstPart.push_back(operands.size());
    for (int64_t w = 0; w < workers; ++w)
      operands.push_back(RecvOp::create(top, part.acc.getLoc(), part.type,
                                        placeOfTask(servers + w),
                                        channel(1, part.index, part.shard, w)));
    firstIndices.push_back(operands.size());
    if (part.sparseShard)
      for (int64_t w = 0; w < workers; ++w)
        operands.push_back(
            server.indicesFrom.lookup({gradientOf.lookup(part.acc), w}));
  }
  // What this server's ops read from worker 0.
  for (auto [i, value] : llvm::enumerate(fromWorker0)) {
    if (!llvm::is_contained(fromWorker0To.lookup(value), s))
      continue;
    fromWorker.push_back({value, static_cast<unsigned>(operands.size())});
    operands.push_back(RecvOp::create(top, value.getLoc(), value.getType(),
                                      placeOfTask(servers),
                                      channel(4, i, s, 0)));
  }
  for (auto [value, result] : server.servedSums) {
    carriedSlots.push_back({value, static_cast<unsigned>(operands.size())});
    operands.push_back(result);
  }
}

void ParameterServerBuilder::addArgumentInputs(ServerProgram &server,
                                               ArrayRef<Operation *> ops,
                                               UpdateInputs &inputs) {
  llvm::SetVector<unsigned> argInputs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand))
        argInputs.insert(arg.getArgNumber());
  for (unsigned index : argInputs) {
    inputs.argSlots.push_back(
        {index, static_cast<unsigned>(inputs.operands.size())});
    inputs.operands.push_back(serverArg(server, index));
  }
}

void ParameterServerBuilder::mapUpdateInputs(OpBuilder &body, Block &block,
                                             ServerProgram &server,
                                             UpdateInputs &inputs,
                                             IRMapping &mapping) {
  for (auto [index, slot] : inputs.argSlots)
    mapping.map(func.getArgument(index), block.getArgument(slot));
  for (auto [value, slot] : inputs.fromWorker)
    mapping.map(value, block.getArgument(slot));
  for (auto [value, slot] : inputs.carriedSlots)
    mapping.map(value, block.getArgument(slot));
  // The workers' parts, added in worker order.
  for (auto [i, part] : llvm::enumerate(server.sums)) {
    Value sum;
    for (int64_t w = 0; w < workers; ++w)
      sum = addPart(body, part, sum, block.getArgument(inputs.firstPart[i] + w),
                    part.sparseShard
                        ? block.getArgument(inputs.firstIndices[i] + w)
                        : Value(),
                    /*scale=*/1);
    mapping.map(part.acc.getResult(0), sum);
  }
}

bool ParameterServerBuilder::hasFinitenessPart(int64_t s) const {
  return llvm::any_of(skipping.parts, [&](Operation *part) {
    return shardOn(skipping.partOf.lookup(part), s);
  });
}

bool ParameterServerBuilder::readsFlag(int64_t s) const {
  return llvm::any_of(skipping.flag.getUsers(),
                      [&](Operation *user) { return runsOn(user, s); });
}

void ParameterServerBuilder::writeGate(ServerProgram &server,
                                       UpdateInputs &inputs) {
  MLIRContext *context = module.getContext();
  int64_t s = server.s;
  OpBuilder &top = server.top;
  Location loc = skipping.flagOp->getLoc();
  Type flagType = skipping.flag.getType();
  if (s != 0 && !hasFinitenessPart(s)) {
    // No part of the flag here: the update waits for the flag alone.
    if (readsFlag(s)) {
      inputs.carriedSlots.push_back(
          {skipping.flag, static_cast<unsigned>(inputs.operands.size())});
      inputs.operands.push_back(RecvOp::create(
          top, loc, flagType, placeOfTask(0), channel(7, s, 0, 0)));
    }
    return;
  }
  // The gate: this server's ops its part of the flag depends on (its
  // gradients summed and unscaled, their parts).
  DenseSet<Operation *> needed;
  for (Operation *op : llvm::reverse(server.ops))
    if (llvm::is_contained(skipping.parts, op) ||
        llvm::any_of(op->getUsers(),
                     [&](Operation *user) { return needed.contains(user); }))
      needed.insert(op);
  SmallVector<Operation *> gateOps, updateOps;
  for (Operation *op : server.ops)
    (needed.contains(op) ? gateOps : updateOps).push_back(op);
  addArgumentInputs(server, gateOps, inputs);
  // Server 0 sums every server's part.
  Type partType = skipping.parts.front()->getResult(0).getType();
  SmallVector<unsigned> partSlots;
  for (int64_t t = 1; t < servers && s == 0; ++t)
    if (hasFinitenessPart(t)) {
      partSlots.push_back(inputs.operands.size());
      inputs.operands.push_back(RecvOp::create(
          top, loc, partType, placeOfTask(t), channel(6, t, 0, 0)));
    }
  // What the update and the return read of the gate's values: the sums,
  // the unscaled gradients, worker 0's values.
  DenseSet<Value> gateValues;
  for (Sum &part : server.sums)
    gateValues.insert(part.acc.getResult(0));
  for (auto [value, slot] : inputs.fromWorker)
    gateValues.insert(value);
  for (Operation *op : gateOps)
    gateValues.insert(op->getResults().begin(), op->getResults().end());
  llvm::SetVector<Value> later;
  for (Operation *op : updateOps)
    for (Value operand : op->getOperands())
      if (gateValues.contains(operand))
        later.insert(operand);
  for (Value output : server.outputs)
    if (gateValues.contains(output))
      later.insert(output);
  SmallVector<Type> resultTypes(later.size() + 1, flagType);
  auto fragment = FragmentOp::create(
      top, loc, resultTypes, inputs.operands, server.here,
      ScheduleUnitAttr::get(context, UnitKind::update, 0, 0));
  fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
  Block &block = fragment.getBodyBlock();
  OpBuilder body = OpBuilder::atBlockBegin(&block);
  IRMapping mapping;
  mapUpdateInputs(body, block, server, inputs, mapping);
  cloneUpdate(body, gateOps, mapping, s);
  // This server's part: its shards' parts in step order.
  Value part;
  for (Operation *op : skipping.parts)
    if (shardOn(skipping.partOf.lookup(op), s)) {
      Value value = mapping.lookup(op->getResult(0));
      part =
          part ? partBuilder->buildAdd(body, op->getLoc(), part, value) : value;
    }
  SmallVector<Value> yielded{part};
  if (s == 0) {
    // The flag, of the sum of the parts in server order.
    for (unsigned slot : partSlots)
      part =
          part ? partBuilder->buildAdd(body, loc, part, block.getArgument(slot))
               : block.getArgument(slot);
    IRMapping sum;
    for (Value operand : skipping.flagOp->getOperands())
      sum.map(operand, part);
    Operation *flag = body.clone(*skipping.flagOp, sum);
    flag->removeAttr(DistDialect::kResultShardingsAttrName);
    yielded.front() = flag->getResult(0);
  }
  for (Value value : later)
    yielded.push_back(mapping.lookup(value));
  YieldOp::create(body, loc, yielded);
  for (auto [result, value] : llvm::zip(fragment.getResults(), yielded))
    result.setType(value.getType());
  // The parts to server 0, the flag back.
  Value flag = fragment.getResult(0);
  if (s != 0) {
    SendOp::create(top, loc, fragment.getResult(0), placeOfTask(0),
                   channel(6, s, 0, 0));
    flag = readsFlag(s) ? RecvOp::create(top, loc, flagType, placeOfTask(0),
                                         channel(7, s, 0, 0))
                              .getResult()
                        : Value();
  }
  for (int64_t t = 1; t < servers && s == 0; ++t)
    if (readsFlag(t))
      SendOp::create(top, loc, flag, placeOfTask(t), channel(7, t, 0, 0));
  // The update reads the flag and the gate's values.
  UpdateInputs update;
  if (flag) {
    update.carriedSlots.push_back({skipping.flag, 0});
    update.operands.push_back(flag);
  }
  for (auto [i, value] : llvm::enumerate(later)) {
    update.carriedSlots.push_back(
        {value, static_cast<unsigned>(update.operands.size())});
    update.operands.push_back(fragment.getResult(i + 1));
  }
  inputs = std::move(update);
  server.sums.clear();
  server.ops = std::move(updateOps);
}

void ParameterServerBuilder::writeUpdateFragment(ServerProgram &server,
                                                 UpdateInputs &inputs) {
  MLIRContext *context = module.getContext();
  int64_t s = server.s;
  OpBuilder &top = server.top;
  SmallVector<Value> stepOutputs;
  for (Value output : server.outputs)
    if (!server.carriedResult.count(output))
      stepOutputs.push_back(output);
  SmallVector<Type> resultTypes;
  for (Value output : stepOutputs)
    resultTypes.push_back(typeHere(output, s));
  auto fragment = FragmentOp::create(
      top, func.getLoc(), resultTypes, inputs.operands, server.here,
      ScheduleUnitAttr::get(context, UnitKind::update, 0, 0));
  fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
  Block &block = fragment.getBodyBlock();
  OpBuilder body = OpBuilder::atBlockBegin(&block);
  IRMapping mapping;
  mapUpdateInputs(body, block, server, inputs, mapping);
  cloneUpdate(body, server.ops, mapping, s);
  SmallVector<Value> yielded;
  for (Value output : stepOutputs)
    yielded.push_back(mapping.lookup(output));
  YieldOp::create(body, func.getLoc(), yielded);
  llvm::append_range(server.results, fragment.getResults());
}

void ParameterServerBuilder::writeServerReturn(ServerProgram &server,
                                               func::FuncOp program) {
  SmallVector<Value> returned;
  auto nextResult = server.results.begin();
  for (auto [value, isArg] : server.returnedHere) {
    if (isArg)
      returned.push_back(
          serverArg(server, cast<BlockArgument>(value).getArgNumber()));
    else if (Value result = server.carriedResult.lookup(value))
      returned.push_back(result);
    else
      returned.push_back(*nextResult++);
  }
  func::ReturnOp::create(server.top, func.getLoc(), returned);
  finishProgram(program, server.args.attrs, server.resultAttrsHere);
}

LogicalResult ParameterServerBuilder::writeServerPrograms(StringRef mode) {
  async = mode == "async";
  OpBuilder builder(module.getContext());
  builder.setInsertionPointAfter(func);
  auto schedule = [&](StringRef role) {
    return builder.getDictionaryAttr({
        builder.getNamedAttr("strategy",
                             builder.getStringAttr("parameter_server")),
        builder.getNamedAttr("role", builder.getStringAttr(role)),
        builder.getNamedAttr("mode", builder.getStringAttr(mode)),
        builder.getNamedAttr("ps", builder.getI64IntegerAttr(servers)),
        builder.getNamedAttr("workers", builder.getI64IntegerAttr(workers)),
    });
  };
  auto create = [&](const Twine &name, int64_t task, StringRef role) {
    auto program = func::FuncOp::create(builder, func.getLoc(), name.str(),
                                        builder.getFunctionType({}, {}));
    program->setAttr(DistDialect::kPlaceAttrName, placeOfTask(task));
    program->setAttr(DistDialect::kScheduleAttrName, schedule(role));
    // How the step computes (train-mixed-precision), which runners read.
    if (Attribute precision =
            func->getAttr(train::TrainDialect::kMixedPrecisionAttrName))
      program->setAttr(train::TrainDialect::kMixedPrecisionAttrName, precision);
    program.addEntryBlock();
    return program;
  };
  for (int64_t s = 0; s < servers; ++s)
    if (failed(writeServer(
            s, create(func.getSymName() + "_ps" + Twine(s), s, "ps"))))
      return failure();
  for (int64_t w = 0; w < workers; ++w)
    writeWorker(w, create(func.getSymName() + "_worker" + Twine(w), servers + w,
                          "worker"));
  return success();
}
