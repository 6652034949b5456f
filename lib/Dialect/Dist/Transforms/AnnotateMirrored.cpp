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

void mlir::dist::registerStrategyPipelines() {
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
