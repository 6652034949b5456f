//===- TrainToLinalgUtils.cpp - builders shared by the lowerings ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The builders TrainToLinalgUtils.h declares: indexing maps, casts, constants,
// linalg.generic builders and reductions, used by every TrainToLinalg*.cpp.
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

/// The map reading `type` (aligned at the trailing dims of a result of shape
/// `shape`) at the result's loop indices: a missing dim is skipped, a size-1
/// dim broadcast to a larger one reads index 0.
AffineMap linalg_lowering::getBroadcastMap(MLIRContext *context,
                                           ArrayRef<int64_t> shape, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t rank = shape.size(), operandRank = tensor.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < operandRank; ++d) {
    int64_t resultDim = rank - operandRank + d;
    exprs.push_back(tensor.getDimSize(d) == shape[resultDim]
                        ? getAffineDimExpr(resultDim, context)
                        : getAffineConstantExpr(0, context));
  }
  return AffineMap::get(rank, 0, exprs, context);
}

AffineMap linalg_lowering::getLeadingDimsMap(MLIRContext *context, int64_t rank,
                                             int64_t count) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < count; ++d)
    exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

Value linalg_lowering::castFloat(OpBuilder &b, Location loc, Value value,
                                 Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth == toWidth)
    return castFloat(b, loc, castFloat(b, loc, value, b.getF32Type()), to);
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, to, value);
  return arith::TruncFOp::create(b, loc, to, value);
}

Type linalg_lowering::getComputeType(ValueRange values) {
  Type widest;
  for (Value value : values) {
    Type type = value.getType();
    if (isa<FloatType>(type) && (!widest || type.getIntOrFloatBitWidth() >
                                                widest.getIntOrFloatBitWidth()))
      widest = type;
  }
  return widest;
}

/// One parallel `linalg.generic` computing `body` at every index of the
/// (same-shaped) `resultTypes`, reading operand i through `maps[i]`.
SmallVector<Value> linalg_lowering::buildGeneric(
    OpBuilder &builder, Location loc, TypeRange resultTypes,
    ValueRange operands, ArrayRef<AffineMap> operandMaps, BodyBuilder body) {
  auto resultType = cast<RankedTensorType>(resultTypes.front());
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(operandMaps);
  SmallVector<Value> inits;
  for (Type type : resultTypes) {
    auto tensor = cast<RankedTensorType>(type);
    inits.push_back(tensor::EmptyOp::create(builder, loc, tensor.getShape(),
                                            tensor.getElementType()));
    maps.push_back(builder.getMultiDimIdentityMap(rank));
  }
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      builder, loc, resultTypes, operands, inits, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l,
                                body(b, l, args.take_front(operands.size())));
      });
  return generic.getResults();
}

/// buildGeneric with NumPy broadcasting of every operand.
SmallVector<Value> linalg_lowering::buildElementwise(OpBuilder &builder,
                                                     Location loc,
                                                     TypeRange resultTypes,
                                                     ValueRange operands,
                                                     BodyBuilder body) {
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(resultTypes.front()).getShape();
  SmallVector<AffineMap> maps;
  for (Value operand : operands)
    maps.push_back(
        getBroadcastMap(builder.getContext(), shape, operand.getType()));
  return buildGeneric(builder, loc, resultTypes, operands, maps, body);
}

SmallVector<Value> linalg_lowering::buildUpdate(
    OpBuilder &builder, Location loc, TypeRange resultTypes,
    ValueRange operands, ArrayRef<unsigned> stateIndices, BodyBuilder body) {
  // The optimizer ops' verifiers give each result its state's type.
  for (auto [k, index] : llvm::enumerate(stateIndices))
    assert(operands[index].getType() == resultTypes[k] &&
           "a state and the result replacing it have one type");
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(resultTypes.front()).getShape();
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    if (llvm::is_contained(stateIndices, i))
      continue;
    inputs.push_back(operand);
    maps.push_back(
        getBroadcastMap(builder.getContext(), shape, operand.getType()));
  }
  for (unsigned index : stateIndices) {
    inits.push_back(operands[index]);
    maps.push_back(builder.getMultiDimIdentityMap(shape.size()));
  }
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             builder, loc, resultTypes, inputs, inits, maps, iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               // The block's arguments back in the operands' order.
               SmallVector<Value> ordered;
               unsigned input = 0;
               for (unsigned i = 0; i < operands.size(); ++i) {
                 const unsigned *state = llvm::find(stateIndices, i);
                 ordered.push_back(
                     state != stateIndices.end()
                         ? args[inputs.size() + (state - stateIndices.begin())]
                         : args[input++]);
               }
               linalg::YieldOp::create(b, l, body(b, l, ordered));
             })
      .getResults();
}

/// A float constant of `type` (f32, f16, ...).
Value linalg_lowering::floatConstant(OpBuilder &b, Location loc, Type type,
                                     double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// A zero (or identity of `kind`) of element type `type`.
Value linalg_lowering::identityOf(OpBuilder &b, Location loc, Type type,
                                  ReduceKind kind) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (kind == ReduceKind::max || kind == ReduceKind::min)
      return arith::ConstantOp::create(
          b, loc,
          b.getFloatAttr(type, APFloat::getInf(floatType.getFloatSemantics(),
                                               kind == ReduceKind::max)));
    return floatConstant(b, loc, type, 0);
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value = kind == ReduceKind::max   ? APInt::getSignedMinValue(width)
                : kind == ReduceKind::min ? APInt::getSignedMaxValue(width)
                                          : APInt::getZero(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

/// `lhs kind rhs` on floats or integers.
Value linalg_lowering::combine(OpBuilder &b, Location loc, ReduceKind kind,
                               Value lhs, Value rhs) {
  bool isFloat = isa<FloatType>(lhs.getType());
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    return isFloat ? arith::AddFOp::create(b, loc, lhs, rhs).getResult()
                   : arith::AddIOp::create(b, loc, lhs, rhs).getResult();
  case ReduceKind::max:
    return isFloat ? arith::MaximumFOp::create(b, loc, lhs, rhs).getResult()
                   : arith::MaxSIOp::create(b, loc, lhs, rhs).getResult();
  case ReduceKind::min:
    return isFloat ? arith::MinimumFOp::create(b, loc, lhs, rhs).getResult()
                   : arith::MinSIOp::create(b, loc, lhs, rhs).getResult();
  }
  llvm_unreachable("unknown reduce kind");
}

/// Reduces `input` over `dims` with `kind` into a tensor of `resultType`
/// (the kept dims, with or without size-1 placeholders).
Value linalg_lowering::buildReduction(OpBuilder &b, Location loc, Value input,
                                      ArrayRef<int64_t> dims, ReduceKind kind,
                                      RankedTensorType resultType) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  return buildReductions(
      b, loc, ValueRange{input}, {b.getMultiDimIdentityMap(rank)}, rank, dims,
      kind, resultType, 1,
      [](OpBuilder &, Location, ValueRange a) -> SmallVector<Value> {
        return {a[0]};
      })[0];
}

SmallVector<Value> linalg_lowering::buildReductions(
    OpBuilder &b, Location loc, ValueRange operands, ArrayRef<AffineMap> maps,
    int64_t rank, ArrayRef<int64_t> dims, ReduceKind kind,
    RankedTensorType resultType, unsigned count, BodyBuilder summands) {
  MLIRContext *context = b.getContext();
  Type element = resultType.getElementType();
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineExpr> outExprs;
  bool keep = resultType.getRank() == rank;
  int64_t extent = 1;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(dims, d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      outExprs.push_back(getAffineDimExpr(d, context));
    else if (keep)
      outExprs.push_back(getAffineConstantExpr(0, context));
  }
  // The reduced extent, from the first operand read through all the loops.
  bool sized = false;
  for (auto [operand, map] : llvm::zip(operands, maps)) {
    if (map.getNumResults() != rank || !map.isPermutation())
      continue;
    auto type = cast<RankedTensorType>(operand.getType());
    for (int64_t d : dims)
      extent *=
          type.getDimSize(*map.getResultPosition(getAffineDimExpr(d, context)));
    sized = true;
    break;
  }
  assert((sized || kind != ReduceKind::mean) &&
         "a mean needs an operand read through every loop");
  (void)sized;
  SmallVector<AffineMap> allMaps(maps);
  SmallVector<Value> inits;
  SmallVector<Type> types(count, resultType);
  for (unsigned i = 0; i < count; ++i) {
    Value init =
        tensor::EmptyOp::create(b, loc, resultType.getShape(), element);
    inits.push_back(
        linalg::FillOp::create(b, loc, identityOf(b, loc, element, kind), init)
            .getResult(0));
    allMaps.push_back(AffineMap::get(rank, 0, outExprs, context));
  }
  SmallVector<Value> results =
      linalg::GenericOp::create(
          b, loc, types, operands, inits, allMaps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            ValueRange inputs = args.take_front(operands.size());
            SmallVector<Value> values = summands(nb, l, inputs);
            SmallVector<Value> combined;
            for (unsigned i = 0; i < count; ++i)
              combined.push_back(
                  combine(nb, l, kind, args[operands.size() + i], values[i]));
            linalg::YieldOp::create(nb, l, combined);
          })
          .getResults();
  if (kind != ReduceKind::mean)
    return results;
  for (Value &result : results)
    result = buildElementwise(
        b, loc, TypeRange{resultType}, ValueRange{result},
        [&](OpBuilder &nb, Location l, ValueRange args) -> SmallVector<Value> {
          return {arith::DivFOp::create(
              nb, l, args[0], floatConstant(nb, l, element, double(extent)))};
        })[0];
  return results;
}

SmallVector<Value> linalg_lowering::getIndices(OpBuilder &b, Location loc,
                                               int64_t count) {
  SmallVector<Value> indices;
  for (int64_t d = 0; d < count; ++d)
    indices.push_back(linalg::IndexOp::create(b, loc, d));
  return indices;
}

AffineMap linalg_lowering::getDropDimsMap(MLIRContext *context, int64_t rank,
                                          ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, d))
      exprs.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(rank, 0, exprs, context);
}

RankedTensorType linalg_lowering::dropDims(RankedTensorType type,
                                           ArrayRef<int64_t> dropped) {
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dropped, int64_t(d)))
      shape.push_back(size);
  return RankedTensorType::get(shape, type.getElementType());
}

SmallVector<Value>
linalg_lowering::buildWindowGeneric(OpBuilder &b, Location loc,
                                    ValueRange inputs, ValueRange inits,
                                    ArrayRef<AffineMap> maps, int64_t parallel,
                                    int64_t reduced, BodyBuilder body) {
  SmallVector<utils::IteratorType> iterators(parallel,
                                             utils::IteratorType::parallel);
  iterators.append(reduced, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange(inits), inputs, inits, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResults();
}

Value linalg_lowering::buildFilled(OpBuilder &b, Location loc,
                                   RankedTensorType type, Value value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value linalg_lowering::padSpatial(OpBuilder &b, Location loc, Value input,
                                  ArrayRef<int64_t> padding, Value value) {
  return buildPad(b, loc, input, {0, 0, padding[0], padding[2]},
                  {0, 0, padding[1], padding[3]}, value);
}
