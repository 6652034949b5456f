//===- Pipelines.cpp - one-flag strategy pipelines ------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Each strategy is `annotate -> propagate -> partition -> buckets` (plus the
// hierarchical decomposition for multi-worker), named after tf.distribute.
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::dist;

namespace {
/// The gradient-bucket options every strategy pipeline has.
template <typename Derived>
struct BucketOptions : public PassPipelineOptions<Derived> {
  mlir::detail::PassOptions::Option<double> bucketMb{
      *this, "bucket-mb", llvm::cl::desc("Gradient bucket capacity in MiB"),
      llvm::cl::init(25.0)};
  mlir::detail::PassOptions::Option<double> firstBucketMb{
      *this, "first-bucket-mb",
      llvm::cl::desc("Capacity of the first gradient bucket in MiB"),
      llvm::cl::init(1.0)};
};

/// The gradient-communication options of the data-parallel pipelines.
template <typename Derived>
struct DataParallelOptions : public BucketOptions<Derived> {
  mlir::detail::PassOptions::Option<std::string> gradDtype{
      *this, "grad-dtype",
      llvm::cl::desc("Element type the gradients are reduced in: f32 "
                     "(unchanged), bf16 or f16 (dist-compress-gradients)"),
      llvm::cl::init("f32")};
  mlir::detail::PassOptions::Option<std::string> compression{
      *this, "compression",
      llvm::cl::desc("Gradient compression: none or powersgd (low-rank "
                     "all-reduce with error feedback, dist-powersgd)"),
      llvm::cl::init("none")};
  mlir::detail::PassOptions::Option<int64_t> powersgdRank{
      *this, "powersgd-rank",
      llvm::cl::desc("Rank of PowerSGD's approximation"), llvm::cl::init(1)};
};

struct MirroredPipelineOptions
    : public DataParallelOptions<MirroredPipelineOptions> {
  Option<int64_t> replicas{*this, "replicas",
                           llvm::cl::desc("Number of data-parallel replicas")};
};

struct MultiWorkerPipelineOptions
    : public DataParallelOptions<MultiWorkerPipelineOptions> {
  Option<int64_t> hosts{*this, "hosts", llvm::cl::desc("Number of hosts")};
  Option<int64_t> devices{*this, "devices", llvm::cl::desc("Devices per host")};
};

struct ZeroPipelineOptions : public DataParallelOptions<ZeroPipelineOptions> {
  Option<int64_t> stage{*this, "stage",
                        llvm::cl::desc("ZeRO stage (required): 1, 2 or 3")};
  Option<int64_t> replicas{*this, "replicas",
                           llvm::cl::desc("Number of data-parallel replicas")};
};

struct TensorParallelPipelineOptions
    : public BucketOptions<TensorParallelPipelineOptions> {
  Option<int64_t> size{*this, "size",
                       llvm::cl::desc("Number of tensor-parallel devices")};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Reduce-scatter / all-gather along the token dim around "
                     "the ops between blocks instead of all-reduces"),
      llvm::cl::init(false)};
  Option<bool> forceVocabParallel{
      *this, "force-vocab-parallel",
      llvm::cl::desc("Split every head over its classes, also where the "
                     "cost model keeps it replicated"),
      llvm::cl::init(false)};
};

struct HybridPipelineOptions
    : public DataParallelOptions<HybridPipelineOptions> {
  Option<int64_t> hosts{*this, "hosts",
                        llvm::cl::desc("Number of hosts (a 3-D mesh when > 1)"),
                        llvm::cl::init(1)};
  Option<int64_t> pp{*this, "pp",
                     llvm::cl::desc("Number of pipeline stages (1: none)"),
                     llvm::cl::init(1)};
  Option<int64_t> dp{*this, "dp",
                     llvm::cl::desc("Number of data-parallel replicas"),
                     llvm::cl::init(1)};
  Option<int64_t> tp{*this, "tp",
                     llvm::cl::desc("Number of tensor-parallel devices"),
                     llvm::cl::init(1)};
  Option<int64_t> zero{
      *this, "zero", llvm::cl::desc("ZeRO stage over the data axes (0: none)"),
      llvm::cl::init(0)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Microbatches per step (with pp > 1; default: pp)"),
      llvm::cl::init(0)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Pipeline schedule: gpipe, 1f1b, interleaved or zb-h1"),
      llvm::cl::init("1f1b")};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per pipeline device (interleaved)"),
      llvm::cl::init(1)};
};
} // namespace

/// The gradient compression a data-parallel pipeline's options ask for.
struct Compression {
  std::string gradDtype = "f32";
  bool powersgd = false;
  int64_t powersgdRank = 1;
};

template <typename Options>
static Compression getCompression(const Options &options) {
  return {options.gradDtype, options.compression == "powersgd",
          options.powersgdRank};
}

/// The passes `compression` asks for, before the buckets (which then count
/// the compressed bytes): PowerSGD first, then 16-bit reductions of what
/// it leaves whole.
static void addCompression(OpPassManager &pm, const Compression &compression) {
  if (compression.powersgd)
    pm.addPass(createDistPowerSGDPass(
        DistPowerSGDPassOptions{compression.powersgdRank, 2.0}));
  if (compression.gradDtype != "f32")
    pm.addPass(createDistCompressGradientsPass(
        DistCompressGradientsPassOptions{compression.gradDtype}));
}

/// Propagation, partitioning, the gradient compression asked for and
/// buckets: the tail every strategy shares.
template <typename Options>
static void addEngine(OpPassManager &pm, const Options &options,
                      const Compression &compression = {}) {
  pm.addPass(createDistPropagateShardingPass());
  pm.addPass(createDistPartitionPass());
  addCompression(pm, compression);
  pm.addPass(createDistBucketCollectivesPass(DistBucketCollectivesPassOptions{
      options.bucketMb, options.firstBucketMb}));
}

/// What every strategy pipeline ends with: the step contract.
static void addVerify(OpPassManager &pm) { pm.addPass(createDistVerifyPass()); }

/// The error of data-parallel pipeline `pipeline`'s gradient options, empty
/// when they are valid.
template <typename Options>
static std::string getCompressionError(StringRef pipeline,
                                       const Options &options) {
  StringRef dtype = options.gradDtype;
  if (dtype != "f32" && dtype != "bf16" && dtype != "f16")
    return (pipeline + ": grad-dtype='" + dtype +
            "' is not one of f32, bf16, f16")
        .str();
  StringRef compression = options.compression;
  if (compression != "none" && compression != "powersgd")
    return (pipeline + ": compression='" + compression +
            "' is not one of none, powersgd")
        .str();
  if (compression == "powersgd" && options.powersgdRank < 1)
    return (pipeline + ": powersgd-rank=" + Twine(options.powersgdRank) +
            " must be at least 1")
        .str();
  return "";
}

/// Registers data-parallel pipeline `arg`, whose gradient options are
/// checked before `builder` builds it.
template <typename Options>
static void registerDataParallelPipeline(
    StringRef arg, StringRef description,
    std::function<void(OpPassManager &, const Options &)> builder) {
  registerPassPipeline(
      arg, description,
      [arg, builder](OpPassManager &pm, StringRef text,
                     function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error = getCompressionError(arg, options);
        if (!error.empty())
          return errorHandler(error);
        builder(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

void mlir::dist::registerStrategyPipelines() {
  registerDataParallelPipeline<MirroredPipelineOptions>(
      "dist-mirrored",
      "MirroredStrategy: annotate (batch split over `replicas`, state "
      "replicated), propagate shardings, partition, bucket the gradient "
      "all-reduces (in 16 bits with grad-dtype=bf16|f16)",
      [](OpPassManager &pm, const MirroredPipelineOptions &options) {
        pm.addPass(createDistAnnotateMirroredPass(
            DistAnnotateMirroredPassOptions{options.replicas}));
        addEngine(pm, options, getCompression(options));
        addVerify(pm);
      });
  registerDataParallelPipeline<MultiWorkerPipelineOptions>(
      "dist-multi-worker-mirrored",
      "MultiWorkerMirroredStrategy: batch split over hosts x devices, state "
      "replicated, bucketed gradient all-reduces decomposed hierarchically "
      "(reduce-scatter within a host, all-reduce across hosts, all-gather "
      "within a host)",
      [](OpPassManager &pm, const MultiWorkerPipelineOptions &options) {
        pm.addPass(createDistAnnotateMultiWorkerMirroredPass(
            DistAnnotateMultiWorkerMirroredPassOptions{options.hosts,
                                                       options.devices}));
        addEngine(pm, options, getCompression(options));
        pm.addPass(createDistHierarchicalAllReducePass());
        addVerify(pm);
      });
  registerDataParallelPipeline<ZeroPipelineOptions>(
      "dist-zero",
      "ZeRO: data parallelism with sharded optimizer state (stage 1), "
      "gradients (stage 2) and parameters (stage 3)",
      [](OpPassManager &pm, const ZeroPipelineOptions &options) {
        pm.addPass(createDistAnnotateZeroPass(
            DistAnnotateZeroPassOptions{options.stage, options.replicas}));
        addEngine(pm, options, getCompression(options));
        addVerify(pm);
      });
  PassPipelineRegistration<TensorParallelPipelineOptions>(
      "dist-tensor-parallel",
      "Megatron tensor parallelism: column-then-row weight pairs over "
      "`size` devices, one all-reduce per block in forward and in backward",
      [](OpPassManager &pm, const TensorParallelPipelineOptions &options) {
        pm.addPass(createDistAnnotateTensorParallelPass(
            DistAnnotateTensorParallelPassOptions{options.size,
                                                  options.sequenceParallel,
                                                  options.forceVocabParallel}));
        addEngine(pm, options);
        addVerify(pm);
      });
  // dist-hybrid checks its options as it builds (an error, not a crash,
  // for a combination it does not build).
  registerPassPipeline(
      "dist-hybrid",
      "Data x tensor parallelism on a `dp` x `tp` mesh (`hosts` x `dp` x "
      "`tp` across hosts, hierarchical all-reduce), with an optional ZeRO "
      "stage over the data axes; with `pp` > 1, a pipeline of `pp` stages, "
      "each of them data and/or tensor parallel (a `pipe` x `dp` x `tp` "
      "mesh)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        HybridPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (options.pp < 1)
          return errorHandler("dist-hybrid: pp must be >= 1, got " +
                              Twine(options.pp));
        if (options.hosts < 1 || options.dp < 1 || options.tp < 1)
          return errorHandler("dist-hybrid: hosts, dp and tp must be >= 1, "
                              "got hosts=" +
                              Twine(options.hosts) + " dp=" +
                              Twine(options.dp) + " tp=" + Twine(options.tp));
        // The counts before anything is sized by them (the step's bounds,
        // the batch and its ops, are checked by the passes).
        std::string bound =
            getDeviceCountsError("dist-hybrid", {{"hosts", options.hosts},
                                                 {"pp", options.pp},
                                                 {"dp", options.dp},
                                                 {"tp", options.tp}});
        if (bound.empty() && options.microbatches > kMaxDevices)
          bound = ("dist-hybrid: microbatches=" + Twine(options.microbatches) +
                   " is more than " + Twine(kMaxDevices) +
                   ", the most parts a batch may be split into")
                      .str();
        if (bound.empty() && options.virtualStages > kMaxDevices)
          bound =
              ("dist-hybrid: virtual-stages=" + Twine(options.virtualStages) +
               " is more than " + Twine(kMaxDevices) +
               ", the most model chunks a device may take")
                  .str();
        if (!bound.empty())
          return errorHandler(bound);
        if (options.hosts * options.pp * options.dp * options.tp == 1)
          return errorHandler("dist-hybrid: set pp, dp and/or tp (and hosts): "
                              "the mesh has one device");
        std::string compression = getCompressionError("dist-hybrid", options);
        bool powersgd = options.compression == "powersgd";
        if (compression.empty() && (options.gradDtype != "f32" || powersgd) &&
            options.hosts * options.dp == 1)
          compression =
              "dist-hybrid: " +
              (powersgd ? std::string("compression=powersgd")
                        : "grad-dtype=" + std::string(options.gradDtype)) +
              " compresses the data-parallel gradient reductions, "
              "but hosts=1 dp=1 has no data axis";
        if (compression.empty() && powersgd &&
            (options.tp > 1 || options.pp > 1 || options.zero > 0))
          compression = "dist-hybrid: compression=powersgd compresses "
                        "all-reduced gradients of data parallelism alone; "
                        "not with tp, pp or zero (got tp=" +
                        std::to_string(options.tp) +
                        " pp=" + std::to_string(options.pp) +
                        " zero=" + std::to_string(options.zero) + ")";
        if (!compression.empty())
          return errorHandler(compression);
        if (options.pp == 1) {
          pm.addPass(createDistAnnotateHybridPass(DistAnnotateHybridPassOptions{
              options.hosts, options.dp, options.tp, options.zero}));
          addEngine(pm, options, getCompression(options));
          pm.addPass(createDistHierarchicalAllReducePass());
          addVerify(pm);
          return success();
        }
        if (options.hosts != 1)
          return errorHandler(
              "dist-hybrid: pp > 1 runs on one mesh of pp x dp x tp "
              "devices; hosts=" +
              Twine(options.hosts) +
              " (a hierarchical data axis inside each stage) is not "
              "supported with a pipeline: fold the hosts into dp");
        pm.addPass(createDistPipelinePass(DistPipelinePassOptions{
            options.pp,
            options.microbatches > 0 ? options.microbatches : options.pp,
            options.schedule, options.virtualStages, options.dp, options.tp,
            options.zero}));
        addCompression(pm, getCompression(options));
        pm.addPass(
            createDistBucketCollectivesPass(DistBucketCollectivesPassOptions{
                options.bucketMb, options.firstBucketMb}));
        addVerify(pm);
        // What placed the programs is the whole strategy: a pass that
        // rewrites the step places it again with all of it.
        std::string strategy;
        llvm::raw_string_ostream os(strategy);
        os << ModuleOp::getOperationName() << "(dist-hybrid";
        options.print(os);
        os << ")";
        pm.addPass(createDistRecordPlacementPass(
            DistRecordPlacementPassOptions{strategy}));
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(HybridPipelineOptions());
      });
}
