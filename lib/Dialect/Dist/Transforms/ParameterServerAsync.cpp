//===- ParameterServerAsync.cpp - dist-parameter-server: mode=async -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The servers' update of an asynchronous parameter-server step: each
// server serves the workers' requests in the order they arrive (a
// dist.serve), applying each worker's gradients at once to the values the
// previous request left and replying with the new values.
//
//===----------------------------------------------------------------------===//

#include "ParameterServerBuilder.h"

using namespace mlir;
using namespace mlir::dist;

/// What writeServe plans before it writes the dist.serve.
struct ParameterServerBuilder::ServePlan {
  /// The ops run per request, in step order.
  SmallVector<Operation *> perRequest;
  DenseSet<Operation *> isPerRequest;
  /// What they update: (step argument, its new value).
  SmallVector<std::pair<unsigned, Value>> carried;
  /// The loss path's sums, added over the requests.
  SmallVector<Sum *> lossSums;
  /// The serve's initial values: the carried arguments, then zero sums.
  SmallVector<Value> inits;
  SmallVector<Type> initTypes;
};

LogicalResult ParameterServerBuilder::writeServe(
    int64_t s, OpBuilder &top, SmallVectorImpl<Sum> &sums,
    SmallVectorImpl<Operation *> &ops, function_ref<Value(unsigned)> getArg,
    const DenseMap<std::pair<unsigned, int64_t>, Value> &indicesFrom,
    DenseMap<Value, Value> &carriedResult,
    SmallVectorImpl<std::pair<Value, Value>> &servedSums) {
  ServePlan plan;
  planPerRequestOps(ops, plan);
  if (failed(planCarried(s, getArg, plan)))
    return failure();
  createServeInits(s, top, sums, getArg, plan);
  ServeOp serve = createServe(s, top, sums, plan);
  for (int64_t w = 0; w < workers; ++w)
    writeServeCase(s, w, serve, top, sums, getArg, indicesFrom, plan);
  for (auto [c, entry] : llvm::enumerate(plan.carried))
    carriedResult[entry.second] = serve.getResult(c);
  for (auto [i, part] : llvm::enumerate(plan.lossSums)) {
    Value sum = part->acc.getResult(0);
    carriedResult[sum] = serve.getResult(plan.carried.size() + i);
    servedSums.push_back({sum, carriedResult[sum]});
  }
  // The rest of the update runs once per step on the step's values.
  llvm::erase_if(ops,
                 [&](Operation *op) { return plan.isPerRequest.contains(op); });
  sums.clear();
  return success();
}

void ParameterServerBuilder::planPerRequestOps(ArrayRef<Operation *> ops,
                                               ServePlan &plan) {
  // The optimizers and gradient ops of every variable whose update reads
  // a summed gradient (also such a variable's terms that do not, a weight
  // decay on it), in step order.
  auto variableOf = [&](Operation *op) -> std::optional<unsigned> {
    if (isa<train::OptimizerOpInterface>(op))
      return paramOf.lookup(op);
    if (shardwiseOf.count(op))
      return shardwiseOf.lookup(op);
    return std::nullopt;
  };
  DenseSet<unsigned> perRequestVariables;
  for (Operation *op : ops)
    if (std::optional<unsigned> variable = variableOf(op);
        variable && llvm::any_of(op->getOperands(), [&](Value operand) {
          auto acc = operand.getDefiningOp<AllReduceOp>();
          return acc && gradientOf.lookup(acc) >= 0 &&
                 llvm::is_contained(accumulations, acc);
        }))
      perRequestVariables.insert(*variable);
  for (Operation *op : ops)
    if (std::optional<unsigned> variable = variableOf(op);
        variable && perRequestVariables.contains(*variable)) {
      plan.perRequest.push_back(op);
      plan.isPerRequest.insert(op);
    }
}

LogicalResult ParameterServerBuilder::planCarried(
    int64_t s, function_ref<Value(unsigned)> getArg, ServePlan &plan) {
  // Step arguments, carried from request to request (a result names the
  // argument it replaces).
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    Operation *def = operand.getDefiningOp();
    if (!def || !plan.isPerRequest.contains(def))
      continue;
    Attribute name =
        resultAttrs[i] ? resultAttrs[i].get(train::TrainDialect::kNameAttrName)
                       : Attribute();
    const auto *arg = llvm::find_if(argAttrs, [&](DictionaryAttr attrs) {
      return name && attrs &&
             attrs.get(train::TrainDialect::kNameAttrName) == name;
    });
    if (arg == argAttrs.end() ||
        getArg(arg - argAttrs.begin()).getType() != typeHere(operand, s))
      return ret.emitError()
             << "dist-parameter-server: mode=async applies each worker's "
                "gradients as they arrive, so result #"
             << i
             << " must be the new value of a state argument of its "
                "name and type";
    plan.carried.push_back(
        {static_cast<unsigned>(arg - argAttrs.begin()), operand});
  }
  for (Operation *op : plan.perRequest)
    for (Operation *user : op->getUsers())
      if (!plan.isPerRequest.contains(user) && !isa<func::ReturnOp>(user))
        return user->emitError()
               << "dist-parameter-server: mode=async updates the "
                  "variables once per worker's request; this op reads an "
                  "updated value after the step";
  return success();
}

void ParameterServerBuilder::createServeInits(
    int64_t s, OpBuilder &top, SmallVectorImpl<Sum> &sums,
    function_ref<Value(unsigned)> getArg, ServePlan &plan) {
  PlaceAttr here = placeOfTask(s);
  for (Sum &part : sums)
    if (gradientOf.lookup(part.acc) < 0)
      plan.lossSums.push_back(&part);
  for (auto [index, value] : plan.carried)
    plan.inits.push_back(getArg(index));
  if (!plan.lossSums.empty()) {
    SmallVector<Type> types;
    for (Sum *part : plan.lossSums)
      types.push_back(part->type);
    auto zeros = FragmentOp::create(top, func.getLoc(), types, ValueRange{},
                                    here, nullptr);
    OpBuilder body = OpBuilder::atBlockBegin(&zeros.getBodyBlock());
    SmallVector<Value> values;
    for (Type type : types)
      values.push_back(partBuilder->buildConstant(
          body, func.getLoc(),
          DenseElementsAttr::get(
              cast<ShapedType>(type),
              body.getZeroAttr(cast<ShapedType>(type).getElementType()))));
    YieldOp::create(body, func.getLoc(), values);
    llvm::append_range(plan.inits, zeros.getResults());
  }
  plan.initTypes.assign(ValueRange(plan.inits).getTypes().begin(),
                        ValueRange(plan.inits).getTypes().end());
}

ServeOp ParameterServerBuilder::createServe(int64_t s, OpBuilder &top,
                                            SmallVectorImpl<Sum> &sums,
                                            ServePlan &plan) {
  // The probe of worker w: its last push here (after its backward).
  Sum *probed = &sums.front();
  auto kindOf = [&](Sum &part) {
    Operation *def = pushedPart(part.acc).getDefiningOp();
    return def && unitKind.count(def) ? static_cast<int>(unitKind.lookup(def))
                                      : 0;
  };
  for (Sum &part : sums)
    if (kindOf(part) >= kindOf(*probed))
      probed = &part;
  SmallVector<Attribute> peers;
  SmallVector<int64_t> probes;
  for (int64_t w = 0; w < workers; ++w) {
    peers.push_back(placeOfTask(servers + w));
    probes.push_back(channel(1, probed->index, probed->shard, w));
  }
  return ServeOp::create(top, func.getLoc(), plan.initTypes, plan.inits,
                         top.getArrayAttr(peers), probes, workers, workers);
}

void ParameterServerBuilder::writeServeCase(
    int64_t s, int64_t w, ServeOp serve, OpBuilder &top,
    SmallVectorImpl<Sum> &sums, function_ref<Value(unsigned)> getArg,
    const DenseMap<std::pair<unsigned, int64_t>, Value> &indicesFrom,
    ServePlan &plan) {
  MLIRContext *context = module.getContext();
  PlaceAttr here = placeOfTask(s);
  auto &[perRequest, isPerRequest, carried, lossSums, inits, initTypes] = plan;
  Block *block = new Block();
  serve.getCases()[w].push_back(block);
  for (Type type : initTypes)
    block->addArgument(type, func.getLoc());
  OpBuilder caseBuilder = OpBuilder::atBlockEnd(block);
  SmallVector<Value> inputs(block->getArguments());
  SmallVector<unsigned> partSlots;
  for (Sum &part : sums) {
    partSlots.push_back(inputs.size());
    inputs.push_back(RecvOp::create(caseBuilder, part.acc.getLoc(), part.type,
                                    placeOfTask(servers + w),
                                    channel(1, part.index, part.shard, w)));
    if (part.sparseShard)
      inputs.push_back(indicesFrom.lookup({gradientOf.lookup(part.acc), w}));
  }
  llvm::SetVector<unsigned> argInputs;
  for (Operation *op : perRequest)
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand);
          arg && !llvm::any_of(carried, [&](auto &entry) {
            return entry.first == arg.getArgNumber();
          }))
        argInputs.insert(arg.getArgNumber());
  SmallVector<std::pair<unsigned, unsigned>> argSlots;
  for (unsigned index : argInputs) {
    argSlots.push_back({index, static_cast<unsigned>(inputs.size())});
    inputs.push_back(getArg(index));
  }
  auto fragment = FragmentOp::create(
      caseBuilder, func.getLoc(), initTypes, inputs, here,
      ScheduleUnitAttr::get(context, UnitKind::update, 0, w));
  fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
  Block &fragmentBlock = fragment.getBodyBlock();
  OpBuilder body = OpBuilder::atBlockBegin(&fragmentBlock);
  IRMapping mapping;
  for (auto [c, entry] : llvm::enumerate(carried))
    mapping.map(func.getArgument(entry.first), fragmentBlock.getArgument(c));
  for (auto [index, slot] : argSlots)
    mapping.map(func.getArgument(index), fragmentBlock.getArgument(slot));
  // A gradient from one worker's block stands for the batch's: scaled
  // by the number of workers (its own mean for a mean loss). The loss
  // path adds the parts of the requests served.
  SmallVector<Value> yielded;
  for (auto [i, part] : llvm::enumerate(sums)) {
    Value value = fragmentBlock.getArgument(partSlots[i]);
    Value indices = part.sparseShard
                        ? fragmentBlock.getArgument(partSlots[i] + 1)
                        : Value();
    if (gradientOf.lookup(part.acc) >= 0) {
      mapping.map(part.acc.getResult(0),
                  addPart(body, part, Value(), value, indices, workers));
      continue;
    }
    unsigned slot =
        carried.size() + (llvm::find(lossSums, &part) - lossSums.begin());
    mapping.map(part.acc.getResult(0),
                addPart(body, part, fragmentBlock.getArgument(slot), value,
                        indices, 1));
  }
  cloneUpdate(body, perRequest, mapping, s);
  for (auto [index, value] : carried)
    yielded.push_back(mapping.lookup(value));
  for (Sum *part : lossSums)
    yielded.push_back(mapping.lookup(part->acc.getResult(0)));
  YieldOp::create(body, func.getLoc(), yielded);
  // The reply: this server's shards of what the worker reads, as the
  // request left them.
  for (unsigned index = 0; index < shardsOf.size(); ++index) {
    const Shard *shard = shardOn(index, s);
    if (!shard || !isPulled(index))
      continue;
    Value value = getArg(index);
    for (auto [c, entry] : llvm::enumerate(carried))
      if (entry.first == index)
        value = fragment.getResult(c);
    SendOp::create(caseBuilder, func.getLoc(), value, placeOfTask(servers + w),
                   channel(5, index, shardIndex(index, shard), w));
  }
  YieldOp::create(caseBuilder, func.getLoc(), fragment.getResults());
}
