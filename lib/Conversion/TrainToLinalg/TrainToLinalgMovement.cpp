//===- TrainToLinalgMovement.cpp - data movement ops to linalg ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// reshape as a collapse to one dim and an expand (no copy); transpose and
// broadcast as copies whose indexing maps do the movement; slice as
// `tensor.extract_slice` and a copy; scatter_add as a reduction; concat,
// pad, iota and gather as parallel `linalg.generic`s computing each result
// element from its index (`tensor.extract` where the read is data
// dependent or guarded).
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

/// The identity body of a copy.
static SmallVector<Value> yieldFirst(OpBuilder &, Location, ValueRange a) {
  return {a[0]};
}

/// An index constant.
static Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `lo <= v < hi` on indices.
static Value inRange(OpBuilder &b, Location loc, Value v, Value lo, Value hi) {
  return arith::AndIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, lo),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v, hi));
}

/// Aborts the program, naming `op` and its location, when table row `row`
/// is outside `[0, rows)`: an index out of range is an error at run time
/// (as PyTorch's "index out of range in self"), not a read elsewhere.
static void assertRow(OpBuilder &b, Location loc, Value row, int64_t rows,
                      Operation *op) {
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "'" << op->getName() << "' at " << op->getLoc()
     << ": an index is outside the table's rows [0, " << rows << ")";
  cf::AssertOp::create(b, loc,
                       inRange(b, loc, row, indexConstant(b, loc, 0),
                               indexConstant(b, loc, rows)),
                       message);
}

/// `v` clamped into `[0, size)` (a guarded read stays in bounds).
static Value clampIndex(OpBuilder &b, Location loc, Value v, int64_t size) {
  Value lo = arith::MaxSIOp::create(b, loc, v, indexConstant(b, loc, 0));
  return arith::MinSIOp::create(b, loc, lo, indexConstant(b, loc, size - 1));
}

Value linalg_lowering::buildPad(OpBuilder &builder, Location loc, Value operand,
                                ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                                Value value) {
  auto from = cast<RankedTensorType>(operand.getType());
  int64_t rank = from.getRank();
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> offsets, sizes,
      strides(rank, builder.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d) {
    assert(low[d] >= 0 && high[d] >= 0 && "padding is never negative");
    shape.push_back(from.getDimSize(d) + low[d] + high[d]);
    offsets.push_back(builder.getIndexAttr(low[d]));
    sizes.push_back(builder.getIndexAttr(from.getDimSize(d)));
  }
  auto type = RankedTensorType::get(shape, from.getElementType());
  if (type == from)
    return operand;
  // The operand inserted into a filled tensor (not a guarded gather of
  // every element): its producer can write straight into the padded
  // buffer (dist-rematerialize-fills, eliminate-empty-tensors), so that a
  // ResNet layer's padding costs one fill of the buffer.
  return tensor::InsertSliceOp::create(builder, loc, operand,
                                       buildFilled(builder, loc, type, value),
                                       offsets, sizes, strides);
}

namespace {
/// Row-major reshape: collapse to one dim (or none, for one element), then
/// expand to the result shape.
struct ReshapePattern : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto from = cast<RankedTensorType>(op.getOperand().getType());
    auto to = cast<RankedTensorType>(op.getType());
    bool scalar = from.getRank() == 0 || to.getRank() == 0;
    auto all = [&](int64_t rank) {
      SmallVector<ReassociationIndices> groups;
      if (!scalar)
        groups.push_back(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
      return groups;
    };
    auto flatType = RankedTensorType::get(
        scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{from.getNumElements()},
        from.getElementType());
    Value flat = op.getOperand();
    if (from != flatType)
      flat = tensor::CollapseShapeOp::create(rewriter, loc, flatType, flat,
                                             all(from.getRank()));
    Value result = flat;
    if (to != flatType)
      result = tensor::ExpandShapeOp::create(rewriter, loc, to, flat,
                                             all(to.getRank()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A copy reading operand dim `permutation[i]` at result index `i`.
struct TransposePattern : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> permutation = op.getPermutation();
    SmallVector<AffineExpr> exprs(permutation.size());
    for (auto [i, d] : llvm::enumerate(permutation))
      exprs[d] = rewriter.getAffineDimExpr(i);
    AffineMap map =
        AffineMap::get(permutation.size(), 0, exprs, rewriter.getContext());
    rewriter.replaceOp(op,
                       buildGeneric(rewriter, op.getLoc(), op->getResultTypes(),
                                    op.getOperand(), {map}, yieldFirst));
    return success();
  }
};

/// A copy reading operand dim `i` at result dim `dims[i]` (index 0 where
/// the operand has size 1).
struct BroadcastPattern : public OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto from = cast<RankedTensorType>(op.getOperand().getType());
    auto to = cast<RankedTensorType>(op.getType());
    SmallVector<AffineExpr> exprs;
    for (auto [i, d] : llvm::enumerate(op.getDims()))
      exprs.push_back(from.getDimSize(i) == to.getDimSize(d)
                          ? rewriter.getAffineDimExpr(d)
                          : rewriter.getAffineConstantExpr(0));
    AffineMap map =
        AffineMap::get(to.getRank(), 0, exprs, rewriter.getContext());
    rewriter.replaceOp(op,
                       buildGeneric(rewriter, op.getLoc(), op->getResultTypes(),
                                    op.getOperand(), {map}, yieldFirst));
    return success();
  }
};

/// `tensor.extract_slice`, then a copy (so the result is a fresh
/// contiguous tensor, not a strided view).
struct SlicePattern : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<int64_t> strides(type.getRank(), 1);
    if (std::optional<ArrayRef<int64_t>> given = op.getStrides())
      strides.assign(given->begin(), given->end());
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, op.getLoc(), type, op.getOperand(), ValueRange{},
        ValueRange{}, ValueRange{}, op.getStart(), type.getShape(), strides);
    rewriter.replaceOp(
        op, buildGeneric(rewriter, op.getLoc(), TypeRange{type}, slice,
                         {rewriter.getMultiDimIdentityMap(type.getRank())},
                         yieldFirst));
    return success();
  }
};

/// Each result element read from the operand whose range along `dim` holds
/// it (a select chain over guarded extracts).
struct ConcatPattern : public OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    int64_t dim = static_cast<int64_t>(op.getDim());
    if (dim < 0)
      dim += rank;
    ValueRange inputs = op.getInputs();
    Value result = buildGeneric(
        rewriter, op.getLoc(), TypeRange{type}, ValueRange{}, {},
        [&](OpBuilder &b, Location l, ValueRange) -> SmallVector<Value> {
          SmallVector<Value> at = getIndices(b, l, rank);
          Value position = at[dim];
          Value picked;
          int64_t begin = 0;
          for (Value input : inputs) {
            int64_t size =
                cast<RankedTensorType>(input.getType()).getDimSize(dim);
            SmallVector<Value> local(at);
            local[dim] =
                clampIndex(b, l,
                           arith::SubIOp::create(b, l, position,
                                                 indexConstant(b, l, begin)),
                           size);
            Value read = tensor::ExtractOp::create(b, l, input, local);
            picked = !picked ? read
                             : arith::SelectOp::create(
                                   b, l,
                                   arith::CmpIOp::create(
                                       b, l, arith::CmpIPredicate::sge,
                                       position, indexConstant(b, l, begin)),
                                   read, picked)
                                   .getResult();
            begin += size;
          }
          return {picked};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// train.pad through buildPad.
struct PadPattern : public OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    Value operand = op.getOperand();
    Type element = cast<RankedTensorType>(operand.getType()).getElementType();
    double padValue = op.getValue().convertToDouble();
    Value value = isa<FloatType>(element)
                      ? floatConstant(rewriter, op.getLoc(), element, padValue)
                      : arith::ConstantOp::create(
                            rewriter, op.getLoc(),
                            rewriter.getIntegerAttr(element, int64_t(padValue)))
                            .getResult();
    rewriter.replaceOp(op, buildPad(rewriter, op.getLoc(), operand, op.getLow(),
                                    op.getHigh(), value));
    return success();
  }
};

/// The index along `dim`, converted to the element type.
struct IotaPattern : public OpRewritePattern<IotaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(IotaOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t dim = static_cast<int64_t>(op.getDim());
    if (dim < 0)
      dim += type.getRank();
    Value result = buildGeneric(
        rewriter, op.getLoc(), TypeRange{type}, ValueRange{}, {},
        [&](OpBuilder &b, Location l, ValueRange) -> SmallVector<Value> {
          Value index = linalg::IndexOp::create(b, l, dim);
          Type element = type.getElementType();
          Value asInt = arith::IndexCastOp::create(
              b, l, isa<FloatType>(element) ? b.getI64Type() : element, index);
          if (isa<FloatType>(element))
            return {arith::SIToFPOp::create(b, l, element, asInt)};
          return {asInt};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// result[i..., j...] = table[indices[i...] - row_offset, j...], zero where
/// the row is outside the table.
struct GatherPattern : public OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    Value table = op.getTable(), offset = op.getRowOffset();
    auto tableType = cast<RankedTensorType>(table.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t indexRank =
        cast<RankedTensorType>(op.getIndices().getType()).getRank();
    int64_t rank = resultType.getRank();
    int64_t rows = tableType.getDimSize(0);
    AffineMap indexMap =
        getLeadingDimsMap(rewriter.getContext(), rank, indexRank);
    Value result = buildGeneric(
        rewriter, op.getLoc(), TypeRange{resultType},
        ValueRange{op.getIndices()}, {indexMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]);
          if (offset)
            row = arith::SubIOp::create(b, l, row, offset);
          else
            assertRow(b, l, row, rows, op);
          SmallVector<Value> at = {clampIndex(b, l, row, rows)};
          SmallVector<Value> loops = getIndices(b, l, rank);
          at.append(loops.begin() + indexRank, loops.end());
          Value read = tensor::ExtractOp::create(b, l, table, at);
          if (!offset)
            return {read};
          Value inside = inRange(b, l, row, indexConstant(b, l, 0),
                                 indexConstant(b, l, rows));
          return {arith::SelectOp::create(
              b, l, inside, read,
              identityOf(b, l, resultType.getElementType(), ReduceKind::sum))};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// result[r, j...] = init[r, j...] + the sum over every index position i...
/// with indices[i...] - row_offset == r of updates[i..., j...]: a reduction
/// over the index dims into a copy of `init` (so repeated rows accumulate
/// in index order and rows outside the table are dropped). It reads every
/// update once per table row: a dense formulation, not a fast one.
struct ScatterAddPattern : public OpRewritePattern<ScatterAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScatterAddOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *context = rewriter.getContext();
    Value offset = op.getRowOffset();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t tableRank = type.getRank();
    int64_t indexRank =
        cast<RankedTensorType>(op.getIndices().getType()).getRank();
    // Loops: r, j... (the table), then i... (the index positions).
    int64_t loops = tableRank + indexRank;
    SmallVector<AffineExpr> indexExprs, updateExprs;
    for (int64_t d = 0; d < indexRank; ++d)
      indexExprs.push_back(getAffineDimExpr(tableRank + d, context));
    updateExprs = indexExprs;
    for (int64_t d = 1; d < tableRank; ++d)
      updateExprs.push_back(getAffineDimExpr(d, context));
    SmallVector<AffineMap> maps = {
        AffineMap::get(loops, 0, indexExprs, context),
        AffineMap::get(loops, 0, updateExprs, context),
        getLeadingDimsMap(context, loops, tableRank)};
    SmallVector<utils::IteratorType> iterators(tableRank,
                                               utils::IteratorType::parallel);
    iterators.append(indexRank, utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), TypeRange{type},
        ValueRange{op.getIndices(), op.getUpdates()}, ValueRange{op.getInit()},
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]);
          if (offset)
            row = arith::SubIOp::create(b, l, row, offset);
          else
            assertRow(b, l, row, type.getDimSize(0), op);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, row,
                                            linalg::IndexOp::create(b, l, 0));
          Value sum = isFloat
                          ? arith::AddFOp::create(b, l, a[2], a[1]).getResult()
                          : arith::AddIOp::create(b, l, a[2], a[1]).getResult();
          linalg::YieldOp::create(
              b, l, ValueRange{arith::SelectOp::create(b, l, hit, sum, a[2])});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};
} // namespace

void linalg_lowering::populateMovementPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapePattern, TransposePattern, BroadcastPattern, SlicePattern,
               ConcatPattern, PadPattern, IotaPattern, GatherPattern,
               ScatterAddPattern>(patterns.getContext());
}
