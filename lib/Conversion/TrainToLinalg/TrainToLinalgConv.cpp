//===- TrainToLinalgConv.cpp - convolutions to linalg ---------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// conv2d and its gradients in NCHW. conv2d and its filter gradient, and
// the input gradient of a stride-1 convolution, are one direct contraction
// each over [n, groups, channels / groups, ...] views (`dist-conv-to-
// kernels` multiplies their windows in place). The input gradient of a
// strided convolution without groups, or with a few large ones, is one
// batched matrix product per group and col2im (`linalg.generic`s that
// dist-matmul-to-blas turns into sgemm calls); other grouped ones
// (depthwise, ResNeXt) are direct contractions too.
//
//===----------------------------------------------------------------------===//

#include "TrainToLinalgUtils.h"

using namespace mlir;
using namespace mlir::train;
using namespace mlir::train::linalg_lowering;

namespace {
/// The shapes and attributes of a conv op, per group: input [n, c, h, w],
/// filter [f, c / groups, kh, kw], output [n, f, oh, ow].
struct ConvParams {
  ArrayRef<int64_t> strides, padding, dilations;
  int64_t groups, channelsPerGroup, filtersPerGroup;
  int64_t batch, height, width, kernelH, kernelW, outH, outW;
  Type element;

  /// The reduction length of a group's product: channels x kernel taps.
  int64_t getPatchSize() const { return channelsPerGroup * kernelH * kernelW; }
  /// Rows of the patch matrix: one per output position of every image.
  int64_t getRows() const { return batch * outH * outW; }
};

template <typename OpT>
static ConvParams getConvParams(OpT op, RankedTensorType input,
                                RankedTensorType filter,
                                RankedTensorType output) {
  int64_t groups = op.getGroups();
  return {op.getStrides(),
          op.getPadding(),
          op.getDilations(),
          groups,
          input.getDimSize(1) / groups,
          output.getDimSize(1) / groups,
          input.getDimSize(0),
          input.getDimSize(2),
          input.getDimSize(3),
          filter.getDimSize(2),
          filter.getDimSize(3),
          output.getDimSize(2),
          output.getDimSize(3),
          input.getElementType()};
}

/// C[b] = op(A[b]) x op(B[b]) over a leading batch dim of `batch` (0: no
/// batch dim), where A (B) has the batch dim only when `batchedLhs`
/// (`batchedRhs`): the `linalg.generic` that dist-matmul-to-blas turns into
/// sgemm calls (f32) and the loops compute otherwise.
static Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         int64_t batch, bool transposeLhs, bool transposeRhs) {
  MLIRContext *context = b.getContext();
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  bool batchedLhs = batch && lhsType.getRank() == 3;
  bool batchedRhs = batch && rhsType.getRank() == 3;
  ArrayRef<int64_t> lhsShape = lhsType.getShape().take_back(2);
  ArrayRef<int64_t> rhsShape = rhsType.getShape().take_back(2);
  int64_t m = lhsShape[transposeLhs ? 1 : 0];
  int64_t n = rhsShape[transposeRhs ? 0 : 1];
  unsigned numDims = batch ? 4 : 3;
  AffineExpr bt = getAffineDimExpr(0, context);
  AffineExpr i = getAffineDimExpr(numDims - 3, context),
             j = getAffineDimExpr(numDims - 2, context),
             k = getAffineDimExpr(numDims - 1, context);
  auto map = [&](bool batched, AffineExpr row, AffineExpr col) {
    SmallVector<AffineExpr> exprs;
    if (batched)
      exprs.push_back(bt);
    exprs.append({row, col});
    return AffineMap::get(numDims, 0, exprs, context);
  };
  SmallVector<AffineMap> maps = {
      transposeLhs ? map(batchedLhs, k, i) : map(batchedLhs, i, k),
      transposeRhs ? map(batchedRhs, j, k) : map(batchedRhs, k, j),
      map(batch != 0, i, j)};
  SmallVector<int64_t> shape;
  if (batch)
    shape.push_back(batch);
  shape.append({m, n});
  Type element = lhsType.getElementType();
  Value zero = identityOf(b, loc, element, ReduceKind::sum);
  return buildWindowGeneric(
      b, loc, ValueRange{lhs, rhs},
      ValueRange{
          buildFilled(b, loc, RankedTensorType::get(shape, element), zero)},
      maps, numDims - 1, 1,
      [&](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        return {arith::AddFOp::create(
            nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]))};
      })[0];
}

/// A copy of `value` through `map` (a permutation or slice of its dims)
/// into a new tensor of `shape`.
static Value buildCopy(OpBuilder &b, Location loc, Value value, AffineMap map,
                       ArrayRef<int64_t> shape) {
  Type element = cast<RankedTensorType>(value.getType()).getElementType();
  return buildWindowGeneric(
      b, loc, ValueRange{value},
      ValueRange{tensor::EmptyOp::create(b, loc, shape, element)},
      {map, b.getMultiDimIdentityMap(shape.size())}, shape.size(), 0,
      [](OpBuilder &, Location, ValueRange a) -> SmallVector<Value> {
        return {a[0]};
      })[0];
}

/// Group `g`'s channels of NCHW `value`: `size` channels from `g * size` (a
/// slice when there are several groups).
static Value sliceGroup(OpBuilder &b, Location loc, Value value,
                        const ConvParams &p, int64_t g, int64_t size) {
  if (p.groups == 1)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
      strides(4, b.getIndexAttr(1)), sizes;
  offsets[1] = b.getIndexAttr(g * size);
  for (int64_t dim = 0; dim < 4; ++dim)
    sizes.push_back(b.getIndexAttr(dim == 1 ? size : type.getDimSize(dim)));
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// Group `g`'s channels of NCHW `value` as a contiguous [n, size, h * w]
/// (a copy when there are several groups: BLAS needs each image's block
/// dense).
static Value buildGroupMatrix(OpBuilder &b, Location loc, Value value,
                              const ConvParams &p, int64_t g, int64_t size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (p.groups > 1)
    value = buildCopy(
        b, loc, sliceGroup(b, loc, value, p, g, size),
        b.getMultiDimIdentityMap(4),
        {type.getDimSize(0), size, type.getDimSize(2), type.getDimSize(3)});
  return tensor::CollapseShapeOp::create(
      b, loc, value, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// Group `g`'s patches (im2col) of the zero-padded input, one matrix per
/// image: [n, c/groups * kh * kw, oh * ow], entry (n, (c, kh, kw), (oh,
/// ow)) = `padded[n, g * c/groups + c, oh * sh + kh * dh, ow * sw + kw *
/// dw]` (the innermost loop walks ow: contiguous reads for stride 1).
static Value buildPatches(OpBuilder &b, Location loc, Value padded,
                          const ConvParams &p, int64_t g) {
  MLIRContext *context = b.getContext();
  AffineExpr d[6];
  for (int i = 0; i < 6; ++i)
    d[i] = getAffineDimExpr(i, context);
  // Loops (n, c, kh, kw, oh, ow).
  Value patches = buildCopy(
      b, loc, sliceGroup(b, loc, padded, p, g, p.channelsPerGroup),
      AffineMap::get(6, 0,
                     {d[0], d[1], d[4] * p.strides[0] + d[2] * p.dilations[0],
                      d[5] * p.strides[1] + d[3] * p.dilations[1]},
                     context),
      {p.batch, p.channelsPerGroup, p.kernelH, p.kernelW, p.outH, p.outW});
  return tensor::CollapseShapeOp::create(
      b, loc, patches, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
}

/// Group `g`'s filters as a matrix: [f/groups, c/groups * kh * kw].
static Value buildFilterMatrix(OpBuilder &b, Location loc, Value filter,
                               const ConvParams &p, int64_t g) {
  Value block = filter;
  if (p.groups > 1)
    block = tensor::ExtractSliceOp::create(
        b, loc, filter,
        ArrayRef<OpFoldResult>{b.getIndexAttr(g * p.filtersPerGroup),
                               b.getIndexAttr(0), b.getIndexAttr(0),
                               b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(p.filtersPerGroup),
                               b.getIndexAttr(p.channelsPerGroup),
                               b.getIndexAttr(p.kernelH),
                               b.getIndexAttr(p.kernelW)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                               b.getIndexAttr(1), b.getIndexAttr(1)});
  return tensor::CollapseShapeOp::create(
      b, loc, block, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
}

/// `value` with its dims split into `shape` by `reassociation`.
static Value expand(OpBuilder &b, Location loc, Value value,
                    ArrayRef<int64_t> shape,
                    ArrayRef<ReassociationIndices> reassociation) {
  auto type = cast<RankedTensorType>(value.getType()).clone(shape);
  return tensor::ExpandShapeOp::create(b, loc, type, value, reassociation);
}

/// `block` placed at `offset` along dim `dim` of `dest` (or `block` itself
/// when it is all of it).
static Value insertBlock(OpBuilder &b, Location loc, Value block, Value dest,
                         int64_t dim, int64_t offset) {
  auto blockType = cast<RankedTensorType>(block.getType());
  if (blockType == dest.getType())
    return block;
  SmallVector<OpFoldResult> offsets(blockType.getRank(), b.getIndexAttr(0));
  offsets[dim] = b.getIndexAttr(offset);
  SmallVector<OpFoldResult> sizes,
      strides(blockType.getRank(), b.getIndexAttr(1));
  for (int64_t size : blockType.getShape())
    sizes.push_back(b.getIndexAttr(size));
  return tensor::InsertSliceOp::create(b, loc, block, dest, offsets, sizes,
                                       strides);
}

//===----------------------------------------------------------------------===//
// Grouped convolutions with many or small groups (depthwise, ResNeXt's 32
// groups of 4) as one direct contraction each, over [n, groups, channels /
// groups, ...] views. One product per group unrolled into thousands of ops
// for a depthwise layer (MobileNetV2's 960 groups: 850k lines of linalg,
// minutes to compile), and a depthwise group's product (1 x kh*kw x oh*ow)
// is far too small for BLAS. A strided input gradient with a few large
// groups gets a product and col2im each, as one group does
// (bench/conv_time.py's 4 groups of 16 channels: 101 ms as direct
// contractions run as loops, 23 ms as four products).
//===----------------------------------------------------------------------===//

/// Whether each group of `p`'s input gradient becomes a matrix product
/// (BLAS) and col2im: a strided convolution with one group, or a few whose
/// products are large enough; otherwise one direct contraction for all
/// groups. A stride-1 convolution's is always the direct contraction: its
/// windows are rows of the padded gradient, which `dist-conv-to-kernels`
/// multiplies in place (bench/README.md: the 3x3 64->64 layer's step 21.4
/// -> ~12 ms).
///
/// With `products` (train-to-linalg{conv-products}, dist-lower-cuda: no
/// in-place convolution kernels there, while a product is one cuBLAS call)
/// the strides do not matter: every convolution whose groups are few and
/// large enough is im2col, products and col2im.
///
/// 16-bit convolutions always take the `products` route: their products
/// are the library's 16-bit products (f32 accumulation: oneDNN's bf16 gemm
/// on CPUs with bf16 products), while libdistopt_cpu's in-place
/// convolution kernels are f32 only and a direct contraction's loops would
/// accumulate in 16 bits.
static bool usesGroupProducts(const ConvParams &p, bool products = false) {
  products |= isa<BFloat16Type, Float16Type>(p.element);
  constexpr int64_t kMaxGroups = 16, kMinFilters = 8, kMinPatch = 32;
  if (!products && llvm::all_of(p.strides, [](int64_t s) { return s == 1; }))
    return false;
  return p.groups == 1 ||
         (p.groups <= kMaxGroups && p.filtersPerGroup >= kMinFilters &&
          p.getPatchSize() >= kMinPatch);
}

/// `value` with dim `dim` (size groups * size) split into [groups, size].
static Value splitGroups(OpBuilder &b, Location loc, Value value, int64_t dim,
                         int64_t groups) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t at = shape.size();
    if (d == dim) {
      shape.append({groups, type.getDimSize(d) / groups});
      reassociation.push_back({at, at + 1});
    } else {
      shape.push_back(type.getDimSize(d));
      reassociation.push_back({at});
    }
  }
  return expand(b, loc, value, shape, reassociation);
}

/// `value` with dims `dim` and `dim + 1` merged.
static Value mergeGroups(OpBuilder &b, Location loc, Value value, int64_t dim) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim + 1)
      continue;
    if (d == dim)
      reassociation.push_back({d, d + 1});
    else
      reassociation.push_back({d});
  }
  return tensor::CollapseShapeOp::create(b, loc, value, reassociation);
}

/// The loop dims of a grouped convolution's contraction: five parallel
/// loops (the output's dims, in order), then three reduced ones.
static std::array<AffineExpr, 8> getLoopDims(MLIRContext *context) {
  std::array<AffineExpr, 8> d;
  for (int i = 0; i < 8; ++i)
    d[i] = getAffineDimExpr(i, context);
  return d;
}

/// out[d0, ..., d4] = sum over (d5, d6, d7) of lhs[lhsIndex] *
/// rhs[rhsIndex], into a new zero-filled tensor of `shape`, or into `into`
/// (of that shape) zero-filled.
static Value buildGroupedContraction(OpBuilder &b, Location loc, Value lhs,
                                     ArrayRef<AffineExpr> lhsIndex, Value rhs,
                                     ArrayRef<AffineExpr> rhsIndex,
                                     ArrayRef<int64_t> shape, Type element,
                                     Value into = nullptr) {
  MLIRContext *context = b.getContext();
  Value zero = identityOf(b, loc, element, ReduceKind::sum);
  Value init =
      into ? linalg::FillOp::create(b, loc, zero, into).getResult(0)
           : buildFilled(b, loc, RankedTensorType::get(shape, element), zero);
  return buildWindowGeneric(
      b, loc, ValueRange{lhs, rhs}, ValueRange{init},
      {AffineMap::get(8, 0, lhsIndex, context),
       AffineMap::get(8, 0, rhsIndex, context),
       AffineMap::getMultiDimIdentityMap(8, context).getMajorSubMap(5)},
      5, 3, [](OpBuilder &nb, Location l, ValueRange a) -> SmallVector<Value> {
        return {arith::AddFOp::create(
            nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]))};
      })[0];
}

/// out[n, g, f, oh, ow] = sum over (c, kh, kw) of padded[n, g, c, oh * sh
/// + kh * dh, ow * sw + kw * dw] * filter[g, f, c, kh, kw].
static Value buildGroupedConv(OpBuilder &b, Location loc, Value padded,
                              Value filter, const ConvParams &p) {
  // Loops (n, g, f, oh, ow | c, kh, kw).
  auto d = getLoopDims(b.getContext());
  Value out = buildGroupedContraction(
      b, loc, splitGroups(b, loc, padded, 1, p.groups),
      {d[0], d[1], d[5], d[3] * p.strides[0] + d[6] * p.dilations[0],
       d[4] * p.strides[1] + d[7] * p.dilations[1]},
      splitGroups(b, loc, filter, 0, p.groups), {d[1], d[2], d[5], d[6], d[7]},
      {p.batch, p.groups, p.filtersPerGroup, p.outH, p.outW}, p.element);
  return mergeGroups(b, loc, out, 1);
}

/// grad_filter[g, f, c, kh, kw] = sum over (n, oh, ow) of grad[n, g, f, oh,
/// ow] * padded[n, g, c, oh * sh + kh * dh, ow * sw + kw * dw].
static Value buildGroupedConvFilterGrad(OpBuilder &b, Location loc,
                                        Value padded, Value grad,
                                        const ConvParams &p) {
  // Loops (g, f, c, kh, kw | n, oh, ow).
  auto d = getLoopDims(b.getContext());
  Value out = buildGroupedContraction(
      b, loc, splitGroups(b, loc, grad, 1, p.groups),
      {d[5], d[0], d[1], d[6], d[7]}, splitGroups(b, loc, padded, 1, p.groups),
      {d[5], d[0], d[2], d[6] * p.strides[0] + d[3] * p.dilations[0],
       d[7] * p.strides[1] + d[4] * p.dilations[1]},
      {p.groups, p.filtersPerGroup, p.channelsPerGroup, p.kernelH, p.kernelW},
      p.element);
  return mergeGroups(b, loc, out, 0);
}

/// Where an input gradient computed from the output gradient's windows
/// (buildGroupedConvInputGrad, buildPhasedConvInputGrad) lies: the dilated
/// kernel's extents; whether it is the input's gradient itself (no padding
/// reaches the extent) or the padded input's, whose interior is the
/// result; the rows and columns computed; and how far in the spread
/// gradient the output gradient's first row and column sit.
struct InputGradGeometry {
  int64_t extentH, extentW, rows, cols, top, left;
  bool interior;

  explicit InputGradGeometry(const ConvParams &p)
      : extentH((p.kernelH - 1) * p.dilations[0] + 1),
        extentW((p.kernelW - 1) * p.dilations[1] + 1), rows(p.height),
        cols(p.width), top(extentH - 1), left(extentW - 1),
        interior(p.padding[0] < extentH && p.padding[1] < extentH &&
                 p.padding[2] < extentW && p.padding[3] < extentW) {
    if (interior) {
      top -= p.padding[0];
      left -= p.padding[2];
    } else {
      rows += p.padding[0] + p.padding[1];
      cols += p.padding[2] + p.padding[3];
    }
  }

  /// The input's gradient from `computed` ([n, c, rows, cols]).
  Value getResult(OpBuilder &b, Location loc, Value computed,
                  const ConvParams &p) const {
    if (interior)
      return computed;
    auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
    return tensor::ExtractSliceOp::create(
        b, loc, computed,
        ArrayRef<OpFoldResult>{index(0), index(0), index(p.padding[0]),
                               index(p.padding[2])},
        ArrayRef<OpFoldResult>{index(p.batch),
                               index(p.groups * p.channelsPerGroup),
                               index(p.height), index(p.width)},
        ArrayRef<OpFoldResult>{index(1), index(1), index(1), index(1)});
  }
};

/// The input gradient as a convolution of the output gradient with the
/// flipped filter: the gradient spread out by the strides (zeros between)
/// and padded by the dilated kernel's extent less one, then gpad[n, g, c,
/// i, j] = sum over (f, kh, kw) of spread[n, g, f, i + kh * dh, j + kw *
/// dw] * filter[g, f, c, KH - 1 - kh, KW - 1 - kw]. When no padding exceeds
/// the extent less one (the usual case), the spread gradient starts that
/// much less far in and the contraction computes the input gradient
/// itself; otherwise it computes the padded input's gradient, whose
/// interior is the result.
static Value buildGroupedConvInputGrad(OpBuilder &b, Location loc, Value grad,
                                       Value filter, const ConvParams &p) {
  MLIRContext *context = b.getContext();
  auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  InputGradGeometry at(p);
  int64_t extentH = at.extentH, extentW = at.extentW, rows = at.rows,
          cols = at.cols;
  int64_t filters = p.groups * p.filtersPerGroup;
  Value zero = identityOf(b, loc, p.element, ReduceKind::sum);
  Value spread = tensor::InsertSliceOp::create(
      b, loc, grad,
      buildFilled(b, loc,
                  RankedTensorType::get({p.batch, filters, rows + extentH - 1,
                                         cols + extentW - 1},
                                        p.element),
                  zero),
      ArrayRef<OpFoldResult>{index(0), index(0), index(at.top), index(at.left)},
      ArrayRef<OpFoldResult>{index(p.batch), index(filters), index(p.outH),
                             index(p.outW)},
      ArrayRef<OpFoldResult>{index(1), index(1), index(p.strides[0]),
                             index(p.strides[1])});
  auto d = getLoopDims(context);
  Value flipped = buildCopy(
      b, loc, filter,
      AffineMap::get(4, 0,
                     {d[0], d[1], p.kernelH - 1 - d[2], p.kernelW - 1 - d[3]},
                     context),
      {filters, p.channelsPerGroup, p.kernelH, p.kernelW});
  // Loops (n, g, c, i, j | f, kh, kw).
  Value out = mergeGroups(
      b, loc,
      buildGroupedContraction(
          b, loc, splitGroups(b, loc, spread, 1, p.groups),
          {d[0], d[1], d[5], d[3] + d[6] * p.dilations[0],
           d[4] + d[7] * p.dilations[1]},
          splitGroups(b, loc, flipped, 0, p.groups),
          {d[1], d[5], d[2], d[6], d[7]},
          {p.batch, p.groups, p.channelsPerGroup, rows, cols}, p.element),
      1);
  return at.getResult(b, loc, out, p);
}

/// The least channels per group of a strided filter gradient taken as a
/// direct contraction (see keepsPatches).
static constexpr int64_t kMinDirectChannels = 16;

/// Whether a strided convolution's conv2d or filter gradient stays im2col
/// and one product per group (usesGroupProducts) instead of one direct
/// contraction, which `dist-conv-to-kernels` multiplies in place like a
/// stride-1 one (channels last for the forward; the filter gradient through
/// one copy of the image split into column phases). Measured on
/// ResNet-18's step (batch 8, two threads): the 7x7 stride-2 first layer's
/// forward 11.9 ms direct against 18.1 (im2col 4.4, then sgemm with K =
/// 147), its 3x3 stride-2 filter gradients 4.1-5.2 ms against 4.8-7.6. A
/// 1x1 window's patches are one strided slice and its product is deep (K
/// = the channels, or the pixels): 2.4 ms for the three 1x1 stride-2
/// layers' forwards against 3.4 direct. A filter gradient of few channels
/// per group (the first layer's 3 colours, the product's columns) measured
/// 16 ms through im2col and sgemm against 29 direct.
static bool keepsPatches(const ConvParams &p, bool filterGradient,
                         bool products) {
  if (products || isa<BFloat16Type, Float16Type>(p.element))
    return usesGroupProducts(p, products);
  if (!usesGroupProducts(p))
    return false;
  return (p.kernelH == 1 && p.kernelW == 1) ||
         (filterGradient && p.channelsPerGroup < kMinDirectChannels);
}

/// conv2d: one direct contraction over [n, groups, channels / groups, ...]
/// views (see keepsPatches), or one batched matrix product per group
/// (im2col): out[n] = filters [f, c*kh*kw] x patches[n] [c*kh*kw, oh*ow],
/// which is NCHW already.
struct Conv2dPattern : public OpRewritePattern<Conv2dOp> {
  Conv2dPattern(MLIRContext *context, bool products)
      : OpRewritePattern(context), products(products) {}
  /// train-to-linalg{conv-products} (usesGroupProducts).
  bool products;

  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ConvParams p =
        getConvParams(op, cast<RankedTensorType>(op.getInput().getType()),
                      cast<RankedTensorType>(op.getFilter().getType()), type);
    Value zero = identityOf(rewriter, loc, p.element, ReduceKind::sum);
    Value padded = padSpatial(rewriter, loc, op.getInput(), p.padding, zero);
    if (!keepsPatches(p, /*filterGradient=*/false, products)) {
      rewriter.replaceOp(
          op, buildGroupedConv(rewriter, loc, padded, op.getFilter(), p));
      return success();
    }
    Value result =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), p.element);
    for (int64_t g = 0; g < p.groups; ++g) {
      // (Built one at a time: the IR's order must not depend on the order
      // in which the compiler evaluates arguments.)
      Value filters = buildFilterMatrix(rewriter, loc, op.getFilter(), p, g);
      Value patches = buildPatches(rewriter, loc, padded, p, g);
      Value product = buildMatmul(rewriter, loc, filters, patches, p.batch,
                                  /*transposeLhs=*/false,
                                  /*transposeRhs=*/false);
      Value block = expand(rewriter, loc, product,
                           {p.batch, p.filtersPerGroup, p.outH, p.outW},
                           {{0}, {1}, {2, 3}});
      result =
          insertBlock(rewriter, loc, block, result, 1, g * p.filtersPerGroup);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// conv2d_backward_filter: one direct contraction (see keepsPatches), or
/// per image, grad[n] [f, oh*ow] x patches[n]^T [oh*ow, c*kh*kw] (one
/// batched product per group), summed over images.
struct Conv2dBackwardFilterPattern
    : public OpRewritePattern<Conv2dBackwardFilterOp> {
  Conv2dBackwardFilterPattern(MLIRContext *context, bool products)
      : OpRewritePattern(context), products(products) {}
  /// train-to-linalg{conv-products} (usesGroupProducts).
  bool products;

  LogicalResult matchAndRewrite(Conv2dBackwardFilterOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    ConvParams p =
        getConvParams(op, cast<RankedTensorType>(op.getInput().getType()), type,
                      cast<RankedTensorType>(op.getGradOutput().getType()));
    Value zero = identityOf(rewriter, loc, p.element, ReduceKind::sum);
    Value padded = padSpatial(rewriter, loc, op.getInput(), p.padding, zero);
    if (!keepsPatches(p, /*filterGradient=*/true, products)) {
      rewriter.replaceOp(op, buildGroupedConvFilterGrad(rewriter, loc, padded,
                                                        op.getGradOutput(), p));
      return success();
    }
    Value result =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), p.element);
    AffineExpr d[3];
    for (int i = 0; i < 3; ++i)
      d[i] = getAffineDimExpr(i, context);
    for (int64_t g = 0; g < p.groups; ++g) {
      Value grad = buildGroupMatrix(rewriter, loc, op.getGradOutput(), p, g,
                                    p.filtersPerGroup);
      Value patches = buildPatches(rewriter, loc, padded, p, g);
      Value perImage = buildMatmul(rewriter, loc, grad, patches, p.batch,
                                   /*transposeLhs=*/false,
                                   /*transposeRhs=*/true);
      // Sum over images: loops (f, k | n).
      auto sumType = RankedTensorType::get(
          {p.filtersPerGroup, p.getPatchSize()}, p.element);
      Value sum = buildWindowGeneric(
          rewriter, loc, ValueRange{perImage},
          ValueRange{buildFilled(rewriter, loc, sumType, zero)},
          {AffineMap::get(3, 0, {d[2], d[0], d[1]}, context),
           AffineMap::get(3, 0, {d[0], d[1]}, context)},
          2, 1,
          [](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, l, a[1], a[0])};
          })[0];
      Value block =
          expand(rewriter, loc, sum,
                 {p.filtersPerGroup, p.channelsPerGroup, p.kernelH, p.kernelW},
                 {{0}, {1, 2, 3}});
      result =
          insertBlock(rewriter, loc, block, result, 0, g * p.filtersPerGroup);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// conv2d_backward_input: the patch gradient filters^T [c*kh*kw, f] x
/// grad[n] [f, oh*ow] (one batched product per group), then col2im: for
/// each window tap (kh, kw), the [n, c, oh, ow] slice of the patch gradient
/// adds onto the strided slice of the padded input gradient it was read
/// from; the interior is the result.
/// The positions of one spatial dim of a strided input gradient (as
/// computed by buildGroupedConvInputGrad: position i reads the spread
/// gradient at i + k * dilation, where the output gradient's row o sits at
/// top + o * stride) that are `phase` modulo the stride: `size` of them,
/// reached by `taps` window taps first + t * step (t < taps), which read
/// output gradient row q + shift + t * (dilation / gcd(dilation, stride))
/// at the phase's position q.
struct InputGradPhase {
  int64_t size = 0, taps = 0, first = 0, step = 1, shift = 0;
};

static InputGradPhase getInputGradPhase(int64_t phase, int64_t positions,
                                        int64_t stride, int64_t kernel,
                                        int64_t dilation, int64_t top) {
  InputGradPhase result;
  result.size =
      phase < positions ? (positions - phase + stride - 1) / stride : 0;
  result.step = stride / std::gcd(dilation, stride);
  for (int64_t k = 0; k < kernel; ++k) {
    int64_t at = phase + k * dilation - top;
    if (((at % stride) + stride) % stride != 0)
      continue;
    if (result.taps++ == 0) {
      result.first = k;
      result.shift = at / stride;
    }
  }
  return result;
}

/// The input gradient of a strided convolution as buildGroupedConvInputGrad
/// computes it, by phase: the positions (i, j) of each phase modulo the
/// strides only read the output gradient through the taps of that phase,
/// so the phase is one stride-1 contraction of the (padded) output
/// gradient with those taps of the flipped filter, inserted with the
/// strides -- no zeros multiplied (the spread gradient is 3/4 zeros for
/// stride 2) and no patch matrix scattered back tap by tap (ResNet-18's
/// 3x3 stride-2 layers' products and col2im, ~21 ms per step on two
/// threads). `dist-conv-to-kernels` runs each phase's contraction.
static Value buildPhasedConvInputGrad(OpBuilder &b, Location loc, Value grad,
                                      Value filter, const ConvParams &p) {
  MLIRContext *context = b.getContext();
  auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  InputGradGeometry at(p);
  int64_t rows = at.rows, cols = at.cols;
  SmallVector<InputGradPhase> phasesH, phasesW;
  for (int64_t a = 0; a < p.strides[0]; ++a)
    phasesH.push_back(getInputGradPhase(a, rows, p.strides[0], p.kernelH,
                                        p.dilations[0], at.top));
  for (int64_t a = 0; a < p.strides[1]; ++a)
    phasesW.push_back(getInputGradPhase(a, cols, p.strides[1], p.kernelW,
                                        p.dilations[1], at.left));
  // The output gradient zero-padded so that every phase's windows are in
  // it: before (the most negative shift) and after.
  auto padding = [](ArrayRef<InputGradPhase> phases, int64_t dilation,
                    int64_t stride, int64_t extent) {
    int64_t step = dilation / std::gcd(dilation, stride);
    int64_t before = 0, after = 0;
    for (const InputGradPhase &phase : phases) {
      if (phase.taps == 0 || phase.size == 0)
        continue;
      before = std::max(before, -phase.shift);
      after = std::max(after, phase.size - 1 + phase.shift +
                                  (phase.taps - 1) * step - (extent - 1));
    }
    return std::make_pair(before, after);
  };
  auto [padTop, padBottom] =
      padding(phasesH, p.dilations[0], p.strides[0], p.outH);
  auto [padLeft, padRight] =
      padding(phasesW, p.dilations[1], p.strides[1], p.outW);
  Value zero = identityOf(b, loc, p.element, ReduceKind::sum);
  Value padded =
      padSpatial(b, loc, grad, {padTop, padBottom, padLeft, padRight}, zero);
  int64_t filters = p.groups * p.filtersPerGroup;
  int64_t channels = p.groups * p.channelsPerGroup;
  int64_t stepH = p.dilations[0] / std::gcd(p.dilations[0], p.strides[0]);
  int64_t stepW = p.dilations[1] / std::gcd(p.dilations[1], p.strides[1]);
  // Every position some phase's taps reach is written; the rest is zero.
  bool covered = llvm::all_of(phasesH,
                              [](const InputGradPhase &phase) {
                                return phase.size == 0 || phase.taps > 0;
                              }) &&
                 llvm::all_of(phasesW, [](const InputGradPhase &phase) {
                   return phase.size == 0 || phase.taps > 0;
                 });
  auto resultType =
      RankedTensorType::get({p.batch, channels, rows, cols}, p.element);
  Value result =
      covered
          ? tensor::EmptyOp::create(b, loc, resultType.getShape(), p.element)
                .getResult()
          : buildFilled(b, loc, resultType, zero);
  auto d = getLoopDims(context);
  for (auto [a, ph] : llvm::enumerate(phasesH)) {
    for (auto [c, pw] : llvm::enumerate(phasesW)) {
      if (ph.size == 0 || pw.size == 0 || ph.taps == 0 || pw.taps == 0)
        continue;
      // The output gradient rows and columns the phase's windows cover.
      int64_t spanH = ph.size + (ph.taps - 1) * stepH;
      int64_t spanW = pw.size + (pw.taps - 1) * stepW;
      Value window = tensor::ExtractSliceOp::create(
          b, loc, padded,
          ArrayRef<OpFoldResult>{index(0), index(0), index(ph.shift + padTop),
                                 index(pw.shift + padLeft)},
          ArrayRef<OpFoldResult>{index(p.batch), index(filters), index(spanH),
                                 index(spanW)},
          ArrayRef<OpFoldResult>{index(1), index(1), index(1), index(1)});
      // The phase's taps of the flipped filter.
      Value taps = buildCopy(
          b, loc, filter,
          AffineMap::get(4, 0,
                         {d[0], d[1], p.kernelH - 1 - ph.first - d[2] * ph.step,
                          p.kernelW - 1 - pw.first - d[3] * pw.step},
                         context),
          {filters, p.channelsPerGroup, ph.taps, pw.taps});
      // The phase's positions of the result, which the contraction
      // accumulates into (in place once bufferized: the kernel writes the
      // strided rows itself).
      SmallVector<OpFoldResult> offsets = {index(0), index(0), index(a),
                                           index(c)},
                                sizes = {index(p.batch), index(channels),
                                         index(ph.size), index(pw.size)},
                                strides = {index(1), index(1),
                                           index(p.strides[0]),
                                           index(p.strides[1])};
      Value slot = tensor::ExtractSliceOp::create(b, loc, result, offsets,
                                                  sizes, strides);
      // Loops (n, g, c, q, r | f, t, u).
      Value phase = mergeGroups(
          b, loc,
          buildGroupedContraction(
              b, loc, splitGroups(b, loc, window, 1, p.groups),
              {d[0], d[1], d[5], d[3] + d[6] * stepH, d[4] + d[7] * stepW},
              splitGroups(b, loc, taps, 0, p.groups),
              {d[1], d[5], d[2], d[6], d[7]},
              {p.batch, p.groups, p.channelsPerGroup, ph.size, pw.size},
              p.element, splitGroups(b, loc, slot, 1, p.groups)),
          1);
      result = tensor::InsertSliceOp::create(b, loc, phase, result, offsets,
                                             sizes, strides);
    }
  }
  return at.getResult(b, loc, result, p);
}

struct Conv2dBackwardInputPattern
    : public OpRewritePattern<Conv2dBackwardInputOp> {
  Conv2dBackwardInputPattern(MLIRContext *context, bool products)
      : OpRewritePattern(context), products(products) {}
  /// train-to-linalg{conv-products} (usesGroupProducts).
  bool products;

  LogicalResult matchAndRewrite(Conv2dBackwardInputOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ConvParams p = getConvParams(
        op, type, cast<RankedTensorType>(op.getFilter().getType()),
        cast<RankedTensorType>(op.getGradOutput().getType()));
    bool strided = llvm::any_of(p.strides, [](int64_t s) { return s > 1; });
    bool pointwise = p.kernelH == 1 && p.kernelW == 1;
    // (16-bit convolutions as products: usesGroupProducts.)
    bool products = this->products || isa<BFloat16Type, Float16Type>(p.element);
    if (strided && !pointwise && !(products && usesGroupProducts(p, true))) {
      rewriter.replaceOp(op, buildPhasedConvInputGrad(rewriter, loc,
                                                      op.getGradOutput(),
                                                      op.getFilter(), p));
      return success();
    }
    if (!usesGroupProducts(p, products)) {
      rewriter.replaceOp(op, buildGroupedConvInputGrad(rewriter, loc,
                                                       op.getGradOutput(),
                                                       op.getFilter(), p));
      return success();
    }
    Value zero = identityOf(rewriter, loc, p.element, ReduceKind::sum);
    Value result =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), p.element);
    int64_t paddedH = p.height + p.padding[0] + p.padding[1];
    int64_t paddedW = p.width + p.padding[2] + p.padding[3];
    auto index = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    AffineMap identity = rewriter.getMultiDimIdentityMap(4);
    for (int64_t g = 0; g < p.groups; ++g) {
      Value filters = buildFilterMatrix(rewriter, loc, op.getFilter(), p, g);
      Value grad = buildGroupMatrix(rewriter, loc, op.getGradOutput(), p, g,
                                    p.filtersPerGroup);
      Value product = buildMatmul(rewriter, loc, filters, grad, p.batch,
                                  /*transposeLhs=*/true,
                                  /*transposeRhs=*/false);
      Value patchGrad = expand(
          rewriter, loc, product,
          {p.batch, p.channelsPerGroup, p.kernelH, p.kernelW, p.outH, p.outW},
          {{0}, {1, 2, 3}, {4, 5}});
      Value acc = buildFilled(
          rewriter, loc,
          RankedTensorType::get({p.batch, p.channelsPerGroup, paddedH, paddedW},
                                p.element),
          zero);
      auto tapType = RankedTensorType::get(
          {p.batch, p.channelsPerGroup, p.outH, p.outW}, p.element);
      SmallVector<OpFoldResult> tapSizes = {index(p.batch),
                                            index(p.channelsPerGroup),
                                            index(p.outH), index(p.outW)};
      SmallVector<OpFoldResult> tapStrides = {
          index(1), index(1), index(p.strides[0]), index(p.strides[1])};
      for (int64_t kh = 0; kh < p.kernelH; ++kh) {
        for (int64_t kw = 0; kw < p.kernelW; ++kw) {
          Value tap = tensor::ExtractSliceOp::create(
              rewriter, loc, tapType, patchGrad,
              ArrayRef<OpFoldResult>{index(0), index(0), index(kh), index(kw),
                                     index(0), index(0)},
              ArrayRef<OpFoldResult>{index(p.batch), index(p.channelsPerGroup),
                                     index(1), index(1), index(p.outH),
                                     index(p.outW)},
              ArrayRef<OpFoldResult>{index(1), index(1), index(1), index(1),
                                     index(1), index(1)});
          SmallVector<OpFoldResult> at = {index(0), index(0),
                                          index(kh * p.dilations[0]),
                                          index(kw * p.dilations[1])};
          Value window = tensor::ExtractSliceOp::create(
              rewriter, loc, tapType, acc, at, tapSizes, tapStrides);
          Value summed = buildWindowGeneric(
              rewriter, loc, ValueRange{tap}, ValueRange{window},
              {identity, identity}, 4, 0,
              [](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
                return {arith::AddFOp::create(b, l, a[1], a[0])};
              })[0];
          acc = tensor::InsertSliceOp::create(rewriter, loc, summed, acc, at,
                                              tapSizes, tapStrides);
        }
      }
      Value block = tensor::ExtractSliceOp::create(
          rewriter, loc, acc,
          ArrayRef<OpFoldResult>{index(0), index(0), index(p.padding[0]),
                                 index(p.padding[2])},
          ArrayRef<OpFoldResult>{index(p.batch), index(p.channelsPerGroup),
                                 index(p.height), index(p.width)},
          ArrayRef<OpFoldResult>{index(1), index(1), index(1), index(1)});
      result =
          insertBlock(rewriter, loc, block, result, 1, g * p.channelsPerGroup);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

void linalg_lowering::populateConvPatterns(RewritePatternSet &patterns,
                                           bool products) {
  patterns.add<Conv2dPattern, Conv2dBackwardFilterPattern,
               Conv2dBackwardInputPattern>(patterns.getContext(), products);
}
