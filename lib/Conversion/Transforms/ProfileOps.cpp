//===- ProfileOps.cpp - per-op profile brackets ---------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// dist-name-train-ops names every train and dist op's location after the
// op, so the ops lowered from it keep the name; dist-profile-ops brackets the
// ops that do a bufferized step's work with distrt_profile_begin/end calls and
// records, per bracket (site), the op family, its FLOPs and its bytes.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTNAMETRAINOPSPASS
#define GEN_PASS_DEF_DISTPROFILEOPSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// The runtime's profile entry points.
static constexpr StringLiteral kBegin = "distrt_profile_begin",
                               kEnd = "distrt_profile_end",
                               kProfileAttr = "distopt.profile";

/// The first name a NameLoc in `loc` gives, or "".
static StringRef getLocationName(Location loc) {
  StringRef name;
  loc->walk([&](Location nested) {
    if (auto named = dyn_cast<NameLoc>(nested)) {
      name = named.getName().getValue();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

/// The callee of `op` when it is a call of a function without a body (a
/// BLAS or runtime call), else null.
static func::FuncOp getExternalCallee(Operation *op, SymbolTable &symbols) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call)
    return nullptr;
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  return callee && callee.isExternal() ? callee : nullptr;
}

/// Whether `op`, at the top level of a function body, does a step's work.
static bool isWork(Operation *op, SymbolTable &symbols) {
  if (auto callee = getExternalCallee(op, symbols))
    return callee.getSymName() != kBegin && callee.getSymName() != kEnd;
  return isa<linalg::LinalgOp, memref::CopyOp, scf::ForOp, scf::ParallelOp,
             scf::ForallOp, scf::WhileOp, affine::AffineForOp>(op);
}

/// The bytes of `value` when it is a statically shaped buffer, else 0.
static int64_t getBufferBytes(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape() ||
      !type.getElementType().isIntOrIndexOrFloat())
    return 0;
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// FLOPs and bytes of `op`: a linalg op's float arithmetic per iteration
/// times its iterations, and its buffers' sizes; a copy moves both its
/// buffers; anything else counts 0.
static std::pair<int64_t, int64_t> getCost(Operation *op) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return {0, getBufferBytes(copy.getSource()) +
                   getBufferBytes(copy.getTarget())};
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return {0, 0};
  int64_t bytes = 0;
  for (Value operand : op->getOperands())
    bytes += getBufferBytes(operand);
  int64_t iterations = 1;
  for (int64_t range : linalgOp.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return {0, bytes};
    iterations *= range;
  }
  int64_t perIteration = 0;
  if (!op->getRegions().empty() && !op->getRegion(0).empty())
    for (Operation &inner : op->getRegion(0).front())
      if (inner.getNumResults() == 1 &&
          isa<FloatType>(inner.getResult(0).getType()) &&
          isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()) &&
          !isa<arith::ConstantOp>(inner))
        ++perIteration;
  return {iterations * perIteration, bytes};
}

namespace {
struct DistNameTrainOpsPass
    : public train::impl::DistNameTrainOpsPassBase<DistNameTrainOpsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    getOperation().walk([&](Operation *op) {
      if (isa<train::TrainDialect, dist::DistDialect>(op->getDialect()) &&
          getLocationName(op->getLoc()).empty())
        op->setLoc(
            NameLoc::get(StringAttr::get(context, op->getName().getStringRef()),
                         op->getLoc()));
    });
  }
};

struct DistProfileOpsPass
    : public train::impl::DistProfileOpsPassBase<DistProfileOpsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SymbolTable symbols(module);
    OpBuilder builder(context);
    Type i64 = builder.getI64Type();
    // The runtime's functions, declared once.
    for (StringRef name : {kBegin, kEnd}) {
      if (symbols.lookup(name))
        continue;
      builder.setInsertionPointToEnd(module.getBody());
      auto decl = func::FuncOp::create(builder, module.getLoc(), name,
                                       builder.getFunctionType({i64}, {}));
      decl.setPrivate();
      symbols.insert(decl);
    }
    SmallVector<Attribute> sites;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      for (Block &block : func.getBody()) {
        SmallVector<Operation *> work;
        for (Operation &op : block.without_terminator())
          if (isWork(&op, symbols))
            work.push_back(&op);
        for (Operation *op : work) {
          auto [flops, bytes] = getCost(op);
          StringRef family = getLocationName(op->getLoc());
          std::string fallback;
          if (family.empty()) {
            auto callee = getExternalCallee(op, symbols);
            fallback = callee ? callee.getSymName().str()
                              : op->getName().getStringRef().str();
            family = fallback;
          }
          NamedAttrList fields;
          fields.set("family", builder.getStringAttr(family));
          fields.set("flops", builder.getI64IntegerAttr(flops));
          fields.set("bytes", builder.getI64IntegerAttr(bytes));
          if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
            fields.set("loops", builder.getDenseI64ArrayAttr(
                                    linalgOp.getStaticLoopRanges()));
          sites.push_back(fields.getDictionary(context));
          Location loc = op->getLoc();
          builder.setInsertionPoint(op);
          Value site = arith::ConstantOp::create(
              builder, loc, builder.getI64IntegerAttr(sites.size() - 1));
          func::CallOp::create(builder, loc, kBegin, TypeRange{},
                               ValueRange{site});
          builder.setInsertionPointAfter(op);
          func::CallOp::create(builder, loc, kEnd, TypeRange{},
                               ValueRange{site});
        }
      }
    }
    module->setAttr(kProfileAttr, ArrayAttr::get(context, sites));
  }
};
} // namespace
