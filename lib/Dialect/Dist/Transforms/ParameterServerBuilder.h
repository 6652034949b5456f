//===- ParameterServerBuilder.h - dist-parameter-server's state -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `dist-parameter-server` builds up while it places a training step's
// variables on the servers and writes the servers' and workers' programs
// (ParameterServer.cpp: placement and the pass; ParameterServerPrograms.cpp:
// the programs). The phases (which ops are per sample, which values are
// sums over the batch) come from PipelineBuilder.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PARAMETERSERVERBUILDER_H
#define DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PARAMETERSERVERBUILDER_H

#include "PipelineBuilder.h"

#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <map>

namespace mlir::dist {

/// The parameter-server mesh and its axis.
static constexpr llvm::StringLiteral kClusterMesh = "cluster",
                                     kTaskAxis = "task";

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

/// Adds a program's arguments as its body needs them: one per step
/// argument, with its type and attributes in the program.
struct ProgramArguments {
  func::FuncOp program;
  DenseMap<unsigned, Value> byStepArg;
  SmallVector<DictionaryAttr> attrs;

  Value get(unsigned stepArg, Type type, DictionaryAttr attributes) {
    if (Value value = byStepArg.lookup(stepArg))
      return value;
    return byStepArg[stepArg] = add(type, attributes);
  }
  /// A new argument.
  Value add(Type type, DictionaryAttr attributes) {
    Value value = program.front().addArgument(type, program.getLoc());
    attrs.push_back(attributes);
    return value;
  }
};

class ParameterServerBuilder : public PipelineBuilder {
public:
  ParameterServerBuilder(ModuleOp module, func::FuncOp func, int64_t servers,
                         int64_t workers)
      : PipelineBuilder(module, func, /*ranks=*/1, /*virtualStages=*/1, workers,
                        pipeline::ScheduleKind::GPipe),
        servers(servers), workers(workers) {
    parts = {"worker", "workers"};
  }

  /// Places every variable's shards on the servers and checks that the
  /// update is what a server can run (optimizers on summed gradients).
  LogicalResult placeVariables(const PartitionPolicy &policy);
  /// With one worker, which sees the whole batch: makes each optimizer's
  /// gradient and each returned value (but an optimizer's) that the worker
  /// computes without a sum over the batch (statistics of the whole batch,
  /// as a batch norm's, feed them) a sum over the one worker, so that it is
  /// pushed to the servers like any gradient (the others to server 0, as
  /// the loss).
  void accumulateWholeBatchValues();
  LogicalResult writeServerPrograms(StringRef mode);

  /// What placeVariables decided (the pass's statistics): the arguments
  /// held by the servers, their shards, the sparsely looked-up tables.
  int64_t getNumVariables() const {
    return llvm::count_if(shardsOf, [](const SmallVector<Shard> &shards) {
      return !shards.empty();
    });
  }
  int64_t getNumShards() const {
    int64_t count = 0;
    for (const SmallVector<Shard> &shards : shardsOf)
      count += shards.size();
    return count;
  }
  int64_t getNumSparseTables() const { return sparse.size(); }

private:
  // placeVariables's phases.
  /// A step that skips its update when a gradient is not finite (dynamic
  /// loss scaling): the ops on the loss scale alone that only the update
  /// reads run on server 0 (see `skipping`).
  void placeLossScaleUpdate();
  /// Which update ops the servers run: the optimizers, the ops on one
  /// variable's gradient before them (shardwiseOf, wholeOnly) and the loss
  /// path (lossOps).
  LogicalResult classifyUpdateOps();
  /// The gradients' finiteness: each variable's part of it and their sum
  /// (see `skipping`).
  LogicalResult classifyFiniteness();
  /// What the servers' gradient ops and optimizers read is on the server.
  LogicalResult checkGradientInputs();
  /// The loss path's sums (on server 0).
  LogicalResult assignLossPath();
  /// What the servers' ops read from the per-sample ops without the batch
  /// (the loss path's inputs, the loss scale's reciprocal): worker 0 sends
  /// it to each server that runs them.
  void assignWorkerValues();
  /// Whether server `s` runs update op `op`.
  bool runsOn(Operation *op, int64_t s) const;
  /// Variable `arg`'s shards (shared with its optimizer state `with`),
  /// round robin from server `next`.
  LogicalResult placeShards(unsigned arg, ArrayRef<Value> with,
                            const PartitionPolicy &policy, int64_t &next);
  /// Every parameter and its state on the servers, other state on server 0.
  LogicalResult placeAll(const PartitionPolicy &policy);

  PlaceAttr placeOfTask(int64_t task) const;
  /// The shard sizes of a variable of `rows` rows and `bytes` bytes.
  SmallVector<int64_t> splitRows(int64_t rows, int64_t bytes,
                                 const PartitionPolicy &policy) const;
  RankedTensorType shardType(unsigned arg, const Shard &shard) const;
  DictionaryAttr attrsWithBlock(DictionaryAttr attrs, Type global,
                                const Shard *shard) const;
  /// A worker's copy of shard `shard` of variable `arg` (mode=async).
  DictionaryAttr cacheAttrs(unsigned arg, const Shard &shard) const {
    NamedAttrList attrs(attrsWithBlock(
        argAttrs[arg], func::FuncOp(func).getArgument(arg).getType(), &shard));
    attrs.set(DistDialect::kCacheAttrName, UnitAttr::get(func->getContext()));
    return attrs.getDictionary(func->getContext());
  }
  /// Worker `w`'s program, written in phases: the pulls, the sparse
  /// lookups, a forward and a backward fragment (writeWorkerUnit) with
  /// their pushes, and (async) the replies.
  void writeWorker(int64_t w, func::FuncOp program);
  /// A worker's program as writeWorker's phases fill it.
  struct WorkerProgram {
    int64_t w;
    ProgramArguments args;
    PlaceAttr here;
    OpBuilder top;
    /// The shards each variable the per-sample ops read arrives in.
    DenseMap<unsigned, SmallVector<Value>> pulled{};
    /// Per sparse lookup: the rows each server of its table looked up.
    DenseMap<Operation *, SmallVector<Value>> lookedUp{};
    /// The worker's value of each step value the fragments made.
    DenseMap<Value, Value> made{};
  };
  /// One forward or backward fragment of a worker, as it is planned.
  struct WorkerUnit {
    UnitKind kind;
    SmallVector<Operation *> ops;
    DenseSet<Operation *> inUnit{};
    /// Values from outside the unit, and the fragment's operands: the
    /// first operand of each input (a pulled variable has one per shard).
    llvm::SetVector<Value> inputs{};
    SmallVector<Value> operands;
    SmallVector<std::pair<Value, unsigned>> inputSlots;
    /// What later units, the pushes or the return read.
    llvm::SetVector<Value> outputs{};
    SmallVector<Type> resultTypes;
    /// The pushes of the sums this unit makes: one slice per shard.
    SmallVector<std::tuple<AllReduceOp, int64_t, Shard>> pushes;
  };
  /// Pull: every shard of every variable the per-sample ops read.
  void pullVariables(WorkerProgram &worker);
  /// Sparse tables: the indices to each server that holds rows, the rows
  /// looked up there back.
  void requestSparseRows(WorkerProgram &worker);
  /// The worker's fragment of `kind` with its sends, if it has ops.
  void writeWorkerUnit(WorkerProgram &worker, UnitKind kind);
  /// The unit's ops and inputs; false when it has none.
  bool collectUnitOps(WorkerProgram &worker, WorkerUnit &unit);
  void collectUnitOperands(WorkerProgram &worker, WorkerUnit &unit);
  /// The unit's outputs and pushes, and the fragment's result types.
  void collectUnitResults(WorkerProgram &worker, WorkerUnit &unit);
  FragmentOp writeUnitFragment(WorkerProgram &worker, WorkerUnit &unit);
  /// Worker 0's values for the loss path, and each push to its server.
  void sendUnitResults(WorkerProgram &worker, WorkerUnit &unit,
                       FragmentOp fragment);
  /// Async: each server's reply with the new values of its shards.
  void receiveReplies(WorkerProgram &worker, SmallVectorImpl<Value> &returned,
                      SmallVectorImpl<DictionaryAttr> &returnedAttrs);
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
  /// Server `s`'s program, written in phases: its shards as arguments,
  /// the pulls it serves, the lookups in its shards of sparse tables, the
  /// update (with mode=async a dist.serve first) and the return.
  LogicalResult writeServer(int64_t s, func::FuncOp program);
  /// A sum a server makes from the workers' parts: accumulation `index`,
  /// shard `shard` of its variable, the parts' type.
  struct Sum {
    AllReduceOp acc;
    int64_t index, shard;
    Type type;
    /// The shard of a sparse table the rows' gradients are added into.
    const Shard *sparseShard = nullptr;
  };
  /// A server's program as writeServer's phases fill it.
  struct ServerProgram {
    int64_t s;
    ProgramArguments args;
    PlaceAttr here;
    OpBuilder top;
    /// Per (table argument, worker): the indices the worker sent.
    DenseMap<std::pair<unsigned, int64_t>, Value> indicesFrom{};
    /// The update ops this server runs.
    SmallVector<Operation *> ops;
    /// The step results returned here (the step value, whether it is an
    /// argument returned unchanged), their attributes, and the update's
    /// values among them.
    SmallVector<std::pair<Value, bool>> returnedHere;
    SmallVector<DictionaryAttr> resultAttrsHere;
    SmallVector<Value> outputs;
    /// The sums this server makes.
    SmallVector<Sum> sums;
    /// Async: what writeServe made (see there).
    DenseMap<Value, Value> carriedResult{};
    SmallVector<std::pair<Value, Value>> servedSums;
    /// The update fragment's results.
    SmallVector<Value> results;
  };
  /// The update fragment's operands and where each kind starts.
  struct UpdateInputs {
    SmallVector<Value> operands;
    /// Per sum: its first worker part and (sparse) first indices.
    SmallVector<unsigned> firstPart, firstIndices;
    /// (step value, operand) of worker 0's values, of the sums a serve
    /// carried, and (step argument, operand) of arguments.
    SmallVector<std::pair<Value, unsigned>> fromWorker, carriedSlots;
    SmallVector<std::pair<unsigned, unsigned>> argSlots;
  };
  /// Step argument `index` as server `server` holds it (its shard).
  Value serverArg(ServerProgram &server, unsigned index);
  /// Every shard the server holds an argument, and (sync) sent to the
  /// workers that read it.
  void sendPulls(ServerProgram &server);
  /// Lookups in this server's shards of sparse tables, for each worker.
  void serveSparseLookups(ServerProgram &server);
  /// The optimizers of this server's shards, and on server 0 the loss
  /// path.
  void collectUpdateOps(ServerProgram &server);
  /// Which step results this server returns.
  LogicalResult collectReturns(ServerProgram &server);
  /// The sums this server makes, with each worker's part.
  void collectSums(ServerProgram &server);
  /// Async: what is still updated once per step is no variable the
  /// workers keep copies of.
  LogicalResult checkAsyncUpdates(ServerProgram &server);
  /// Push (sync): each worker's part of the sums; and the other inputs.
  void receiveUpdateInputs(ServerProgram &server, UpdateInputs &inputs);
  /// The step arguments `ops` read, as operands of `inputs`.
  void addArgumentInputs(ServerProgram &server, ArrayRef<Operation *> ops,
                         UpdateInputs &inputs);
  /// Dynamic loss scaling: the ops the flag depends on in a fragment of
  /// their own (the gate), this server's part of the flag to server 0, which
  /// sends the flag back; then `inputs` are the update's (the gate's
  /// results and the flag) and the server's ops the update's.
  void writeGate(ServerProgram &server, UpdateInputs &inputs);
  /// Whether server `s` sums a part of the gradients' finiteness, and
  /// whether its update reads the flag.
  bool hasFinitenessPart(int64_t s) const;
  bool readsFlag(int64_t s) const;
  void writeUpdateFragment(ServerProgram &server, UpdateInputs &inputs);
  /// Maps the step values `inputs` brings into a fragment's `block` and
  /// adds the workers' parts of the server's sums there.
  void mapUpdateInputs(OpBuilder &body, Block &block, ServerProgram &server,
                       UpdateInputs &inputs, IRMapping &mapping);
  /// The return, in the step's result order.
  void writeServerReturn(ServerProgram &server, func::FuncOp program);
  /// A worker's part `value` of `part` (of rows `indices`, sparse) added
  /// into `into` (null: the first part), times `scale`.
  Value addPart(OpBuilder &body, Sum &part, Value into, Value value,
                Value indices, int64_t scale);
  /// An update value as server `s` holds it (an optimizer's result shaped
  /// like its parameter: the shard).
  Type typeHere(Value value, int64_t s);
  /// mode=async: server `s` serves the workers' requests (a dist.serve):
  /// per request the worker's parts of `sums`, the update of the variables
  /// they feed (taken out of `ops`) and the reply. Maps each step value the
  /// requests update to its value after the last (`carriedResult`) and
  /// lists the loss path's sums over the requests (`servedSums`).
  LogicalResult
  writeServe(int64_t s, OpBuilder &top, SmallVectorImpl<Sum> &sums,
             SmallVectorImpl<Operation *> &ops,
             function_ref<Value(unsigned)> getArg,
             const DenseMap<std::pair<unsigned, int64_t>, Value> &indicesFrom,
             DenseMap<Value, Value> &carriedResult,
             SmallVectorImpl<std::pair<Value, Value>> &servedSums);
  // writeServe's phases, over its plan (ParameterServerAsync.cpp).
  struct ServePlan;
  /// The ops run per request.
  void planPerRequestOps(ArrayRef<Operation *> ops, ServePlan &plan);
  /// The step arguments they update, carried from request to request.
  LogicalResult planCarried(int64_t s, function_ref<Value(unsigned)> getArg,
                            ServePlan &plan);
  /// The serve's initial values: the carried arguments, zero loss sums.
  void createServeInits(int64_t s, OpBuilder &top, SmallVectorImpl<Sum> &sums,
                        function_ref<Value(unsigned)> getArg, ServePlan &plan);
  /// The dist.serve, probing each worker's last push here.
  ServeOp createServe(int64_t s, OpBuilder &top, SmallVectorImpl<Sum> &sums,
                      ServePlan &plan);
  /// Case `w`: worker w's parts, the update, the new values to worker w.
  void writeServeCase(
      int64_t s, int64_t w, ServeOp serve, OpBuilder &top,
      SmallVectorImpl<Sum> &sums, function_ref<Value(unsigned)> getArg,
      const DenseMap<std::pair<unsigned, int64_t>, Value> &indicesFrom,
      ServePlan &plan);
  /// Clones the update ops `ops` of server `s` into `body` (a fragment's),
  /// on its shards: values shaped like a variable are shard-shaped.
  void cloneUpdate(OpBuilder &body, ArrayRef<Operation *> ops,
                   IRMapping &mapping, int64_t s);
  /// The shard of variable `arg` that server `s` holds, if any.
  const Shard *shardOn(unsigned arg, int64_t s) const {
    for (const Shard &shard : shardsOf[arg])
      if (shard.server == s)
        return &shard;
    return nullptr;
  }
  /// The index of `shard` among variable `arg`'s shards.
  int64_t shardIndex(unsigned arg, const Shard *shard) const {
    return shard - shardsOf[arg].begin();
  }
  /// Whether the workers read variable `arg` whole from its servers (a
  /// variable the per-sample ops read, not a table looked up sparsely).
  bool isPulled(unsigned arg) const {
    return !shardsOf[arg].empty() && !sparse.count(arg) &&
           llvm::any_of(func::FuncOp(func).getArgument(arg).getUsers(),
                        [&](Operation *user) { return mbOps.contains(user); });
  }
  /// Whether the workers push parts of sums to server `s`.
  bool receivesPushes(int64_t s) const {
    return llvm::any_of(accumulations, [&](AllReduceOp acc) {
      int64_t param = gradientOf.lookup(acc);
      return param >= 0 ? shardOn(param, s) != nullptr : s == 0;
    });
  }

  int64_t servers, workers;
  /// mode=async: each server applies each worker's gradients as they
  /// arrive (a dist.serve); the workers keep copies of what they read.
  bool async = false;
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
  /// A step that skips its update when a gradient is not finite
  /// (train-mixed-precision's dynamic loss scaling; PipelineBuilder's
  /// `lossScaling` finds its ops). Every server keeps or updates its shards
  /// on one flag, the finiteness of every gradient: each server sums its
  /// shards' part of it in a fragment of its own (the gate) and sends it to
  /// server 0, which sums the parts, computes the flag and sends it back
  /// before the servers' updates. Server 0 holds the loss scale and its
  /// growth tracker and updates them; the workers pull the scale (the seed)
  /// and worker 0 sends its reciprocal to the servers (the unscaling).
  struct {
    /// The op computing the flag from the sum of the parts (on server 0),
    /// and the flag.
    Operation *flagOp = nullptr;
    Value flag;
    /// Ops on one variable's unscaled gradient that the flag reads through
    /// (a product with zero, a sum of its elements): on its shards.
    DenseMap<Operation *, unsigned> partOf;
    /// Those of them whose scalar results are added into the flag's
    /// operand: each server adds those of its shards.
    SmallVector<Operation *> parts;
    /// The adds of the parts (each server's and server 0's sums replace
    /// them).
    DenseSet<Operation *> combine;
    /// Selects that keep a variable or its state when the flag is false:
    /// with the variable's shards.
    DenseMap<Operation *, unsigned> keptOf;
  } skipping;
  /// Variables with such an op that is not elementwise: one shard.
  DenseSet<unsigned> wholeOnly;
  /// Values the servers' ops read from the per-sample ops that do not
  /// depend on the batch (a penalty on the parameters, the loss scale's
  /// reciprocal): worker 0 sends each to the servers `fromWorker0To` lists.
  llvm::SetVector<Value> fromWorker0;
  DenseMap<Value, SmallVector<int64_t>> fromWorker0To;
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

} // namespace mlir::dist

#endif // DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_PARAMETERSERVERBUILDER_H
