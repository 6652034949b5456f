//===- MatmulEpilogues.cpp - a product's bias and GELU in its library call ===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A linear layer on buffers is a product call followed by a generic that
// adds the bias (and a residual), and maybe one that applies GELU. This
// pass folds them into one distopt_matmul_epilogue_f32 call, which cuBLASLt
// runs as one kernel with a bias (GELU_AUX_BIAS) epilogue: no launch, and
// no read and write of the product, for the additions.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"
#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace mlir::train {
#define GEN_PASS_DEF_DISTMATMULEPILOGUESPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// The runtime function the epilogues are folded into (CpuKernels.cpp,
/// CudaRuntime.cpp).
static constexpr StringLiteral kEpilogueFunction =
    "distopt_matmul_epilogue_f32";

/// Its flags: a residual added, GELU applied (the sum kept as well).
enum EpilogueFlags : int32_t { kResidual = 1, kGelu = 2 };

/// A static, contiguous row-major f32 buffer.
static bool isDenseF32(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getElementType().isF32() &&
         memref::isStaticShapeAndContiguousRowMajor(type);
}

/// The ranked buffer a product call's operand `index` casts to unranked.
static Value getRanked(func::CallOp call, unsigned index) {
  auto cast = call.getOperand(index).getDefiningOp<memref::CastOp>();
  return cast ? cast.getSource() : Value();
}

/// The integer constant `value` is, or nullopt.
static std::optional<int64_t> getConstant(Value value) {
  IntegerAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  return attr.getInt();
}

/// The first op after `after` in its block that uses `buffer` (or a view of
/// it), other than a view of it; null when none.
static Operation *getNextUser(Value buffer, Operation *after) {
  Block *block = after->getBlock();
  Operation *next = nullptr;
  train::forEachBufferUse(buffer, [&](OpOperand &use) {
    if (isa<ViewLikeOpInterface>(use.getOwner()))
      return;
    Operation *inBlock = block->findAncestorOpInBlock(*use.getOwner());
    if (!inBlock || inBlock == after || inBlock->isBeforeInBlock(after))
      return;
    if (!next || inBlock->isBeforeInBlock(next))
      next = inBlock;
  });
  return next;
}

/// True when every op strictly between `from` and `to` (one block) leaves
/// memory alone but for allocations and frees of other buffers than
/// `kept`'s: the work of `from` may then move down to `to`.
static bool onlyBookkeepingBetween(Operation *from, Operation *to,
                                   ArrayRef<Value> kept) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    if (isa<memref::AllocOp>(op) || isMemoryEffectFree(op))
      continue;
    auto dealloc = dyn_cast<memref::DeallocOp>(op);
    if (!dealloc)
      return false;
    Value root = train::getRootBuffer(dealloc.getMemref());
    if (llvm::any_of(kept, [&](Value value) {
          return train::getRootBuffer(value) == root;
        }))
      return false;
  }
  return true;
}

/// The body of an elementwise generic of parallel loops, identity output,
/// that sums its inputs (each block argument of an input once, the init's
/// unused) with addf alone.
static bool isSumOfInputs(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  unsigned inputs = generic.getNumDpsInputs();
  for (BlockArgument arg : body.getArguments())
    if (arg.getArgNumber() < inputs ? !arg.hasOneUse() : !arg.use_empty())
      return false;
  for (Operation &op : body.without_terminator())
    if (!isa<arith::AddFOp>(op) || !op.getResult(0).hasOneUse())
      return false;
  return body.getOperations().size() == inputs; // inputs - 1 adds, a yield
}

/// Evaluates the body of a one-input generic on `x` when it is made of
/// f32 arithmetic alone (addf, subf, mulf, divf, negf, constants, tanh).
static std::optional<float> evaluate(linalg::GenericOp generic, float x) {
  Block &body = generic.getRegion().front();
  DenseMap<Value, float> values;
  values[body.getArgument(0)] = x;
  auto get = [&](Value value) -> std::optional<float> {
    if (auto it = values.find(value); it != values.end())
      return it->second;
    FloatAttr attr;
    if (matchPattern(value, m_Constant(&attr)) && attr.getType().isF32())
      return static_cast<float>(attr.getValueAsDouble());
    return std::nullopt;
  };
  for (Operation &op : body) {
    SmallVector<float> in;
    for (Value operand : op.getOperands()) {
      std::optional<float> value = get(operand);
      if (!value)
        return std::nullopt;
      in.push_back(*value);
    }
    if (isa<linalg::YieldOp>(op))
      return in.size() == 1 ? std::optional<float>(in[0]) : std::nullopt;
    float out;
    if (isa<arith::AddFOp>(op))
      out = in[0] + in[1];
    else if (isa<arith::SubFOp>(op))
      out = in[0] - in[1];
    else if (isa<arith::MulFOp>(op))
      out = in[0] * in[1];
    else if (isa<arith::DivFOp>(op))
      out = in[0] / in[1];
    else if (isa<arith::NegFOp>(op))
      out = -in[0];
    else if (isa<math::TanhOp>(op))
      out = std::tanh(in[0]);
    else if (isa<arith::ConstantOp>(op))
      continue;
    else
      return std::nullopt;
    values[op.getResult(0)] = out;
  }
  return std::nullopt;
}

/// True when `generic` is the tanh approximation of GELU (cuBLASLt's GELU
/// epilogue, PyTorch's `approximate='tanh'`) of its one input, elementwise:
/// checked by evaluating its body at points across the curve.
static bool isTanhGelu(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }) ||
      !generic.getRegion().front().getArgument(1).use_empty())
    return false;
  for (float x : {-6.0f, -2.5f, -1.0f, -0.3f, 0.0f, 0.2f, 0.7f, 1.5f, 4.0f}) {
    std::optional<float> got = evaluate(generic, x);
    double want =
        0.5 * x *
        (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    if (!got || std::abs(*got - want) > 1e-5 * (1.0 + std::abs(want)))
      return false;
  }
  return true;
}

namespace {
/// A product call and the epilogue ops it takes in.
struct Epilogue {
  func::CallOp product;
  /// Adds the bias (and a residual) to the product.
  linalg::GenericOp biasAdd;
  /// GELU of the sum, or null.
  linalg::GenericOp gelu;
  Value bias, residual, output, preActivation;
};
} // namespace

/// The epilogue of `call` (distopt_matmul_f32 of one f32 product, batch 1)
/// when its product's only reader is a bias addition (optionally with a
/// residual), which GELU may follow.
static std::optional<Epilogue> matchEpilogue(func::CallOp call) {
  if (call.getCallee() != "distopt_matmul_f32" || call.getNumOperands() != 11)
    return std::nullopt;
  std::optional<int64_t> batch = getConstant(call.getOperand(3)),
                         n = getConstant(call.getOperand(5));
  Value a = getRanked(call, 0), b = getRanked(call, 1),
        product = getRanked(call, 2);
  // (cuBLASLt's epilogue buffers: rows of a multiple of 8 elements.)
  if (!batch || *batch != 1 || !n || *n % 8 != 0 || !a || !b || !product ||
      !isDenseF32(product) ||
      !train::getRootBuffer(product).getDefiningOp<memref::AllocOp>())
    return std::nullopt;
  auto productType = cast<MemRefType>(product.getType());
  if (productType.getShape().back() != *n)
    return std::nullopt;
  Epilogue epilogue;
  epilogue.product = call;
  epilogue.biasAdd =
      dyn_cast_or_null<linalg::GenericOp>(getNextUser(product, call));
  linalg::GenericOp add = epilogue.biasAdd;
  if (!add || !add.hasPureBufferSemantics() || add.getNumDpsInits() != 1 ||
      add.getNumLoops() != add.getNumParallelLoops() ||
      add.getNumLoops() != productType.getRank() || !isSumOfInputs(add) ||
      !add.getMatchingIndexingMap(add.getDpsInitOperand(0)).isIdentity())
    return std::nullopt;
  unsigned rank = productType.getRank();
  bool readsProduct = false;
  for (OpOperand *input : add.getDpsInputOperands()) {
    AffineMap map = add.getMatchingIndexingMap(input);
    if (input->get() == product && map.isIdentity() && !readsProduct) {
      readsProduct = true;
    } else if (map.getNumResults() == 1 &&
               map.getResult(0) ==
                   getAffineDimExpr(rank - 1, add.getContext()) &&
               !epilogue.bias && isDenseF32(input->get())) {
      epilogue.bias = input->get();
    } else if (map.isIdentity() && !epilogue.residual &&
               isDenseF32(input->get())) {
      epilogue.residual = input->get();
    } else {
      return std::nullopt;
    }
  }
  epilogue.output = add.getDpsInits()[0];
  if (!readsProduct || !epilogue.bias || !isDenseF32(epilogue.output) ||
      epilogue.output.getType() != product.getType())
    return std::nullopt;
  // The residual is read while the output is written: not the same memory.
  if (epilogue.residual && train::getRootBuffer(epilogue.residual) ==
                               train::getRootBuffer(epilogue.output))
    return std::nullopt;
  // The product's buffer is read by the addition alone (or is its output).
  bool productInPlace =
      train::getRootBuffer(epilogue.output) == train::getRootBuffer(product);
  if (!productInPlace) {
    bool others = false;
    train::forEachBufferUse(product, [&](OpOperand &use) {
      Operation *owner = use.getOwner();
      others |= owner != call && owner != add &&
                !isa<ViewLikeOpInterface, memref::DeallocOp>(owner);
    });
    if (others)
      return std::nullopt;
  }
  SmallVector<Value> kept = {a, b, epilogue.bias, epilogue.output};
  if (epilogue.residual)
    kept.push_back(epilogue.residual);
  if (!onlyBookkeepingBetween(call, add, kept))
    return std::nullopt;
  // GELU of the sum next: the sum is kept (the backward reads it).
  auto gelu =
      dyn_cast_or_null<linalg::GenericOp>(getNextUser(epilogue.output, add));
  if (gelu && !productInPlace && gelu.hasPureBufferSemantics() &&
      gelu.getDpsInputs()[0] == epilogue.output && isTanhGelu(gelu) &&
      isDenseF32(gelu.getDpsInits()[0]) &&
      gelu.getDpsInits()[0].getType() == product.getType() &&
      train::getRootBuffer(gelu.getDpsInits()[0]) !=
          train::getRootBuffer(epilogue.output)) {
    kept.push_back(gelu.getDpsInits()[0]);
    if (onlyBookkeepingBetween(add, gelu, kept)) {
      epilogue.gelu = gelu;
      epilogue.preActivation = epilogue.output;
      epilogue.output = gelu.getDpsInits()[0];
    }
  }
  return epilogue;
}

/// Replaces the product call and its epilogue ops by one call of
/// distopt_matmul_epilogue_f32, where the last of them was; erases the
/// product's buffer when nothing else uses it.
static void rewrite(const Epilogue &epilogue) {
  func::CallOp call = epilogue.product;
  Operation *last = epilogue.gelu ? epilogue.gelu : epilogue.biasAdd;
  OpBuilder builder(last);
  Location loc = call.getLoc();
  auto unranked = [&](Value value) {
    return memref::CastOp::create(
               builder, loc, UnrankedMemRefType::get(builder.getF32Type(), 0),
               value)
        .getResult();
  };
  int32_t flags =
      (epilogue.residual ? kResidual : 0) | (epilogue.gelu ? kGelu : 0);
  // (An absent residual or pre-activation is the output, unused.)
  SmallVector<Value> args = {
      call.getOperand(0),
      call.getOperand(1),
      unranked(epilogue.output),
      unranked(epilogue.bias),
      unranked(epilogue.residual ? epilogue.residual : epilogue.output),
      unranked(epilogue.gelu ? epilogue.preActivation : epilogue.output)};
  // m, n, k, transA, transB.
  for (unsigned i : {4u, 5u, 6u, 7u, 8u})
    args.push_back(call.getOperand(i));
  args.push_back(arith::ConstantOp::create(builder, loc,
                                           builder.getI32IntegerAttr(flags)));
  func::FuncOp callee =
      train::getLibraryFunction(call->getParentOfType<ModuleOp>(),
                                kEpilogueFunction, ValueRange(args).getTypes());
  // It writes D and P; A, B, the bias and R it only reads.
  callee->setAttr(train::kWrittenOperandsAttrName,
                  builder.getDenseI64ArrayAttr({2, 5}));
  func::CallOp::create(builder, loc, callee, args);
  Value product = train::getRootBuffer(getRanked(call, 2));
  Operation *productCast = call.getOperand(2).getDefiningOp();
  if (epilogue.gelu)
    epilogue.gelu->erase();
  epilogue.biasAdd->erase();
  call->erase();
  if (productCast->use_empty())
    productCast->erase();
  // The product's buffer, when only views and its free are left. (Each
  // user once: an op may use the buffer twice.)
  SetVector<Operation *> frees, views;
  bool dead = true;
  train::forEachBufferUse(product, [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    if (isa<memref::DeallocOp>(owner))
      frees.insert(owner);
    else if (isa<ViewLikeOpInterface>(owner))
      views.insert(owner);
    else
      dead = false;
  });
  if (!dead)
    return;
  for (Operation *free : frees)
    free->erase();
  // The views of views first (found after the views they view).
  for (Operation *view : llvm::reverse(views))
    if (view->use_empty())
      view->erase();
  if (Operation *alloc = product.getDefiningOp(); alloc && alloc->use_empty())
    alloc->erase();
}

namespace {
struct DistMatmulEpiloguesPass
    : public mlir::train::impl::DistMatmulEpiloguesPassBase<
          DistMatmulEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls)
      if (std::optional<Epilogue> epilogue = matchEpilogue(call))
        rewrite(*epilogue);
  }
};
} // namespace
