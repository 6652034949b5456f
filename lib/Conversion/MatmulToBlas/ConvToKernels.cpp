//===- ConvToKernels.cpp - convolutions through library kernels -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs on buffers, after one-shot bufferization, like dist-matmul-to-blas:
// the direct convolution contractions `train-to-linalg` builds (every
// forward convolution and filter gradient, and the input gradients of
// stride-1 ones) become calls of distopt_conv2d_f32 (lib/Runtime/
// ConvKernels.cpp: batch-reduce products over the window taps, read in
// place from the padded image) on the same buffers.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTCONVTOKERNELSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// A convolution contraction in distopt_conv2d_f32's terms: the kind (0:
/// conv2d, 1: input gradient, 2: filter gradient, 3: input gradient with
/// the filter's taps reversed), the dilations and the strides (kinds 0 and
/// 2; 1 for the others).
struct ConvKernel {
  int32_t kind;
  int64_t dh, dw, sh = 1, sw = 1;
};
} // namespace

/// The kind, dilations and strides of `op`'s indexing maps, when they are
/// one of the three contractions distopt_conv2d_f32 computes (loops: five
/// parallel ones, the output's dims in order, then three reduced ones):
///   0: out[n, g, f, y, x] += lhs[n, g, c, y*sh + kh*dh, x*sw + kw*dw] *
///      rhs[g, f, c, kh, kw];
///   1: the same with rhs[g, c, f, kh, kw] (c reduced, f the output's);
///   2: out[g, f, c, kh, kw] += lhs[n, g, f, y, x] *
///      rhs[n, g, c, y*sh + kh*dh, x*sw + kw*dw];
/// (Kind 3, kind 1 reading the filter's taps reversed, is kind 1 of a
/// flipped copy: see foldFlippedFilters.)
static std::optional<ConvKernel> matchMaps(linalg::LinalgOp op) {
  if (op.getNumLoops() != 8 || op.getNumParallelLoops() != 5 ||
      op.getNumReductionLoops() != 3)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < 8; ++i)
    if ((i < 5) != (iterators[i] == utils::IteratorType::parallel))
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext *context = op->getContext();
  AffineExpr d[8];
  for (unsigned i = 0; i < 8; ++i)
    d[i] = getAffineDimExpr(i, context);
  auto map = [&](ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(8, 0, exprs, context);
  };
  if (maps[2] != map({d[0], d[1], d[2], d[3], d[4]}))
    return std::nullopt;
  // The dilation (stride) along a window dim: the expression's
  // coefficient of the tap's (the output's) loop, the other loops at 0
  // (checked against the whole map below).
  auto coefficient = [&](AffineExpr expr, AffineExpr loop) -> int64_t {
    SmallVector<int64_t> point(8, 0);
    point[cast<AffineDimExpr>(loop).getPosition()] = 1;
    AffineMap single = AffineMap::get(8, 0, expr);
    return single.compose(point)[0];
  };
  for (int32_t kind : {0, 1, 2}) {
    unsigned image = kind == 2 ? 1 : 0;
    if (maps[image].getNumResults() != 5)
      continue;
    AffineExpr rowTap = kind == 2 ? d[3] : d[6],
               colTap = kind == 2 ? d[4] : d[7];
    AffineExpr row = kind == 2 ? d[6] : d[3], col = kind == 2 ? d[7] : d[4];
    int64_t dh = coefficient(maps[image].getResult(3), rowTap);
    int64_t dw = coefficient(maps[image].getResult(4), colTap);
    int64_t sh = coefficient(maps[image].getResult(3), row);
    int64_t sw = coefficient(maps[image].getResult(4), col);
    if (dh < 1 || dw < 1 || sh < 1 || sw < 1 ||
        (kind == 1 && (sh != 1 || sw != 1)))
      continue;
    if (kind == 2) {
      if (maps[0] == map({d[5], d[0], d[1], d[6], d[7]}) &&
          maps[1] == map({d[5], d[0], d[2], row * sh + rowTap * dh,
                          col * sw + colTap * dw}))
        return ConvKernel{kind, dh, dw, sh, sw};
      continue;
    }
    if (maps[0] !=
        map({d[0], d[1], d[5], row * sh + rowTap * dh, col * sw + colTap * dw}))
      continue;
    if (kind == 0 && maps[1] == map({d[1], d[2], d[5], d[6], d[7]}))
      return ConvKernel{0, dh, dw, sh, sw};
    if (kind == 1 && maps[1] == map({d[1], d[5], d[2], d[6], d[7]}))
      return ConvKernel{1, dh, dw};
  }
  return std::nullopt;
}

/// True for a multiply-add body: out + lhs * rhs in f32.
static bool isMultiplyAdd(linalg::LinalgOp op) {
  return linalg::detail::isContractionBody(
      *op.getBlock(), [](Operation *mul, Operation *add) {
        return isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add);
      });
}

bool mlir::train::isConvContraction(linalg::LinalgOp op) {
  return isa<linalg::GenericOp>(op.getOperation()) &&
         op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
         llvm::all_of(
             op->getOperandTypes(),
             [](Type type) { return getElementTypeOrSelf(type).isF32(); }) &&
         isMultiplyAdd(op) && matchMaps(op).has_value();
}

/// The least (output channels) x (reduced channels) per group a convolution
/// takes the kernels with. Measured (3x3, 64 channels, 32x32, batch 8, one
/// thread): depthwise (1 x 1) 8.6 ms per step through the kernels, 5.2 as
/// loops; 16 groups of 4 x 4: 5.9 against 16.0; 8 groups of 8 x 8: 4.3
/// against 52.6.
static constexpr int64_t kMinProductSize = 16;

/// The static strides of a rank-5 buffer, or nullopt.
static std::optional<SmallVector<int64_t>> getStaticStrides(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() != 5 || !type.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  return strides;
}

/// The kernel call `op` can become: a convolution contraction on static
/// buffers whose windows (the image's rows) and output rows are contiguous
/// and whose zero-filled output the call may overwrite.
static std::optional<std::pair<ConvKernel, linalg::FillOp>>
match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || !train::isConvContraction(op))
    return std::nullopt;
  ConvKernel kernel = *matchMaps(op);
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1],
        out = op.getDpsInits()[0];
  auto lhsStrides = getStaticStrides(lhs), rhsStrides = getStaticStrides(rhs),
       outStrides = getStaticStrides(out);
  if (!lhsStrides || !rhsStrides || !outStrides)
    return std::nullopt;
  // The leading dimension of a window (the distance between its channels)
  // must cover a row of the product: sgemm's and LIBXSMM's contract.
  auto rowMajor = [](ArrayRef<int64_t> strides, int64_t width) {
    return strides[4] == 1 && strides[2] >= width;
  };
  int64_t width = kernel.kind == 2
                      ? cast<MemRefType>(lhs.getType()).getDimSize(4)
                      : cast<MemRefType>(out.getType()).getDimSize(4);
  // (An output whose rows are not contiguous -- a strided input gradient's
  // phase, inserted with the strides -- is written back by the kernel's
  // channels-last transposes.)
  if (kernel.kind == 2 ? !rowMajor(*rhsStrides, width)
                       : !rowMajor(*lhsStrides, width))
    return std::nullopt;
  // The products' other two dims: output and reduced channels per group
  // (kinds 0 and 1), filters and channels (kind 2). Smaller products (a
  // depthwise layer's 1 x 1 per tap) run faster as the loops.
  auto outType = cast<MemRefType>(out.getType());
  int64_t outs =
      kernel.kind == 2 ? outType.getDimSize(1) : outType.getDimSize(2);
  int64_t reds = kernel.kind == 2
                     ? outType.getDimSize(2)
                     : cast<MemRefType>(lhs.getType()).getDimSize(2);
  if (outs * reds < kMinProductSize)
    return std::nullopt;
  linalg::FillOp fill = train::findZeroFill(op, out);
  if (!fill)
    return std::nullopt;
  return std::make_pair(kernel, fill);
}

/// The source of `op` when it is train-to-linalg's flipped copy of a
/// filter into `buffer`: out[f, c, kh, kw] = source[f, c, KH - 1 - kh, KW -
/// 1 - kw] over all of `buffer`.
static Value getFlipSource(Operation *op, Value buffer) {
  auto flip = dyn_cast<linalg::GenericOp>(op);
  auto type = cast<MemRefType>(buffer.getType());
  if (!flip || !flip.hasPureBufferSemantics() || flip.getNumDpsInputs() != 1 ||
      flip.getNumDpsInits() != 1 || flip.getDpsInits()[0] != buffer ||
      flip.getNumParallelLoops() != 4 || flip.getNumLoops() != 4 ||
      flip.getBlock()->getArgument(0) !=
          flip.getBlock()->getTerminator()->getOperand(0))
    return nullptr;
  MLIRContext *context = flip.getContext();
  AffineExpr d[4];
  for (unsigned i = 0; i < 4; ++i)
    d[i] = getAffineDimExpr(i, context);
  SmallVector<AffineMap> maps = flip.getIndexingMapsArray();
  if (maps[1] != AffineMap::getMultiDimIdentityMap(4, context) ||
      maps[0] != AffineMap::get(4, 0,
                                {d[0], d[1], type.getDimSize(2) - 1 - d[2],
                                 type.getDimSize(3) - 1 - d[3]},
                                context))
    return nullptr;
  return flip.getDpsInputs()[0];
}

/// True when no op strictly between `from` and `to` (in their block) may
/// write the buffer `value` views: its users there only read it as a
/// linalg op's input or view it.
static bool isUnwrittenBetween(Value value, Operation *from, Operation *to) {
  Block *block = from->getBlock();
  bool unwritten = true;
  train::forEachBufferUse(value, [&](OpOperand &use) {
    Operation *user = use.getOwner();
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (isa<ViewLikeOpInterface>(user) || !inBlock ||
        !from->isBeforeInBlock(inBlock) || !inBlock->isBeforeInBlock(to))
      return;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
    if (!linalgOp || !linalgOp.isDpsInput(&use))
      unwritten = false;
  });
  return unwritten;
}

/// Folds train-to-linalg's flipped filter copies into the input gradients'
/// calls: the kernels read the filter itself with its taps reversed (kind
/// 3), and the copy, a strided pass over the filter (1 ms for a 512 x 512
/// x 3 x 3 one), goes. A buffer's copies go when every reader of the
/// buffer is the grouped view (memref.expand_shape) of one of `convs`'
/// input gradients (bufferization reuses one buffer for the copies of
/// several layers' filters: each view reads the copy last made before
/// it), and nothing writes a copied filter, nor the buffer, between its
/// copy and the call.
static void foldFlippedFilters(
    SmallVectorImpl<std::tuple<linalg::GenericOp, ConvKernel, linalg::FillOp>>
        &convs) {
  llvm::SmallDenseMap<Value, size_t> gradientsByFilter;
  for (auto [i, conv] : llvm::enumerate(convs))
    if (std::get<1>(conv).kind == 1)
      gradientsByFilter[std::get<0>(conv).getDpsInputs()[1]] = i;
  llvm::SetVector<Value> buffers;
  for (auto &[filter, i] : gradientsByFilter)
    if (auto view = filter.getDefiningOp<memref::ExpandShapeOp>())
      if (view.getSrc().getDefiningOp<memref::AllocOp>())
        buffers.insert(view.getSrc());
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    if (type.getRank() != 4 || !type.hasStaticShape())
      continue;
    // (view, the copy's source) per reader, in block order.
    SmallVector<std::pair<memref::ExpandShapeOp, Value>> reads;
    Operation *copy = nullptr;
    SmallVector<Operation *> copies;
    Block *block = buffer.getParentBlock();
    bool foldable = true;
    SmallVector<Operation *> users(buffer.getUsers());
    if (llvm::any_of(
            users, [&](Operation *user) { return user->getBlock() != block; }))
      continue;
    llvm::sort(users, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Value source;
    for (Operation *user : users) {
      if (Value from = getFlipSource(user, buffer)) {
        source = from;
        copy = user;
        copies.push_back(user);
        continue;
      }
      auto view = dyn_cast<memref::ExpandShapeOp>(user);
      if (!view || !source || !view.getResult().hasOneUse() ||
          !gradientsByFilter.count(view.getResult()) ||
          failed(memref::ExpandShapeOp::computeExpandedType(
              cast<MemRefType>(source.getType()),
              view.getResultType().getShape(),
              view.getReassociationIndices())) ||
          !isUnwrittenBetween(
              source, copy,
              std::get<0>(convs[gradientsByFilter[view.getResult()]])) ||
          !isUnwrittenBetween(
              buffer, copy,
              std::get<0>(convs[gradientsByFilter[view.getResult()]]))) {
        foldable = false;
        break;
      }
      reads.push_back({view, source});
    }
    if (!foldable || reads.empty())
      continue;
    for (auto &[view, from] : reads) {
      auto &[op, kernel, fill] = convs[gradientsByFilter[view.getResult()]];
      OpBuilder builder(view);
      op->setOperand(1, memref::ExpandShapeOp::create(
                            builder, view.getLoc(),
                            view.getResultType().getShape(), from,
                            view.getReassociationIndices()));
      kernel.kind = 3;
      view->erase();
    }
    for (Operation *copy : copies)
      copy->erase();
    buffer.getDefiningOp()->erase();
  }
}

namespace {
struct DistConvToKernelsPass
    : public mlir::train::impl::DistConvToKernelsPassBase<
          DistConvToKernelsPass> {
  void runOnOperation() override {
    SmallVector<std::tuple<linalg::GenericOp, ConvKernel, linalg::FillOp>>
        convs;
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto matched = match(op))
        convs.push_back({op, matched->first, matched->second});
    });
    foldFlippedFilters(convs);
    for (auto &[op, kernel, fill] : convs) {
      train::replaceByLibraryCall(
          op, fill, "distopt_conv2d_f32",
          [&](OpBuilder &b, Location loc, SmallVectorImpl<Value> &args) {
            args.push_back(arith::ConstantOp::create(
                b, loc, b.getI32IntegerAttr(kernel.kind)));
            for (int64_t value : {kernel.dh, kernel.dw, kernel.sh, kernel.sw})
              args.push_back(arith::ConstantOp::create(
                  b, loc, b.getI64IntegerAttr(value)));
          });
    }
  }
};
} // namespace
