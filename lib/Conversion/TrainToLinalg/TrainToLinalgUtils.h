//===- TrainToLinalgUtils.h - shared helpers of train-to-linalg -*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Internal to lib/Conversion/TrainToLinalg: the linalg builders every
// pattern family uses, and the populate functions of the split files.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CONVERSION_TRAINTOLINALG_TRAINTOLINALGUTILS_H
#define DISTOPT_LIB_CONVERSION_TRAINTOLINALG_TRAINTOLINALGUTILS_H

#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::train::linalg_lowering {

using BodyBuilder =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// The map reading `type` (aligned at the trailing dims of a result of shape
/// `shape`) at the result's loop indices: a missing dim is skipped, a size-1
/// dim broadcast to a larger one reads index 0.
AffineMap getBroadcastMap(MLIRContext *context, ArrayRef<int64_t> shape,
                          Type type);

/// The map from `rank` loops to the first `count` of them, also when
/// `count` is 0 (`(d0, d1) -> ()`, which AffineMap::getMajorSubMap gives as
/// a null map).
AffineMap getLeadingDimsMap(MLIRContext *context, int64_t rank, int64_t count);

/// One parallel `linalg.generic` computing `body` at every index of the
/// (same-shaped) `resultTypes`, reading operand i through `maps[i]`.
SmallVector<Value> buildGeneric(OpBuilder &builder, Location loc,
                                TypeRange resultTypes, ValueRange operands,
                                ArrayRef<AffineMap> operandMaps,
                                BodyBuilder body);

/// buildGeneric with NumPy broadcasting of every operand.
SmallVector<Value> buildElementwise(OpBuilder &builder, Location loc,
                                    TypeRange resultTypes, ValueRange operands,
                                    BodyBuilder body);

/// buildElementwise for an optimizer's update of its state: result k
/// replaces `operands[stateIndices[k]]` (of its type), which is the
/// generic's k-th init, read by `body` through the init's block argument
/// (`body` sees the operands in their order): bufferization then writes
/// the update over the state in place where nothing reads the old state
/// after it (PyTorch's in-place step: no new state buffers, nothing copied
/// back after the step), and elementwise fusion keeps the inits, which the
/// body reads.
SmallVector<Value> buildUpdate(OpBuilder &builder, Location loc,
                               TypeRange resultTypes, ValueRange operands,
                               ArrayRef<unsigned> stateIndices,
                               BodyBuilder body);

/// A float constant of `type` (f32, f16, ...).
Value floatConstant(OpBuilder &b, Location loc, Type type, double value);

/// `value` (a float scalar) as float type `to`: extended, truncated, or,
/// between types of one width (bf16 and f16), through f32.
Value castFloat(OpBuilder &b, Location loc, Value value, Type to);

/// The widest float type of `values` (the type optimizer updates compute
/// in: bf16 state updated with an f32 learning rate computes in f32, as
/// PyTorch's CPU kernels do, and rounds the results once).
Type getComputeType(ValueRange values);

/// A zero (or identity of `kind`) of element type `type`.
Value identityOf(OpBuilder &b, Location loc, Type type, ReduceKind kind);

/// `lhs kind rhs` on floats or integers.
Value combine(OpBuilder &b, Location loc, ReduceKind kind, Value lhs,
              Value rhs);

/// Reduces `input` over `dims` with `kind` into a tensor of `resultType`
/// (the kept dims, with or without size-1 placeholders).
Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> dims, ReduceKind kind,
                     RankedTensorType resultType);

/// Several reductions in one pass: one `linalg.generic` over `rank` loops
/// (`dims` reduced) reading `operands` through `maps`, whose `summands`
/// body returns `count` values, each reduced with `kind` into its own
/// tensor of `resultType` (for `mean`, divided by the reduced extent).
SmallVector<Value> buildReductions(OpBuilder &b, Location loc,
                                   ValueRange operands,
                                   ArrayRef<AffineMap> maps, int64_t rank,
                                   ArrayRef<int64_t> dims, ReduceKind kind,
                                   RankedTensorType resultType, unsigned count,
                                   BodyBuilder summands);

/// The loop indices of the enclosing linalg op's first `count` dims.
SmallVector<Value> getIndices(OpBuilder &b, Location loc, int64_t count);

/// `(d0, ..., d{rank-1})` without the dims in `dropped`: reads a reduced
/// tensor (no placeholders) at a full-rank loop index.
AffineMap getDropDimsMap(MLIRContext *context, int64_t rank,
                         ArrayRef<int64_t> dropped);

/// `shape` without the dims in `dropped`.
RankedTensorType dropDims(RankedTensorType type, ArrayRef<int64_t> dropped);

/// `operand` with `low[d]` elements before and `high[d]` after every dim,
/// filled with `value` (a scalar of its element type).
Value buildPad(OpBuilder &builder, Location loc, Value operand,
               ArrayRef<int64_t> low, ArrayRef<int64_t> high, Value value);

/// One `linalg.generic` with `parallel` leading loops and `reduced`
/// reduction loops, reading `inputs` through `maps` and accumulating into
/// `inits` (one map each, appended).
SmallVector<Value> buildWindowGeneric(OpBuilder &b, Location loc,
                                      ValueRange inputs, ValueRange inits,
                                      ArrayRef<AffineMap> maps,
                                      int64_t parallel, int64_t reduced,
                                      BodyBuilder body);

/// A tensor of `type`'s shape filled with `value`.
Value buildFilled(OpBuilder &b, Location loc, RankedTensorType type,
                  Value value);

/// NCHW padded by `[top, bottom, left, right]` with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padding, Value value);

/// max_pool2d, avg_pool2d and their backward ops.
void populateWindowPatterns(RewritePatternSet &patterns);

/// conv2d, conv2d_backward_input, conv2d_backward_filter.
void populateConvPatterns(RewritePatternSet &patterns, bool products);

/// softmax, log_softmax, layer_norm, batch_norm (and their backward ops),
/// dropout.
void populateNormalizationPatterns(RewritePatternSet &patterns);

/// reshape, transpose, broadcast, slice, concat, pad, iota, gather,
/// scatter_add.
void populateMovementPatterns(RewritePatternSet &patterns);

} // namespace mlir::train::linalg_lowering

#endif // DISTOPT_LIB_CONVERSION_TRAINTOLINALG_TRAINTOLINALGUTILS_H
