//===- CPUPipeline.cpp - train dialect to the LLVM dialect on CPUs --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using mlir::train::CPUPipelineOptions;

void mlir::train::addTensorPasses(OpPassManager &pm, bool approximateMath,
                                  StringRef backend, unsigned opsPerFunction,
                                  bool profile, bool convProducts) {
  // Profiles name each op after the train op it was lowered from.
  if (profile)
    pm.addPass(train::createDistNameTrainOpsPass());
  // Collectives to runtime calls (a no-op without dist ops); records the
  // step's interface (train.step) for runners before lowering drops it.
  pm.addPass(train::createDistToRuntimePass({backend.str()}));
  train::TrainToLinalgPassOptions toLinalg;
  toLinalg.convProducts = convProducts;
  pm.addPass(train::createTrainToLinalgPass(toLinalg));
  // Elementwise arith on tensors (partitioning's mean scaling).
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  // One computation of what several ops lowered alike (a conv's padded
  // input and patches, read by conv2d and conv2d_backward_filter).
  pm.addPass(createCSEPass());
  // Chains of elementwise generics (optimizer updates, activations and
  // their gradients) fuse into one loop each: one pass over memory and no
  // temporaries (transformer block: 153 -> 99 ms per step).
  pm.addNestedPass<func::FuncOp>(train::createDistFuseElementwisePass());
  // State computed by other ops than an optimizer's update (a batch norm's
  // running statistics) into its argument's buffer, as the updates are:
  // ResNet-18 allocated 60 of them per step, and a CUDA step that
  // allocates cannot replay from a graph.
  pm.addNestedPass<func::FuncOp>(train::createDistStateInPlacePass());
  // bf16 and f16 math (tanh, erf, exp, ...) computed in f32, rounded
  // once: there are no 16-bit libm functions or polynomials; the f32 ones
  // below then apply.
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes());
  // tanh, exp and log as arithmetic LLVM vectorizes, not libm calls
  // (transformer block: 80 -> 52 ms per step).
  if (approximateMath)
    pm.addNestedPass<func::FuncOp>(train::createDistApproximateMathPass());
  // One fill per destination: CSE had merged the step's zero-padded
  // buffers into one, which bufferization copied into each (ResNet-18:
  // twenty 7 MB copies per step), and which, filled after a padded slice's
  // producer, kept it from writing in place. Before the split, whose parts
  // then take a padded value's whole buffer, not its interior.
  pm.addNestedPass<func::FuncOp>(train::createDistRematerializeFillsPass());
  // A large step as a sequence of calls of bounded parts: bufferization's
  // analysis and LLVM's code generation grow faster than linearly with a
  // function's size.
  pm.addPass(train::createDistSplitFunctionsPass({opsPerFunction}));
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // 5x faster analysis of a large step than the default bottom-up order
  // (GPT-like, 48 layers: 103 -> 50 s for the whole lowering), for 11%
  // more allocations and the same copies (bench/README.md).
  bufferize.analysisHeuristic = "bottom-up-from-terminators";
  // A dist.serve's loop carries the variables it updates from request to
  // request: each request yields new buffers.
  bufferize.allowReturnAllocsFromLoops = true;
  // A result built slice by slice (a pooling gradient's strided phases) is
  // written in place: each slice's producer computes into its part of the
  // destination rather than into a buffer copied there.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // A part updating a buffer in place does not also return it. (Folded
  // first: a part that updates its argument through a reshaped view -- an
  // optimizer's [1, f, c, kh, kw] view of a filter -- returns the view's
  // inverse reshape, which only canonicalization turns back into the
  // argument; unfolded, the deallocation cloned it: 94 MB of ResNet-18's
  // parameters and momenta copied per step.)
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
}

void mlir::train::addBufferPasses(OpPassManager &pm, bool blas,
                                  bool convKernels, bool profile) {
  // dist-run --profile: each op that does work between profile calls (the
  // products' sgemm calls then replace them inside the brackets).
  if (profile)
    pm.addPass(train::createDistProfileOpsPass());
  // On buffers, so the calls read and write what the generics did.
  // Stride-1 convolutions as batch-reduce products over the padded image's
  // rows (bench/conv_time.py's 3x3 64->64 layer: 21.4 -> ~14 ms per step).
  if (blas)
    pm.addPass(train::createDistMatmulToBlasPass());
  if (blas && convKernels)
    pm.addPass(train::createDistConvToKernelsPass());
  // Roles and names are recorded (train.step): drop them from the entry,
  // whose C interface would otherwise carry them into the LLVM dialect.
  train::DistRecordStepPassOptions record;
  record.dropFunctionAttributes = true;
  pm.addPass(train::createDistRecordStepPass(record));
  // Frees after the last use in straight-line steps (linear time; upstream's
  // simplification took 11 of 31 s of a 48-layer GPT's lowering), upstream's
  // ownership-based deallocation elsewhere.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(train::createDistBufferDeallocationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // Clones the deallocation keeps (a step returning an argument unchanged).
  pm.addPass(createConvertBufferizationToMemRefPass());
}

namespace {
/// bf16 extf / truncf as i32 arithmetic (shifts; round to nearest even, NaN
/// kept): upstream's arith-expand bf16 patterns without the rest of
/// arith-expand.
struct ExpandBf16ConversionsPass
    : public PassWrapper<ExpandBf16ConversionsPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandBf16ConversionsPass)
  StringRef getArgument() const override {
    return "dist-expand-bf16-conversions";
  }
  StringRef getDescription() const override {
    return "bf16 extf and truncf as integer arithmetic";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

/// 16-bit float arithmetic of the loops as f32 arithmetic between exact
/// widenings and a rounding per op (f32 has more than twice bf16's and
/// f16's precision, so the double rounding is innocuous), with bf16
/// conversions as integer shifts and adds, which vectorize on any x86-64
/// (an fptrunc to bfloat is a libcall per element without avx512_bf16).
/// The emulation marks its conversions `contract`, and a widening of such
/// a rounding folds away (arith.extf's folder): inside one fused loop the
/// values passed from op to op stay f32 and only what the loop stores is
/// rounded (nearer the exact result than op-by-op rounding; PyTorch's fused CPU
/// kernels do the same). After dist-matmul-to-blas, which must still see
/// the 16-bit contractions.
static void addSixteenBitArithmeticPasses(OpPassManager &pm) {
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  pm.addPass(std::make_unique<ExpandBf16ConversionsPass>());
}

/// Loops (the large ones' outermost parallel loop on the OpenMP team),
/// arith, math, memref, func and cf to the LLVM dialect.
static void addCPULoweringPasses(OpPassManager &pm,
                                 int64_t parallelMinIterations) {
  // Strided copies as loops LLVM vectorizes, not element-wise runtime calls.
  pm.addNestedPass<func::FuncOp>(train::createDistStridedCopiesToLoopsPass());
  // Loops; a large op's outermost parallel loop on the OpenMP team, which
  // the BLAS kernels share (transformer block: the elementwise and
  // reduction loops had left the second core idle outside the products).
  pm.addNestedPass<func::FuncOp>(
      train::createDistParallelLoopsPass({parallelMinIterations}));
  pm.addPass(createConvertSCFToOpenMPPass());
  // The conversion wraps each parallel body in a memref.alloca_scope, a
  // single-block region the loops inside could not lower to branches in;
  // bodies without allocas need none (memref.alloca_scope's
  // canonicalization inlines them).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  // Without rollback bookkeeping the conversion does not grow quadratically
  // in the step's size (GPT-like, 48 layers: 12.6 -> 3.0 s).
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Math LLVM has intrinsics for, then libm calls for the rest.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // Memref, arith, index, func and cf in one conversion (the dialects'
  // ConvertToLLVMPatternInterface, registered by registerAllDialects):
  // one walk instead of six (GPT-like, 48 layers: 3.3 -> 0.9 s).
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::train::buildCPUPipeline(OpPassManager &pm,
                                   const CPUPipelineOptions &options) {
  if (options.gpuMapped)
    return buildGPUMappedCPUPipeline(pm, options.backend,
                                     options.opsPerFunction, options.blockSize);
  addTensorPasses(pm, options.approximateMath, options.backend,
                  options.opsPerFunction, options.profile);
  addBufferPasses(pm, options.blas, /*convKernels=*/true, options.profile);
  addSixteenBitArithmeticPasses(pm);
  addCPULoweringPasses(pm, options.parallelMinIterations);
}

void mlir::train::buildCPUPipeline(OpPassManager &pm, bool blas,
                                   bool approximateMath, StringRef backend,
                                   unsigned opsPerFunction, bool profile,
                                   int64_t parallelMinIterations) {
  CPUPipelineOptions options;
  options.blas = blas;
  options.approximateMath = approximateMath;
  options.backend = backend.str();
  options.opsPerFunction = opsPerFunction;
  options.profile = profile;
  options.parallelMinIterations = parallelMinIterations;
  buildCPUPipeline(pm, options);
}

int64_t mlir::train::getMaxKernelArgumentBytes(StringRef features) {
  for (StringRef feature : llvm::split(features, ',')) {
    StringRef ptx = feature.trim();
    unsigned version = 0;
    if (ptx.consume_front("+ptx") && !ptx.getAsInteger(10, version))
      return version >= 81 ? kMaxKernelArgumentBytes : 4096;
  }
  return 4096;
}

void mlir::train::addGPUMappedPasses(OpPassManager &pm, StringRef backend,
                                     unsigned opsPerFunction, int64_t blockSize,
                                     int64_t maxArgumentBytes, bool launches) {
  // Collectives started where their inputs are ready and waited for before
  // the first op that uses a result (a no-op without any): the nccl backend
  // runs a started one on its communication stream while the kernels
  // enqueued up to its wait run (the backward's, after a gradient bucket).
  pm.addPass(dist::createDistOverlapCollectivesPass());
  // Exact math: the GPU has fast exp/log/tanh (libdevice), the polynomials
  // are for the CPU's vector units.
  addTensorPasses(pm, /*approximateMath=*/false, backend, opsPerFunction,
                  /*profile=*/false, /*convProducts=*/true);
  // Products as library calls (cuBLAS on the GPU, OpenBLAS for the CPU
  // check: the same distopt_matmul_f32 interface), convolutions among them
  // (im2col, a product per group, col2im: train-to-linalg{conv-products});
  // libdistopt_cpu's in-place convolution kernels have no GPU counterpart.
  // Depthwise and other many-group convolutions stay direct contractions,
  // mapped like any other op.
  addBufferPasses(pm, /*blas=*/true, /*convKernels=*/false,
                  /*profile=*/false);
  // A linear layer's bias, residual and GELU in its product's call
  // (cuBLASLt epilogues): the transformer block's feed-forward and
  // projections, a launch and a pass over the product fewer each.
  pm.addPass(train::createDistMatmulEpiloguesPass());
  // What a part (dist-split-functions) hands to the next parts allocated by
  // its caller and passed in, with the caller's free after its last use:
  // buffers of the step function, which the workspace plan places like its
  // own, not allocations per call (a captured step may not allocate;
  // transformer_stack.mlir: 79 device allocations per call before). After
  // the library calls: a product writes its zero-filled output buffer in
  // place only when that buffer is an allocation.
  // (A buffer a part returns through a reshape, a convolution's filter
  // gradient, allocated in the returned shape first: a view would be
  // copied out and its allocation left unfreed.)
  pm.addNestedPass<func::FuncOp>(train::createDistAllocateReturnedShapesPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  train::DistMapToGPUPassOptions map;
  map.blockSize = blockSize;
  map.maxArgumentBytes = maxArgumentBytes;
  // On the module: grouping independent ops needs to know which of a
  // part's arguments may alias, from its calls.
  pm.addPass(train::createDistMapToGPUPass(map));
  // (No canonicalization: it would merge each block loop with its thread
  // loop, dropping their mappings.)
  pm.addPass(createCSEPass());
  if (launches) {
    // Each mapped nest one gpu.launch; a block reduction's scratch row the
    // block's shared memory.
    pm.addPass(createConvertParallelLoopToGpuPass());
    pm.addPass(train::createDistPromoteBlockScratchPass());
  }
  // The intermediates allocated once, at the same addresses every call
  // (after the mapping, which tells buffers apart by their allocations).
  pm.addPass(train::createDistPlanWorkspacePass());
}

void mlir::train::buildGPUMappedCPUPipeline(OpPassManager &pm,
                                            StringRef backend,
                                            unsigned opsPerFunction,
                                            int64_t blockSize) {
  addGPUMappedPasses(pm, backend, opsPerFunction, blockSize);
  // A block's stages one after the other: the barriers as loop ends.
  pm.addNestedPass<func::FuncOp>(train::createDistSplitBarriersPass());
  // 16-bit kernels' arithmetic as on the CPU: without it, LLVM rounds to
  // bf16 through __truncsfbf2, which no library of a compiled step
  // provides (the cached step failed to load every run). (The GPU rounds
  // every op; these loops what they store: within bf16's tolerance.)
  addSixteenBitArithmeticPasses(pm);
  addCPULoweringPasses(pm, /*parallelMinIterations=*/0);
}

namespace {
/// dist-lower-cpu's flags: CPUPipelineOptions's fields, with its defaults.
struct CPUPipelineFlags : public PassPipelineOptions<CPUPipelineFlags> {
  Option<bool> blas{*this, "blas",
                    llvm::cl::desc("Run f32 matrix products through "
                                   "OpenBLAS and f32 convolutions "
                                   "through LIBXSMM's batch-reduce kernels "
                                   "(libdistopt_cpu)"),
                    llvm::cl::init(CPUPipelineOptions().blas)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Compute f32 tanh, exp and log with polynomial "
                     "approximations (dist-approximate-math: vectorizable, "
                     "a few ulp) instead of libm calls"),
      llvm::cl::init(CPUPipelineOptions().approximateMath)};
  Option<unsigned> opsPerFunction{
      *this, "ops-per-function",
      llvm::cl::desc("Cut functions into private parts of about this many "
                     "ops before bufferization (dist-split-functions; 0: "
                     "keep them whole)"),
      llvm::cl::init(CPUPipelineOptions().opsPerFunction)};
  Option<bool> profile{
      *this, "profile",
      llvm::cl::desc("Bracket each op that does work with runtime profile "
                     "calls (dist-name-train-ops, dist-profile-ops; "
                     "dist-run --profile)"),
      llvm::cl::init(CPUPipelineOptions().profile)};
  Option<int64_t> parallelMinIterations{
      *this, "parallel-min-iterations",
      llvm::cl::desc("Loop nests of at least this many iterations run "
                     "their outermost parallel loop on the OpenMP team "
                     "(dist-parallel-loops; 0: all loops serial)"),
      llvm::cl::init(CPUPipelineOptions().parallelMinIterations)};
  Option<bool> gpuMapped{
      *this, "gpu-mapped",
      llvm::cl::desc("Lower dist-lower-cuda's IR instead: the same passes "
                     "up to the GPU-mapped loop nests (dist-map-to-gpu), "
                     "then run those nests as CPU loops (checks the "
                     "kernels' index arithmetic without a GPU; blas, "
                     "approximate-math, profile and "
                     "parallel-min-iterations do not apply)"),
      llvm::cl::init(CPUPipelineOptions().gpuMapped)};
  Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("With gpu-mapped: threads per block of the mapped "
                     "nests (dist-map-to-gpu)"),
      llvm::cl::init(CPUPipelineOptions().blockSize)};

  /// The options these flags hold (the backend is "auto").
  CPUPipelineOptions getOptions() const {
    CPUPipelineOptions options;
    options.blas = blas;
    options.approximateMath = approximateMath;
    options.opsPerFunction = opsPerFunction;
    options.profile = profile;
    options.parallelMinIterations = parallelMinIterations;
    options.gpuMapped = gpuMapped;
    options.blockSize = blockSize;
    return options;
  }
};
} // namespace

void mlir::train::registerCPUPipeline() {
  PassPipelineRegistration<CPUPipelineFlags>(
      "dist-lower-cpu",
      "Lower a training step (train dialect on tensors) to the LLVM dialect "
      "for CPUs: collectives to runtime calls, train-to-linalg, elementwise "
      "fusion, polynomial tanh/exp/log, large functions cut into parts, "
      "one-shot bufferization, matrix products through OpenBLAS, "
      "frees after last use, loops (large ones in parallel on OpenMP), LLVM",
      [](OpPassManager &pm, const CPUPipelineFlags &flags) {
        buildCPUPipeline(pm, flags.getOptions());
      });
}
