//===- MapToGPU.cpp - linalg ops on buffers to mapped parallel loops ------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One flat grid per op: the op's parallel iteration space, row-major, in
// blocks of threads, each thread one point (its reductions serial); runs
// of independent ops share one grid, each a range of its blocks; scalar
// ops (step counts, bias corrections) are first recomputed by the ops that
// read them, so those wait for no launch of their own. The nests are
// plain scf.parallel loops with GPU mapping attributes, so the same IR
// becomes kernels (dist-lower-cuda) or CPU loops (the tests).
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

/// A grid of `blocks` blocks of `threads` threads: a block_x loop around a
/// thread_x loop, with `builder` at the start of the thread loop's body;
/// returns the grid and the block and thread indices.
static std::tuple<scf::ParallelOp, Value, Value>
createGrid(OpBuilder &builder, Location loc, Value zero, Value one,
           Value blocks, Value threads) {
  auto grid = scf::ParallelOp::create(builder, loc, zero, blocks, one);
  setMapping(grid, gpu::Processor::BlockX);
  builder.setInsertionPointToStart(grid.getBody());
  auto block = scf::ParallelOp::create(builder, loc, zero, threads, one);
  setMapping(block, gpu::Processor::ThreadX);
  builder.setInsertionPointToStart(block.getBody());
  return {grid, grid.getInductionVars()[0], block.getInductionVars()[0]};
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

/// Code a launch runs for one member at a block `row` of its own (its
/// first block 0) and thread `tx`.
using Piece = std::function<void(OpBuilder &, Value row, Value tx)>;

/// One member of a launch: `blocks` blocks of the grid, of whose threads it
/// uses the first `threads`; its code in segments, which the launch
/// separates by barriers (a reduction's stages; one op's point is one).
struct LaunchMember {
  int64_t blocks = 0;
  int64_t threads = 0;
  SmallVector<SmallVector<Piece>> segments;
};

/// Emits, at `builder`, one launch of `members` (each a range of the
/// grid's blocks, in order) with `threads` threads per block: the members'
/// first segments, then a `gpu.barrier` at the top of the thread loop and
/// the second segments of the members that have one, and so on. A block
/// branches, uniformly, on the member its index falls in (as apex's
/// multi_tensor_apply); a member using fewer threads than the block has
/// skips the others, which still reach every barrier.
static scf::ParallelOp emitLaunch(OpBuilder &builder, Location loc,
                                  ArrayRef<LaunchMember> members,
                                  int64_t threads, Value zero, Value one) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  SmallVector<int64_t> firsts;
  int64_t blocks = 0;
  size_t phases = 0;
  for (const LaunchMember &member : members) {
    firsts.push_back(blocks);
    blocks += member.blocks;
    phases = std::max(phases, member.segments.size());
  }
  // Every bound before the grid, so the kernel takes them as arguments or
  // constants rather than recomputing them per thread.
  Value blockCount = constant(blocks), threadCount = constant(threads);
  SmallVector<Value> starts, ends, used;
  for (auto [i, member] : llvm::enumerate(members)) {
    starts.push_back(firsts[i] > 0 ? constant(firsts[i]) : Value());
    ends.push_back(i + 1 < members.size() ? constant(firsts[i + 1]) : Value());
    used.push_back(member.threads < threads ? constant(member.threads)
                                            : Value());
  }
  scf::ParallelOp grid;
  Value bx, tx;
  std::tie(grid, bx, tx) =
      createGrid(builder, loc, zero, one, blockCount, threadCount);
  Block *body = builder.getInsertionBlock();
  MLIRContext *context = builder.getContext();
  // Member `i`'s segment `p`, in the branch of its blocks.
  auto emitSegment = [&](OpBuilder &b, size_t i, size_t p) {
    Value row = bx;
    if (firsts[i] > 0)
      row = affine::AffineApplyOp::create(
          b, loc,
          AffineMap::get(1, 0, getAffineDimExpr(0, context) - firsts[i]),
          ValueRange{bx});
    if (used[i]) {
      Value mine =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tx, used[i]);
      auto guard = scf::IfOp::create(b, loc, mine);
      b.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    for (const Piece &piece : members[i].segments[p])
      piece(b, row, tx);
  };
  for (size_t p = 0; p < phases; ++p) {
    builder.setInsertionPoint(body->getTerminator());
    if (p > 0)
      gpu::BarrierOp::create(builder, loc);
    SmallVector<size_t> active;
    for (auto [i, member] : llvm::enumerate(members))
      if (member.segments.size() > p)
        active.push_back(i);
    if (active.size() == members.size()) {
      // Every member: a chain, each member's blocks before the next's first.
      for (size_t i : active) {
        OpBuilder b = builder;
        Block *rest = nullptr;
        if (ends[i]) {
          Value mine = arith::CmpIOp::create(
              builder, loc, arith::CmpIPredicate::ult, bx, ends[i]);
          auto branch =
              scf::IfOp::create(builder, loc, mine, /*withElse=*/true);
          rest = &branch.getElseRegion().front();
          b.setInsertionPointToStart(&branch.getThenRegion().front());
        }
        emitSegment(b, i, p);
        if (rest)
          builder.setInsertionPointToStart(rest);
      }
      continue;
    }
    // Some members: a branch for each, on both ends of its blocks.
    for (size_t i : active) {
      builder.setInsertionPoint(body->getTerminator());
      Value inside;
      auto both = [&](Value condition) {
        inside = inside ? arith::AndIOp::create(builder, loc, inside, condition)
                              .getResult()
                        : condition;
      };
      if (starts[i])
        both(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, bx,
                                   starts[i]));
      if (ends[i])
        both(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, bx,
                                   ends[i]));
      OpBuilder b = builder;
      if (inside) {
        auto branch = scf::IfOp::create(builder, loc, inside);
        b.setInsertionPointToStart(&branch.getThenRegion().front());
      }
      emitSegment(b, i, p);
    }
  }
  return grid;
}

/// `mapped` as a launch member of `threads` threads per block, one point
/// per thread, its bounds built at `builder` (before the grid).
static LaunchMember getPointMember(OpBuilder &builder, const Mappable &mapped,
                                   int64_t threads, Value zero, Value one) {
  linalg::GenericOp op = mapped.op;
  Location loc = op.getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  LaunchMember member;
  member.blocks = llvm::divideCeil(mapped.points, threads);
  member.threads = threads;
  bool exact = member.blocks * threads == mapped.points;
  Value pointCount = exact ? Value() : constant(mapped.points);
  DenseMap<unsigned, Value> bounds;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> reductionDims;
  op.getReductionDims(reductionDims);
  for (unsigned d : reductionDims)
    bounds[d] = constant(ranges[d]);
  member.segments.push_back({[=](OpBuilder &b, Value row, Value tx) mutable {
    MLIRContext *context = b.getContext();
    Value point = affine::AffineApplyOp::create(
        b, loc,
        AffineMap::get(2, 0,
                       getAffineDimExpr(0, context) * threads +
                           getAffineDimExpr(1, context)),
        ValueRange{row, tx});
    OpBuilder inner = b;
    if (!exact) {
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           point, pointCount);
      auto guard = scf::IfOp::create(b, loc, inside);
      inner.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    emitPoint(inner, op, point, bounds, zero, one);
  }});
  return member;
}

/// The threads per block of a launch of point members: `blockSize`, or as
/// many as the largest member has points.
static int64_t getPointThreads(ArrayRef<Mappable> group, int64_t blockSize) {
  int64_t largest = 0;
  for (const Mappable &member : group)
    largest = std::max(largest, member.points);
  return std::min(blockSize, largest);
}

/// Rewrites `group` (independent generics, in order, the last one where
/// the nest goes) into one mapped nest: `blockSize` threads per block (or
/// fewer, as many as the largest member has points), each member a range
/// of the grid's blocks, one point per thread.
static scf::ParallelOp mapGroup(ArrayRef<Mappable> group, int64_t blockSize) {
  int64_t threads = getPointThreads(group, blockSize);
  linalg::GenericOp last = group.back().op;
  OpBuilder builder(last);
  Location loc = last.getLoc();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0),
        one = arith::ConstantIndexOp::create(builder, loc, 1);
  SmallVector<LaunchMember> members;
  for (const Mappable &member : group)
    members.push_back(getPointMember(builder, member, threads, zero, one));
  scf::ParallelOp grid = emitLaunch(builder, loc, members, threads, zero, one);
  for (Mappable member : group)
    member.op.erase();
  return grid;
}

//===----------------------------------------------------------------------===//
// Row groups: reductions by a block
//===----------------------------------------------------------------------===//

/// How a generic works on rows of `rows` (its first loops, all parallel):
/// elementwise (every other loop parallel) or a reduction (every other loop
/// a reduction, each output combined by one arith op).
enum class StageKind { elementwise, reduction };

/// The op that combines a reduction's output `index` with the value its body
/// computes (`yield combine(f(...), acc)`, acc used once), or null.
static Operation *getCombiner(linalg::GenericOp op, unsigned index) {
  Block &body = op.getRegion().front();
  Value acc = body.getArgument(op.getNumDpsInputs() + index);
  Value yielded = body.getTerminator()->getOperand(index);
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || combiner->getNumResults() != 1 ||
      !acc.hasOneUse() || !llvm::is_contained(combiner->getOperands(), acc) ||
      !arith::getNeutralElement(combiner))
    return nullptr;
  return combiner;
}

/// `op`'s kind on rows of `rows`, or none when it does not work on them.
static std::optional<StageKind> getStageKind(linalg::GenericOp op,
                                             ArrayRef<int64_t> rows) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (ranges.size() < rows.size() ||
      ArrayRef<int64_t>(ranges).take_front(rows.size()) != rows)
    return std::nullopt;
  for (unsigned d = 0; d < rows.size(); ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      return std::nullopt;
  bool parallel = true, reduction = true;
  for (unsigned d = rows.size(); d < ranges.size(); ++d) {
    parallel &= iterators[d] == utils::IteratorType::parallel;
    reduction &= iterators[d] == utils::IteratorType::reduction;
  }
  if (reduction && ranges.size() > rows.size()) {
    for (unsigned i = 0; i < op.getNumDpsInits(); ++i)
      if (!getCombiner(op, i))
        return std::nullopt;
    return StageKind::reduction;
  }
  if (parallel)
    return StageKind::elementwise;
  return std::nullopt;
}

/// The rows a reduction works on: its leading parallel loops, when every
/// later loop is a reduction.
static std::optional<SmallVector<int64_t>>
getReductionRows(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned m = 0;
  while (m < iterators.size() && iterators[m] == utils::IteratorType::parallel)
    ++m;
  if (m == iterators.size())
    return std::nullopt;
  SmallVector<int64_t> rows(ranges.begin(), ranges.begin() + m);
  if (getStageKind(op, rows) != StageKind::reduction)
    return std::nullopt;
  return rows;
}

/// Per result of `map`, the row loop (< m) it is, or -1 for one of the
/// other loops only; none when a result mixes a row loop into an
/// expression.
static std::optional<SmallVector<int64_t>> getRowSignature(AffineMap map,
                                                           unsigned m) {
  SmallVector<int64_t> signature;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr);
        dim && dim.getPosition() < m) {
      signature.push_back(dim.getPosition());
      continue;
    }
    for (unsigned d = 0; d < m; ++d)
      if (expr.isFunctionOfDim(d))
        return std::nullopt;
    signature.push_back(-1);
  }
  return signature;
}

/// True when every buffer some stage of `stages` writes is touched, by every
/// stage, only at its own row: through the same view, every row loop at the
/// same position of its indices. Then a block that runs every stage for one
/// row depends on no other block.
static bool isRowLocal(ArrayRef<linalg::GenericOp> stages, unsigned m) {
  struct Access {
    Value view;
    SmallVector<int64_t> signature;
    bool writes;
  };
  SmallVector<Access> accesses;
  DenseSet<Value> written;
  for (linalg::GenericOp op : stages) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      std::optional<SmallVector<int64_t>> signature =
          getRowSignature(op.getMatchingIndexingMap(&operand), m);
      bool writes = op.isDpsInit(&operand);
      if (!signature && writes)
        return false;
      accesses.push_back({operand.get(),
                          signature.value_or(SmallVector<int64_t>{-2}),
                          writes});
      if (writes)
        written.insert(train::getRootBuffer(operand.get()));
    }
    // A buffer the body captures: read with loads only.
    bool stores = false;
    op.getRegion().walk([&](memref::StoreOp) { stores = true; });
    if (stores)
      return false;
  }
  for (const Access &access : accesses) {
    if (!written.contains(train::getRootBuffer(access.view)))
      continue;
    // Every row loop, once each.
    SmallVector<int64_t> rowsSeen;
    for (int64_t d : access.signature)
      if (d >= 0)
        rowsSeen.push_back(d);
    llvm::sort(rowsSeen);
    if (rowsSeen != llvm::to_vector(llvm::seq<int64_t>(0, m)))
      return false;
    for (const Access &other : accesses)
      if (train::getRootBuffer(other.view) ==
              train::getRootBuffer(access.view) &&
          (other.view != access.view || other.signature != access.signature))
        return false;
  }
  // Captured buffers of the bodies are only read (checked above); one that
  // a stage writes as an output would be read at any row.
  for (linalg::GenericOp op : stages) {
    bool captures = false;
    op.getRegion().walk([&](memref::LoadOp load) {
      captures |= written.contains(train::getRootBuffer(load.getMemref()));
    });
    if (captures)
      return false;
  }
  return true;
}

/// `rows` flattened: their count.
static int64_t getNumRows(ArrayRef<int64_t> rows) {
  int64_t n = 1;
  for (int64_t r : rows)
    n *= r;
  return n;
}

/// The loop indices of row `row` (an index), then of inner point `inner`
/// of the loops after them (`ranges`).
static SmallVector<Value> getRowIndices(OpBuilder &builder, Location loc,
                                        ArrayRef<int64_t> ranges, unsigned m,
                                        Value row, Value inner) {
  auto split = [&](Value linear,
                   ArrayRef<int64_t> sizes) -> SmallVector<Value> {
    if (sizes.empty())
      return {};
    if (sizes.size() == 1)
      return {linear};
    return affine::AffineDelinearizeIndexOp::create(builder, loc, linear, sizes,
                                                    /*hasOuterBound=*/true)
        .getResults();
  };
  SmallVector<Value> ivs = split(row, ranges.take_front(m));
  llvm::append_range(ivs, split(inner, ranges.drop_front(m)));
  return ivs;
}

/// `combiner` applied to `a` and `b`.
static Value combine(OpBuilder &builder, Operation *combiner, Value a,
                     Value b) {
  OperationState state(combiner->getLoc(), combiner->getName());
  state.addOperands({a, b});
  state.addTypes(a.getType());
  state.addAttributes(combiner->getAttrs());
  return builder.create(state)->getResult(0);
}

/// The threads of a row group's launch member: a power of two, at most
/// `blockSize`, no more than its widest stage has points per row.
static int64_t getRowThreads(ArrayRef<linalg::GenericOp> stages,
                             ArrayRef<int64_t> rows, int64_t blockSize) {
  int64_t numRows = getNumRows(rows);
  int64_t largest = 1;
  for (linalg::GenericOp op : stages)
    largest = std::max(largest, getNumRows(op.getStaticLoopRanges()) / numRows);
  int64_t threads = std::min<int64_t>(blockSize, llvm::PowerOf2Ceil(largest));
  return int64_t(1) << llvm::Log2_64(std::max<int64_t>(threads, 1));
}

/// `stages` (generics on rows of `rows`, in order, row local, at least one
/// a reduction) as a launch member: a block per row, `threads` threads (a
/// power of two, getRowThreads) splitting each stage's points after the
/// row; a reduction stage's threads each combine a strided part, then
/// halve the partial results in a scratch buffer to one, which thread 0
/// combines into the output; a segment per stage and per halving. Builds
/// its bounds and scratch buffers at `builder` (before the grid) and
/// returns those buffers in `scratches` (the caller frees them after it).
static LaunchMember getRowGroupMember(OpBuilder &builder,
                                      ArrayRef<linalg::GenericOp> stages,
                                      ArrayRef<int64_t> rows, int64_t threads,
                                      Value zero,
                                      SmallVectorImpl<Value> &scratches) {
  unsigned m = rows.size();
  int64_t numRows = getNumRows(rows);
  Location loc = stages.back()->getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  Value threadCount = constant(threads);
  LaunchMember member;
  member.blocks = numRows;
  member.threads = threads;
  member.segments.emplace_back();
  auto add = [&](Piece piece) {
    member.segments.back().push_back(std::move(piece));
  };
  auto barrier = [&] { member.segments.emplace_back(); };
  for (size_t s = 0; s < stages.size(); ++s) {
    linalg::GenericOp op = stages[s];
    if (s > 0)
      barrier();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    Value innerCount = constant(getNumRows(ranges) / numRows);
    if (getStageKind(op, rows) == StageKind::elementwise) {
      add([=](OpBuilder &builder, Value row, Value tx) mutable {
        scf::ForOp::create(
            builder, loc, tx, innerCount, threadCount, ValueRange(),
            [&](OpBuilder &b, Location, Value p, ValueRange) {
              SmallVector<Value> ivs = getRowIndices(b, loc, ranges, m, row, p);
              SmallVector<Value> args;
              for (OpOperand *input : op.getDpsInputOperands())
                args.push_back(readOperand(b, loc, op, *input, ivs));
              for (OpOperand &init : op.getDpsInitsMutable())
                args.push_back(op.payloadUsesValueFromOperand(&init)
                                   ? readOperand(b, loc, op, init, ivs)
                                   : Value());
              SmallVector<Value> results = cloneBody(b, op, args, ivs);
              for (auto [value, init] :
                   llvm::zip_equal(results, op.getDpsInitsMutable()))
                memref::StoreOp::create(
                    b, loc, value, init.get(),
                    applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs));
              scf::YieldOp::create(b, loc);
            });
      });
      continue;
    }
    // A reduction: scratch for the partial results, rows x threads per
    // output...
    unsigned outputs = op.getNumDpsInits();
    SmallVector<Value> scratch;
    SmallVector<Operation *> combiners;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      auto type = MemRefType::get({numRows, threads},
                                  getElementTypeOrSelf(init.get().getType()));
      scratch.push_back(memref::AllocOp::create(builder, loc, type));
      scratches.push_back(scratch.back());
      combiners.push_back(
          getCombiner(op, init.getOperandNumber() - op.getNumDpsInputs()));
    }
    // ... each thread's strided part from the neutral element...
    add([=](OpBuilder &builder, Value row, Value tx) mutable {
      SmallVector<Value> neutral;
      for (Operation *combiner : combiners)
        neutral.push_back(arith::ConstantOp::create(
            builder, loc, *arith::getNeutralElement(combiner)));
      auto partial = scf::ForOp::create(
          builder, loc, tx, innerCount, threadCount, neutral,
          [&](OpBuilder &b, Location, Value p, ValueRange accs) {
            SmallVector<Value> ivs = getRowIndices(b, loc, ranges, m, row, p);
            SmallVector<Value> args;
            for (OpOperand *input : op.getDpsInputOperands())
              args.push_back(readOperand(b, loc, op, *input, ivs));
            llvm::append_range(args, accs);
            scf::YieldOp::create(b, loc, cloneBody(b, op, args, ivs));
          });
      for (unsigned i = 0; i < outputs; ++i)
        memref::StoreOp::create(builder, loc, partial.getResult(i), scratch[i],
                                ValueRange{row, tx});
    });
    // ... halved in the scratch buffer...
    for (int64_t half = threads / 2; half >= 1; half /= 2) {
      barrier();
      add([=](OpBuilder &builder, Value row, Value tx) mutable {
        Value offset = arith::ConstantIndexOp::create(builder, loc, half);
        Value lower = arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::ult, tx, offset);
        auto branch = scf::IfOp::create(builder, loc, lower);
        OpBuilder b = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
        Value partner = arith::AddIOp::create(b, loc, tx, offset);
        for (unsigned i = 0; i < outputs; ++i) {
          Value mine =
              memref::LoadOp::create(b, loc, scratch[i], ValueRange{row, tx});
          Value theirs = memref::LoadOp::create(b, loc, scratch[i],
                                                ValueRange{row, partner});
          memref::StoreOp::create(b, loc,
                                  combine(b, combiners[i], mine, theirs),
                                  scratch[i], ValueRange{row, tx});
        }
      });
    }
    // ... and thread 0 combines the row's total into the output.
    barrier();
    add([=](OpBuilder &builder, Value row, Value tx) mutable {
      Value first = arith::CmpIOp::create(builder, loc,
                                          arith::CmpIPredicate::eq, tx, zero);
      auto branch = scf::IfOp::create(builder, loc, first);
      OpBuilder b = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
      SmallVector<Value> ivs = getRowIndices(b, loc, ranges, m, row, zero);
      for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
        SmallVector<Value> indices =
            applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs);
        Value total =
            memref::LoadOp::create(b, loc, scratch[i], ValueRange{row, zero});
        Value before = memref::LoadOp::create(b, loc, init.get(), indices);
        memref::StoreOp::create(b, loc, combine(b, combiners[i], before, total),
                                init.get(), indices);
      }
    });
  }
  return member;
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
      for (Operation *node : members) {
        if (calls.contains(node)) {
          place(node);
          release(node);
          continue;
        }
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
    if (inlineScalars) {
      SetVector<Block *> withGenerics;
      for (linalg::GenericOp generic : generics)
        withGenerics.insert(generic->getBlock());
      for (Block *block : withGenerics)
        ::inlineScalars(*block, aliasing);
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
               maxArgumentBytes, aliasing);
  }
};
} // namespace
