//===- AnnotateMirrored.cpp - MirroredStrategy annotations and pipeline ---===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTANNOTATEMIRROREDPASS
#define GEN_PASS_DEF_DISTANNOTATEMULTIWORKERMIRROREDPASS
#define GEN_PASS_DEF_DISTANNOTATEZEROPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// Returns the mesh `name` of `module` with `axes` and `shape`, creating it at
/// the top of the module when missing; fails when one with that name has
/// another shape.
static FailureOr<MeshOp> getOrCreateMesh(ModuleOp module, StringRef name,
                                         ArrayRef<StringRef> axes,
                                         ArrayRef<int64_t> shape,
                                         ArrayRef<StringRef> hostAxes) {
  OpBuilder builder(module.getContext());
  auto names = [&](ArrayRef<StringRef> list) {
    SmallVector<Attribute> attrs;
    for (StringRef axis : list)
      attrs.push_back(builder.getStringAttr(axis));
    return builder.getArrayAttr(attrs);
  };
  ArrayAttr axesAttr = names(axes);
  if (auto mesh = module.lookupSymbol<MeshOp>(name)) {
    if (mesh.getAxes() != axesAttr || mesh.getShape() != shape)
      return mesh.emitOpError("exists with another shape than the strategy's ")
             << axesAttr << " x " << builder.getDenseI64ArrayAttr(shape);
    return mesh;
  }
  builder.setInsertionPointToStart(module.getBody());
  return MeshOp::create(builder, module.getLoc(), name, axesAttr,
                        builder.getDenseI64ArrayAttr(shape),
                        hostAxes.empty() ? nullptr : names(hostAxes), nullptr,
                        nullptr);
}

/// Annotates every training step for data parallelism over `batchAxes` of
/// `mesh` (`replicas` devices in all): batch arguments split along dim 0,
/// everything else replicated.
static LogicalResult annotateDataParallel(ModuleOp module, MeshOp mesh,
                                          ArrayRef<int64_t> batchAxes,
                                          int64_t replicas) {
  TensorSharding batchSharding;
  bool failedAny = false;
  module.walk([&](func::FuncOp func) {
    if (!train::TrainingStep::isTrainingStep(func))
      return;
    train::TrainingStep step = train::TrainingStep::get(func);
    for (const train::StepValue &arg : step.arguments) {
      auto type = dyn_cast<RankedTensorType>(arg.type);
      if (!type)
        continue;
      bool batch =
          arg.role == train::Role::input || arg.role == train::Role::label;
      TensorSharding sharding = TensorSharding::replicated(type.getRank());
      if (batch) {
        if (type.getRank() == 0 || type.getDimSize(0) % replicas) {
          func.emitOpError("argument #")
              << arg.index << " '" << arg.name.getValue() << "' ("
              << train::stringifyRole(*arg.role) << ") has "
              << (type.getRank() == 0
                      ? std::string("no batch dim")
                      : "batch " + std::to_string(type.getDimSize(0)))
              << ", which does not divide over " << replicas << " replicas";
          failedAny = true;
          return;
        }
        sharding.dims[0].assign(batchAxes.begin(), batchAxes.end());
      }
      func.setArgAttr(arg.index, DistDialect::kShardingAttrName,
                      toShardingAttr(sharding, mesh));
    }
    for (const train::StepValue &result : step.results)
      if (auto type = dyn_cast<RankedTensorType>(result.type))
        func.setResultAttr(
            result.index, DistDialect::kShardingAttrName,
            toShardingAttr(TensorSharding::replicated(type.getRank()), mesh));
  });
  return failure(failedAny);
}

namespace {
struct DistAnnotateMirroredPass
    : public mlir::dist::impl::DistAnnotateMirroredPassBase<
          DistAnnotateMirroredPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (replicas < 1) {
      module.emitError("dist-annotate-mirrored needs replicas >= 1, got ")
          << replicas;
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", {"data"}, {replicas}, {});
    if (failed(mesh) || failed(annotateDataParallel(module, *mesh, {0},
                                                    replicas)))
      return signalPassFailure();
  }
};

struct DistAnnotateMultiWorkerMirroredPass
    : public mlir::dist::impl::DistAnnotateMultiWorkerMirroredPassBase<
          DistAnnotateMultiWorkerMirroredPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (hosts < 1 || devices < 1) {
      module.emitError("dist-annotate-multi-worker-mirrored needs hosts >= 1 "
                       "and devices >= 1, got ")
          << hosts << " and " << devices;
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh = getOrCreateMesh(
        module, "mesh", {"hosts", "devices"}, {hosts, devices}, {"hosts"});
    if (failed(mesh) || failed(annotateDataParallel(module, *mesh, {0, 1},
                                                    hosts * devices)))
      return signalPassFailure();
  }
};
/// Inserts `dist.annotate` of `value` with `sharding` before `user` and makes
/// `user` use it.
static void annotateUse(OpOperand &use, ShardingAttr sharding) {
  OpBuilder builder(use.getOwner());
  auto annotate = AnnotateOp::create(builder, use.getOwner()->getLoc(),
                                     use.get(), sharding);
  use.set(annotate);
}

/// Applies ZeRO `stage` to the parameter `param` (an argument) that the
/// optimizer update defining result `updated` of `func` updates.
static void shardParameter(func::FuncOp func, MeshOp mesh, int64_t stage,
                           int64_t replicas, const train::TrainingStep &step,
                           const train::StepValue &param,
                           const train::StepValue &updated) {
  auto type = cast<RankedTensorType>(param.type);
  Value arg = func.getArgument(param.index);
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  Value returned = ret.getOperand(updated.index);
  auto update = returned.getDefiningOp<train::OptimizerOpInterface>();
  if (returned == arg)
    return; // Returned unchanged: nothing to update.
  if (!update || update.getNewParam() != returned ||
      update.getParam() != arg) {
    func.emitRemark("parameter '")
        << param.name.getValue()
        << "' stays replicated: its result is not the update of the "
           "argument by an optimizer op";
    return;
  }
  std::optional<int64_t> dim;
  for (int64_t d = 0; d < type.getRank() && !dim; ++d)
    if (type.getDimSize(d) % replicas == 0)
      dim = d;
  if (!dim) {
    func.emitRemark("parameter '")
        << param.name.getValue() << "' of type " << type
        << " stays replicated: no dim divides over " << replicas
        << " replicas";
    return;
  }
  TensorSharding split = TensorSharding::replicated(type.getRank());
  split.dims[*dim].push_back(0);
  ShardingAttr sharded = toShardingAttr(split, mesh);
  ShardingAttr whole =
      toShardingAttr(TensorSharding::replicated(type.getRank()), mesh);

  SmallVector<Value> state = update.getParamShapedState();
  Value grad = update.getGrad();
  for (OpOperand &operand : update->getOpOperands()) {
    Value value = operand.get();
    if (value == arg) {
      annotateUse(operand, sharded);
      continue;
    }
    if (value == grad) {
      // Whole then sliced (stage 1) or reduce-scattered (stages 2, 3).
      if (stage == 1)
        annotateUse(operand, whole);
      annotateUse(operand, sharded);
      continue;
    }
    if (!llvm::is_contained(state, value))
      continue;
    // Optimizer state of this parameter: sharded at the boundary when it is
    // an argument (and so is its returned update), else where it is used.
    auto blockArg = dyn_cast<BlockArgument>(value);
    if (!blockArg || blockArg.getOwner()->getParentOp() != func) {
      annotateUse(operand, sharded);
      continue;
    }
    const train::StepValue &stateArg = step.arguments[blockArg.getArgNumber()];
    func.setArgAttr(stateArg.index, DistDialect::kShardingAttrName, sharded);
    for (const train::StepValue &result : step.results)
      if (result.name && result.name == stateArg.name)
        func.setResultAttr(result.index, DistDialect::kShardingAttrName,
                           sharded);
  }
  if (stage < 3)
    return;
  func.setArgAttr(param.index, DistDialect::kShardingAttrName, sharded);
  func.setResultAttr(updated.index, DistDialect::kShardingAttrName, sharded);
  SmallVector<OpOperand *> otherUses;
  for (OpOperand &use : arg.getUses())
    if (use.getOwner() != update && !isa<AnnotateOp>(use.getOwner()))
      otherUses.push_back(&use);
  for (OpOperand *use : otherUses)
    annotateUse(*use, whole);
}

namespace {
struct DistAnnotateZeroPass
    : public mlir::dist::impl::DistAnnotateZeroPassBase<DistAnnotateZeroPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (replicas < 1 || stage < 1 || stage > 3) {
      module.emitError("dist-annotate-zero needs stage 1, 2 or 3 and "
                       "replicas >= 1, got stage ")
          << stage << " and replicas " << replicas;
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh =
        getOrCreateMesh(module, "mesh", {"data"}, {replicas}, {});
    if (failed(mesh) ||
        failed(annotateDataParallel(module, *mesh, {0}, replicas)))
      return signalPassFailure();
    module.walk([&](func::FuncOp func) {
      if (!train::TrainingStep::isTrainingStep(func))
        return;
      train::TrainingStep step = train::TrainingStep::get(func);
      for (const train::StepValue &result : step.results) {
        if (result.role != train::Role::param)
          continue;
        for (const train::StepValue &arg : step.arguments)
          if (arg.role == train::Role::param && arg.name == result.name &&
              isa<RankedTensorType>(arg.type))
            shardParameter(func, *mesh, stage, replicas, step, arg, result);
      }
    });
  }
};
} // namespace

struct MirroredPipelineOptions
    : public PassPipelineOptions<MirroredPipelineOptions> {
  Option<int64_t> replicas{*this, "replicas",
                           llvm::cl::desc("Number of data-parallel replicas")};
  Option<double> bucketMb{*this, "bucket-mb",
                          llvm::cl::desc("Gradient bucket capacity in MiB"),
                          llvm::cl::init(25.0)};
  Option<double> firstBucketMb{
      *this, "first-bucket-mb",
      llvm::cl::desc("Capacity of the first gradient bucket in MiB"),
      llvm::cl::init(1.0)};
};
} // namespace

struct MultiWorkerPipelineOptions
    : public PassPipelineOptions<MultiWorkerPipelineOptions> {
  Option<int64_t> hosts{*this, "hosts", llvm::cl::desc("Number of hosts")};
  Option<int64_t> devices{*this, "devices",
                          llvm::cl::desc("Devices per host")};
  Option<double> bucketMb{*this, "bucket-mb",
                          llvm::cl::desc("Gradient bucket capacity in MiB"),
                          llvm::cl::init(25.0)};
  Option<double> firstBucketMb{
      *this, "first-bucket-mb",
      llvm::cl::desc("Capacity of the first gradient bucket in MiB"),
      llvm::cl::init(1.0)};
};

struct ZeroPipelineOptions : public PassPipelineOptions<ZeroPipelineOptions> {
  Option<int64_t> stage{*this, "stage", llvm::cl::desc("ZeRO stage: 1, 2 or 3"),
                        llvm::cl::init(1)};
  Option<int64_t> replicas{*this, "replicas",
                           llvm::cl::desc("Number of data-parallel replicas")};
  Option<double> bucketMb{*this, "bucket-mb",
                          llvm::cl::desc("Gradient bucket capacity in MiB"),
                          llvm::cl::init(25.0)};
  Option<double> firstBucketMb{
      *this, "first-bucket-mb",
      llvm::cl::desc("Capacity of the first gradient bucket in MiB"),
      llvm::cl::init(1.0)};
};

void mlir::dist::registerStrategyPipelines() {
  PassPipelineRegistration<ZeroPipelineOptions>(
      "dist-zero",
      "ZeRO: data parallelism with sharded optimizer state (stage 1), "
      "gradients (stage 2) and parameters (stage 3)",
      [](OpPassManager &pm, const ZeroPipelineOptions &options) {
        pm.addPass(createDistAnnotateZeroPass(
            DistAnnotateZeroPassOptions{options.stage, options.replicas}));
        pm.addPass(createDistPropagateShardingPass());
        pm.addPass(createDistPartitionPass());
        pm.addPass(createDistBucketCollectivesPass(
            DistBucketCollectivesPassOptions{options.bucketMb,
                                             options.firstBucketMb}));
      });
  PassPipelineRegistration<MirroredPipelineOptions>(
      "dist-mirrored",
      "MirroredStrategy: annotate (batch split over `replicas`, state "
      "replicated), propagate shardings, partition, bucket the gradient "
      "all-reduces",
      [](OpPassManager &pm, const MirroredPipelineOptions &options) {
        pm.addPass(createDistAnnotateMirroredPass(
            DistAnnotateMirroredPassOptions{options.replicas}));
        pm.addPass(createDistPropagateShardingPass());
        pm.addPass(createDistPartitionPass());
        pm.addPass(createDistBucketCollectivesPass(
            DistBucketCollectivesPassOptions{options.bucketMb,
                                             options.firstBucketMb}));
      });
  PassPipelineRegistration<MultiWorkerPipelineOptions>(
      "dist-multi-worker-mirrored",
      "MultiWorkerMirroredStrategy: batch split over hosts x devices, state "
      "replicated, bucketed gradient all-reduces decomposed hierarchically "
      "(reduce-scatter within a host, all-reduce across hosts, all-gather "
      "within a host)",
      [](OpPassManager &pm, const MultiWorkerPipelineOptions &options) {
        pm.addPass(createDistAnnotateMultiWorkerMirroredPass(
            DistAnnotateMultiWorkerMirroredPassOptions{options.hosts,
                                                       options.devices}));
        pm.addPass(createDistPropagateShardingPass());
        pm.addPass(createDistPartitionPass());
        pm.addPass(createDistBucketCollectivesPass(
            DistBucketCollectivesPassOptions{options.bucketMb,
                                             options.firstBucketMb}));
        pm.addPass(createDistHierarchicalAllReducePass());
      });
}
