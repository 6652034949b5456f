//===- TrainToLinalg.cpp - train ops to linalg on tensors -----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The pass and the elementwise, contraction, reduction, loss and optimizer
// patterns; the shared builders are in TrainToLinalgUtils.cpp. The
// softmax family, normalizations and dropout are in TrainToLinalgNN.cpp,
// data movement in TrainToLinalgMovement.cpp, pooling and convolution in
// TrainToLinalgWindow.cpp.
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace mlir::train {
#define GEN_PASS_DEF_TRAINTOLINALGPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

namespace {
/// Elementwise ops: one linalg.generic with `Body` on the scalars.
template <typename OpT>
struct ElementwisePattern : public OpRewritePattern<OpT> {
  using BodyFn = Value (*)(OpBuilder &, Location, OpT, ValueRange);
  ElementwisePattern(MLIRContext *context, BodyFn fn)
      : OpRewritePattern<OpT>(context), fn(fn) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> results = buildElementwise(
        rewriter, op.getLoc(), op->getResultTypes(), op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> SmallVector<Value> {
          return {fn(b, loc, op, args)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
  BodyFn fn;
};
} // namespace

/// Adds the elementwise pattern of `OpT` with body `fn`.
template <typename OpT>
static void addElementwise(RewritePatternSet &patterns,
                           typename ElementwisePattern<OpT>::BodyFn fn) {
  patterns.add<ElementwisePattern<OpT>>(patterns.getContext(), fn);
}

static bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

/// The float/int elementwise bodies.
static void populateElementwisePatterns(RewritePatternSet &patterns) {
  addElementwise<AddOp>(
      patterns, [](OpBuilder &b, Location l, AddOp, ValueRange a) -> Value {
        return isFloat(a[0])
                   ? arith::AddFOp::create(b, l, a[0], a[1]).getResult()
                   : arith::AddIOp::create(b, l, a[0], a[1]).getResult();
      });
  addElementwise<SubOp>(
      patterns, [](OpBuilder &b, Location l, SubOp, ValueRange a) -> Value {
        return isFloat(a[0])
                   ? arith::SubFOp::create(b, l, a[0], a[1]).getResult()
                   : arith::SubIOp::create(b, l, a[0], a[1]).getResult();
      });
  addElementwise<MulOp>(
      patterns, [](OpBuilder &b, Location l, MulOp, ValueRange a) -> Value {
        return isFloat(a[0])
                   ? arith::MulFOp::create(b, l, a[0], a[1]).getResult()
                   : arith::MulIOp::create(b, l, a[0], a[1]).getResult();
      });
  addElementwise<DivOp>(
      patterns, [](OpBuilder &b, Location l, DivOp, ValueRange a) -> Value {
        return isFloat(a[0])
                   ? arith::DivFOp::create(b, l, a[0], a[1]).getResult()
                   : arith::DivSIOp::create(b, l, a[0], a[1]).getResult();
      });
  addElementwise<MaxOp>(
      patterns, [](OpBuilder &b, Location l, MaxOp, ValueRange a) -> Value {
        return combine(b, l, ReduceKind::max, a[0], a[1]);
      });
  addElementwise<MinOp>(
      patterns, [](OpBuilder &b, Location l, MinOp, ValueRange a) -> Value {
        return combine(b, l, ReduceKind::min, a[0], a[1]);
      });
  addElementwise<PowOp>(
      patterns, [](OpBuilder &b, Location l, PowOp, ValueRange a) -> Value {
        return math::PowFOp::create(b, l, a[0], a[1]);
      });
  addElementwise<NegOp>(
      patterns, [](OpBuilder &b, Location l, NegOp, ValueRange a) -> Value {
        if (isFloat(a[0]))
          return arith::NegFOp::create(b, l, a[0]);
        Value zero = arith::ConstantOp::create(
            b, l, b.getIntegerAttr(a[0].getType(), 0));
        return arith::SubIOp::create(b, l, zero, a[0]);
      });
  addElementwise<AbsOp>(
      patterns, [](OpBuilder &b, Location l, AbsOp, ValueRange a) -> Value {
        return isFloat(a[0]) ? math::AbsFOp::create(b, l, a[0]).getResult()
                             : math::AbsIOp::create(b, l, a[0]).getResult();
      });
  addElementwise<ExpOp>(
      patterns, [](OpBuilder &b, Location l, ExpOp, ValueRange a) -> Value {
        return math::ExpOp::create(b, l, a[0]);
      });
  addElementwise<LogOp>(
      patterns, [](OpBuilder &b, Location l, LogOp, ValueRange a) -> Value {
        return math::LogOp::create(b, l, a[0]);
      });
  addElementwise<SqrtOp>(
      patterns, [](OpBuilder &b, Location l, SqrtOp, ValueRange a) -> Value {
        return math::SqrtOp::create(b, l, a[0]);
      });
  addElementwise<RsqrtOp>(
      patterns, [](OpBuilder &b, Location l, RsqrtOp, ValueRange a) -> Value {
        return math::RsqrtOp::create(b, l, a[0]);
      });
  addElementwise<TanhOp>(
      patterns, [](OpBuilder &b, Location l, TanhOp, ValueRange a) -> Value {
        return math::TanhOp::create(b, l, a[0]);
      });
  addElementwise<ErfOp>(
      patterns, [](OpBuilder &b, Location l, ErfOp, ValueRange a) -> Value {
        return math::ErfOp::create(b, l, a[0]);
      });
  addElementwise<Log1pOp>(
      patterns, [](OpBuilder &b, Location l, Log1pOp, ValueRange a) -> Value {
        return math::Log1pOp::create(b, l, a[0]);
      });
  addElementwise<Expm1Op>(
      patterns, [](OpBuilder &b, Location l, Expm1Op, ValueRange a) -> Value {
        return math::ExpM1Op::create(b, l, a[0]);
      });
  addElementwise<SigmoidOp>(
      patterns, [](OpBuilder &b, Location l, SigmoidOp, ValueRange a) -> Value {
        Type t = a[0].getType();
        Value one = floatConstant(b, l, t, 1);
        Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, a[0]));
        return arith::DivFOp::create(b, l, one,
                                     arith::AddFOp::create(b, l, one, e));
      });
  addElementwise<GeluOp>(
      patterns, [](OpBuilder &b, Location l, GeluOp, ValueRange a) -> Value {
        // x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
        Type t = a[0].getType();
        auto constant = [&](double v) { return floatConstant(b, l, t, v); };
        Value x = a[0];
        Value cube =
            arith::MulFOp::create(b, l, x, arith::MulFOp::create(b, l, x, x));
        Value inner = arith::AddFOp::create(
            b, l, x, arith::MulFOp::create(b, l, constant(0.044715), cube));
        Value tanh = math::TanhOp::create(
            b, l,
            arith::MulFOp::create(b, l, constant(0.7978845608028654), inner));
        Value half = arith::MulFOp::create(b, l, x, constant(0.5));
        return arith::MulFOp::create(
            b, l, half, arith::AddFOp::create(b, l, constant(1), tanh));
      });
  addElementwise<ConvertOp>(
      patterns,
      [](OpBuilder &b, Location l, ConvertOp op, ValueRange a) -> Value {
        Type from = a[0].getType(), to = op.getType().getElementType();
        if (from == to)
          return a[0];
        bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
        // i1 is a truth value: it converts as unsigned (true is 1).
        bool fromBool = from.isInteger(1);
        if (fromFloat && toFloat)
          return castFloat(b, l, a[0], to);
        if (toFloat)
          return fromBool ? arith::UIToFPOp::create(b, l, to, a[0]).getResult()
                          : arith::SIToFPOp::create(b, l, to, a[0]).getResult();
        if (to.isInteger(1)) {
          Value zero = fromFloat ? floatConstant(b, l, from, 0)
                                 : identityOf(b, l, from, ReduceKind::sum);
          return fromFloat
                     ? arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE,
                                             a[0], zero)
                           .getResult()
                     : arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                             a[0], zero)
                           .getResult();
        }
        if (fromFloat)
          return arith::FPToSIOp::create(b, l, to, a[0]);
        if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
          return arith::TruncIOp::create(b, l, to, a[0]);
        return fromBool ? arith::ExtUIOp::create(b, l, to, a[0]).getResult()
                        : arith::ExtSIOp::create(b, l, to, a[0]).getResult();
      });
  addElementwise<ReluOp>(
      patterns, [](OpBuilder &b, Location l, ReluOp, ValueRange a) -> Value {
        Type t = a[0].getType();
        Value zero =
            isFloat(a[0])
                ? floatConstant(b, l, t, 0)
                : arith::ConstantOp::create(b, l, b.getIntegerAttr(t, 0))
                      .getResult();
        return combine(b, l, ReduceKind::max, a[0], zero);
      });
  addElementwise<CompareOp>(
      patterns,
      [](OpBuilder &b, Location l, CompareOp op, ValueRange a) -> Value {
        if (isFloat(a[0])) {
          arith::CmpFPredicate predicate = arith::CmpFPredicate::OEQ;
          switch (op.getDirection()) {
          case CompareDirection::eq:
            predicate = arith::CmpFPredicate::OEQ;
            break;
          case CompareDirection::ne:
            predicate = arith::CmpFPredicate::UNE;
            break;
          case CompareDirection::lt:
            predicate = arith::CmpFPredicate::OLT;
            break;
          case CompareDirection::le:
            predicate = arith::CmpFPredicate::OLE;
            break;
          case CompareDirection::gt:
            predicate = arith::CmpFPredicate::OGT;
            break;
          case CompareDirection::ge:
            predicate = arith::CmpFPredicate::OGE;
            break;
          }
          return arith::CmpFOp::create(b, l, predicate, a[0], a[1]);
        }
        arith::CmpIPredicate predicate = arith::CmpIPredicate::eq;
        switch (op.getDirection()) {
        case CompareDirection::eq:
          predicate = arith::CmpIPredicate::eq;
          break;
        case CompareDirection::ne:
          predicate = arith::CmpIPredicate::ne;
          break;
        case CompareDirection::lt:
          predicate = arith::CmpIPredicate::slt;
          break;
        case CompareDirection::le:
          predicate = arith::CmpIPredicate::sle;
          break;
        case CompareDirection::gt:
          predicate = arith::CmpIPredicate::sgt;
          break;
        case CompareDirection::ge:
          predicate = arith::CmpIPredicate::sge;
          break;
        }
        return arith::CmpIOp::create(b, l, predicate, a[0], a[1]);
      });
  addElementwise<SelectOp>(
      patterns, [](OpBuilder &b, Location l, SelectOp, ValueRange a) -> Value {
        return arith::SelectOp::create(b, l, a[0], a[1], a[2]);
      });
}

namespace {
/// `[..., m, k] x [..., k, n] -> [..., m, n]` (with transposes, and an
/// operand without batch dims shared by every batch) as a contraction.
struct MatmulPattern : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t rank = resultType.getRank(), batch = rank - 2;
    // Loops: batch..., m, n, k.
    AffineExpr m = getAffineDimExpr(batch, context),
               n = getAffineDimExpr(batch + 1, context),
               k = getAffineDimExpr(batch + 2, context);
    auto operandMap = [&](Value operand, AffineExpr rows, AffineExpr cols,
                          bool transpose) {
      int64_t operandRank = cast<RankedTensorType>(operand.getType()).getRank();
      SmallVector<AffineExpr> exprs;
      for (int64_t d = 0; d < operandRank - 2; ++d)
        exprs.push_back(getAffineDimExpr(d, context));
      exprs.push_back(transpose ? cols : rows);
      exprs.push_back(transpose ? rows : cols);
      return AffineMap::get(rank + 1, 0, exprs, context);
    };
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < batch; ++d)
      outExprs.push_back(getAffineDimExpr(d, context));
    outExprs.append({m, n});
    SmallVector<AffineMap> maps = {
        operandMap(op.getLhs(), m, k, op.getTransposeLhs()),
        operandMap(op.getRhs(), k, n, op.getTransposeRhs()),
        AffineMap::get(rank + 1, 0, outExprs, context)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Type element = resultType.getElementType();
    Value init =
        tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), element);
    Value zero = identityOf(rewriter, loc, element, ReduceKind::sum);
    Value acc = linalg::FillOp::create(rewriter, loc, zero, init).getResult(0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType},
        ValueRange{op.getLhs(), op.getRhs()}, ValueRange{acc}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value product =
              isFloat(a[0])
                  ? arith::MulFOp::create(b, l, a[0], a[1]).getResult()
                  : arith::MulIOp::create(b, l, a[0], a[1]).getResult();
          linalg::YieldOp::create(
              b, l, combine(b, l, ReduceKind::sum, a[2], product));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct ReducePattern : public OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> dims;
    int64_t rank = cast<RankedTensorType>(op.getOperand().getType()).getRank();
    for (int64_t d : op.getDims())
      dims.push_back(d < 0 ? d + rank : d);
    rewriter.replaceOp(
        op, buildReduction(rewriter, op.getLoc(), op.getOperand(), dims,
                           op.getKind(), cast<RankedTensorType>(op.getType())));
    return success();
  }
};

struct ConstantPattern : public OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

/// A stable softmax over the last dim of `logits` (rows are the other
/// dims): the row maximum and the row sum of exp(logits - max).
struct SoftmaxRows {
  Value max;
  Value sumExp;
  /// (d0, ..., dr-1) -> (d0, ..., dr-2): a row value at a logit's index.
  AffineMap rowMap;
};

static SoftmaxRows buildSoftmaxRows(OpBuilder &b, Location loc, Value logits) {
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  auto rowType = RankedTensorType::get(type.getShape().drop_back(), element);
  Value max =
      buildReduction(b, loc, logits, {rank - 1}, ReduceKind::max, rowType);
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap rowMap = getLeadingDimsMap(b.getContext(), rank, rank - 1);
  Value init = tensor::EmptyOp::create(b, loc, rowType.getShape(), element);
  Value zero = linalg::FillOp::create(
                   b, loc, identityOf(b, loc, element, ReduceKind::sum), init)
                   .getResult(0);
  SmallVector<utils::IteratorType> iterators(rank - 1,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  Value sumExp =
      linalg::GenericOp::create(
          b, loc, TypeRange{rowType}, ValueRange{logits, max}, ValueRange{zero},
          ArrayRef<AffineMap>{identity, rowMap, rowMap}, iterators,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value e = math::ExpOp::create(
                nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, a[2], e).getResult());
          })
          .getResult(0);
  return {max, sumExp, rowMap};
}

/// mean over every label of logsumexp(row) - row[label].
struct CrossEntropyPattern : public OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits();
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t rows = type.getRank() - 1;
    Type element = type.getElementType();
    SoftmaxRows softmax = buildSoftmaxRows(rewriter, loc, logits);
    auto rowType = RankedTensorType::get(type.getShape().drop_back(), element);
    AffineMap identity = rewriter.getMultiDimIdentityMap(rows);
    Value perRow = buildGeneric(
        rewriter, loc, TypeRange{rowType},
        ValueRange{softmax.max, softmax.sumExp, op.getLabels()},
        {identity, identity, identity},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          SmallVector<Value> at = getIndices(b, l, rows);
          at.push_back(
              arith::IndexCastOp::create(b, l, b.getIndexType(), a[2]));
          Value picked = tensor::ExtractOp::create(b, l, logits, at);
          Value logSum = arith::AddFOp::create(
              b, l, math::LogOp::create(b, l, a[1]), a[0]);
          return {arith::SubFOp::create(b, l, logSum, picked)};
        })[0];
    SmallVector<int64_t> all(rows);
    std::iota(all.begin(), all.end(), 0);
    rewriter.replaceOp(
        op, buildReduction(rewriter, loc, perRow, all, ReduceKind::mean,
                           cast<RankedTensorType>(op.getType())));
    return success();
  }
};

/// grad * (softmax(logits) - one_hot(labels)) / count.
struct CrossEntropyBackwardPattern
    : public OpRewritePattern<CrossEntropyBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyBackwardOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits();
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t rank = type.getRank();
    Type element = type.getElementType();
    int64_t count = type.getNumElements() / type.getShape().back();
    SoftmaxRows softmax = buildSoftmaxRows(rewriter, loc, logits);
    MLIRContext *context = rewriter.getContext();
    SmallVector<AffineMap> maps = {
        rewriter.getMultiDimIdentityMap(rank), softmax.rowMap, softmax.rowMap,
        softmax.rowMap, AffineMap::get(rank, 0, {}, context)};
    Value result = buildGeneric(
        rewriter, loc, TypeRange{type},
        ValueRange{logits, softmax.max, softmax.sumExp, op.getLabels(),
                   op.getGradLoss()},
        maps,
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = arith::DivFOp::create(
              b, l,
              math::ExpOp::create(b, l,
                                  arith::SubFOp::create(b, l, a[0], a[1])),
              a[2]);
          Value cls = linalg::IndexOp::create(b, l, rank - 1);
          Value label =
              arith::IndexCastOp::create(b, l, b.getIndexType(), a[3]);
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, cls, label);
          Value oneHot = arith::SelectOp::create(
              b, l, hit, floatConstant(b, l, element, 1),
              floatConstant(b, l, element, 0));
          Value diff = arith::SubFOp::create(b, l, p, oneHot);
          Value scale = arith::DivFOp::create(
              b, l, a[4], floatConstant(b, l, element, double(count)));
          return {arith::MulFOp::create(b, l, diff, scale)};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

namespace {
/// PyTorch's SGD step, elementwise over the parameter.
struct SgdPattern : public OpRewritePattern<SgdOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SgdOp op,
                                PatternRewriter &rewriter) const override {
    double momentum = op.getMomentum().convertToDouble();
    double decay = op.getWeightDecay().convertToDouble();
    bool nesterov = op.getNesterov();
    bool hasBuffer = static_cast<bool>(op.getMomentumBuffer());
    // Over the parameter and its momentum buffer (operands 0 and 3).
    SmallVector<unsigned> state = {0};
    if (hasBuffer)
      state.push_back(3);
    SmallVector<Value> results = buildUpdate(
        rewriter, op.getLoc(), op->getResultTypes(), op->getOperands(), state,
        [&](OpBuilder &b, Location l,
            ValueRange operands) -> SmallVector<Value> {
          Type t = getComputeType(operands);
          SmallVector<Value> a;
          for (Value operand : operands)
            a.push_back(castFloat(b, l, operand, t));
          auto constant = [&](double v) { return floatConstant(b, l, t, v); };
          Value p = a[0], g = a[1], lr = a[2];
          if (decay != 0)
            g = arith::AddFOp::create(
                b, l, g, arith::MulFOp::create(b, l, constant(decay), p));
          Value buffer;
          if (hasBuffer) {
            buffer = arith::AddFOp::create(
                b, l, arith::MulFOp::create(b, l, constant(momentum), a[3]), g);
            g = nesterov ? arith::AddFOp::create(
                               b, l, g,
                               arith::MulFOp::create(b, l, constant(momentum),
                                                     buffer))
                               .getResult()
                         : buffer;
          }
          Value next = arith::SubFOp::create(
              b, l, p, arith::MulFOp::create(b, l, lr, g));
          if (hasBuffer)
            return {castFloat(b, l, next, operands[0].getType()),
                    castFloat(b, l, buffer, operands[3].getType())};
          return {castFloat(b, l, next, operands[0].getType())};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Adam / AdamW with bias correction; the step count is optimizer state.
template <typename OpT, bool decoupled>
struct AdamPattern : public OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double epsilon = op.getEpsilon().convertToDouble();
    double decay = op.getWeightDecay().convertToDouble();
    // t = step + 1, in the step's own type, then as a float. Over the step
    // count (its init): written in place like the rest of the state, so a
    // step allocates nothing for it (a CUDA step's graph replays without
    // allocations) and the runner adopts no new buffer.
    Value step = op.getStep();
    Value nextStep = buildUpdate(
        rewriter, loc, TypeRange{step.getType()}, ValueRange{step}, {0},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Type t = a[0].getType();
          if (isa<FloatType>(t))
            return {
                arith::AddFOp::create(b, l, a[0], floatConstant(b, l, t, 1))};
          return {arith::AddIOp::create(
              b, l, a[0],
              arith::ConstantOp::create(b, l, b.getIntegerAttr(t, 1)))};
        })[0];
    // The bias corrections 1 - beta^t, once per step (not per element), in
    // the type the update computes in.
    auto elementOf = [](Value value) {
      return cast<RankedTensorType>(value.getType()).getElementType();
    };
    Type element = elementOf(op.getParam());
    for (Value operand :
         {op.getGrad(), op.getExpAvg(), op.getExpAvgSq(), op.getLr()})
      if (elementOf(operand).getIntOrFloatBitWidth() >
          element.getIntOrFloatBitWidth())
        element = elementOf(operand);
    auto scalarType = RankedTensorType::get({}, element);
    SmallVector<Value> corrections = buildElementwise(
        rewriter, loc, TypeRange{scalarType, scalarType}, ValueRange{nextStep},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value time = a[0];
          if (!isa<FloatType>(time.getType()))
            time = arith::SIToFPOp::create(b, l, element, time);
          else
            time = castFloat(b, l, time, element);
          auto correction = [&](double beta) -> Value {
            return arith::SubFOp::create(
                b, l, floatConstant(b, l, element, 1),
                math::PowFOp::create(b, l, floatConstant(b, l, element, beta),
                                     time));
          };
          return {correction(beta1), correction(beta2)};
        });
    TypeRange paramTypes = TypeRange(op->getResultTypes()).take_front(3);
    // Over the parameter and both moments (operands 0, 2 and 3).
    SmallVector<Value> results = buildUpdate(
        rewriter, loc, paramTypes,
        ValueRange{op.getParam(), op.getGrad(), op.getExpAvg(),
                   op.getExpAvgSq(), corrections[0], corrections[1],
                   op.getLr()},
        {0, 2, 3},
        [&](OpBuilder &b, Location l,
            ValueRange operands) -> SmallVector<Value> {
          Type t = element;
          SmallVector<Value> a;
          for (Value operand : operands)
            a.push_back(castFloat(b, l, operand, t));
          auto constant = [&](double v) { return floatConstant(b, l, t, v); };
          Value p = a[0], g = a[1], m = a[2], v = a[3], lr = a[6];
          Value correction1 = a[4], correction2 = a[5];
          if (decoupled) {
            p = arith::MulFOp::create(
                b, l, p,
                arith::SubFOp::create(
                    b, l, constant(1),
                    arith::MulFOp::create(b, l, lr, constant(decay))));
          } else if (decay != 0) {
            g = arith::AddFOp::create(
                b, l, g, arith::MulFOp::create(b, l, constant(decay), p));
          }
          Value m1 = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, constant(beta1), m),
              arith::MulFOp::create(b, l, constant(1 - beta1), g));
          Value v1 = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, constant(beta2), v),
              arith::MulFOp::create(b, l, constant(1 - beta2),
                                    arith::MulFOp::create(b, l, g, g)));
          Value mHat = arith::DivFOp::create(b, l, m1, correction1);
          Value vHat = arith::DivFOp::create(b, l, v1, correction2);
          Value denom = arith::AddFOp::create(
              b, l, math::SqrtOp::create(b, l, vHat), constant(epsilon));
          Value next = arith::SubFOp::create(
              b, l, p,
              arith::MulFOp::create(b, l, lr,
                                    arith::DivFOp::create(b, l, mHat, denom)));
          return {castFloat(b, l, next, operands[0].getType()),
                  castFloat(b, l, m1, operands[2].getType()),
                  castFloat(b, l, v1, operands[3].getType())};
        });
    results.push_back(nextStep);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct TrainToLinalgPass
    : public mlir::train::impl::TrainToLinalgPassBase<TrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    populateElementwisePatterns(patterns);
    populateNormalizationPatterns(patterns);
    populateMovementPatterns(patterns);
    populateWindowPatterns(patterns);
    populateConvPatterns(patterns, convProducts);
    patterns.add<MatmulPattern, ReducePattern, ConstantPattern,
                 CrossEntropyPattern, CrossEntropyBackwardPattern, SgdPattern,
                 AdamPattern<AdamOp, false>, AdamPattern<AdamWOp, true>>(
        context);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    // Every train op has a pattern; one added to the dialect without one is
    // an error at the op, not a half-converted program.
    WalkResult left = getOperation().walk([&](Operation *op) {
      if (!isa<TrainDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError("has no lowering to linalg");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
