//===- MapToGPU.cpp - linalg ops on buffers to mapped parallel loops ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The scheduler of dist-map-to-gpu: each stretch of a block rescheduled by
// levels of independent ops (buffer classes tell what may alias), a
// level's ops and row groups one launch (GPULaunch.cpp builds it), scalar
// ops (step counts, bias corrections) first recomputed by the ops that
// read them, so those wait for no launch of their own. The nests are
// plain scf.parallel loops with GPU mapping attributes, so the same IR
// becomes kernels (dist-lower-cuda) or CPU loops (the tests).
//
//===----------------------------------------------------------------------===//

#include "../MatmulToBlas/LibraryCalls.h"
#include "GPULaunch.h"
#include "distopt/Conversion/Passes.h"
#include "distopt/Runtime/ProductGroup.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTMAPTOGPUPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;

namespace {
/// Which root buffers may be the same memory, as classes: buffers of two
/// classes are distinct, except the unknown class (null), which may be any
/// buffer. An allocation is its own class; a global is its name's; an
/// argument of a public function is its own (the step's contract: the
/// runner and dist-compile's callers pass distinct buffers), as is one of
/// a private function (a part dist-split-functions cut) when every call of
/// it, in the module the pass runs on, passes buffers of distinct known
/// classes. Anything else (a loop's carried buffer, a call's result) is
/// unknown.
class BufferAliasing {
public:
  explicit BufferAliasing(Operation *root) {
    if (auto module = dyn_cast<ModuleOp>(root)) {
      this->module = module;
      module.walk([&](func::CallOp call) {
        calls[call.getCalleeAttr().getAttr()].push_back(call);
      });
    }
  }

  /// The class of the buffer `value` is (a view of).
  const void *getClass(Value value) {
    Value root = train::getRootBuffer(value);
    if (root.getDefiningOp<memref::AllocOp>() ||
        root.getDefiningOp<memref::AllocaOp>())
      return root.getAsOpaquePointer();
    if (auto global = root.getDefiningOp<memref::GetGlobalOp>())
      return global.getNameAttr().getAttr().getAsOpaquePointer();
    if (auto arg = dyn_cast<BlockArgument>(root))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
          func && arg.getOwner()->isEntryBlock() && hasDistinctArguments(func))
        return root.getAsOpaquePointer();
    return nullptr;
  }

private:
  bool hasDistinctArguments(func::FuncOp func) {
    if (func.isPublic())
      return true;
    if (!module)
      return false;
    auto [it, inserted] = distinct.try_emplace(func, false);
    if (!inserted)
      return it->second; // (false while being decided: recursion)
    bool result = true;
    for (func::CallOp call : calls.lookup(func.getSymNameAttr())) {
      DenseSet<const void *> seen;
      for (Value operand : call.getOperands()) {
        if (!isa<MemRefType>(operand.getType()))
          continue;
        const void *known = getClass(operand);
        result &= known && seen.insert(known).second;
      }
    }
    return distinct[func] = result;
  }

  ModuleOp module;
  DenseMap<Attribute, SmallVector<func::CallOp>> calls;
  DenseMap<Operation *, bool> distinct;
};

/// What an op of a block reads and writes, as buffer classes (an output
/// as both; a buffer a generic's body captures, a gather's table, as
/// both), and the kernel-argument bytes of a generic's values.
struct Footprint {
  SetVector<const void *> reads, writes;
  SetVector<Value> values;

  void addBuffer(Value buffer, BufferAliasing &aliasing, bool written) {
    const void *key = aliasing.getClass(buffer);
    reads.insert(key);
    if (written)
      writes.insert(key);
  }

  void add(linalg::GenericOp op, BufferAliasing &aliasing) {
    for (OpOperand *input : op.getDpsInputOperands())
      if (isa<MemRefType>(input->get().getType()))
        addBuffer(input->get(), aliasing, /*written=*/false);
    for (OpOperand &init : op.getDpsInitsMutable())
      addBuffer(init.get(), aliasing, /*written=*/true);
    values.insert(op->operand_begin(), op->operand_end());
    op.getRegion().walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (op.getRegion().isAncestor(operand.getParentRegion()))
          continue;
        values.insert(operand);
        if (isa<MemRefType>(operand.getType()))
          addBuffer(operand, aliasing, /*written=*/true);
      }
    });
  }

  /// A product's library call (distopt_matmul_*(A, B, C, ...)): C = A x B
  /// reads A and B and writes C only, so the products of one input (a
  /// layer's q, k and v, a backward's two gradients) are independent.
  void add(func::CallOp call, BufferAliasing &aliasing) {
    for (auto [index, operand] : llvm::enumerate(call.getOperands()))
      if (isa<BaseMemRefType>(operand.getType()))
        addBuffer(operand, aliasing, /*written=*/index >= 2);
  }

  /// Kernel argument bytes: a memref descriptor of rank r is 3 + 2r words.
  static int64_t getArgumentBytes(Value value) {
    auto memref = dyn_cast<MemRefType>(value.getType());
    return 8 * (memref ? 3 + 2 * memref.getRank() : 1);
  }
};

/// Levels of a block's device work: each node one after every earlier
/// node it conflicts with (one writes a buffer the other reads or writes),
/// so nodes of one level are independent.
class Levels {
public:
  int64_t add(const Footprint &footprint) {
    int64_t level = 0;
    auto after = [&](int64_t earlier) { level = std::max(level, earlier + 1); };
    for (const void *key : footprint.reads) {
      after(lookup(lastWrite, key));
      after(lookup(lastWrite, nullptr));
      if (!key)
        after(anyWrite);
    }
    for (const void *key : footprint.writes) {
      after(lookup(lastAccess, key));
      after(lookup(lastAccess, nullptr));
      if (!key)
        after(anyAccess);
    }
    for (const void *key : footprint.reads) {
      raise(lastAccess[key], level);
      raise(anyAccess, level);
    }
    for (const void *key : footprint.writes) {
      raise(lastWrite[key], level);
      raise(anyWrite, level);
    }
    return level;
  }

private:
  static int64_t lookup(const DenseMap<const void *, int64_t> &map,
                        const void *key) {
    auto it = map.find(key);
    return it == map.end() ? -1 : it->second;
  }
  static void raise(int64_t &slot, int64_t level) {
    slot = std::max(slot, level);
  }
  DenseMap<const void *, int64_t> lastWrite, lastAccess;
  int64_t anyWrite = -1, anyAccess = -1;
};

/// True for a product's library call (distopt_matmul_*: cuBLAS on the
/// device, reading and writing only its buffer operands), which the
/// scheduler may move.
bool isLibraryCall(Operation &op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with("distopt_matmul_");
}
} // namespace

/// Reductions by a block and the ops around them on the same rows.
struct RowGroup {
  SmallVector<linalg::GenericOp> stages;
  SmallVector<int64_t> rows;
};

/// The row groups among `nodes` (a stretch's generics and calls, in order):
/// runs of consecutive generics on the same rows, row local, each with a
/// reduction (over all loops after the rows); a full reduction (no rows)
/// alone. The other generics stay one point per thread.
static SmallVector<RowGroup>
formRowGroups(ArrayRef<Operation *> nodes,
              const DenseMap<Operation *, Mappable> &mappable) {
  SmallVector<RowGroup> groups;
  SmallVector<linalg::GenericOp> run;
  std::optional<SmallVector<int64_t>> rows;
  auto finalize = [&] {
    if (rows && !run.empty())
      groups.push_back({run, *rows});
    run.clear();
    rows.reset();
  };
  for (Operation *node : nodes) {
    auto it = mappable.find(node);
    if (it == mappable.end()) {
      finalize();
      continue;
    }
    linalg::GenericOp op = it->second.op;
    if (std::optional<SmallVector<int64_t>> own = getReductionRows(op)) {
      if (rows && *own == *rows) {
        run.push_back(op);
        if (isRowLocal(run, rows->size()))
          continue;
        run.pop_back();
      }
      if (rows)
        finalize();
      if (own->empty()) {
        run = {op};
        rows = *own;
        finalize();
        continue;
      }
      // The ops before it that work on its rows join it.
      run.push_back(op);
      while (run.size() > 1 && (llvm::any_of(ArrayRef(run).drop_back(),
                                             [&](linalg::GenericOp before) {
                                               return getStageKind(before,
                                                                   *own) !=
                                                      StageKind::elementwise;
                                             }) ||
                                !isRowLocal(run, own->size())))
        run.erase(run.begin());
      if (!isRowLocal(run, own->size())) {
        run.clear();
        continue;
      }
      rows = *own;
      continue;
    }
    if (rows) {
      run.push_back(op);
      if (getStageKind(op, *rows) == StageKind::elementwise &&
          isRowLocal(run, rows->size()))
        continue;
      run.pop_back();
      finalize();
    }
    run.push_back(op);
  }
  finalize();
  return groups;
}

//===----------------------------------------------------------------------===//
// Scalar producers recomputed by their consumers
//===----------------------------------------------------------------------===//

/// The most body ops of a scalar op its consumers recompute.
static constexpr size_t kMaxInlinedScalarOps = 16;

/// True when `op` is a scalar op its consumers may recompute: no loops,
/// 0-d buffers and scalars only, at least one output, its body a few pure
/// ops without regions that reads no output.
static bool isInlinableScalar(linalg::GenericOp op) {
  if (op.getNumLoops() != 0 || op.getNumDpsInits() == 0)
    return false;
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<MemRefType>(operand.getType());
        type && type.getRank() != 0)
      return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.payloadUsesValueFromOperand(&init))
      return false;
  Block &body = op.getRegion().front();
  if (body.getOperations().size() > kMaxInlinedScalarOps + 1)
    return false;
  return llvm::all_of(body.without_terminator(), [](Operation &nested) {
    return nested.getNumRegions() == 0 && isPure(&nested);
  });
}

/// `consumer` with `producer`'s body at the start of its own and every
/// input that is one of `producer`'s outputs replaced by the value the
/// producer yields for it (the producer's inputs, 0-d, become inputs of
/// the new op). Erases `consumer`; returns the new op.
static linalg::GenericOp inlineScalar(RewriterBase &rewriter,
                                      linalg::GenericOp producer,
                                      linalg::GenericOp consumer) {
  DenseMap<Value, unsigned> produced;
  for (auto [index, init] : llvm::enumerate(producer.getDpsInits()))
    produced.try_emplace(init, index);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : consumer.getDpsInputOperands())
    if (!produced.count(input->get())) {
      inputs.push_back(input->get());
      maps.push_back(consumer.getMatchingIndexingMap(input));
    }
  size_t firstProducerInput = inputs.size();
  AffineMap scalar =
      AffineMap::get(consumer.getNumLoops(), 0, consumer.getContext());
  for (Value input : producer.getDpsInputs()) {
    inputs.push_back(input);
    maps.push_back(scalar);
  }
  for (OpOperand &init : consumer.getDpsInitsMutable())
    maps.push_back(consumer.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(consumer);
  auto fused = linalg::GenericOp::create(
      rewriter, consumer.getLoc(), TypeRange(), inputs, consumer.getDpsInits(),
      maps, consumer.getIteratorTypesArray());
  fused->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value operand : fused->getOperands()) {
    argTypes.push_back(getElementTypeOrSelf(operand.getType()));
    argLocs.push_back(operand.getLoc());
  }
  Block *block =
      rewriter.createBlock(&fused.getRegion(), {}, argTypes, argLocs);
  IRMapping mapping;
  Block &producerBody = producer.getRegion().front();
  for (unsigned i = 0, e = producer.getNumDpsInputs(); i < e; ++i)
    mapping.map(producerBody.getArgument(i),
                block->getArgument(firstProducerInput + i));
  for (Operation &op : producerBody.without_terminator())
    rewriter.clone(op, mapping);
  auto yield = cast<linalg::YieldOp>(producerBody.getTerminator());
  Block &consumerBody = consumer.getRegion().front();
  unsigned next = 0;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    BlockArgument arg = consumerBody.getArgument(input->getOperandNumber());
    if (auto it = produced.find(input->get()); it != produced.end())
      mapping.map(arg, mapping.lookupOrDefault(yield.getOperand(it->second)));
    else
      mapping.map(arg, block->getArgument(next++));
  }
  for (unsigned i = 0, e = consumer.getNumDpsInits(); i < e; ++i)
    mapping.map(consumerBody.getArgument(consumer.getNumDpsInputs() + i),
                block->getArgument(inputs.size() + i));
  for (Operation &op : consumerBody)
    rewriter.clone(op, mapping);
  rewriter.eraseOp(consumer);
  return fused;
}

/// True when the buffers `producer` writes are allocations of the function
/// that nothing but `producer`, frees and views uses (not an argument, a
/// global or a returned buffer, which the caller sees).
static bool isOutputDead(linalg::GenericOp producer) {
  bool dead = true;
  for (Value init : producer.getDpsInits()) {
    Value root = train::getRootBuffer(init);
    if (!root.getDefiningOp<memref::AllocOp>() &&
        !root.getDefiningOp<memref::AllocaOp>())
      return false;
    train::forEachBufferUse(init, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      dead &= user == producer || isa<memref::DeallocOp>(user) ||
              isa<ViewLikeOpInterface>(user);
    });
  }
  return dead;
}

/// Recomputes the inlinable scalar ops of `block` in their consumers: the
/// later generics that read one of its outputs as an input, up to the
/// first op that writes its inputs or outputs (or may: an op with other
/// effects than a generic's or a product's), none of which writes them
/// itself; erases a producer whose outputs nothing else reads. The
/// producer's buffers must be of known, distinct classes.
static void inlineScalars(Block &block, BufferAliasing &aliasing) {
  IRRewriter rewriter(block.getParentOp()->getContext());
  // Inlines `producer` into its consumers; true when it had some.
  auto inlineInConsumers = [&](linalg::GenericOp producer) {
    DenseSet<const void *> inputs, outputs;
    for (Value input : producer.getDpsInputs())
      if (isa<MemRefType>(input.getType()))
        inputs.insert(aliasing.getClass(input));
    for (Value init : producer.getDpsInits())
      outputs.insert(aliasing.getClass(init));
    if (inputs.contains(nullptr) || outputs.contains(nullptr) ||
        llvm::any_of(outputs,
                     [&](const void *key) { return inputs.contains(key); }))
      return false;
    DenseSet<Value> produced(producer.getDpsInits().begin(),
                             producer.getDpsInits().end());
    auto touches = [&](const Footprint &footprint) {
      return llvm::any_of(footprint.writes, [&](const void *key) {
        return !key || inputs.contains(key) || outputs.contains(key);
      });
    };
    SmallVector<linalg::GenericOp> consumers;
    for (Operation *op = producer->getNextNode(); op; op = op->getNextNode()) {
      Footprint footprint;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        footprint.add(generic, aliasing);
        if (touches(footprint))
          break;
        if (llvm::any_of(generic.getDpsInputs(),
                         [&](Value v) { return produced.contains(v); }))
          consumers.push_back(generic);
        continue;
      }
      if (isLibraryCall(*op)) {
        footprint.add(cast<func::CallOp>(op), aliasing);
        if (touches(footprint))
          break;
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        const void *key = aliasing.getClass(dealloc.getMemref());
        if (!key || inputs.contains(key) || outputs.contains(key))
          break;
        continue;
      }
      if (isa<memref::AllocOp>(op) || (isPure(op) && op->getNumRegions() == 0))
        continue;
      break;
    }
    for (linalg::GenericOp consumer : consumers)
      inlineScalar(rewriter, producer, consumer);
    if (!consumers.empty() && isOutputDead(producer)) {
      // The producer, then its allocations (and their frees) if nothing
      // else is left using them.
      SmallVector<Value> roots;
      for (Value init : producer.getDpsInits())
        roots.push_back(train::getRootBuffer(init));
      rewriter.eraseOp(producer);
      for (Value root : roots) {
        Operation *alloc = root.getDefiningOp();
        if (!alloc || !llvm::all_of(root.getUsers(), [](Operation *user) {
              return isa<memref::DeallocOp>(user);
            }))
          continue;
        for (Operation *user : llvm::make_early_inc_range(root.getUsers()))
          rewriter.eraseOp(user);
        rewriter.eraseOp(alloc);
      }
    }
    return !consumers.empty();
  };
  // Until no producer has a consumer left (each round removes the reads
  // of one producer's outputs; a chain, as step -> bias correction ->
  // update, takes a round per link).
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation &op : block) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (generic && isInlinableScalar(generic) && inlineInConsumers(generic)) {
        changed = true;
        break;
      }
    }
  }
}

/// True when `op` works point by point: all its loops parallel over a static
/// space, each output written through a permutation of them (one point per
/// element), a body of pure ops without regions.
static bool isPointwise(linalg::GenericOp op) {
  if (op.getNumLoops() == 0 || op.getNumReductionLoops() != 0 ||
      !op.hasPureBufferSemantics() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isPermutation())
      return false;
  return llvm::all_of(op.getRegion().front().without_terminator(),
                      [](Operation &nested) {
                        return isPure(&nested) && nested.getNumRegions() == 0;
                      });
}

/// `consumer`'s inputs that read one of `producer`'s outputs at the point
/// that wrote it (the same buffer value, the same indexing map): their
/// input positions and the producer's output each reads.
static SmallVector<std::pair<unsigned, unsigned>>
getForwardedInputs(linalg::GenericOp producer, linalg::GenericOp consumer) {
  SmallVector<std::pair<unsigned, unsigned>> forwarded;
  for (OpOperand *input : consumer.getDpsInputOperands())
    for (OpOperand &init : producer.getDpsInitsMutable())
      if (input->get() == init.get() &&
          consumer.getMatchingIndexingMap(input) ==
              producer.getMatchingIndexingMap(&init))
        forwarded.push_back(
            {input->getOperandNumber(),
             init.getOperandNumber() - producer.getNumDpsInputs()});
  return forwarded;
}

/// One generic doing, at each point, what `producer` and then `consumer`
/// (pointwise, on the same space) do there: the producer's inputs, then
/// the consumer's other inputs; both's outputs; the values the consumer
/// read from the producer's outputs are the ones the producer just
/// yielded. Built at `consumer`; erases both and returns it.
static linalg::GenericOp
fusePointwisePair(RewriterBase &rewriter, linalg::GenericOp producer,
                  linalg::GenericOp consumer,
                  ArrayRef<std::pair<unsigned, unsigned>> forwarded) {
  DenseMap<unsigned, unsigned> forwardedFrom(forwarded.begin(),
                                             forwarded.end());
  SmallVector<Value> inputs(producer.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *input : producer.getDpsInputOperands())
    maps.push_back(producer.getMatchingIndexingMap(input));
  // (A consumer's input the producer reads too, through the same map, is
  // the producer's.)
  DenseMap<unsigned, unsigned> sharedWith;
  SmallVector<OpOperand *> producerOperands = producer.getDpsInputOperands();
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (forwardedFrom.count(input->getOperandNumber()))
      continue;
    AffineMap map = consumer.getMatchingIndexingMap(input);
    auto shared = llvm::find_if(producerOperands, [&](OpOperand *other) {
      return other->get() == input->get() &&
             producer.getMatchingIndexingMap(other) == map;
    });
    if (shared != producerOperands.end()) {
      sharedWith[input->getOperandNumber()] = (*shared)->getOperandNumber();
      continue;
    }
    inputs.push_back(input->get());
    maps.push_back(map);
  }
  SmallVector<Value> outputs(producer.getDpsInits());
  llvm::append_range(outputs, consumer.getDpsInits());
  for (OpOperand &init : producer.getDpsInitsMutable())
    maps.push_back(producer.getMatchingIndexingMap(&init));
  for (OpOperand &init : consumer.getDpsInitsMutable())
    maps.push_back(consumer.getMatchingIndexingMap(&init));
  unsigned producerInputs = producer.getNumDpsInputs();
  unsigned consumerInputs = inputs.size() - producerInputs;
  rewriter.setInsertionPoint(consumer);
  auto fused = linalg::GenericOp::create(
      rewriter, consumer.getLoc(), TypeRange(), inputs, outputs, maps,
      producer.getIteratorTypesArray(),
      [&](OpBuilder &builder, Location loc, ValueRange args) {
        IRMapping mapping;
        Block &first = producer.getRegion().front();
        ValueRange producerOutputs =
            args.drop_front(producerInputs + consumerInputs)
                .take_front(producer.getNumDpsInits());
        for (auto [arg, value] :
             llvm::zip(first.getArguments(),
                       llvm::concat<Value>(args.take_front(producerInputs),
                                           producerOutputs)))
          mapping.map(arg, value);
        for (Operation &op : first.without_terminator())
          builder.clone(op, mapping);
        SmallVector<Value> yielded;
        for (Value value : first.getTerminator()->getOperands())
          yielded.push_back(mapping.lookupOrDefault(value));
        Block &second = consumer.getRegion().front();
        unsigned next = producerInputs;
        for (OpOperand *input : consumer.getDpsInputOperands()) {
          BlockArgument arg = second.getArgument(input->getOperandNumber());
          if (auto it = forwardedFrom.find(input->getOperandNumber());
              it != forwardedFrom.end())
            mapping.map(arg, yielded[it->second]);
          else if (auto it = sharedWith.find(input->getOperandNumber());
                   it != sharedWith.end())
            mapping.map(arg, args[it->second]);
          else
            mapping.map(arg, args[next++]);
        }
        for (auto [index, init] : llvm::enumerate(consumer.getDpsInits())) {
          (void)init;
          mapping.map(second.getArgument(consumer.getNumDpsInputs() + index),
                      args[producerInputs + consumerInputs +
                           producer.getNumDpsInits() + index]);
        }
        for (Operation &op : second.without_terminator())
          builder.clone(op, mapping);
        for (Value value : second.getTerminator()->getOperands())
          yielded.push_back(mapping.lookupOrDefault(value));
        linalg::YieldOp::create(builder, loc, yielded);
      });
  rewriter.eraseOp(consumer);
  rewriter.eraseOp(producer);
  return fused;
}

/// Fuses each pointwise generic of `block` with the next generic when that
/// one, pointwise on the same space, reads one of its outputs at the point
/// that wrote it (a bias added, then the activation of the sum, which the
/// backward reads too): one op, so one point member, computing both and
/// storing both. Only allocations, frees (which then follow the fused op)
/// and pure ops may stand between them;
/// the consumer must read nothing else the producer writes and write
/// nothing the producer reads or writes (known, distinct buffer classes).
static void fusePointwise(Block &block, BufferAliasing &aliasing) {
  IRRewriter rewriter(block.getParentOp()->getContext());
  // The fused op, or null.
  auto tryFuse = [&](linalg::GenericOp producer) -> linalg::GenericOp {
    if (!isPointwise(producer))
      return nullptr;
    Operation *op = producer->getNextNode();
    SmallVector<Operation *> frees;
    while (op && !isa<linalg::GenericOp>(op) &&
           (isa<memref::AllocOp, memref::DeallocOp>(op) ||
            (isPure(op) && op->getNumRegions() == 0))) {
      if (isa<memref::DeallocOp>(op))
        frees.push_back(op);
      op = op->getNextNode();
    }
    auto consumer = dyn_cast_or_null<linalg::GenericOp>(op);
    if (!consumer || !isPointwise(consumer) ||
        consumer.getStaticLoopRanges() != producer.getStaticLoopRanges())
      return nullptr;
    SmallVector<std::pair<unsigned, unsigned>> forwarded =
        getForwardedInputs(producer, consumer);
    if (forwarded.empty())
      return nullptr;
    Footprint first, second;
    first.add(producer, aliasing);
    if (first.reads.contains(nullptr))
      return nullptr;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()) ||
          llvm::is_contained(llvm::make_first_range(forwarded),
                             input->getOperandNumber()))
        continue;
      const void *key = aliasing.getClass(input->get());
      if (!key || first.writes.contains(key))
        return nullptr;
    }
    for (Value init : consumer.getDpsInits()) {
      const void *key = aliasing.getClass(init);
      if (!key || first.reads.contains(key))
        return nullptr;
    }
    // (A body capturing a buffer is not pointwise: isPointwise's pure ops
    // load nothing.)
    // The consumer's operands are defined before it, the producer's before
    // the producer: the fused op goes where the consumer was.
    linalg::GenericOp fused =
        fusePointwisePair(rewriter, producer, consumer, forwarded);
    // (A free between them, of what the producer read, now follows.)
    for (Operation *free : llvm::reverse(frees))
      free->moveAfter(fused);
    return fused;
  };
  // (A fused op may fuse with the next one again: a chain.)
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    linalg::GenericOp fused = generic ? tryFuse(generic) : nullptr;
    op = fused ? fused.getOperation() : op->getNextNode();
  }
}

/// The f32 product calls among `calls` whose buffer operands are casts of
/// ranked views (as dist-matmul-to-blas builds them).
static SmallVector<func::CallOp>
getGroupableProducts(ArrayRef<Operation *> calls) {
  SmallVector<func::CallOp> products;
  for (Operation *op : calls) {
    auto call = cast<func::CallOp>(op);
    if (call.getCallee() != "distopt_matmul_f32" || call.getNumOperands() != 11)
      continue;
    if (llvm::all_of(call.getOperands().take_front(3), [](Value operand) {
          auto cast = operand.getDefiningOp<memref::CastOp>();
          return cast && isa<MemRefType>(cast.getSource().getType()) &&
                 cast.getSource().getType().getRank() >= 2;
        }))
      products.push_back(call);
  }
  return products;
}

/// Replaces `products` (independent distopt_matmul_f32 calls) by one
/// distopt_matmul_group_f32 call at `builder`, of a table the host writes
/// (distopt/Runtime/ProductGroup.h) and frees after it; erases them.
static void groupProducts(OpBuilder &builder,
                          MutableArrayRef<func::CallOp> products) {
  Location loc = products.front().getLoc();
  MLIRContext *context = builder.getContext();
  Type i64 = builder.getI64Type();
  DenseMap<int64_t, Value> indices;
  auto index = [&](int64_t value) {
    Value &constant = indices[value];
    if (!constant)
      constant = arith::ConstantIndexOp::create(builder, loc, value);
    return constant;
  };
  auto tableType = MemRefType::get(
      {static_cast<int64_t>(products.size()), DISTOPT_PRODUCT_WORDS}, i64);
  Value table = memref::AllocOp::create(builder, loc, tableType);
  auto store = [&](Value value, int64_t row, int64_t word) {
    if (value.getType().isIndex())
      value = arith::IndexCastOp::create(builder, loc, i64, value);
    else if (value.getType() != i64)
      value = arith::ExtSIOp::create(builder, loc, i64, value);
    memref::StoreOp::create(builder, loc, value, table,
                            ValueRange{index(row), index(word)});
  };
  for (auto [row, call] : llvm::enumerate(products)) {
    for (auto [word, scalar] :
         llvm::enumerate(call.getOperands().drop_front(3)))
      store(scalar, row, DISTOPT_PRODUCT_BATCH + word);
    for (auto [operand, value] :
         llvm::enumerate(call.getOperands().take_front(3))) {
      Value view = value.getDefiningOp<memref::CastOp>().getSource();
      auto type = cast<MemRefType>(view.getType());
      int64_t rank = type.getRank();
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, view);
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, view);
      Value offsetBytes =
          arith::MulIOp::create(builder, loc, metadata.getOffset(),
                                index(type.getElementTypeBitWidth() / 8));
      int64_t first =
          DISTOPT_PRODUCT_OPERANDS + operand * DISTOPT_PRODUCT_OPERAND_WORDS;
      store(arith::AddIOp::create(builder, loc, pointer, offsetBytes), row,
            first + DISTOPT_PRODUCT_ADDRESS);
      store(metadata.getSizes()[rank - 2], row, first + DISTOPT_PRODUCT_ROWS);
      store(metadata.getSizes()[rank - 1], row,
            first + DISTOPT_PRODUCT_COLUMNS);
      store(metadata.getStrides()[rank - 2], row,
            first + DISTOPT_PRODUCT_ROW_STRIDE);
      store(rank > 2 ? metadata.getStrides()[rank - 3] : index(0), row,
            first + DISTOPT_PRODUCT_BATCH_STRIDE);
    }
  }
  Value rows = memref::CastOp::create(
      builder, loc,
      MemRefType::get({ShapedType::kDynamic, DISTOPT_PRODUCT_WORDS}, i64),
      table);
  auto module = products.front()->getParentOfType<ModuleOp>();
  StringRef name = "distopt_matmul_group_f32";
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  if (!callee) {
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    callee =
        func::FuncOp::create(moduleBuilder, module.getLoc(), name,
                             FunctionType::get(context, rows.getType(), {}));
    callee.setPrivate();
    callee->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
    callee->setAttr("distopt.sync_buffers", UnitAttr::get(context));
  }
  func::CallOp::create(builder, loc, callee, rows);
  memref::DeallocOp::create(builder, loc, table);
  for (func::CallOp call : products) {
    SmallVector<Value> operands(call.getOperands());
    call.erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp();
          def && def->use_empty() && isPure(def))
        def->erase();
  }
}

/// Maps the generics of `block` (`mappable`). Each stretch of the block
/// between ops the scheduler cannot move (anything with effects but the
/// generics, library calls, allocations and frees) is rescheduled by
/// levels: every generic and library call one level after the latest it
/// conflicts with; each level's generics are one nest (one launch; several
/// when their kernel arguments pass `maxArgumentBytes`) after its library
/// calls. The stretch's other ops move just before their first user (pure
/// ops, allocations) or just after the last user of their buffer (frees),
/// so buffers live no longer than before. Without `horizontal`, every
/// generic is its own nest, in place.
static void mapBlock(Block &block,
                     const DenseMap<Operation *, Mappable> &mappable,
                     int64_t blockSize, bool horizontal, bool rowReductions,
                     bool groupProducts, int64_t maxArgumentBytes,
                     BufferAliasing &aliasing) {
  if (!horizontal) {
    for (Operation &op : llvm::make_early_inc_range(block))
      if (auto it = mappable.find(&op); it != mappable.end())
        mapGroup({it->second}, blockSize);
    return;
  }
  auto isNode = [&](Operation &op) {
    return mappable.count(&op) || isLibraryCall(op);
  };
  auto isMovable = [&](Operation &op) {
    return isNode(op) || isa<memref::AllocOp, memref::DeallocOp>(op) ||
           (isPure(&op) && op.getNumRegions() == 0 &&
            !op.hasTrait<OpTrait::IsTerminator>());
  };
  SmallVector<Operation *> stretch;
  auto schedule = [&](Operation *anchor) {
    SmallVector<Operation *> nodes;
    for (Operation *op : stretch)
      if (isNode(*op))
        nodes.push_back(op);
    if (nodes.empty()) {
      stretch.clear();
      return;
    }
    // Row groups are one node each: their last stage stands for them.
    SmallVector<RowGroup> groups = rowReductions
                                       ? formRowGroups(nodes, mappable)
                                       : SmallVector<RowGroup>();
    DenseMap<Operation *, const RowGroup *> groupOf;
    DenseSet<Operation *> grouped;
    for (const RowGroup &group : groups) {
      groupOf[group.stages.back()] = &group;
      for (linalg::GenericOp stage : group.stages)
        grouped.insert(stage);
    }
    llvm::erase_if(nodes, [&](Operation *node) {
      return grouped.contains(node) && !groupOf.count(node);
    });
    DenseSet<Operation *> calls;
    for (Operation *node : nodes)
      if (isLibraryCall(*node))
        calls.insert(node);
    // Levels, in the stretch's order.
    Levels levels;
    DenseMap<Operation *, Footprint> footprints;
    SmallVector<int64_t> nodeLevels;
    for (Operation *node : nodes) {
      Footprint &footprint = footprints[node];
      if (const RowGroup *group = groupOf.lookup(node))
        for (linalg::GenericOp stage : group->stages)
          footprint.add(stage, aliasing);
      else if (auto it = mappable.find(node); it != mappable.end())
        footprint.add(it->second.op, aliasing);
      else
        footprint.add(cast<func::CallOp>(node), aliasing);
      nodeLevels.push_back(levels.add(footprint));
    }
    // What no later node depends on (the optimizer's updates, the loss's
    // last write) waits for the last level: the updates of all parameters
    // then share a launch, as apex's multi_tensor_apply does.
    int64_t lastLevel = 0;
    for (int64_t level : nodeLevels)
      lastLevel = std::max(lastLevel, level);
    DenseSet<const void *> readLater, writtenLater;
    bool anyLater = false, unknownLater = false;
    for (size_t i = nodes.size(); i-- > 0;) {
      const Footprint &footprint = footprints[nodes[i]];
      bool unknown = footprint.reads.contains(nullptr);
      bool sink = !unknownLater && !(unknown && anyLater) &&
                  llvm::none_of(footprint.writes,
                                [&](const void *key) {
                                  return readLater.contains(key) ||
                                         writtenLater.contains(key);
                                }) &&
                  llvm::none_of(footprint.reads, [&](const void *key) {
                    return writtenLater.contains(key);
                  });
      if (sink && !calls.contains(nodes[i]))
        nodeLevels[i] = lastLevel;
      readLater.insert(footprint.reads.begin(), footprint.reads.end());
      writtenLater.insert(footprint.writes.begin(), footprint.writes.end());
      anyLater = true;
      unknownLater |= unknown;
    }
    std::map<int64_t, SmallVector<Operation *>> byLevel;
    for (auto [node, level] : llvm::zip_equal(nodes, nodeLevels))
      byLevel[level].push_back(node);
    // The frees, by the buffer class they free.
    DenseSet<Operation *> inStretch(stretch.begin(), stretch.end());
    DenseMap<const void *, SmallVector<Operation *>> freesOf;
    DenseMap<const void *, int64_t> usersLeft;
    for (Operation *op : stretch)
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        freesOf[aliasing.getClass(dealloc.getMemref())].push_back(op);
    for (Operation *node : nodes)
      for (const void *key : footprints[node].reads)
        ++usersLeft[key];
    // Emit before `anchor` in the new order: a node's operands' producers
    // from the stretch first (depth first), then the node, then the frees
    // whose buffer it used last.
    DenseSet<Operation *> placed;
    std::function<void(Operation *)> place = [&](Operation *op) {
      if (!inStretch.count(op) || !placed.insert(op).second)
        return;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          place(def);
      // (Nested uses: a generic's body may capture values.)
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && def->getBlock() == &block && def != op)
            place(def);
      });
      op->moveBefore(anchor);
    };
    auto release = [&](Operation *node) {
      for (const void *key : footprints[node].reads) {
        if (--usersLeft[key] != 0 || !key)
          continue;
        for (Operation *free : freesOf.lookup(key))
          place(free);
      }
    };
    for (auto &[level, members] : byLevel) {
      // The level's generics and row groups, in order, one launch until
      // their kernel arguments would pass maxArgumentBytes.
      SmallVector<Operation *> group;
      int64_t bytes = 0;
      SetVector<Value> values;
      auto flush = [&] {
        if (group.empty())
          return;
        SmallVector<Mappable> points;
        int64_t threads = 1;
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node))
            threads = std::max(
                threads, getRowThreads(rows->stages, rows->rows, blockSize));
          else
            points.push_back(mappable.lookup(node));
        }
        if (!points.empty())
          threads = std::max(threads, getPointThreads(points, blockSize));
        // Built before the last member's last op, which is just before the
        // anchor.
        Operation *last = group.back();
        OpBuilder builder(last);
        Value zero = arith::ConstantIndexOp::create(builder, last->getLoc(), 0),
              one = arith::ConstantIndexOp::create(builder, last->getLoc(), 1);
        SmallVector<LaunchMember> launch;
        SmallVector<Value> scratches;
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node))
            launch.push_back(getRowGroupMember(
                builder, rows->stages, rows->rows,
                getRowThreads(rows->stages, rows->rows, blockSize), zero,
                scratches));
          else
            launch.push_back(getPointMember(builder, mappable.lookup(node),
                                            threads, zero, one));
        }
        scf::ParallelOp grid =
            emitLaunch(builder, last->getLoc(), launch, threads, zero, one);
        for (Operation *node : group) {
          if (const RowGroup *rows = groupOf.lookup(node)) {
            for (linalg::GenericOp stage : rows->stages)
              stage.erase();
          } else {
            node->erase();
          }
        }
        grid->moveBefore(anchor);
        OpBuilder after(anchor);
        for (Value buffer : scratches)
          memref::DeallocOp::create(after, grid.getLoc(), buffer);
        group.clear();
        values.clear();
        bytes = 0;
      };
      // The level's library calls first, its f32 products as one call
      // (their frees after it).
      SmallVector<Operation *> levelCalls;
      for (Operation *node : members)
        if (calls.contains(node)) {
          place(node);
          levelCalls.push_back(node);
        }
      if (SmallVector<func::CallOp> products =
              groupProducts ? getGroupableProducts(levelCalls)
                            : SmallVector<func::CallOp>();
          products.size() >= 2) {
        OpBuilder builder(anchor);
        ::groupProducts(builder, products);
      }
      for (Operation *node : levelCalls)
        release(node);
      for (Operation *node : members) {
        if (calls.contains(node))
          continue;
        // The member's producers first; the launch is built before the
        // last member, which is then just before the anchor.
        for (Value v : footprints[node].values)
          if (Operation *def = v.getDefiningOp())
            place(def);
        const RowGroup *rows = groupOf.lookup(node);
        // (A row group's scratch buffers: one of rank 2 per reduction
        // output.)
        int64_t scratchBytes = 0;
        if (rows)
          for (linalg::GenericOp stage : rows->stages)
            if (getStageKind(stage, rows->rows) == StageKind::reduction)
              scratchBytes += stage.getNumDpsInits() * 8 * (3 + 2 * 2);
        int64_t more = scratchBytes;
        for (Value v : footprints[node].values)
          if (!values.count(v))
            more += Footprint::getArgumentBytes(v);
        if (!group.empty() && bytes + more > maxArgumentBytes)
          flush();
        for (Value v : footprints[node].values)
          if (values.insert(v))
            bytes += Footprint::getArgumentBytes(v);
        bytes += scratchBytes;
        if (rows) {
          for (linalg::GenericOp stage : rows->stages) {
            placed.insert(stage);
            stage->moveBefore(anchor);
          }
        } else {
          placed.insert(node);
          node->moveBefore(anchor);
        }
        group.push_back(node);
      }
      // (The frees after the whole level's launches.)
      flush();
      // (The generics are erased: only their footprints are left.)
      for (Operation *node : members)
        if (!calls.contains(node))
          release(node);
    }
    // What no node needed, in its order.
    for (Operation *op : stretch)
      if (!placed.count(op))
        op->moveBefore(anchor);
    stretch.clear();
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (isMovable(op)) {
      stretch.push_back(&op);
      continue;
    }
    schedule(&op);
  }
  // (A block's terminator is never movable: the last stretch ends there.)
}

namespace {
struct DistMapToGPUPass
    : public mlir::train::impl::DistMapToGPUPassBase<DistMapToGPUPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (blockSize >= 1 && blockSize <= 1024)
      return success();
    return emitError(UnknownLoc::get(context))
           << "dist-map-to-gpu: block-size must be 1 to 1024, got "
           << blockSize.getValue();
  }

  void runOnOperation() override {
    // Copies and named ops as generics first.
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<memref::CopyOp, linalg::LinalgOp>(op) &&
          !op->getParentOfType<linalg::LinalgOp>())
        ops.push_back(op);
    });
    SmallVector<linalg::GenericOp> generics;
    for (Operation *op : ops) {
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        rewriter.setInsertionPoint(copy);
        op = linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                                    copy.getTarget());
        rewriter.eraseOp(copy);
      }
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        generics.push_back(generic);
        continue;
      }
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, linalgOp);
      if (failed(generic)) {
        op->emitOpError("cannot be generalized to be mapped to a GPU grid");
        return signalPassFailure();
      }
      generics.push_back(*generic);
    }
    BufferAliasing aliasing(getOperation());
    if (inlineScalars || fusePointwise) {
      SetVector<Block *> withGenerics;
      for (linalg::GenericOp generic : generics)
        withGenerics.insert(generic->getBlock());
      for (Block *block : withGenerics) {
        if (inlineScalars)
          ::inlineScalars(*block, aliasing);
        if (fusePointwise)
          ::fusePointwise(*block, aliasing);
      }
      generics.clear();
      for (Block *block : withGenerics)
        for (auto generic : block->getOps<linalg::GenericOp>())
          generics.push_back(generic);
    }
    // Each block's generics, in order; an op without points does nothing.
    DenseMap<Operation *, Mappable> mappable;
    SetVector<Block *> blocks;
    for (linalg::GenericOp generic : generics) {
      FailureOr<Mappable> mapped = getMappable(generic);
      if (failed(mapped))
        return signalPassFailure();
      if (mapped->points == 0) {
        generic.erase();
        continue;
      }
      mappable[generic] = *mapped;
      blocks.insert(generic->getBlock());
    }
    for (Block *block : blocks)
      mapBlock(*block, mappable, blockSize, horizontal, rowReductions,
               groupProducts, maxArgumentBytes, aliasing);
  }
};
} // namespace
