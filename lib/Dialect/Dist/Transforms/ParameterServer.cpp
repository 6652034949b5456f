//===- ParameterServer.cpp - parameter servers (dist-parameter-server) ----===//
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

#include "PipelineBuilder.h"
#include "Strategies.h"

#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/Interfaces/OpCost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <map>
#include "llvm/Support/FormatVariadic.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPARAMETERSERVERPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// The parameter-server mesh and its axis.
static constexpr StringLiteral kClusterMesh = "cluster", kTaskAxis = "task";

namespace {
/// Rows `[begin, end)` of a variable, held by `server`.
struct Shard {
  int64_t server, begin, end;
};

/// How variables are split into shards (TF's partitioners).
struct PartitionPolicy {
  enum class Kind { minSize, fixed } kind = Kind::minSize;
  /// At most this many shards per variable (fixed: exactly, when the rows
  /// allow).
  int64_t shards = 1;
  /// min-size: every shard at least this many bytes.
  int64_t minShardBytes = 256 << 10;
};

class ParameterServerBuilder : public PipelineBuilder {
public:
  ParameterServerBuilder(ModuleOp module, func::FuncOp func, int64_t servers,
                         int64_t workers)
      : PipelineBuilder(module, func, /*ranks=*/1, /*virtualStages=*/1,
                        workers, pipeline::ScheduleKind::GPipe),
        servers(servers), workers(workers) {
    parts = {"worker", "workers"};
  }

  /// Places every variable's shards on the servers and checks that the
  /// update is what a server can run (optimizers on summed gradients).
  LogicalResult placeVariables(const PartitionPolicy &policy);
  LogicalResult writeServerPrograms(StringRef mode);

private:
  PlaceAttr placeOfTask(int64_t task) const;
  /// The shard sizes of a variable of `rows` rows and `bytes` bytes.
  SmallVector<int64_t> splitRows(int64_t rows, int64_t bytes,
                                 const PartitionPolicy &policy) const;
  RankedTensorType shardType(unsigned arg, const Shard &shard) const;
  DictionaryAttr attrsWithBlock(DictionaryAttr attrs, Type global,
                                const Shard *shard) const;
  void writeWorker(int64_t w, func::FuncOp program);
  /// A worker's attributes of step argument `index`: its block of the
  /// batch for a batch argument.
  DictionaryAttr workerArgAttrs(unsigned index, int64_t w) const;
  /// What a worker sends for accumulation `acc`: its part of the sum, or
  /// for a sparse table the gradients of the rows it looked up.
  Value pushedPart(AllReduceOp acc) const {
    Value part = acc.getOperand(0);
    if (auto scatter = part.getDefiningOp<train::ScatterAddOp>();
        scatter && serverOnly.contains(scatter))
      return scatter.getUpdates();
    return part;
  }
  LogicalResult writeServer(int64_t s, func::FuncOp program);

  int64_t servers, workers;
  /// Per argument: its shards (empty: not a variable held by servers).
  SmallVector<SmallVector<Shard>> shardsOf;
  /// The optimizer ops and the variable argument each updates.
  SmallVector<train::OptimizerOpInterface> optimizers;
  DenseMap<Operation *, unsigned> paramOf;
  /// Per accumulation, the variable whose gradient it is (-1: the loss
  /// path, summed on server 0).
  DenseMap<Operation *, int64_t> gradientOf;
  /// Update ops that are not optimizers (the loss path): on server 0.
  SmallVector<Operation *> lossOps;
  /// Elementwise update ops on one variable's summed gradient before its
  /// optimizer (a scaling, a weight decay term): run on each of its shards.
  DenseMap<Operation *, unsigned> shardwiseOf;
  /// Variables with such an op that is not elementwise: one shard.
  DenseSet<unsigned> wholeOnly;
  /// Values the loss path reads from the per-sample ops that do not depend
  /// on the batch (a penalty on the parameters): worker 0 sends them.
  llvm::SetVector<Value> fromWorker0;
  /// Embedding tables looked up on their servers: per table argument, its
  /// lookups, the scatter-add of its gradient and the batch argument of
  /// the indices. Only the looked-up rows travel.
  struct SparseTable {
    SmallVector<train::GatherOp> lookups;
    train::ScatterAddOp gradient;
    unsigned indices;
  };
  std::map<unsigned, SparseTable> sparse;
  /// A constant the servers can make shard-shaped (a splat, as a zero
  /// gradient).
  bool isShardableConstant(Operation *op) const {
    DenseElementsAttr value;
    return isFree(op) && matchPattern(op->getResult(0), m_Constant(&value)) &&
           value.isSplat();
  }
  /// Finds the tables `sparse` holds; remarks on tables that stay dense.
  void findSparseTables();
  /// Ops the workers do not run (the scatter-adds of sparse tables).
  DenseSet<Operation *> serverOnly;
  /// Transfer channels, by (what, index, shard, worker).
  DenseMap<std::tuple<int, int64_t, int64_t, int64_t>, int64_t> channelIds;
  int64_t channel(int what, int64_t index, int64_t shard, int64_t worker) {
    return channelIds
        .try_emplace({what, index, shard, worker}, channelIds.size())
        .first->second;
  }
};
} // namespace

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

LogicalResult
ParameterServerBuilder::placeVariables(const PartitionPolicy &policy) {
  shardsOf.assign(func.getNumArguments(), {});
  DenseSet<Operation *> accumulated;
  for (AllReduceOp acc : accumulations)
    accumulated.insert(acc);
  // The update: optimizers on summed gradients, elementwise ops on a
  // gradient before its optimizer, and the loss path.
  auto isElementwise = [](Operation *op) {
    if (!op->hasTrait<OpTrait::Elementwise>() &&
        !isa<train::AddOp, train::SubOp, train::MulOp, train::DivOp,
             train::MaxOp, train::MinOp, train::PowOp, train::NegOp,
             train::AbsOp, train::ExpOp, train::LogOp, train::SqrtOp,
             train::RsqrtOp, train::TanhOp, train::SigmoidOp, train::ReluOp,
             train::GeluOp, train::SelectOp, train::CompareOp,
             train::ConvertOp>(op))
      return false;
    if (op->getNumResults() != 1)
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    return type && llvm::all_of(op->getOperandTypes(), [&](Type operand) {
             auto tensor = dyn_cast<RankedTensorType>(operand);
             return tensor && (tensor.getRank() == 0 ||
                               tensor.getShape() == type.getShape());
           });
  };
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
    auto paramType = onlyGradient
                         ? dyn_cast<RankedTensorType>(
                               func.getArgument(*variable).getType())
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
  // The servers' ops leave the workers.
  for (train::OptimizerOpInterface optimizer : optimizers)
    mbOps.remove(optimizer);
  for (auto [op, param] : shardwiseOf)
    mbOps.remove(op);
  // What the gradient ops read: the summed gradient, the variable and its
  // state, scalars (anything on the server for a variable kept whole).
  for (auto [op, param] : shardwiseOf)
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
      if (type.getRank() == 0 || (def && shardwiseOf.count(def)) ||
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
  // The loss path reads per-sample values that do not depend on the batch
  // from worker 0.
  for (Operation *op : lossOps)
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && mbOps.contains(def) && !isFree(def))
        fromWorker0.insert(operand);
  for (AllReduceOp acc : accumulations) {
    if (gradientOf.count(acc)) {
      for (Operation *user : acc->getUsers())
        if (!isa<train::OptimizerOpInterface>(user) &&
            !shardwiseOf.count(user))
          return user->emitError()
                 << "dist-parameter-server: this op reads a summed gradient "
                    "that a server also applies; only the optimizer may";
      continue;
    }
    gradientOf[acc] = -1;
  }

  // A gradient summed in another shape than its variable's (a bias's, as
  // [1, C, 1, 1]) is not split by rows: the variable stays whole.
  for (auto [acc, param] : gradientOf)
    if (param >= 0 && cast<AllReduceOp>(acc).getOperand(0).getType() !=
                          func.getArgument(param).getType())
      wholeOnly.insert(param);

  // Variables in argument order, their shards round robin over the
  // servers (TF places partitions round robin): a parameter and its
  // optimizer state share shards.
  int64_t next = 0;
  auto place = [&](unsigned arg, ArrayRef<Value> with) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(arg).getType());
    if (!type)
      return func.emitError() << "dist-parameter-server: argument #" << arg
                              << " is not a ranked tensor";
    int64_t rows = type.getRank() ? type.getDimSize(0) : 1;
    SmallVector<int64_t> sizes =
        splitRows(rows, getTensorBytes(type), policy);
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
  };
  for (BlockArgument arg : func.getArguments()) {
    if (argRoles[arg.getArgNumber()] != train::Role::param)
      continue;
    SmallVector<Value> state;
    for (train::OptimizerOpInterface optimizer : optimizers)
      if (paramOf[optimizer] == arg.getArgNumber())
        llvm::append_range(state, optimizer.getParamShapedState());
    if (failed(place(arg.getArgNumber(), state)))
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
            {0, 0, cast<RankedTensorType>(arg.getType()).getRank()
                       ? cast<RankedTensorType>(arg.getType()).getDimSize(0)
                       : 1}};
  findSparseTables();
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
    if (!scatter)
      continue;
    if (!lookupsOnly || !indices || microbatchDim[indices.getArgNumber()] < 0 ||
        scatter.getRowOffset() || !scatter->hasOneUse() ||
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
  auto type = cast<RankedTensorType>(
      func::FuncOp(func).getArgument(arg).getType());
  if (type.getRank() == 0)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = shard.end - shard.begin;
  return type.clone(shape);
}

DictionaryAttr ParameterServerBuilder::attrsWithBlock(DictionaryAttr attrs,
                                                      Type global,
                                                      const Shard *shard) const {
  MLIRContext *context = builder.getContext();
  NamedAttrList kept;
  if (attrs)
    for (NamedAttribute attr : attrs)
      if (attr.getName().getValue().starts_with("train."))
        kept.push_back(attr);
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
// Programs
//===----------------------------------------------------------------------===//

namespace {
/// Adds a program's arguments as its body needs them: one per step
/// argument, with its type and attributes in the program.
struct ProgramArguments {
  func::FuncOp program;
  DenseMap<unsigned, Value> byStepArg;
  SmallVector<DictionaryAttr> attrs;

  Value get(unsigned stepArg, Type type, DictionaryAttr attributes) {
    if (Value value = byStepArg.lookup(stepArg))
      return value;
    Value value = program.front().addArgument(type, program.getLoc());
    attrs.push_back(attributes);
    return byStepArg[stepArg] = value;
  }
};

/// Sets `program`'s type from its entry block and return, and the
/// argument and result attributes.
void finishProgram(func::FuncOp program, ArrayRef<DictionaryAttr> argAttrs,
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
} // namespace

DictionaryAttr ParameterServerBuilder::workerArgAttrs(unsigned index,
                                                     int64_t w) const {
  MLIRContext *context = builder.getContext();
  NamedAttrList attrs;
  if (argAttrs[index])
    for (NamedAttribute attr : argAttrs[index])
      if (attr.getName().getValue().starts_with("train."))
        attrs.push_back(attr);
  if (int64_t dim = microbatchDim[index]; dim >= 0) {
    // This worker's block of the batch.
    auto local = cast<RankedTensorType>(
        func::FuncOp(func).getArgument(index).getType());
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
  MLIRContext *context = module.getContext();
  ProgramArguments args;
  args.program = program;
  PlaceAttr here = placeOfTask(servers + w);
  OpBuilder top = OpBuilder::atBlockBegin(&program.front());

  // Pull: every shard of every variable the per-sample ops read.
  DenseMap<unsigned, SmallVector<Value>> pulled;
  for (Operation *op : mbOps)
    for (Value operand : op->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || shardsOf[arg.getArgNumber()].empty() ||
          pulled.count(arg.getArgNumber()) || sparse.count(arg.getArgNumber()))
        continue;
      unsigned index = arg.getArgNumber();
      for (auto [k, shard] : llvm::enumerate(shardsOf[index]))
        pulled[index].push_back(RecvOp::create(
            top, func.getLoc(), shardType(index, shard),
            placeOfTask(shard.server), channel(0, index, k, w)));
    }

  // Sparse tables: the indices to each server that holds rows, the rows
  // looked up there (zeros for rows it does not hold) back.
  DenseMap<Operation *, SmallVector<Value>> lookedUp;
  for (auto &[param, table] : sparse) {
    BlockArgument ids = func.getArgument(table.indices);
    Value mine = args.get(table.indices, ids.getType(),
                          workerArgAttrs(table.indices, w));
    SmallVector<Value> rows;
    for (auto [k, shard] : llvm::enumerate(shardsOf[param])) {
      SendOp::create(top, func.getLoc(), mine, placeOfTask(shard.server),
                     channel(2, param, k, w));
      rows.push_back(RecvOp::create(
          top, func.getLoc(), table.lookups.front().getType(),
          placeOfTask(shard.server), channel(3, param, k, w)));
    }
    for (train::GatherOp lookup : table.lookups)
      lookedUp[lookup] = rows;
  }

  // The worker's value of each step value the fragments made.
  DenseMap<Value, Value> made;
  for (UnitKind kind : {UnitKind::forward, UnitKind::backward}) {
    SmallVector<Operation *> ops;
    DenseSet<Operation *> inUnit;
    for (Operation *op : mbOps)
      if (!isFree(op) && unitKind[op] == kind && !serverOnly.contains(op) &&
          !lookedUp.count(op)) {
        ops.push_back(op);
        inUnit.insert(op);
      }
    if (ops.empty())
      continue;
    // Inputs: values from outside the unit (free ops are cloned inside).
    llvm::SetVector<Value> inputs;
    for (Operation *op : ops)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && (inUnit.contains(def) || isFree(def)))
          continue;
        inputs.insert(operand);
      }
    SmallVector<Value> operands;
    SmallVector<std::pair<Value, unsigned>> inputSlots; // value, first operand
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
    // Outputs: what later units, the pushes or the return read.
    llvm::SetVector<Value> outputs;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!inUnit.contains(user) && !serverOnly.contains(user) &&
              !llvm::is_contained(accumulations, user))
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
    SmallVector<Type> resultTypes;
    for (Value output : outputs)
      resultTypes.push_back(output.getType());
    // The pushes of the sums this unit makes: one slice per shard.
    SmallVector<std::tuple<AllReduceOp, int64_t, Shard>> pushes;
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
    auto fragment = FragmentOp::create(
        top, ops.front()->getLoc(), resultTypes, operands, here,
        ScheduleUnitAttr::get(context, kind, 0, w));
    fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
    OpBuilder body = OpBuilder::atBlockBegin(&fragment.getBodyBlock());
    IRMapping mapping;
    for (auto [input, first] : inputSlots) {
      if (Operation *lookup = input.getDefiningOp();
          lookup && lookedUp.count(lookup)) {
        // The rows each server looked up, added in server order.
        Value sum = fragment.getBodyBlock().getArgument(first);
        for (unsigned k = 1; k < lookedUp[lookup].size(); ++k)
          sum = train::AddOp::create(body, lookup->getLoc(), sum,
                                     fragment.getBodyBlock().getArgument(
                                         first + k))
                    .getResult();
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
        mapping.map(input, train::ConcatOp::create(body, input.getLoc(),
                                                   pieces, /*dim=*/0)
                               .getResult());
        continue;
      }
      mapping.map(input, fragment.getBodyBlock().getArgument(first));
    }
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || !isFree(def) || mapping.contains(operand))
          continue;
        if (auto offset = dyn_cast<ShardOffsetOp>(def);
            offset && isMicrobatchCollective(offset)) {
          mapping.map(operand, arith::ConstantIndexOp::create(
                                   body, def->getLoc(),
                                   w * (offset.getSize() / workers)));
          continue;
        }
        Operation *clone = body.clone(*def);
        clone->removeAttr(DistDialect::kResultShardingsAttrName);
        mapping.map(def->getResults(), clone->getResults());
      }
      if (auto slice = dyn_cast<LocalSliceOp>(op);
          slice && isMicrobatchCollective(op)) {
        // This worker's block of a value every worker has whole.
        auto type = cast<RankedTensorType>(slice.getType());
        SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape());
        start[slice.getDim()] = w * type.getDimSize(slice.getDim());
        limit[slice.getDim()] += start[slice.getDim()];
        mapping.map(slice.getResult(),
                    train::SliceOp::create(body, slice.getLoc(),
                                           mapping.lookup(slice.getInput()),
                                           body.getDenseI64ArrayAttr(start),
                                           body.getDenseI64ArrayAttr(limit),
                                           nullptr)
                        .getResult());
        continue;
      }
      Operation *clone = body.clone(*op, mapping);
      clone->removeAttr(DistDialect::kResultShardingsAttrName);
      clone->removeAttr("train.stage");
    }
    SmallVector<Value> yielded;
    for (Value output : outputs)
      yielded.push_back(mapping.lookup(output));
    for (auto &[acc, a, shard] : pushes) {
      Value part = mapping.lookup(pushedPart(acc));
      int64_t param = gradientOf.lookup(acc);
      auto type = cast<RankedTensorType>(part.getType());
      if (param >= 0 && !sparse.count(param) && shardsOf[param].size() > 1) {
        SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape());
        start[0] = shard.begin;
        limit[0] = shard.end;
        part = train::SliceOp::create(body, acc.getLoc(), part,
                                      body.getDenseI64ArrayAttr(start),
                                      body.getDenseI64ArrayAttr(limit),
                                      nullptr)
                   .getResult();
      }
      yielded.push_back(part);
    }
    YieldOp::create(body, fragment.getLoc(), yielded);
    for (auto [output, result] : llvm::zip(outputs, fragment.getResults()))
      made[output] = result;
    if (w == 0)
      for (auto [i, value] : llvm::enumerate(fromWorker0))
        if (inUnit.contains(value.getDefiningOp()))
          SendOp::create(top, value.getLoc(), made[value], placeOfTask(0),
                         channel(4, i, 0, 0));
    // Push each part to its server.
    for (auto [i, push] : llvm::enumerate(pushes)) {
      auto &[acc, a, shard] = push;
      int64_t k = 0;
      if (int64_t param = gradientOf.lookup(acc); param >= 0)
        k = llvm::find_if(shardsOf[param],
                          [&](const Shard &s) {
                            return s.begin == shard.begin;
                          }) -
            shardsOf[param].begin();
      SendOp::create(top, acc.getLoc(),
                     fragment.getResult(outputs.size() + i),
                     placeOfTask(shard.server), channel(1, a, k, w));
    }
  }
  func::ReturnOp::create(top, func.getLoc());
  finishProgram(program, args.attrs, {});
}

LogicalResult ParameterServerBuilder::writeServer(int64_t s,
                                                  func::FuncOp program) {
  MLIRContext *context = module.getContext();
  ProgramArguments args;
  args.program = program;
  PlaceAttr here = placeOfTask(s);
  OpBuilder top = OpBuilder::atBlockBegin(&program.front());
  auto shardHere = [&](unsigned arg) -> const Shard * {
    for (const Shard &shard : shardsOf[arg])
      if (shard.server == s)
        return &shard;
    return nullptr;
  };
  auto shardIndex = [&](unsigned arg, const Shard *shard) {
    return shard - shardsOf[arg].begin();
  };
  auto getArg = [&](unsigned index) {
    const Shard *shard = shardHere(index);
    Type global = func.getArgument(index).getType();
    return args.get(index, shard ? shardType(index, *shard) : global,
                    attrsWithBlock(argAttrs[index], global, shard));
  };

  // Every shard this server holds is an argument, also of state the step
  // neither reads nor returns (runners still save it).
  for (unsigned index = 0; index < shardsOf.size(); ++index)
    if (shardHere(index) && (argRoles[index] == train::Role::param ||
                             argRoles[index] == train::Role::opt_state))
      getArg(index);

  // Pull: this server's shards to every worker that reads the variable.
  for (unsigned index = 0; index < shardsOf.size(); ++index) {
    const Shard *shard = shardHere(index);
    if (!shard || argRoles[index] != train::Role::param || sparse.count(index) ||
        !llvm::any_of(func.getArgument(index).getUsers(),
                      [&](Operation *user) { return mbOps.contains(user); }))
      continue;
    Value value = getArg(index);
    for (int64_t w = 0; w < workers; ++w)
      SendOp::create(top, func.getLoc(), value, placeOfTask(servers + w),
                     channel(0, index, shardIndex(index, shard), w));
  }

  // Lookups in this server's shards of sparse tables, for each worker.
  DenseMap<std::pair<unsigned, int64_t>, Value> indicesFrom;
  for (auto &[param, table] : sparse) {
    const Shard *shard = shardHere(param);
    if (!shard)
      continue;
    int64_t k = shardIndex(param, shard);
    Value rows = getArg(param);
    train::GatherOp lookup = table.lookups.front();
    for (int64_t w = 0; w < workers; ++w) {
      Value ids = RecvOp::create(
          top, lookup.getLoc(), func.getArgument(table.indices).getType(),
          placeOfTask(servers + w), channel(2, param, k, w));
      indicesFrom[{param, w}] = ids;
      auto fragment = FragmentOp::create(
          top, lookup.getLoc(), TypeRange{lookup.getType()},
          ValueRange{rows, ids}, here,
          ScheduleUnitAttr::get(context, UnitKind::forward, 0, w));
      fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
      Block &block = fragment.getBodyBlock();
      OpBuilder body = OpBuilder::atBlockBegin(&block);
      Value offset =
          arith::ConstantIndexOp::create(body, lookup.getLoc(), shard->begin);
      Value found = train::GatherOp::create(body, lookup.getLoc(),
                                            lookup.getType(),
                                            block.getArgument(0),
                                            block.getArgument(1), offset);
      YieldOp::create(body, lookup.getLoc(), found);
      SendOp::create(top, lookup.getLoc(), fragment.getResult(0),
                     placeOfTask(servers + w), channel(3, param, k, w));
    }
  }

  // Push: each worker's part of the sums this server makes.
  SmallVector<Value> operands;
  struct Sum {
    AllReduceOp acc;
    /// The first of the workers' parts (and of their indices, sparse).
    unsigned first, firstIndices = 0;
    const Shard *sparseShard = nullptr;
  };
  SmallVector<Sum> sums;
  for (auto [a, acc] : llvm::enumerate(accumulations)) {
    int64_t param = gradientOf.lookup(acc);
    const Shard *shard = param >= 0 ? shardHere(param) : nullptr;
    if (param >= 0 ? !shard : s != 0)
      continue;
    bool isSparse = param >= 0 && sparse.count(param);
    Type type = isSparse ? pushedPart(acc).getType()
                : shard && shardsOf[param].size() > 1
                    ? shardType(param, *shard)
                    : acc.getOperand(0).getType();
    int64_t k = shard ? shardIndex(param, shard) : 0;
    sums.push_back({acc, static_cast<unsigned>(operands.size()), 0,
                    isSparse ? shard : nullptr});
    for (int64_t w = 0; w < workers; ++w)
      operands.push_back(RecvOp::create(top, acc.getLoc(), type,
                                        placeOfTask(servers + w),
                                        channel(1, a, k, w)));
    if (isSparse) {
      sums.back().firstIndices = operands.size();
      for (int64_t w = 0; w < workers; ++w)
        operands.push_back(indicesFrom.lookup({param, w}));
    }
  }

  // The update: the optimizers of this server's shards, and on server 0
  // the loss path.
  SmallVector<Operation *> ops;
  for (Operation &each : func.front().without_terminator()) {
    Operation *op = &each;
    if (!stepOps.contains(op) && !shardwiseOf.count(op) &&
        !isa<train::OptimizerOpInterface>(op))
      continue;
    if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op)) {
      if (shardHere(paramOf[optimizer]))
        ops.push_back(op);
    } else if (shardwiseOf.count(op)) {
      if (shardHere(shardwiseOf.lookup(op)))
        ops.push_back(op);
    } else if (s == 0) {
      ops.push_back(op);
    }
  }
  // What the loss path needs from worker 0.
  SmallVector<std::pair<Value, unsigned>> fromWorker; // value, operand
  if (s == 0)
    for (auto [i, value] : llvm::enumerate(fromWorker0)) {
      fromWorker.push_back({value, static_cast<unsigned>(operands.size())});
      operands.push_back(RecvOp::create(top, value.getLoc(), value.getType(),
                                        placeOfTask(servers),
                                        channel(4, i, 0, 0)));
    }
  llvm::SetVector<unsigned> argInputs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand))
        argInputs.insert(arg.getArgNumber());
  SmallVector<std::pair<unsigned, unsigned>> argSlots; // step arg, operand
  for (unsigned index : argInputs) {
    argSlots.push_back({index, static_cast<unsigned>(operands.size())});
    operands.push_back(getArg(index));
  }

  // Which step results this server returns: a step argument returned
  // unchanged, or a value of the update (`outputs`, yielded by it).
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  SmallVector<Value> outputs;
  SmallVector<DictionaryAttr> resultAttrsHere;
  SmallVector<std::pair<Value, bool>> returnedHere; // step value, is an arg
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    Operation *def = operand.getDefiningOp();
    if (auto arg = dyn_cast<BlockArgument>(operand)) {
      const Shard *shard = shardHere(arg.getArgNumber());
      if (!shard && !(s == 0 && shardsOf[arg.getArgNumber()].empty()))
        continue;
      returnedHere.push_back({operand, true});
      resultAttrsHere.push_back(
          attrsWithBlock(resultAttrs[i], arg.getType(), shard));
      continue;
    }
    const Shard *shard = nullptr;
    if (auto optimizer = dyn_cast_or_null<train::OptimizerOpInterface>(def)) {
      shard = shardHere(paramOf[optimizer]);
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
    returnedHere.push_back({operand, false});
    outputs.push_back(operand);
    resultAttrsHere.push_back(
        attrsWithBlock(resultAttrs[i], operand.getType(), shard));
  }

  SmallVector<Type> resultTypes;
  for (Value output : outputs) {
    Type type = output.getType();
    auto optimizer = output.getDefiningOp<train::OptimizerOpInterface>();
    if (optimizer && type == optimizer.getParam().getType())
      type = shardType(paramOf[optimizer], *shardHere(paramOf[optimizer]));
    resultTypes.push_back(type);
  }
  SmallVector<Value> results;
  if (!ops.empty() || !sums.empty()) {
    auto fragment = FragmentOp::create(
        top, func.getLoc(), resultTypes, operands, here,
        ScheduleUnitAttr::get(context, UnitKind::update, 0, 0));
    fragment.setOriginAttr(top.getStrArrayAttr({func.getSymName().str()}));
    Block &block = fragment.getBodyBlock();
    OpBuilder body = OpBuilder::atBlockBegin(&block);
    IRMapping mapping;
    for (auto [index, slot] : argSlots)
      mapping.map(func.getArgument(index), block.getArgument(slot));
    for (auto [value, slot] : fromWorker)
      mapping.map(value, block.getArgument(slot));
    // The workers' parts, added in worker order.
    for (const Sum &part : sums) {
      AllReduceOp acc = part.acc;
      if (const Shard *shard = part.sparseShard) {
        // Each worker's looked-up rows' gradients, added into the shard.
        int64_t param = gradientOf.lookup(acc);
        Value sum = train::ConstantOp::create(
            body, acc.getLoc(),
            DenseElementsAttr::get(
                shardType(param, *shard),
                body.getZeroAttr(shardType(param, *shard).getElementType())));
        Value offset =
            arith::ConstantIndexOp::create(body, acc.getLoc(), shard->begin);
        for (int64_t w = 0; w < workers; ++w)
          sum = train::ScatterAddOp::create(
                    body, acc.getLoc(), sum.getType(), sum,
                    block.getArgument(part.firstIndices + w),
                    block.getArgument(part.first + w), offset)
                    .getResult();
        mapping.map(acc.getResult(0), sum);
        continue;
      }
      Value sum = block.getArgument(part.first);
      for (int64_t w = 1; w < workers; ++w)
        sum = train::AddOp::create(body, acc.getLoc(), sum,
                                   block.getArgument(part.first + w))
                  .getResult();
      mapping.map(acc.getResult(0), sum);
    }
    for (Operation *op : ops) {
      // On a shard, the values shaped like the variable are shard-shaped.
      std::optional<unsigned> variable;
      if (auto optimizer = dyn_cast<train::OptimizerOpInterface>(op))
        variable = paramOf[optimizer];
      else if (shardwiseOf.count(op))
        variable = shardwiseOf.lookup(op);
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
          auto type = shardType(*variable, *shardHere(*variable));
          constants.map(operand,
                        train::ConstantOp::create(
                            body, def->getLoc(),
                            DenseElementsAttr::get(
                                type, value.getSplatValue<Attribute>()))
                            .getResult());
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
            result.setType(shardType(*variable, *shardHere(*variable)));
    }
    SmallVector<Value> yielded;
    for (Value output : outputs)
      yielded.push_back(mapping.lookup(output));
    YieldOp::create(body, func.getLoc(), yielded);
    llvm::append_range(results, fragment.getResults());
  }

  // The return, in the step's result order.
  SmallVector<Value> returned;
  auto nextResult = results.begin();
  for (auto [value, isArg] : returnedHere)
    returned.push_back(
        isArg ? getArg(cast<BlockArgument>(value).getArgNumber())
              : *nextResult++);
  func::ReturnOp::create(top, func.getLoc(), returned);
  finishProgram(program, args.attrs, resultAttrsHere);
  return success();
}

LogicalResult ParameterServerBuilder::writeServerPrograms(StringRef mode) {
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
    program.addEntryBlock();
    return program;
  };
  for (int64_t s = 0; s < servers; ++s)
    if (failed(writeServer(
            s, create(func.getSymName() + "_ps" + Twine(s), s, "ps"))))
      return failure();
  for (int64_t w = 0; w < workers; ++w)
    writeWorker(w, create(func.getSymName() + "_worker" + Twine(w),
                          servers + w, "worker"));
  return success();
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
    policy.shards = shards > 0 ? static_cast<int64_t>(shards)
                               : static_cast<int64_t>(ps);
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
          << "shards=" << policy.shards << " is more than ps="
          << static_cast<int64_t>(ps)
          << ": each server holds at most one shard of a variable";
      return signalPassFailure();
    }
    if (mode == "async") {
      emitOptionError(module, "dist-parameter-server")
          << "mode=async is not built yet (mode=sync is)";
      return signalPassFailure();
    }
    if (failed(checkSingleDevice(module)))
      return signalPassFailure();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (train::TrainingStep::isTrainingStep(func))
        steps.push_back(func);
    if (steps.size() != 1) {
      emitOptionError(module, "dist-parameter-server")
          << "needs exactly one training step in the module, found "
          << steps.size();
      return signalPassFailure();
    }
    func::FuncOp func = steps.front();
    ParameterServerBuilder builder(module, func, ps, workers);
    auto run = [&](OpPassManager &pm) { return runPipeline(pm, module); };
    if (failed(builder.partitionMicrobatches(run)) ||
        failed(builder.analyzePhases()) ||
        failed(builder.placeVariables(policy)) ||
        failed(getOrCreateMesh(module, kClusterMesh, {kTaskAxis},
                               {ps + workers}, {})) ||
        failed(builder.writeServerPrograms(mode)))
      return signalPassFailure();
    func.erase();
    if (auto mesh = module.lookupSymbol<MeshOp>(kMicrobatchMesh))
      mesh.erase();
    bool broken = false;
    for (auto program : module.getOps<func::FuncOp>())
      if (program->hasAttr(DistDialect::kPlaceAttrName) &&
          failed(verifyStepContract(program)))
        broken = true;
    if (broken || failed(verifyPrograms(module)))
      return signalPassFailure();
  }
};
} // namespace
