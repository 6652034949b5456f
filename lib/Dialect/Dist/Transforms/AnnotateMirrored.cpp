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
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// Returns the mesh `name` of `module` with `axes` and `shape`, creating it at
/// the top of the module when missing; fails when one with that name has
/// another shape.
static FailureOr<MeshOp> getOrCreateMesh(ModuleOp module, StringRef name,
                                         ArrayRef<StringRef> axes,
                                         ArrayRef<int64_t> shape) {
  OpBuilder builder(module.getContext());
  SmallVector<Attribute> axisAttrs;
  for (StringRef axis : axes)
    axisAttrs.push_back(builder.getStringAttr(axis));
  ArrayAttr axesAttr = builder.getArrayAttr(axisAttrs);
  if (auto mesh = module.lookupSymbol<MeshOp>(name)) {
    if (mesh.getAxes() != axesAttr || mesh.getShape() != shape)
      return mesh.emitOpError("exists with another shape than the strategy's ")
             << axesAttr << " x " << builder.getDenseI64ArrayAttr(shape);
    return mesh;
  }
  builder.setInsertionPointToStart(module.getBody());
  return MeshOp::create(builder, module.getLoc(), name, axesAttr,
                        builder.getDenseI64ArrayAttr(shape), nullptr, nullptr,
                        nullptr);
}

/// A sharding of a rank-`rank` tensor on `mesh` with `dims` split over the
/// given axes.
static ShardingAttr makeSharding(MeshOp mesh, int64_t rank,
                                 ArrayRef<std::pair<int64_t, int64_t>> dims) {
  TensorSharding sharding = TensorSharding::replicated(rank);
  for (auto [dim, axis] : dims)
    sharding.dims[dim].push_back(axis);
  return toShardingAttr(sharding, mesh);
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
        getOrCreateMesh(module, "mesh", {"data"}, {replicas});
    if (failed(mesh))
      return signalPassFailure();
    bool failedAny = false;
    module.walk([&](func::FuncOp func) {
      if (!train::TrainingStep::isTrainingStep(func))
        return;
      train::TrainingStep step = train::TrainingStep::get(func);
      for (const train::StepValue &arg : step.arguments) {
        auto type = dyn_cast<RankedTensorType>(arg.type);
        if (!type)
          continue;
        bool batch = arg.role == train::Role::input ||
                     arg.role == train::Role::label;
        if (batch && type.getRank() == 0) {
          func.emitOpError("argument #")
              << arg.index << " is a scalar " << train::stringifyRole(*arg.role)
              << "; mirrored splits batch arguments along dim 0";
          failedAny = true;
          return;
        }
        ShardingAttr sharding =
            batch ? makeSharding(*mesh, type.getRank(), {{0, 0}})
                  : makeSharding(*mesh, type.getRank(), {});
        if (batch && type.getDimSize(0) % replicas) {
          func.emitOpError("argument #")
              << arg.index << " '" << arg.name.getValue() << "' has batch "
              << type.getDimSize(0) << ", which does not divide over "
              << replicas << " replicas";
          failedAny = true;
          return;
        }
        func.setArgAttr(arg.index, DistDialect::kShardingAttrName, sharding);
      }
      for (const train::StepValue &result : step.results)
        if (auto type = dyn_cast<RankedTensorType>(result.type))
          func.setResultAttr(result.index, DistDialect::kShardingAttrName,
                             makeSharding(*mesh, type.getRank(), {}));
    });
    if (failedAny)
      signalPassFailure();
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
}
