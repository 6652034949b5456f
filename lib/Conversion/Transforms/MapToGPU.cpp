//===- MapToGPU.cpp - linalg ops on buffers to mapped parallel loops ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One flat grid per op: the op's parallel iteration space, row-major, in
// blocks of threads, each thread one point (its reductions serial); runs
// of independent ops share one grid, each a range of its blocks. The
// nests are plain scf.parallel loops with GPU mapping attributes, so the
// same IR becomes kernels (dist-lower-cuda) or CPU loops (the tests).
//
//===----------------------------------------------------------------------===//

#include "../MatmulToBlas/LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

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

/// `loop` mapped to `processor`.
static void setMapping(scf::ParallelOp loop, gpu::Processor processor) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  (void)gpu::setMappingAttr(loop, {gpu::ParallelLoopDimMappingAttr::get(
                                      context, processor, identity, identity)});
}

/// The values `map` selects from `ivs`, as indices: the loop's index
/// itself for a dim, an affine.apply of the loop indices otherwise.
static SmallVector<Value> applyMap(OpBuilder &builder, Location loc,
                                   AffineMap map, ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
      indices.push_back(
          arith::ConstantIndexOp::create(builder, loc, constant.getValue()));
      continue;
    }
    indices.push_back(affine::AffineApplyOp::create(
        builder, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
  }
  return indices;
}

/// Operand `operand` of `op` at the loop point `ivs`: a load of a buffer,
/// or the scalar itself.
static Value readOperand(OpBuilder &builder, Location loc, linalg::GenericOp op,
                         OpOperand &operand, ValueRange ivs) {
  Value value = operand.get();
  if (!isa<MemRefType>(value.getType()))
    return value;
  return memref::LoadOp::create(
      builder, loc, value,
      applyMap(builder, loc, op.getMatchingIndexingMap(&operand), ivs));
}

/// Clones `op`'s body at the loop point `ivs` with its block arguments
/// bound to `args` (null for an output the body does not read); returns
/// the yielded values.
static SmallVector<Value> cloneBody(OpBuilder &builder, linalg::GenericOp op,
                                    ValueRange args, ValueRange ivs) {
  IRMapping mapping;
  Block &body = op.getRegion().front();
  for (auto [arg, value] : llvm::zip_equal(body.getArguments(), args))
    if (value)
      mapping.map(arg, value);
  for (Operation &nested : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    // An assertion (a gather's index out of range) under an scf.if of its
    // failure: convert-parallel-loops-to-gpu leaves a nest whose body
    // holds a bare cf.assert on the host (which dist-gpu-host then
    // refuses), and takes it inside a region.
    if (auto assertion = dyn_cast<cf::AssertOp>(nested)) {
      Location loc = assertion.getLoc();
      Value holds = mapping.lookupOrDefault(assertion.getArg());
      Value fails = arith::XOrIOp::create(
          builder, loc, holds,
          arith::ConstantOp::create(builder, loc, builder.getBoolAttr(true)));
      auto guard = scf::IfOp::create(builder, loc, fails);
      OpBuilder::InsertionGuard insertion(builder);
      builder.setInsertionPointToStart(&guard.getThenRegion().front());
      builder.clone(nested, mapping);
      continue;
    }
    builder.clone(nested, mapping);
  }
  return llvm::map_to_vector(body.getTerminator()->getOperands(), [&](Value v) {
    return mapping.lookupOrDefault(v);
  });
}

/// A generic on buffers with a static iteration space, and its number of
/// parallel points (threads).
struct Mappable {
  linalg::GenericOp op;
  int64_t points;
};

/// `op` as a Mappable; an error when it cannot be mapped.
static FailureOr<Mappable> getMappable(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("must run on buffers to be mapped to a GPU grid");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError(
        "has a dynamic iteration space, which dist-map-to-gpu cannot map");
  SmallVector<unsigned> parallelDims;
  op.getParallelDims(parallelDims);
  int64_t points = 1;
  for (unsigned d : parallelDims)
    points *= ranges[d];
  return Mappable{op, points};
}

/// Emits `op`'s work at its parallel point `point` (a linear index, row
/// major, known to be in range): the point's indices, its inputs, the
/// reduction loops with the outputs carried, the stores. `bounds` holds the
/// op's reduction ranges as values defined before the grid.
static void emitPoint(OpBuilder &builder, linalg::GenericOp op, Value point,
                      const DenseMap<unsigned, Value> &bounds, Value zero,
                      Value one) {
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> parallelDims, reductionDims;
  op.getParallelDims(parallelDims);
  op.getReductionDims(reductionDims);
  SmallVector<int64_t> parallelRanges;
  for (unsigned d : parallelDims)
    parallelRanges.push_back(ranges[d]);

  // The point's indices, then the reduction loops' as they are made.
  SmallVector<Value> ivs(ranges.size());
  if (!parallelDims.empty()) {
    ValueRange split =
        parallelDims.size() == 1
            ? ValueRange(point)
            : affine::AffineDelinearizeIndexOp::create(
                  builder, loc, point, parallelRanges, /*hasOuterBound=*/true)
                  .getResults();
    for (auto [d, v] : llvm::zip_equal(parallelDims, split))
      ivs[d] = v;
  }

  // Outputs: read once when the body uses them, written once.
  SmallVector<Value> outs;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init) || !reductionDims.empty())
      outs.push_back(readOperand(builder, loc, op, init, ivs));
    else
      outs.push_back(Value()); // (the body never reads it)
  }
  auto evaluate = [&](OpBuilder &b, ValueRange current) {
    SmallVector<Value> args;
    for (OpOperand *input : op.getDpsInputOperands())
      args.push_back(readOperand(b, loc, op, *input, ivs));
    llvm::append_range(args, current);
    return cloneBody(b, op, args, ivs);
  };
  SmallVector<Value> results;
  if (reductionDims.empty()) {
    results = evaluate(builder, outs);
  } else {
    // One scf.for per reduction dim, the outputs carried through them.
    std::function<SmallVector<Value>(OpBuilder &, unsigned, ValueRange)> nest =
        [&](OpBuilder &b, unsigned level,
            ValueRange current) -> SmallVector<Value> {
      if (level == reductionDims.size())
        return evaluate(b, current);
      unsigned d = reductionDims[level];
      auto loop = scf::ForOp::create(
          b, loc, zero, bounds.lookup(d), one, current,
          [&](OpBuilder &inner, Location, Value iv, ValueRange iterArgs) {
            ivs[d] = iv;
            scf::YieldOp::create(inner, loc, nest(inner, level + 1, iterArgs));
          });
      return SmallVector<Value>(loop.getResults());
    };
    results = nest(builder, 0, outs);
  }
  for (auto [value, init] : llvm::zip_equal(results, op.getDpsInitsMutable()))
    memref::StoreOp::create(
        builder, loc, value, init.get(),
        applyMap(builder, loc, op.getMatchingIndexingMap(&init), ivs));
}

/// Rewrites `group` (independent generics, in order, the last one where
/// the nest goes) into one mapped nest: `blockSize` threads per block (or
/// fewer, as many as the largest member has points), each member a range
/// of the grid's blocks, one point per thread. One member is the plain
/// flat grid; several are one launch whose blocks branch, uniformly, on
/// the member their index falls in (as apex's multi_tensor_apply).
static scf::ParallelOp mapGroup(ArrayRef<Mappable> group, int64_t blockSize) {
  int64_t largest = 0;
  for (const Mappable &member : group)
    largest = std::max(largest, member.points);
  int64_t threads = std::min(blockSize, largest);
  linalg::GenericOp last = group.back().op;
  OpBuilder builder(last);
  Location loc = last.getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  // Every bound before the grid, so the kernel takes them as arguments or
  // constants rather than recomputing them per thread.
  SmallVector<int64_t> firstBlocks;
  int64_t blocks = 0;
  for (const Mappable &member : group) {
    firstBlocks.push_back(blocks);
    blocks += llvm::divideCeil(member.points, threads);
  }
  Value zero = constant(0), one = constant(1), blockCount = constant(blocks),
        threadCount = constant(threads);
  SmallVector<Value> pointCounts, ends;
  SmallVector<DenseMap<unsigned, Value>> bounds(group.size());
  for (auto [i, member] : llvm::enumerate(group)) {
    pointCounts.push_back(constant(member.points));
    ends.push_back(i + 1 < group.size() ? constant(firstBlocks[i + 1])
                                        : Value());
    linalg::GenericOp op = member.op;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned> reductionDims;
    op.getReductionDims(reductionDims);
    for (unsigned d : reductionDims)
      bounds[i][d] = constant(ranges[d]);
  }
  auto grid = scf::ParallelOp::create(builder, loc, zero, blockCount, one);
  setMapping(grid, gpu::Processor::BlockX);
  builder.setInsertionPointToStart(grid.getBody());
  auto block = scf::ParallelOp::create(builder, loc, zero, threadCount, one);
  setMapping(block, gpu::Processor::ThreadX);
  builder.setInsertionPointToStart(block.getBody());
  Value bx = grid.getInductionVars()[0], tx = block.getInductionVars()[0];
  MLIRContext *context = last.getContext();
  AffineExpr bxExpr = getAffineDimExpr(0, context),
             txExpr = getAffineDimExpr(1, context);
  for (auto [i, member] : llvm::enumerate(group)) {
    // Blocks before the next member's first are this member's; the next
    // members go in the else branch.
    Block *rest = nullptr;
    if (ends[i]) {
      Value mine = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ult, bx, ends[i]);
      auto branch = scf::IfOp::create(builder, loc, mine, /*withElse=*/true);
      rest = &branch.getElseRegion().front();
      builder.setInsertionPointToStart(&branch.getThenRegion().front());
    }
    Value point = affine::AffineApplyOp::create(
        builder, loc,
        AffineMap::get(2, 0, (bxExpr - firstBlocks[i]) * threads + txExpr),
        ValueRange{bx, tx});
    int64_t memberBlocks = llvm::divideCeil(member.points, threads);
    if (memberBlocks * threads != member.points) {
      Value inside = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ult, point, pointCounts[i]);
      auto guard = scf::IfOp::create(builder, loc, inside);
      builder.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    emitPoint(builder, linalg::GenericOp(member.op), point, bounds[i], zero,
              one);
    if (rest)
      builder.setInsertionPointToStart(rest);
  }
  for (Mappable member : group)
    member.op.erase();
  return grid;
}

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

  /// A library call: every buffer operand read and written.
  void add(func::CallOp call, BufferAliasing &aliasing) {
    for (Value operand : call.getOperands())
      if (isa<BaseMemRefType>(operand.getType()))
        addBuffer(operand, aliasing, /*written=*/true);
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
                     int64_t blockSize, bool horizontal,
                     int64_t maxArgumentBytes, BufferAliasing &aliasing) {
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
    // Levels, in the stretch's order.
    Levels levels;
    std::map<int64_t, SmallVector<Operation *>> byLevel;
    DenseMap<Operation *, Footprint> footprints;
    for (Operation *node : nodes) {
      Footprint &footprint = footprints[node];
      if (auto it = mappable.find(node); it != mappable.end())
        footprint.add(it->second.op, aliasing);
      else
        footprint.add(cast<func::CallOp>(node), aliasing);
      byLevel[levels.add(footprint)].push_back(node);
    }
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
      SmallVector<Mappable> group;
      int64_t bytes = 0;
      SetVector<Value> values;
      auto flush = [&] {
        if (group.empty())
          return;
        scf::ParallelOp grid = mapGroup(group, blockSize);
        grid->moveBefore(anchor);
        group.clear();
        values.clear();
        bytes = 0;
      };
      for (Operation *node : members) {
        if (isLibraryCall(*node)) {
          place(node);
          release(node);
          continue;
        }
        // The generic's producers first; the group's nest is built before
        // its last member, which is then just before the anchor.
        for (Value v : footprints[node].values)
          if (Operation *def = v.getDefiningOp())
            place(def);
        int64_t more = 0;
        for (Value v : footprints[node].values)
          if (!values.count(v))
            more += Footprint::getArgumentBytes(v);
        if (!group.empty() && bytes + more > maxArgumentBytes)
          flush();
        for (Value v : footprints[node].values)
          if (values.insert(v))
            bytes += Footprint::getArgumentBytes(v);
        placed.insert(node);
        node->moveBefore(anchor);
        group.push_back(mappable.lookup(node));
      }
      // (The frees after the whole level's nests.)
      flush();
      for (Operation *node : members)
        if (!isLibraryCall(*node))
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
    BufferAliasing aliasing(getOperation());
    for (Block *block : blocks)
      mapBlock(*block, mappable, blockSize, horizontal, maxArgumentBytes,
               aliasing);
  }
};
} // namespace
