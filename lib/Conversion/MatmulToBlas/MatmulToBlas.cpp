//===- MatmulToBlas.cpp - f32 contractions through sgemm ------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

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

/// True when the body computes `out + a * b` (in either order).
static bool isMultiplyAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto add = dyn_cast<arith::AddFOp>(body.getTerminator()->getOperand(0)
                                         .getDefiningOp());
  if (!add)
    return false;
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// The gemm `op` is, or nullopt.
static std::optional<Gemm> matchGemm(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !isMultiplyAdd(op))
    return std::nullopt;
  auto outType = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!outType || !outType.getElementType().isF32() ||
      !outType.hasStaticShape())
    return std::nullopt;
  // The output must start from zero: C = A x B.
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(cast<linalg::LinalgOp>(op.getOperation()));
  if (failed(dims) || dims->m.empty() || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto a = getDims(maps[0]), b = getDims(maps[1]), c = getDims(maps[2]);
  if (!a || !b || !c)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (dims->m.size() > 1) {
    // Several m dims (the batch of an A multiplied by a B shared by every
    // batch): with A = [m..., k] and C = [m..., n] row-major, they merge
    // into one m of their product.
    SmallVector<unsigned> ms(dims->m.begin(), dims->m.end());
    SmallVector<unsigned> wantA(ms), wantC(ms);
    wantA.push_back(dims->k[0]);
    wantC.push_back(dims->n[0]);
    bool plainB = b->size() == 2 && (*b)[0] == dims->k[0] &&
                  (*b)[1] == dims->n[0];
    bool transB = b->size() == 2 && (*b)[0] == dims->n[0] &&
                  (*b)[1] == dims->k[0];
    if (!dims->batch.empty() || *a != wantA || *c != wantC ||
        !(plainB || transB))
      return std::nullopt;
    Gemm gemm;
    gemm.m = 1;
    for (unsigned d : ms)
      gemm.m *= ranges[d];
    gemm.n = ranges[dims->n[0]];
    gemm.k = ranges[dims->k[0]];
    gemm.transB = transB;
    return gemm;
  }
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  SmallVector<unsigned> batch(dims->batch.begin(), dims->batch.end());
  // C is [batch..., m, n].
  SmallVector<unsigned> wantC(batch);
  wantC.append({m, n});
  if (*c != wantC)
    return std::nullopt;
  Gemm gemm;
  auto operand = [&](ArrayRef<unsigned> got, unsigned rows, unsigned cols,
                     bool &transposed, bool &batched) {
    batched = got.size() == batch.size() + 2;
    if (!batched && got.size() != 2)
      return false;
    if (batched && ArrayRef<unsigned>(got).take_front(batch.size()) !=
                       ArrayRef<unsigned>(batch))
      return false;
    ArrayRef<unsigned> matrix = got.take_back(2);
    transposed = matrix[0] == cols && matrix[1] == rows;
    return transposed || (matrix[0] == rows && matrix[1] == cols);
  };
  if (!operand(*a, m, k, gemm.transA, gemm.batchedA) ||
      !operand(*b, k, n, gemm.transB, gemm.batchedB))
    return std::nullopt;
  for (unsigned d : batch)
    gemm.batch *= ranges[d];
  gemm.m = ranges[m];
  gemm.n = ranges[n];
  gemm.k = ranges[k];
  return gemm;
}

/// Replaces `op` by a call of distopt_matmul_f32.
static void rewrite(linalg::GenericOp op, const Gemm &gemm, ModuleOp module) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  MLIRContext *context = builder.getContext();
  auto buffer = [&](Value tensor) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    Value memref = bufferization::ToBufferOp::create(
        builder, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, /*read_only=*/true);
    return memref::CastOp::create(
        builder, loc, UnrankedMemRefType::get(type.getElementType(), 0),
        memref);
  };
  auto outType = cast<RankedTensorType>(op.getResult(0).getType());
  Value out = memref::AllocOp::create(
      builder, loc,
      MemRefType::get(outType.getShape(), outType.getElementType()));
  Value outView = memref::CastOp::create(
      builder, loc, UnrankedMemRefType::get(outType.getElementType(), 0), out);
  SmallVector<Value> args = {buffer(op.getDpsInputs()[0]),
                             buffer(op.getDpsInputs()[1]), outView};
  for (int64_t v : {gemm.batch, gemm.m, gemm.n, gemm.k})
    args.push_back(arith::ConstantOp::create(builder, loc,
                                             builder.getI64IntegerAttr(v)));
  Value flags[2] = {
      arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(0)),
      arith::ConstantOp::create(builder, loc, builder.getI32IntegerAttr(1))};
  for (bool flag : {gemm.transA, gemm.transB, gemm.batchedA, gemm.batchedB})
    args.push_back(flags[flag]);
  StringRef name = "distopt_matmul_f32";
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  if (!callee) {
    OpBuilder moduleBuilder(context);
    moduleBuilder.setInsertionPointToEnd(module.getBody());
    callee = func::FuncOp::create(
        moduleBuilder, module.getLoc(), name,
        FunctionType::get(context, ValueRange(args).getTypes(), {}));
    callee.setPrivate();
    callee->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  }
  func::CallOp::create(builder, loc, callee, args);
  Value result = bufferization::ToTensorOp::create(
      builder, loc, outType, out, /*restrict=*/true, /*writable=*/true);
  op.getResult(0).replaceAllUsesWith(result);
  op->erase();
}

namespace {
struct DistMatmulToBlasPass
    : public mlir::train::impl::DistMatmulToBlasPassBase<
          DistMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::GenericOp, Gemm>> gemms;
    module.walk([&](linalg::GenericOp op) {
      if (std::optional<Gemm> gemm = matchGemm(op))
        gemms.push_back({op, *gemm});
    });
    for (auto &[op, gemm] : gemms)
      rewrite(op, gemm, module);
  }
};
} // namespace
