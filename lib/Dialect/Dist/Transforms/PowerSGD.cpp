//===- PowerSGD.cpp - low-rank gradient all-reduce with error feedback ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// PowerSGD (Vogels et al. 2019) as PyTorch's powerSGD_hook runs it, as a
// rewrite of the partitioned step: each large gradient matrix is all-reduced
// as two thin factors, with the compression error fed back into the next
// step and the right factor kept across steps (warm start). Both are
// optimizer state of the step.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTPOWERSGDPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// Added to each column norm before dividing by it: a zero column (a zero
/// gradient) stays zero instead of becoming NaN.
static constexpr double kEpsilon = 1e-8;

namespace {
/// One gradient to compress: input `index` of `allReduce`, the gradient of
/// the parameter named `name`.
struct Candidate {
  AllReduceOp allReduce;
  unsigned index;
  StringAttr name;
};

/// Builds the compressed reduction of the candidates of one step.
class Compressor {
public:
  Compressor(func::FuncOp func, int64_t rank)
      : func(func), rank(rank), builder(func.getContext()) {}

  /// Replaces the all-reduce of candidate `c` by PowerSGD's.
  void compress(const Candidate &c);

private:
  Value scalar(Location loc, double value) {
    auto type = RankedTensorType::get({}, builder.getF32Type());
    return train::ConstantOp::create(
        builder, loc, type,
        DenseElementsAttr::get(type, builder.getF32FloatAttr(value)));
  }
  /// The sum of all elements of `value`.
  Value sumAll(Location loc, Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    auto dims = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    return train::ReduceOp::create(
        builder, loc, RankedTensorType::get({}, type.getElementType()), value,
        train::ReduceKindAttr::get(builder.getContext(),
                                   train::ReduceKind::sum),
        builder.getDenseI64ArrayAttr(dims));
  }
  /// Orthonormalizes the columns of `p` (n x rank) by modified
  /// Gram-Schmidt, unrolled over the columns.
  Value orthogonalize(Location loc, Value p);
  /// Appends an opt_state argument `name` of `type` (split by `sharding`)
  /// with initial value `init`, and its result; returns the argument.
  Value addState(StringRef name, RankedTensorType type, ShardingAttr sharding,
                 Attribute init);

  func::FuncOp func;
  int64_t rank;
  OpBuilder builder;
  SmallVector<Value> newResults;

public:
  /// Returns the updated state (Q and the error of each candidate).
  ArrayRef<Value> getNewResults() const { return newResults; }
};
} // namespace

Value Compressor::addState(StringRef name, RankedTensorType type,
                           ShardingAttr sharding, Attribute init) {
  MLIRContext *context = func.getContext();
  NamedAttrList attrs;
  attrs.set(train::TrainDialect::kRoleAttrName,
            train::RoleAttr::get(context, train::Role::opt_state));
  attrs.set(train::TrainDialect::kNameAttrName, builder.getStringAttr(name));
  attrs.set(DistDialect::kShardingAttrName, sharding);
  NamedAttrList resultAttrs = attrs;
  attrs.set(train::TrainDialect::kInitAttrName, init);
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, attrs.getDictionary(context),
                            func.getLoc());
  (void)func.insertResult(func.getNumResults(), type,
                          resultAttrs.getDictionary(context));
  return func.getArgument(index);
}

Value Compressor::orthogonalize(Location loc, Value p) {
  auto type = cast<RankedTensorType>(p.getType());
  int64_t n = type.getDimSize(0);
  auto columnType = RankedTensorType::get({n, 1}, type.getElementType());
  SmallVector<Value> columns;
  for (int64_t i = 0; i < rank; ++i)
    columns.push_back(train::SliceOp::create(
        builder, loc, columnType, p, builder.getDenseI64ArrayAttr({0, i}),
        builder.getDenseI64ArrayAttr({n, i + 1}), nullptr));
  Value epsilon = scalar(loc, kEpsilon);
  for (int64_t i = 0; i < rank; ++i) {
    Value squares = train::MulOp::create(builder, loc, columns[i], columns[i]);
    Value norm = train::SqrtOp::create(builder, loc, sumAll(loc, squares));
    Value divisor = train::AddOp::create(builder, loc, norm, epsilon);
    columns[i] = train::DivOp::create(builder, loc, columns[i], divisor);
    for (int64_t j = i + 1; j < rank; ++j) {
      Value products =
          train::MulOp::create(builder, loc, columns[i], columns[j]);
      Value projection =
          train::MulOp::create(builder, loc, columns[i], sumAll(loc, products));
      columns[j] = train::SubOp::create(builder, loc, columns[j], projection);
    }
  }
  if (rank == 1)
    return columns[0];
  return train::ConcatOp::create(builder, loc, type, columns,
                                 builder.getI64IntegerAttr(1));
}

void Compressor::compress(const Candidate &c) {
  AllReduceOp op = c.allReduce;
  Location loc = op.getLoc();
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  int64_t world = mesh.getGroupSize(op.getAxes());
  Value grad = op.getInputs()[c.index];
  // A mixed step's 16-bit gradient is compressed in float32 (its error and
  // Q are float32) and rounded back to its type for its users.
  auto gradType = cast<RankedTensorType>(grad.getType());
  auto type = gradType.clone(builder.getF32Type());
  int64_t n = type.getDimSize(0);
  int64_t m = type.getNumElements() / n;
  Type f32 = builder.getF32Type();
  auto matrixType = RankedTensorType::get({n, m}, f32);

  // The state: Q (m x rank, the same on every device) and this device's
  // error (the gradient's local shape, so the global array stacks the
  // devices' errors along dim 0).
  TensorSharding errorSharding = TensorSharding::replicated(type.getRank());
  for (Attribute axis : op.getAxes())
    errorSharding.dims[0].push_back(
        *mesh.getAxisIndex(cast<StringAttr>(axis).getValue()));
  auto qType = RankedTensorType::get({m, rank}, f32);
  Value q = addState((c.name.getValue() + ".powersgd.q").str(), qType,
                     toShardingAttr(TensorSharding::replicated(2), mesh),
                     builder.getStringAttr("normal"));
  Value error = addState((c.name.getValue() + ".powersgd.error").str(), type,
                         toShardingAttr(errorSharding, mesh),
                         builder.getF64FloatAttr(0.0));

  builder.setInsertionPoint(op);
  auto reduce = [&](Value value) {
    return AllReduceOp::create(builder, loc, TypeRange{value.getType()},
                               ValueRange{value}, op.getReductionAttr(),
                               op.getMeshAttr(), op.getAxes())
        ->getResult(0);
  };
  // M = G + E, as a matrix.
  if (gradType != type)
    grad = train::ConvertOp::create(builder, loc, type, grad);
  Value full = train::AddOp::create(builder, loc, grad, error);
  Value matrix = type.getRank() == 2
                     ? full
                     : train::ReshapeOp::create(builder, loc, matrixType, full)
                           .getResult();
  // P = orth(allreduce(M Q)); Q = allreduce(M^T P); G' = P Q^T.
  auto pType = RankedTensorType::get({n, rank}, f32);
  Value p =
      train::MatmulOp::create(builder, loc, pType, matrix, q, nullptr, nullptr);
  p = orthogonalize(loc, reduce(p));
  Value newQ = train::MatmulOp::create(builder, loc, qType, matrix, p,
                                       builder.getUnitAttr(), nullptr);
  newQ = reduce(newQ);
  Value approx = train::MatmulOp::create(builder, loc, matrixType, p, newQ,
                                         nullptr, builder.getUnitAttr());
  if (type.getRank() != 2)
    approx = train::ReshapeOp::create(builder, loc, type, approx);
  // E = M - G' / world: the gradients are divided by the devices before
  // the reduction, so G' is the sum PyTorch divides by the world size
  // and each device keeps the error of its own share.
  Value share = train::MulOp::create(builder, loc, approx,
                                     scalar(loc, 1.0 / double(world)));
  Value newError = train::SubOp::create(builder, loc, full, share);
  newResults.push_back(newQ);
  newResults.push_back(newError);

  // The all-reduce keeps its other inputs.
  if (gradType != type)
    approx = train::ConvertOp::create(builder, loc, gradType, approx);
  op.getResult(c.index).replaceAllUsesWith(approx);
}

/// Rebuilds `op` without the inputs that `compressed` lists.
static void dropInputs(AllReduceOp op, ArrayRef<unsigned> compressed) {
  SmallVector<Value> inputs;
  SmallVector<Value> kept;
  for (auto [index, input] : llvm::enumerate(op.getInputs()))
    if (!llvm::is_contained(compressed, index)) {
      inputs.push_back(input);
      kept.push_back(op.getResult(index));
    }
  if (!inputs.empty()) {
    OpBuilder builder(op);
    auto fused = AllReduceOp::create(
        builder, op.getLoc(), ValueRange(inputs).getTypes(), inputs,
        op.getReductionAttr(), op.getMeshAttr(), op.getAxes());
    for (auto [old, now] : llvm::zip(kept, fused.getResults()))
      old.replaceAllUsesWith(now);
  }
  op.erase();
}

namespace {
struct DistPowerSGDPass
    : public mlir::dist::impl::DistPowerSGDPassBase<DistPowerSGDPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (rank < 1) {
      emitOptionError(module, "dist-powersgd")
          << "rank=" << int64_t(rank) << " must be at least 1";
      return signalPassFailure();
    }
    if (!(minCompressionRate >= 1)) {
      emitOptionError(module, "dist-powersgd")
          << "min-compression-rate=" << double(minCompressionRate)
          << " must be at least 1";
      return signalPassFailure();
    }
    bool failedAny = false, compressedAny = false;
    module.walk([&](func::FuncOp func) {
      if (failedAny || !func->hasAttr(DistDialect::kPartitionedAttrName) ||
          !train::TrainingStep::isTrainingStep(func))
        return;
      if (failed(runOnStep(func, compressedAny)))
        failedAny = true;
    });
    if (failedAny)
      return signalPassFailure();
    if (!compressedAny)
      mlir::emitWarning(getOptionLocation(module))
          << "dist-powersgd: no all-reduced gradient matrix is large enough "
          << "to compress at rank=" << int64_t(rank) << ": every gradient is "
          << "all-reduced whole";
  }

  LogicalResult runOnStep(func::FuncOp func, bool &compressedAny) {
    SmallVector<Candidate> candidates;
    WalkResult walk = func.walk([&](Operation *op) {
      if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
        for (Value result : scatter.getResults())
          if (getGradientUpdate(result)) {
            op->emitError("dist-powersgd: this gradient is reduce-scattered "
                          "(ZeRO stage 2 or 3); PowerSGD compresses "
                          "all-reduced gradients");
            return WalkResult::interrupt();
          }
        return WalkResult::advance();
      }
      auto allReduce = dyn_cast<AllReduceOp>(op);
      if (!allReduce || allReduce.getReduction() != ReductionKind::sum)
        return WalkResult::advance();
      if (op->getParentOp() != func) {
        op->emitError("dist-powersgd: a gradient all-reduce inside a region "
                      "(a pipeline stage) is not supported");
        return WalkResult::interrupt();
      }
      for (auto [index, input] : llvm::enumerate(allReduce.getInputs()))
        if (std::optional<StringAttr> name =
                getCompressible(func, input, allReduce.getResult(index)))
          candidates.push_back({allReduce, unsigned(index), *name});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    for (const Candidate &c : candidates)
      for (StringRef suffix : {".powersgd.q", ".powersgd.error"}) {
        std::string name = (c.name.getValue() + suffix).str();
        for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
          if (auto other = func.getArgAttrOfType<StringAttr>(
                  i, train::TrainDialect::kNameAttrName);
              other && other.getValue() == name)
            return emitError(func.getLoc())
                   << "dist-powersgd: step '" << func.getSymName()
                   << "' already has an argument '" << name
                   << "': PowerSGD names its state so";
      }
    Compressor compressor(func, rank);
    for (const Candidate &c : candidates)
      compressor.compress(c);
    // The all-reduces lose their compressed inputs.
    llvm::MapVector<Operation *, SmallVector<unsigned>> byOp;
    for (const Candidate &c : candidates)
      byOp[c.allReduce].push_back(c.index);
    for (auto &[op, indices] : byOp)
      dropInputs(cast<AllReduceOp>(op), indices);
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    ret->insertOperands(ret->getNumOperands(), compressor.getNewResults());
    compressedAny |= !candidates.empty();
    return success();
  }

  /// The name of the parameter whose gradient `input` (all-reduced into
  /// `result`) is, when PowerSGD compresses it: a float32 (or, in a mixed
  /// step, 16-bit) gradient of rank 2 or more whose factors are at most
  /// 1/min-compression-rate of it.
  std::optional<StringAttr> getCompressible(func::FuncOp func, Value input,
                                            Value result) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || type.getRank() < 2 ||
        !(type.getElementType().isF32() || type.getElementType().isBF16() ||
          type.getElementType().isF16()))
      return std::nullopt;
    train::OptimizerOpInterface update = getGradientUpdate(result);
    if (!update)
      return std::nullopt;
    auto param = dyn_cast<BlockArgument>(update.getParam());
    if (!param || param.getOwner()->getParentOp() != func)
      return std::nullopt;
    auto name = func.getArgAttrOfType<StringAttr>(
        param.getArgNumber(), train::TrainDialect::kNameAttrName);
    if (!name)
      return std::nullopt;
    int64_t n = type.getDimSize(0), m = type.getNumElements() / n;
    // PyTorch's _should_compress.
    if (double((n + m) * rank) * minCompressionRate >= double(n * m))
      return std::nullopt;
    return name;
  }
};
} // namespace
