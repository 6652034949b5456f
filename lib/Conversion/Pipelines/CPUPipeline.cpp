//===- CPUPipeline.cpp - train dialect to the LLVM dialect on CPUs --------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// dist-to-runtime (which records the step's interface), train-to-linalg,
/// elementwise arith to linalg, CSE, elementwise fusion that keeps matrix
/// products whole, (with `approximateMath`) polynomial tanh/exp/log,
/// one-shot bufferization of whole functions (identity layouts at the
/// boundaries, so the JIT and C callers see plain memrefs), (with `blas`)
/// matrix products through OpenBLAS on the buffers, ownership-based
/// deallocation, loops, then the LLVM dialect.
void mlir::train::buildCPUPipeline(OpPassManager &pm, bool blas,
                                   bool approximateMath, StringRef backend) {
  // Collectives to runtime calls (a no-op without dist ops); records the
  // step's interface (train.step) for runners before lowering drops it.
  pm.addPass(train::createDistToRuntimePass({backend.str()}));
  pm.addPass(train::createTrainToLinalgPass());
  // Elementwise arith on tensors (partitioning's mean scaling).
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  // One computation of what several ops lowered alike (a conv's padded
  // input and patches, read by conv2d and conv2d_backward_filter).
  pm.addPass(createCSEPass());
  // Chains of elementwise generics (optimizer updates, activations and
  // their gradients) fuse into one loop each: one pass over memory and no
  // temporaries (transformer block: 153 -> 99 ms per step).
  pm.addNestedPass<func::FuncOp>(train::createDistFuseElementwisePass());
  // tanh, exp and log as arithmetic LLVM vectorizes, not libm calls
  // (transformer block: 80 -> 52 ms per step).
  if (approximateMath)
    pm.addNestedPass<func::FuncOp>(train::createDistApproximateMathPass());
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
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // On buffers, so the calls read and write what the generics did.
  if (blas)
    pm.addPass(train::createDistMatmulToBlasPass());
  // Roles and names are recorded (train.step): drop them from the entry,
  // whose C interface would otherwise carry them into the LLVM dialect.
  train::DistRecordStepPassOptions record;
  record.dropFunctionAttributes = true;
  pm.addPass(train::createDistRecordStepPass(record));
  bufferization::buildBufferDeallocationPipeline(pm);
  // Clones the deallocation keeps (a step returning an argument unchanged).
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Strided copies as loops LLVM vectorizes, not element-wise runtime calls.
  pm.addNestedPass<func::FuncOp>(train::createDistStridedCopiesToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  // Without rollback bookkeeping the conversion does not grow quadratically
  // in the step's size (GPT-like, 48 layers: 12.6 -> 3.0 s).
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  Option<bool> blas{*this, "blas",
                    llvm::cl::desc("Run f32 matrix products through "
                                   "OpenBLAS (libdistopt_cpu)"),
                    llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Compute f32 tanh, exp and log with polynomial "
                     "approximations (dist-approximate-math: vectorizable, "
                     "a few ulp) instead of libm calls"),
      llvm::cl::init(true)};
};
} // namespace

void mlir::train::registerCPUPipeline() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "dist-lower-cpu",
      "Lower a training step (train dialect on tensors) to the LLVM dialect "
      "for CPUs: collectives to runtime calls, train-to-linalg, elementwise "
      "fusion, polynomial tanh/exp/log, "
      "one-shot bufferization, matrix products through OpenBLAS, "
      "deallocation, loops, LLVM",
      [](OpPassManager &pm, const CPUPipelineOptions &options) {
        buildCPUPipeline(pm, options.blas, options.approximateMath);
      });
}
