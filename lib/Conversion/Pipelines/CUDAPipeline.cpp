//===- CUDAPipeline.cpp - train dialect to kernels and host code for CUDA -===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;

/// `toolkit`, else $CUDA_HOME, else /usr/local/cuda when it exists, else ""
/// (gpu-module-to-binary then looks for ptxas on PATH).
static std::string getToolkitPath(StringRef toolkit) {
  if (!toolkit.empty())
    return toolkit.str();
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  if (llvm::sys::fs::is_directory("/usr/local/cuda"))
    return "/usr/local/cuda";
  return "";
}

void mlir::train::buildCUDAPipeline(OpPassManager &pm,
                                    const CUDAPipelineOptions &options) {
  // (Each mapped nest one gpu.launch, block reductions in shared memory.)
  addGPUMappedPasses(pm, options.backend, options.opsPerFunction,
                     options.blockSize,
                     getMaxKernelArgumentBytes(options.features),
                     /*launches=*/true);
  // Each launch outlined into a kernel, the kernels in a few modules: one
  // LLVM module, libdevice link and ptxas run per module rather than per
  // kernel, and the modules compiled in parallel at the end.
  pm.addPass(createGpuKernelOutliningPass());
  if (options.mergeKernels) {
    DistMergeKernelModulesPassOptions merge;
    merge.modules = options.kernelModules;
    pm.addPass(train::createDistMergeKernelModulesPass(merge));
  }
  // The host: device buffers, every launch, allocation and copy
  // asynchronous on the process's stream.
  pm.addPass(train::createDistGPUHostPass());
  if (options.report)
    pm.addPass(train::createDistGPUStepReportPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  SCFToControlFlowPassOptions scfToCf;
  scfToCf.allowPatternRollback = false;
  pm.addPass(createSCFToControlFlowPass(scfToCf));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // A row group's warp reductions as butterfly shuffles.
  pm.addNestedPass<gpu::GPUModuleOp>(
      train::createDistLowerWarpReductionsPass());
  // The kernels: NVVM (math through libdevice), 64-bit indices as on the
  // host.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // The host: launches, allocations and copies to mgpu* calls, the rest
  // as on the CPU.
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The kernels through ptxas into the module, the modules in parallel.
  DistGPUModuleToBinaryPassOptions binary;
  binary.format = options.format;
  binary.toolkit = getToolkitPath(options.toolkit);
  pm.addPass(train::createDistGPUModuleToBinaryPass(binary));
}

void mlir::train::registerCUDAPipeline() {
  PassPipelineRegistration<CUDAPipelineOptions>(
      "dist-lower-cuda",
      "Lower a training step (train dialect on tensors) for NVIDIA GPUs: "
      "the tensor and buffer halves of dist-lower-cpu (exact math), matrix "
      "products as cuBLAS calls, every other op a kernel of a flat grid "
      "(dist-map-to-gpu, outlining, NVVM, ptxas; block reductions in "
      "shared memory: dist-promote-block-scratch), the host's launches, "
      "allocations and copies asynchronous on one stream per process "
      "(dist-gpu-host), collectives through distrt's nccl backend",
      buildCUDAPipeline);
}
