//===- InitAll.cpp - what DistOpt's tools load ----------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/InitAll.h"
#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

void mlir::dist::registerAllDialects(DialectRegistry &registry) {
  registry
      .insert<train::TrainDialect, dist::DistDialect, arith::ArithDialect,
              func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
              scf::SCFDialect, shard::ShardDialect, tensor::TensorDialect>();
  // What the CPU lowering produces and bufferizes.
  registry.insert<affine::AffineDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, omp::OpenMPDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // dist.serve's loop and switch (placed programs of parameter servers).
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // memref.alloc as an allocation: what lets buffer-results-to-out-params
  // hand a part's new buffers to its caller (hoist-static-allocs) rather
  // than copy them out.
  memref::registerAllocationOpInterfaceExternalModels(registry);
  // How convert-to-llvm (the last step of dist-lower-cpu) lowers each
  // dialect the loops and buffers use.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  // The parallel loops (dist-parallel-loops, convert-scf-to-openmp).
  registerConvertOpenMPToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // dist-map-to-gpu's 16-byte loads and stores (vector-access), on the CPU
  // check (--gpu-mapped) as in the kernels.
  registry.insert<vector::VectorDialect>();
  vector::registerConvertVectorToLLVMInterface(registry);
  // dist-lower-cuda: kernels in gpu modules, NVVM, and the NVVM target
  // that serializes them through ptxas (dist-gpu-module-to-binary).
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerConvertNVVMToLLVMInterface(registry);
}

void mlir::dist::registerAllTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  // A CUDA step's host module: gpu.binary and gpu.launch_func to LLVM IR
  // (mgpu* calls), NVVM inside the kernels' serialization.
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
}

void mlir::dist::registerAllPasses() {
  static bool registered = [] {
    train::registerTrainPasses();
    train::registerConversionPasses();
    train::registerCPUPipeline();
    train::registerCUDAPipeline();
    dist::registerDistPasses();
    dist::registerStrategyPipelines();
    // Generic upstream passes users run between ours.
    registerCanonicalizerPass();
    registerCSEPass();
    registerInlinerPass();
    registerSymbolDCEPass();
    // What dist-lower-cpu runs between train-to-linalg and
    // dist-matmul-to-blas, to run them one at a time.
    bufferization::registerOneShotBufferizePass();
    // What dist-lower-cpu runs after dist-parallel-loops.
    registerConvertSCFToOpenMPPass();
    // What dist-lower-cuda runs between dist-map-to-gpu and
    // dist-promote-block-scratch.
    registerConvertParallelLoopToGpuPass();
    return true;
  }();
  (void)registered;
}
