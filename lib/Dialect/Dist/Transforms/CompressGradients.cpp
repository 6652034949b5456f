//===- CompressGradients.cpp - reduce gradients in 16 bits ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// PyTorch DDP's fp16_compress_hook / bf16_compress_hook as a rewrite of the
// partitioned program: each float32 gradient is converted to 16 bits before
// its reduction and back to float32 after it.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTCOMPRESSGRADIENTSPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// The 16-bit element type named `name`, null for any other name.
static FloatType getCompressedType(MLIRContext *context, StringRef name) {
  if (name == "bf16")
    return BFloat16Type::get(context);
  if (name == "f16")
    return Float16Type::get(context);
  return nullptr;
}

train::OptimizerOpInterface mlir::dist::getGradientUpdate(Value value) {
  // Follows elementwise single-result ops that keep the shape (a widening
  // convert, an unscaling multiply, a select of finite steps) to an
  // optimizer op.
  auto shapeOf = [](Value v) -> std::optional<ArrayRef<int64_t>> {
    if (auto type = dyn_cast<RankedTensorType>(v.getType()))
      return type.getShape();
    return std::nullopt;
  };
  std::optional<ArrayRef<int64_t>> shape = shapeOf(value);
  if (!shape)
    return nullptr;
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (OpOperand &use : current.getUses()) {
      Operation *user = use.getOwner();
      if (auto update = dyn_cast<train::OptimizerOpInterface>(user)) {
        if (update.getGrad() == current)
          return update;
        continue;
      }
      bool elementwise = isa<train::ElementwiseOpInterface>(user) ||
                         user->hasTrait<OpTrait::Elementwise>();
      if (!elementwise || user->getNumResults() != 1 ||
          !seen.insert(user).second || shapeOf(user->getResult(0)) != shape)
        continue;
      worklist.push_back(user->getResult(0));
    }
  }
  return nullptr;
}

/// Converts the float32 gradient inputs of sum reduction `op` to `type`
/// and its results back; returns how many it converted.
static unsigned compress(Operation *op, ValueRange inputs, FloatType type) {
  unsigned count = 0;
  OpBuilder builder(op);
  // The widened results follow the collective in the order of its results.
  Operation *last = op;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    Value result = op->getResult(index);
    if (!inputType || !inputType.getElementType().isF32() ||
        !getGradientUpdate(result))
      continue;
    Location loc = result.getLoc();
    builder.setInsertionPoint(op);
    Value narrow =
        train::ConvertOp::create(builder, loc, inputType.clone(type), input);
    op->setOperand(index, narrow);
    auto resultType = cast<RankedTensorType>(result.getType());
    result.setType(resultType.clone(type));
    builder.setInsertionPointAfter(last);
    auto wide = train::ConvertOp::create(builder, loc, resultType, result);
    last = wide;
    result.replaceAllUsesExcept(wide, wide);
    ++count;
  }
  return count;
}

namespace {
struct DistCompressGradientsPass
    : public mlir::dist::impl::DistCompressGradientsPassBase<
          DistCompressGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FloatType type = getCompressedType(&getContext(), dtype);
    if (!type) {
      emitOptionError(module, "dist-compress-gradients")
          << "dtype='" << dtype << "' is not a 16-bit float type: use bf16 "
          << "or f16";
      return signalPassFailure();
    }
    SmallVector<std::pair<Operation *, ValueRange>> reductions;
    module.walk([&](Operation *op) {
      if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
        if (allReduce.getReduction() == ReductionKind::sum)
          reductions.push_back({op, allReduce.getInputs()});
      } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
        if (scatter.getReduction() == ReductionKind::sum)
          reductions.push_back({op, scatter.getInputs()});
      }
    });
    unsigned count = 0;
    for (auto [op, inputs] : reductions)
      count += compress(op, inputs, type);
    if (count == 0)
      mlir::emitWarning(getOptionLocation(module))
          << "dist-compress-gradients: no float32 gradient is reduced "
          << "across devices: nothing to compress";
  }
};
} // namespace
