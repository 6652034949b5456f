//===- MatmulToBlas.cpp - contractions through library products ----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Runs on buffers, after one-shot bufferization: the call reads and writes
// the very buffers the linalg.generic did, so no tensor-level rewrite (CSE,
// canonicalization) can make it read a buffer that bufferization reused.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTMATMULTOBLASPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// A matrix product `linalg.generic` in BLAS terms.
struct Gemm {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false, batchedA = false, batchedB = false;
  /// The zero fill of the output that the call (beta = 0) makes dead.
  linalg::FillOp fill;
};
} // namespace

/// The dims of `map` as loop positions (a projected permutation).
static std::optional<SmallVector<unsigned>> getDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr expr : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

/// True when `type` is an element type the library multiplies: f32
/// (sgemm), bf16 and f16 (f32 accumulation, CpuKernels.cpp).
static bool isLibraryType(Type type) {
  return type.isF32() || type.isBF16() || type.isF16();
}

/// True when `type` is a static buffer of a library type whose last dim is
/// contiguous,
/// whose rows are at least a row apart, and whose first `batchDims` dims
/// flatten into one batch dim: what sgemm's leading dimension and the
/// kernel's batch stride describe.
static bool isBlasOperand(Type type, unsigned batchDims) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !isLibraryType(memref.getElementType()) ||
      !memref.hasStaticShape() || memref.getRank() < 2)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return false;
  int64_t rank = memref.getRank();
  if (strides[rank - 1] != 1 ||
      (memref.getDimSize(rank - 2) > 1 &&
       strides[rank - 2] < memref.getDimSize(rank - 1)))
    return false;
  for (unsigned i = 0; i + 1 < batchDims; ++i)
    if (strides[i] != strides[i + 1] * memref.getDimSize(i + 1))
      return false;
  return true;
}

bool mlir::train::isBlasContraction(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return false;
  // One type throughout: the body multiplies and adds in the output's type.
  Type type = getElementTypeOrSelf(generic.getDpsInits()[0].getType());
  return isLibraryType(type) &&
         llvm::all_of(generic.getDpsInputs(), [&](Value input) {
           return getElementTypeOrSelf(input.getType()) == type;
         });
}

/// The gemm `op` is, or nullopt. The output must be [batch..., m, n] and
/// the one reduction dim k; A is [batch..., m, k] or [batch..., k, m] with
/// all the batch dims or none (one matrix for every batch), likewise B with
/// n.
static std::optional<Gemm> matchGemm(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || !train::isBlasContraction(op))
    return std::nullopt;
  // The output must be dense and start from zero: C = A x B.
  Value out = op.getDpsInits()[0];
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!outType || !memref::isStaticShapeAndContiguousRowMajor(outType))
    return std::nullopt;
  linalg::FillOp fill = train::findZeroFill(op, out);
  if (!fill)
    return std::nullopt;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto a = getDims(maps[0]), b = getDims(maps[1]), c = getDims(maps[2]);
  if (reductions.size() != 1 || !a || !b || !c || c->size() < 2 ||
      c->size() != op.getNumParallelLoops())
    return std::nullopt;
  unsigned k = reductions[0], m = (*c)[c->size() - 2], n = c->back();
  ArrayRef<unsigned> batch = ArrayRef<unsigned>(*c).drop_back(2);
  auto operand = [&](ArrayRef<unsigned> got, unsigned rows, unsigned cols,
                     bool &transposed, bool &batched) {
    batched = got.size() == batch.size() + 2;
    if (!batched && got.size() != 2)
      return false;
    if (batched && got.take_front(batch.size()) != batch)
      return false;
    ArrayRef<unsigned> matrix = got.take_back(2);
    transposed = matrix[0] == cols && matrix[1] == rows;
    return transposed || (matrix[0] == rows && matrix[1] == cols);
  };
  Gemm gemm;
  gemm.fill = fill;
  if (!operand(*a, m, k, gemm.transA, gemm.batchedA) ||
      !operand(*b, k, n, gemm.transB, gemm.batchedB))
    return std::nullopt;
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  if (!isBlasOperand(lhs.getType(), gemm.batchedA ? batch.size() : 0) ||
      !isBlasOperand(rhs.getType(), gemm.batchedB ? batch.size() : 0))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned d : batch)
    gemm.batch *= ranges[d];
  gemm.m = ranges[m];
  gemm.n = ranges[n];
  gemm.k = ranges[k];
  // A batch of row-major A's times one B is one taller product when A is
  // [batch * m, k] in memory, as C is [batch * m, n].
  if (gemm.batchedA && !gemm.batchedB && !gemm.transA &&
      memref::isStaticShapeAndContiguousRowMajor(
          cast<MemRefType>(lhs.getType()))) {
    gemm.m *= gemm.batch;
    gemm.batch = 1;
    gemm.batchedA = false;
  }
  return gemm;
}

/// Replaces `op` (and its output's zero fill) by a call of
/// distopt_matmul_f32 (distopt_matmul_bf16, distopt_matmul_f16: f32
/// accumulation, the result rounded once) on the same buffers.
static void rewrite(linalg::GenericOp op, const Gemm &gemm) {
  Type type = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  StringRef name = type.isBF16()  ? "distopt_matmul_bf16"
                   : type.isF16() ? "distopt_matmul_f16"
                                  : "distopt_matmul_f32";
  train::replaceByLibraryCall(
      op, gemm.fill, name,
      [&](OpBuilder &builder, Location loc, SmallVectorImpl<Value> &args) {
        for (int64_t v : {gemm.batch, gemm.m, gemm.n, gemm.k})
          args.push_back(arith::ConstantOp::create(
              builder, loc, builder.getI64IntegerAttr(v)));
        Value flags[2] = {arith::ConstantOp::create(
                              builder, loc, builder.getI32IntegerAttr(0)),
                          arith::ConstantOp::create(
                              builder, loc, builder.getI32IntegerAttr(1))};
        for (bool flag :
             {gemm.transA, gemm.transB, gemm.batchedA, gemm.batchedB})
          args.push_back(flags[flag]);
      });
}

namespace {
struct DistMatmulToBlasPass
    : public mlir::train::impl::DistMatmulToBlasPassBase<DistMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::GenericOp, Gemm>> gemms;
    module.walk([&](linalg::GenericOp op) {
      if (std::optional<Gemm> gemm = matchGemm(op))
        gemms.push_back({op, *gemm});
    });
    for (auto &[op, gemm] : gemms)
      rewrite(op, gemm);
  }
};
} // namespace
