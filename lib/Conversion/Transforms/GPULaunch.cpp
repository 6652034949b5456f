//===- GPULaunch.cpp - launches of mapped loop nests ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The mapped nests dist-map-to-gpu emits: a block_x loop around a thread_x
// loop (`#gpu.loop_dim_map`), its members each a range of the blocks; an
// op's points one per thread, a row group's rows a block each, its stages
// separated by gpu.barrier at the top of the thread loop.
//
//===----------------------------------------------------------------------===//

#include "GPULaunch.h"
#include "../MatmulToBlas/LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::train;

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

FailureOr<Mappable> train::getMappable(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("must run on buffers to be mapped to a GPU grid");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return op.emitOpError(
        "has a dynamic iteration space, which dist-map-to-gpu cannot map");
  SmallVector<unsigned> parallelDims, reductionDims;
  op.getParallelDims(parallelDims);
  op.getReductionDims(reductionDims);
  // (Each output element is one point's: written at a reduction loop's
  // index, the points of one element would race.)
  for (OpOperand &init : op.getDpsInitsMutable())
    for (unsigned d : reductionDims)
      if (op.getMatchingIndexingMap(&init).isFunctionOfDim(d))
        return op.emitOpError("writes output #")
               << (init.getOperandNumber() - op.getNumDpsInputs())
               << " at the index of reduction loop d" << d
               << ", which dist-map-to-gpu cannot map (the parallel points "
                  "would race on its elements)";
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

int64_t train::getVectorWidth(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || op.getNumReductionLoops() != 0)
    return 1;
  unsigned last = ranges.size() - 1;
  // The widest element of the buffers the last loop walks, and what the
  // width must divide: the last loop's range and those buffers' other
  // strides.
  int64_t widest = 0;
  SmallVector<int64_t> multiples = {ranges.back()};
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool varies =
        map.getNumResults() > 0 &&
        map.getResults().back() == getAffineDimExpr(last, op.getContext());
    for (AffineExpr expr : map.getResults().drop_back(varies ? 1 : 0))
      if (expr.isFunctionOfDim(last))
        return 1;
    if (!varies) {
      if (op.isDpsInit(&operand))
        return 1;
      continue;
    }
    Type element = type.getElementType();
    unsigned bits =
        element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
    if (bits < 8 || bits > 64 || !llvm::isPowerOf2_32(bits))
      return 1;
    widest = std::max<int64_t>(widest, bits / 8);
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        ShapedType::isDynamic(offset) || strides.back() != 1)
      return 1;
    for (int64_t stride : ArrayRef(strides).drop_back()) {
      if (ShapedType::isDynamic(stride))
        return 1;
      multiples.push_back(stride);
    }
  }
  if (widest == 0)
    return 1;
  // As many elements as the widest fills 16 bytes with, halved until it
  // divides them all.
  int64_t width = kVectorBytes / widest;
  while (width > 1 &&
         llvm::any_of(multiples, [&](int64_t n) { return n % width != 0; }))
    width /= 2;
  return width;
}

/// Emits `op`'s work (getVectorWidth) at its `width` consecutive points
/// from `first` (a multiple of `width`, the points row major): the buffers
/// that hold them as their last dimension read and written as vectors of
/// `width` elements when each one's address is a multiple of the vector's
/// bytes (a uniform branch), element by element otherwise; the body once
/// per point.
static void emitVectorPoints(OpBuilder &builder, linalg::GenericOp op,
                             Value first, int64_t width) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned last = ranges.size() - 1;
  SmallVector<Value> ivs =
      ranges.size() == 1
          ? SmallVector<Value>{first}
          : SmallVector<Value>(affine::AffineDelinearizeIndexOp::create(
                                   builder, loc, first, ranges,
                                   /*hasOuterBound=*/true)
                                   .getResults());
  auto isVector = [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    return isa<MemRefType>(operand.get().getType()) &&
           map.getNumResults() > 0 &&
           map.getResults().back() == getAffineDimExpr(last, context);
  };
  auto bytesOf = [](OpOperand &operand) -> int64_t {
    return getElementTypeOrSelf(operand.get().getType())
               .getIntOrFloatBitWidth() /
           8;
  };
  // Every vector buffer's first element at a multiple of its vector's size.
  Value aligned;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isVector(operand))
      continue;
    auto type = cast<MemRefType>(operand.get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    (void)type.getStridesAndOffset(strides, offset);
    int64_t bytes = bytesOf(operand);
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(
        builder, loc, operand.get());
    Value start = offset == 0
                      ? address
                      : arith::AddIOp::create(builder, loc, address,
                                              arith::ConstantIndexOp::create(
                                                  builder, loc, offset * bytes))
                            .getResult();
    Value low = arith::AndIOp::create(
        builder, loc, start,
        arith::ConstantIndexOp::create(builder, loc, width * bytes - 1));
    Value holds =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, low,
                              arith::ConstantIndexOp::create(builder, loc, 0));
    aligned =
        aligned
            ? arith::AndIOp::create(builder, loc, aligned, holds).getResult()
            : holds;
  }
  // The points' indices.
  SmallVector<SmallVector<Value>> laneIvs;
  for (int64_t k = 0; k < width; ++k) {
    SmallVector<Value> lane = ivs;
    if (k > 0)
      lane[last] = affine::AffineApplyOp::create(
          builder, loc, AffineMap::get(1, 0, getAffineDimExpr(0, context) + k),
          ValueRange{ivs[last]});
    laneIvs.push_back(lane);
  }
  auto emit = [&](OpBuilder &b, bool vectors) {
    SmallVector<SmallVector<Value>> args(width);
    for (OpOperand &operand : op->getOpOperands()) {
      bool init = op.isDpsInit(&operand);
      if (init && !op.payloadUsesValueFromOperand(&operand)) {
        for (int64_t k = 0; k < width; ++k)
          args[k].push_back(Value());
        continue;
      }
      if (!isVector(operand)) {
        Value value = readOperand(b, loc, op, operand, ivs);
        for (int64_t k = 0; k < width; ++k)
          args[k].push_back(value);
        continue;
      }
      if (!vectors) {
        for (int64_t k = 0; k < width; ++k)
          args[k].push_back(readOperand(b, loc, op, operand, laneIvs[k]));
        continue;
      }
      auto type = VectorType::get(
          {width}, getElementTypeOrSelf(operand.get().getType()));
      Value vector = vector::LoadOp::create(
          b, loc, type, operand.get(),
          applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs),
          /*nontemporal=*/false, llvm::MaybeAlign(width * bytesOf(operand)));
      for (int64_t k = 0; k < width; ++k)
        args[k].push_back(vector::ExtractOp::create(b, loc, vector, k));
    }
    SmallVector<SmallVector<Value>> results;
    for (int64_t k = 0; k < width; ++k)
      results.push_back(cloneBody(b, op, args[k], laneIvs[k]));
    for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      if (!vectors) {
        for (int64_t k = 0; k < width; ++k)
          memref::StoreOp::create(b, loc, results[k][i], init.get(),
                                  applyMap(b, loc, map, laneIvs[k]));
        continue;
      }
      SmallVector<Value> elements;
      for (int64_t k = 0; k < width; ++k)
        elements.push_back(results[k][i]);
      auto type = VectorType::get({width}, elements.front().getType());
      Value vector = vector::FromElementsOp::create(b, loc, type, elements);
      vector::StoreOp::create(
          b, loc, vector, init.get(), applyMap(b, loc, map, ivs),
          /*nontemporal=*/false, llvm::MaybeAlign(width * bytesOf(init)));
    }
  };
  auto branch = scf::IfOp::create(builder, loc, aligned, /*withElse=*/true);
  OpBuilder then = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
  emit(then, /*vectors=*/true);
  OpBuilder otherwise =
      OpBuilder::atBlockBegin(&branch.getElseRegion().front());
  emit(otherwise, /*vectors=*/false);
}

scf::ParallelOp train::emitLaunch(OpBuilder &builder, Location loc,
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
    for (const LaunchMember::Piece &piece : members[i].segments[p])
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

LaunchMember train::getPointMember(OpBuilder &builder, const Mappable &mapped,
                                   int64_t threads, Value zero, Value one) {
  linalg::GenericOp op = mapped.op;
  Location loc = op.getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  LaunchMember member;
  int64_t width = mapped.width, groups = mapped.points / width;
  member.blocks = llvm::divideCeil(groups, threads);
  member.threads = threads;
  bool exact = member.blocks * threads == groups;
  Value groupCount = exact ? Value() : constant(groups);
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
                                           point, groupCount);
      auto guard = scf::IfOp::create(b, loc, inside);
      inner.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    if (width == 1)
      return emitPoint(inner, op, point, bounds, zero, one);
    Value first = affine::AffineApplyOp::create(
        inner, loc, AffineMap::get(1, 0, getAffineDimExpr(0, context) * width),
        ValueRange{point});
    emitVectorPoints(inner, op, first, width);
  }});
  return member;
}

int64_t train::getPointThreads(ArrayRef<Mappable> group, int64_t blockSize) {
  int64_t largest = 0;
  for (const Mappable &member : group)
    largest = std::max(largest, member.points / member.width);
  return std::min(blockSize, largest);
}

scf::ParallelOp train::mapGroup(ArrayRef<Mappable> group, int64_t blockSize) {
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

std::optional<StageKind> train::getStageKind(linalg::GenericOp op,
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

std::optional<SmallVector<int64_t>>
train::getReductionRows(linalg::GenericOp op) {
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

bool train::isRowLocal(ArrayRef<linalg::GenericOp> stages, unsigned m) {
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

/// A block reduction's scratch buffer of `type`: a row per block, marked
/// for dist-promote-block-scratch (each block's row its shared memory).
static Value createBlockScratch(OpBuilder &builder, Location loc,
                                MemRefType type) {
  auto alloc = memref::AllocOp::create(builder, loc, type);
  alloc->setAttr(train::kBlockScratchAttrName, builder.getUnitAttr());
  return alloc;
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

/// The warp reduction (gpu.subgroup_reduce) of each of `combiners` on
/// `types`, when all have one that shuffles take: 16- or 32-bit floats,
/// 32-bit integers.
static std::optional<SmallVector<gpu::AllReduceOperation>>
getWarpReductions(ArrayRef<Operation *> combiners, ArrayRef<Type> types) {
  using Kind = gpu::AllReduceOperation;
  SmallVector<Kind> kinds;
  for (auto [combiner, type] : llvm::zip_equal(combiners, types)) {
    bool shuffles =
        (isa<FloatType>(type) && (type.getIntOrFloatBitWidth() == 16 ||
                                  type.getIntOrFloatBitWidth() == 32)) ||
        type.isSignlessInteger(32);
    std::optional<Kind> kind =
        llvm::TypeSwitch<Operation *, std::optional<Kind>>(combiner)
            .Case<arith::AddFOp, arith::AddIOp>([](auto) { return Kind::ADD; })
            .Case<arith::MulFOp, arith::MulIOp>([](auto) { return Kind::MUL; })
            .Case([](arith::MaximumFOp) { return Kind::MAXIMUMF; })
            .Case([](arith::MinimumFOp) { return Kind::MINIMUMF; })
            .Case([](arith::MaxNumFOp) { return Kind::MAXNUMF; })
            .Case([](arith::MinNumFOp) { return Kind::MINNUMF; })
            .Case([](arith::MaxSIOp) { return Kind::MAXSI; })
            .Case([](arith::MinSIOp) { return Kind::MINSI; })
            .Case([](arith::MaxUIOp) { return Kind::MAXUI; })
            .Case([](arith::MinUIOp) { return Kind::MINUI; })
            .Case([](arith::AndIOp) { return Kind::AND; })
            .Case([](arith::OrIOp) { return Kind::OR; })
            .Case([](arith::XOrIOp) { return Kind::XOR; })
            .Default([](Operation *) { return std::nullopt; });
    // (A combiner's fastmath flags only permit rewrites: dropped.)
    if (!shuffles || !kind)
      return std::nullopt;
    kinds.push_back(*kind);
  }
  return kinds;
}

int64_t train::getRowThreads(ArrayRef<linalg::GenericOp> stages,
                             ArrayRef<int64_t> rows, int64_t blockSize) {
  int64_t numRows = getNumRows(rows);
  int64_t largest = 1;
  for (linalg::GenericOp op : stages)
    largest = std::max(largest, getNumRows(op.getStaticLoopRanges()) / numRows);
  int64_t threads = std::min<int64_t>(blockSize, llvm::PowerOf2Ceil(largest));
  return int64_t(1) << llvm::Log2_64(std::max<int64_t>(threads, 1));
}

LaunchMember train::getRowGroupMember(OpBuilder &builder,
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
  auto add = [&](LaunchMember::Piece piece) {
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
    // A reduction: each thread's strided part from the neutral element,
    // then the block's parts combined into one, which thread 0 combines
    // into the output.
    unsigned outputs = op.getNumDpsInits();
    SmallVector<Operation *> combiners;
    SmallVector<Type> types;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      types.push_back(getElementTypeOrSelf(init.get().getType()));
      combiners.push_back(
          getCombiner(op, init.getOperandNumber() - op.getNumDpsInputs()));
    }
    auto partials = [=](OpBuilder &builder, Value row,
                        Value tx) mutable -> SmallVector<Value> {
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
      return SmallVector<Value>(partial.getResults());
    };
    // Thread 0 combines the row's `totals` (built in its branch) into the
    // output.
    auto storeTotals =
        [=](OpBuilder &builder, Value row, Value tx,
            function_ref<SmallVector<Value>(OpBuilder &)> getTotals) mutable {
          Value first = arith::CmpIOp::create(
              builder, loc, arith::CmpIPredicate::eq, tx, zero);
          auto branch = scf::IfOp::create(builder, loc, first);
          OpBuilder b =
              OpBuilder::atBlockBegin(&branch.getThenRegion().front());
          SmallVector<Value> totals = getTotals(b);
          SmallVector<Value> ivs = getRowIndices(b, loc, ranges, m, row, zero);
          for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
            SmallVector<Value> indices =
                applyMap(b, loc, op.getMatchingIndexingMap(&init), ivs);
            Value before = memref::LoadOp::create(b, loc, init.get(), indices);
            memref::StoreOp::create(b, loc,
                                    combine(b, combiners[i], before, totals[i]),
                                    init.get(), indices);
          }
        };
    if (std::optional<SmallVector<gpu::AllReduceOperation>> kinds =
            getWarpReductions(combiners, types);
        kinds && threads >= kWarpSize) {
      // Whole warps: each warp's parts combined by warp shuffles
      // (gpu.subgroup_reduce), lane 0's result to a scratch slot per warp;
      // after one barrier every warp combines those slots again, a cluster
      // of as many lanes as there are warps.
      int64_t warps = threads / kWarpSize;
      SmallVector<Value> scratch;
      if (warps > 1)
        for (Type type : types) {
          scratch.push_back(createBlockScratch(
              builder, loc, MemRefType::get({numRows, warps}, type)));
          scratches.push_back(scratch.back());
        }
      auto reduce = [kinds](OpBuilder &b, Location loc, ArrayRef<Value> values,
                            std::optional<uint32_t> cluster) {
        SmallVector<Value> reduced;
        for (auto [value, kind] : llvm::zip_equal(values, *kinds))
          reduced.push_back(gpu::SubgroupReduceOp::create(
              b, loc, value, kind, /*uniform=*/false, cluster));
        return reduced;
      };
      add([=](OpBuilder &builder, Value row, Value tx) mutable {
        SmallVector<Value> warpTotals =
            reduce(builder, loc, partials(builder, row, tx), std::nullopt);
        if (warps == 1)
          return storeTotals(builder, row, tx,
                             [&](OpBuilder &) { return warpTotals; });
        MLIRContext *context = builder.getContext();
        AffineExpr t = getAffineDimExpr(0, context);
        Value lane = affine::AffineApplyOp::create(
            builder, loc, AffineMap::get(1, 0, t % kWarpSize), tx);
        Value warp = affine::AffineApplyOp::create(
            builder, loc, AffineMap::get(1, 0, t.floorDiv(kWarpSize)), tx);
        Value leader = arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::eq, lane, zero);
        auto branch = scf::IfOp::create(builder, loc, leader);
        OpBuilder b = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
        for (auto [value, slots] : llvm::zip_equal(warpTotals, scratch))
          memref::StoreOp::create(b, loc, value, slots, ValueRange{row, warp});
      });
      if (warps == 1)
        continue;
      barrier();
      add([=](OpBuilder &builder, Value row, Value tx) mutable {
        AffineExpr t = getAffineDimExpr(0, builder.getContext());
        Value slot = affine::AffineApplyOp::create(
            builder, loc, AffineMap::get(1, 0, t % warps), tx);
        SmallVector<Value> slots;
        for (Value buffer : scratch)
          slots.push_back(memref::LoadOp::create(builder, loc, buffer,
                                                 ValueRange{row, slot}));
        std::optional<uint32_t> cluster;
        if (warps < kWarpSize)
          cluster = warps;
        SmallVector<Value> totals = reduce(builder, loc, slots, cluster);
        storeTotals(builder, row, tx, [&](OpBuilder &) { return totals; });
      });
      continue;
    }
    // Otherwise (fewer threads than a warp, a combiner or type shuffles do
    // not take): the parts halved in a scratch buffer, rows x threads per
    // output.
    SmallVector<Value> scratch;
    for (Type type : types) {
      scratch.push_back(createBlockScratch(
          builder, loc, MemRefType::get({numRows, threads}, type)));
      scratches.push_back(scratch.back());
    }
    add([=](OpBuilder &builder, Value row, Value tx) mutable {
      SmallVector<Value> parts = partials(builder, row, tx);
      for (unsigned i = 0; i < outputs; ++i)
        memref::StoreOp::create(builder, loc, parts[i], scratch[i],
                                ValueRange{row, tx});
    });
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
    barrier();
    add([=](OpBuilder &builder, Value row, Value tx) mutable {
      storeTotals(builder, row, tx, [&](OpBuilder &b) {
        SmallVector<Value> totals;
        for (Value buffer : scratch)
          totals.push_back(
              memref::LoadOp::create(b, loc, buffer, ValueRange{row, zero}));
        return totals;
      });
    });
  }
  return member;
}

//===----------------------------------------------------------------------===//
// Column reductions: a block per tile of output elements
//===----------------------------------------------------------------------===//

/// The product of `ranges` at `dims`.
static int64_t getVolume(ArrayRef<int64_t> ranges, ArrayRef<unsigned> dims) {
  int64_t n = 1;
  for (unsigned d : dims)
    n *= ranges[d];
  return n;
}

bool train::isColumnReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || getReductionRows(op))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  SmallVector<unsigned> parallelDims, reductionDims;
  op.getParallelDims(parallelDims);
  op.getReductionDims(reductionDims);
  if (parallelDims.empty() || reductionDims.empty() ||
      getVolume(ranges, reductionDims) < kMinColumnReduction)
    return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (!getCombiner(op, init.getOperandNumber() - op.getNumDpsInputs()))
      return false;
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (unsigned d : reductionDims)
      if (map.isFunctionOfDim(d))
        return false;
  }
  // (A body that stores is not combine(f(x), acc).)
  bool stores = false;
  op.getRegion().walk([&](memref::StoreOp) { stores = true; });
  return !stores;
}

namespace {
/// A column reduction's block: `tile` output elements, `lanes` threads
/// each.
struct ColumnTile {
  int64_t tile;
  int64_t lanes;
};
} // namespace

static ColumnTile getColumnTile(const Mappable &mapped, int64_t blockSize) {
  linalg::GenericOp op = mapped.op;
  SmallVector<unsigned> reductionDims;
  op.getReductionDims(reductionDims);
  int64_t reduced = getVolume(op.getStaticLoopRanges(), reductionDims);
  int64_t tile = std::min<int64_t>({32, mapped.points, blockSize});
  auto floorPowerOf2 = [](int64_t n) -> int64_t {
    return n < 1 ? 1 : int64_t(1) << llvm::Log2_64(n);
  };
  int64_t lanes =
      std::min(floorPowerOf2(blockSize / tile), floorPowerOf2(reduced));
  return {tile, lanes};
}

int64_t train::getColumnThreads(const Mappable &mapped, int64_t blockSize) {
  ColumnTile layout = getColumnTile(mapped, blockSize);
  return layout.tile * layout.lanes;
}

LaunchMember train::getColumnMember(OpBuilder &builder, const Mappable &mapped,
                                    int64_t blockSize, Value zero,
                                    SmallVectorImpl<Value> &scratches) {
  linalg::GenericOp op = mapped.op;
  Location loc = op.getLoc();
  auto [tile, lanes] = getColumnTile(mapped, blockSize);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> parallelDims, reductionDims;
  op.getParallelDims(parallelDims);
  op.getReductionDims(reductionDims);
  SmallVector<int64_t> parallelRanges, reductionRanges;
  for (unsigned d : parallelDims)
    parallelRanges.push_back(ranges[d]);
  for (unsigned d : reductionDims)
    reductionRanges.push_back(ranges[d]);
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  LaunchMember member;
  member.blocks = llvm::divideCeil(mapped.points, tile);
  member.threads = tile * lanes;
  bool exact = member.blocks * tile == mapped.points;
  Value pointCount = constant(mapped.points),
        reducedCount = constant(getVolume(ranges, reductionDims)),
        laneCount = constant(lanes);
  SmallVector<Value> scratch;
  SmallVector<Operation *> combiners;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    auto type = MemRefType::get({member.blocks, member.threads},
                                getElementTypeOrSelf(init.get().getType()));
    scratch.push_back(createBlockScratch(builder, loc, type));
    scratches.push_back(scratch.back());
    combiners.push_back(
        getCombiner(op, init.getOperandNumber() - op.getNumDpsInputs()));
  }
  unsigned outputs = scratch.size();
  auto split = [](OpBuilder &b, Location loc, Value linear,
                  ArrayRef<int64_t> sizes) -> SmallVector<Value> {
    if (sizes.size() == 1)
      return {linear};
    return affine::AffineDelinearizeIndexOp::create(b, loc, linear, sizes,
                                                    /*hasOuterBound=*/true)
        .getResults();
  };
  // Thread `tx` of block `row`: its lane and its element (`point`), the
  // code of `body` under a guard of the element being in range.
  auto atElement = [=](OpBuilder &b, Value row, Value tx,
                       function_ref<void(OpBuilder &, Value, Value)> body) {
    MLIRContext *context = b.getContext();
    AffineExpr r = getAffineDimExpr(0, context),
               t = getAffineDimExpr(1, context);
    Value point = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(2, 0, r * tile + t % tile), ValueRange{row, tx});
    Value lane = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(2, 0, t.floorDiv(tile)), ValueRange{row, tx});
    if (exact)
      return body(b, point, lane);
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         point, pointCount);
    auto guard = scf::IfOp::create(b, loc, inside);
    OpBuilder inner = OpBuilder::atBlockBegin(&guard.getThenRegion().front());
    body(inner, point, lane);
  };
  // Each thread's strided part of its element's reduction...
  member.segments.push_back({[=](OpBuilder &b, Value row, Value tx) mutable {
    atElement(b, row, tx, [&](OpBuilder &b, Value point, Value lane) {
      SmallVector<Value> ivs(ranges.size());
      for (auto [d, v] :
           llvm::zip_equal(parallelDims, split(b, loc, point, parallelRanges)))
        ivs[d] = v;
      SmallVector<Value> neutral;
      for (Operation *combiner : combiners)
        neutral.push_back(arith::ConstantOp::create(
            b, loc, *arith::getNeutralElement(combiner)));
      auto partial = scf::ForOp::create(
          b, loc, lane, reducedCount, laneCount, neutral,
          [&](OpBuilder &b, Location, Value r, ValueRange accs) {
            for (auto [d, v] : llvm::zip_equal(
                     reductionDims, split(b, loc, r, reductionRanges)))
              ivs[d] = v;
            SmallVector<Value> args;
            for (OpOperand *input : op.getDpsInputOperands())
              args.push_back(readOperand(b, loc, op, *input, ivs));
            llvm::append_range(args, accs);
            scf::YieldOp::create(b, loc, cloneBody(b, op, args, ivs));
          });
      for (unsigned i = 0; i < outputs; ++i)
        memref::StoreOp::create(b, loc, partial.getResult(i), scratch[i],
                                ValueRange{row, tx});
    });
  }});
  // ... the lanes' partial results halved...
  for (int64_t half = lanes / 2; half >= 1; half /= 2) {
    member.segments.push_back({[=](OpBuilder &b, Value row, Value tx) mutable {
      atElement(b, row, tx, [&](OpBuilder &b, Value, Value lane) {
        Value offset = arith::ConstantIndexOp::create(b, loc, half);
        Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            lane, offset);
        auto branch = scf::IfOp::create(b, loc, lower);
        OpBuilder inner =
            OpBuilder::atBlockBegin(&branch.getThenRegion().front());
        Value partner = arith::AddIOp::create(
            inner, loc, tx,
            arith::ConstantIndexOp::create(inner, loc, half * tile));
        for (unsigned i = 0; i < outputs; ++i) {
          Value mine = memref::LoadOp::create(inner, loc, scratch[i],
                                              ValueRange{row, tx});
          Value theirs = memref::LoadOp::create(inner, loc, scratch[i],
                                                ValueRange{row, partner});
          memref::StoreOp::create(inner, loc,
                                  combine(inner, combiners[i], mine, theirs),
                                  scratch[i], ValueRange{row, tx});
        }
      });
    }});
  }
  // ... and the first lane combines its element's total into the output.
  member.segments.push_back({[=](OpBuilder &b, Value row, Value tx) mutable {
    atElement(b, row, tx, [&](OpBuilder &b, Value point, Value lane) {
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
      auto branch = scf::IfOp::create(b, loc, first);
      OpBuilder inner =
          OpBuilder::atBlockBegin(&branch.getThenRegion().front());
      SmallVector<Value> ivs(ranges.size(), zero);
      for (auto [d, v] : llvm::zip_equal(
               parallelDims, split(inner, loc, point, parallelRanges)))
        ivs[d] = v;
      for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
        SmallVector<Value> indices =
            applyMap(inner, loc, op.getMatchingIndexingMap(&init), ivs);
        Value total =
            memref::LoadOp::create(inner, loc, scratch[i], ValueRange{row, tx});
        Value before = memref::LoadOp::create(inner, loc, init.get(), indices);
        memref::StoreOp::create(inner, loc,
                                combine(inner, combiners[i], before, total),
                                init.get(), indices);
      }
    });
  }});
  return member;
}
