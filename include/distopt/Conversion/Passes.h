//===- Passes.h - lowering of the train and dist dialects -------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_CONVERSION_PASSES_H
#define DISTOPT_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::train {

/// The lowering's defaults, one set: dist-lower-cpu's and dist-lower-cuda's
/// options, the passes' own (Passes.td names these constants) and every
/// runner's start from them.
/// dist-split-functions: ops after which a part of a function may end.
inline constexpr unsigned kDefaultOpsPerFunction = 1000;
/// The unit attribute dist-map-to-gpu puts on a block reduction's scratch
/// allocation (a row per block, each block touching only its own), which
/// dist-promote-block-scratch moves into the launch's shared memory.
inline constexpr llvm::StringLiteral kBlockScratchAttrName =
    "distopt.block_scratch";
/// The unit attribute of a runtime function (the distrt_* declarations
/// dist-to-runtime makes) whose ranked memref operands the host reads
/// itself -- a collective's counts, mesh shape and axes -- while its data
/// buffers are unranked: dist-gpu-host keeps globals only such operands
/// read in host memory.
inline constexpr llvm::StringLiteral kHostOperandsAttrName =
    "distopt.host_operands";
/// dist-parallel-loops: iterations from which a loop nest runs its
/// outermost parallel loop on the OpenMP team.
inline constexpr int64_t kDefaultParallelMinIterations = 32768;
/// dist-map-to-gpu: threads per block of the mapped loop nests.
inline constexpr int64_t kDefaultBlockSize = 256;
/// The kernel argument bytes of PTX 8.1 and later (dist-map-to-gpu's
/// max-argument-bytes for dist-lower-cuda's default features).
inline constexpr int64_t kMaxKernelArgumentBytes = 32764;
/// LLVM's optimization level of the compiled step (and of CUDA kernels).
inline constexpr unsigned kDefaultOptLevel = 3;

#define GEN_PASS_DECL
#include "distopt/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "distopt/Conversion/Passes.h.inc"

/// True when `op` is an f32, bf16 or f16 `linalg.generic` contraction (two
/// inputs, one output, one element type, a multiply-add body) of the kind
/// `dist-matmul-to-blas` turns into library products once bufferized;
/// `dist-fuse-elementwise` keeps such ops out of fusion so that they stay BLAS
/// calls.
bool isBlasContraction(linalg::LinalgOp op);

/// True when `op` is one of the f32 stride-1 convolution contractions
/// (`train-to-linalg`'s direct form) that `dist-conv-to-kernels` turns into
/// distopt_conv2d_f32 calls once bufferized; kept out of fusion too.
bool isConvContraction(linalg::LinalgOp op);

/// The options of dist-lower-cpu (buildCPUPipeline), with the defaults
/// every entry shares: the pipeline's flags, the tools' and the runner's.
struct CPUPipelineOptions {
  /// f32 matrix products through OpenBLAS and f32 stride-1 convolutions
  /// through LIBXSMM (libdistopt_cpu).
  bool blas = true;
  /// f32 tanh, exp and log as polynomial approximations
  /// (dist-approximate-math) instead of libm calls.
  bool approximateMath = true;
  /// dist-to-runtime's collective backend.
  std::string backend = "auto";
  /// Functions cut into parts of about this many ops before bufferization
  /// (dist-split-functions; 0 keeps them whole).
  unsigned opsPerFunction = kDefaultOpsPerFunction;
  /// Each op that does work bracketed by runtime profile calls
  /// (dist-name-train-ops, dist-profile-ops: the `distopt.profile` table).
  bool profile = false;
  /// Loop nests of at least this many iterations run their outermost
  /// parallel loop on the OpenMP team (dist-parallel-loops,
  /// convert-scf-to-openmp; 0: every loop serial).
  int64_t parallelMinIterations = kDefaultParallelMinIterations;
  /// dist-lower-cuda's IR instead, its mapped loop nests run as CPU loops
  /// (buildGPUMappedCPUPipeline; blas, approximateMath, profile and
  /// parallelMinIterations do not apply).
  bool gpuMapped = false;
  /// With gpuMapped: threads per block of the mapped nests.
  int64_t blockSize = kDefaultBlockSize;
  /// LLVM's optimization level when the lowered module becomes machine
  /// code (a runner's or dist-compile's step); the passes do not read it.
  unsigned optLevel = kDefaultOptLevel;
};

/// Adds `dist-lower-cpu` to `pm`: dist-to-runtime (collectives to runtime
/// calls; records the step's interface), train-to-linalg, elementwise
/// fusion, (with `opsPerFunction` > 0) large functions cut into parts,
/// one-shot bufferization, (with `blas`) f32 matrix products through
/// OpenBLAS and f32 stride-1 convolutions through LIBXSMM, deallocation,
/// and the lowering of loops, arith, math, memref and func to the LLVM
/// dialect. With `gpuMapped`, buildGPUMappedCPUPipeline instead.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// buildCPUPipeline with the options one by one (kept for the tools until
/// they pass a CPUPipelineOptions; the defaults are the same).
void buildCPUPipeline(
    OpPassManager &pm, bool blas = true, bool approximateMath = true,
    StringRef backend = "auto",
    unsigned opsPerFunction = kDefaultOpsPerFunction, bool profile = false,
    int64_t parallelMinIterations = kDefaultParallelMinIterations);

/// Registers `dist-lower-cpu` (buildCPUPipeline with its options).
void registerCPUPipeline();

/// The tensor half of every lowering: (with `profile`) ops named after
/// their train ops, dist-to-runtime with `backend`, train-to-linalg,
/// elementwise fusion, (with `approximateMath`) polynomial tanh/exp/log,
/// one fill per padded buffer, (with `opsPerFunction` > 0) functions cut
/// into parts, one-shot bufferization, equivalent results dropped. With
/// `convProducts`, convolutions of few large groups are im2col and products
/// whatever their strides (train-to-linalg{conv-products}).
void addTensorPasses(OpPassManager &pm, bool approximateMath, StringRef backend,
                     unsigned opsPerFunction, bool profile,
                     bool convProducts = false);
/// The buffer half: (with `profile`) profile brackets, (with `blas`) f32
/// products as distopt_matmul_f32 calls and (with `convKernels` too) f32
/// convolutions as distopt_conv2d_f32 calls, the step's interface
/// recorded, frees after last use, clones as copies.
void addBufferPasses(OpPassManager &pm, bool blas, bool convKernels,
                     bool profile);
/// What dist-lower-cuda and dist-lower-cpu{gpu-mapped} share: the tensor
/// and buffer halves (exact math, products as library calls, convolutions
/// as im2col and products), then every linalg op and copy mapped to a grid of
/// `blockSize` threads per block (dist-map-to-gpu), and the intermediates
/// placed in workspaces (dist-plan-workspace).
/// A horizontally fused launch takes at most `maxArgumentBytes` of kernel
/// arguments (kMaxKernelArgumentBytes; getMaxKernelArgumentBytes for the
/// PTX version a CUDA step is compiled for). With `launches`
/// (dist-lower-cuda), the mapped nests become gpu.launch ops before the
/// plan, their block reductions' scratch rows in shared memory
/// (dist-promote-block-scratch).
void addGPUMappedPasses(OpPassManager &pm, StringRef backend,
                        unsigned opsPerFunction, int64_t blockSize,
                        int64_t maxArgumentBytes = kMaxKernelArgumentBytes,
                        bool launches = false);
/// The kernel argument bytes PTX `features` ("+ptx81") allow: 32764 from
/// PTX 8.1 (CUDA 12.1 drivers, Volta and later), 4096 before.
int64_t getMaxKernelArgumentBytes(StringRef features);
/// addGPUMappedPasses, then the mapped nests as CPU loops and the LLVM
/// dialect (dist-lower-cpu{gpu-mapped}).
void buildGPUMappedCPUPipeline(OpPassManager &pm, StringRef backend,
                               unsigned opsPerFunction, int64_t blockSize);

/// The options of dist-lower-cuda.
struct CUDAPipelineOptions : public PassPipelineOptions<CUDAPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("The GPU architecture kernels are "
                                          "compiled for (sm_75 and later)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (+ptx81: PTX 8.1, CUDA 12.1 and later, "
                     "whose kernels take up to 32764 bytes of arguments; "
                     "4096 before)"),
      llvm::cl::init("+ptx81")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level of the kernels "
                                      "(0 to 3)"),
                       llvm::cl::init(kDefaultOptLevel)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu-module-to-binary embeds: fatbin (ptxas "
                     "and the PTX, the default), bin (a cubin), isa (PTX "
                     "text, no ptxas) or offload (LLVM IR)"),
      llvm::cl::init("fatbin")};
  Option<bool> mergeKernels{
      *this, "merge-kernels",
      llvm::cl::desc("Compile every kernel of the step in one module "
                     "(dist-merge-kernel-modules: one libdevice link and "
                     "ptxas run, not one per kernel)"),
      llvm::cl::init(true)};
  Option<unsigned> kernelModules{
      *this, "kernel-modules",
      llvm::cl::desc("How many modules merge-kernels leaves the kernels "
                     "in (runs of about equal size, compiled in parallel "
                     "by dist-gpu-module-to-binary)"),
      llvm::cl::init(16)};
  Option<std::string> toolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("The CUDA toolkit whose ptxas and libdevice compile "
                     "the kernels (default: $CUDA_HOME, else /usr/local/cuda "
                     "when it exists, else ptxas on PATH)"),
      llvm::cl::init("")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block of the mapped "
                                           "loop nests (dist-map-to-gpu)"),
                            llvm::cl::init(kDefaultBlockSize)};
  Option<unsigned> opsPerFunction{
      *this, "ops-per-function",
      llvm::cl::desc("Cut functions into private parts of about this many "
                     "ops before bufferization (dist-split-functions; 0: "
                     "keep them whole)"),
      llvm::cl::init(kDefaultOpsPerFunction)};
  Option<std::string> backend{
      *this, "backend",
      llvm::cl::desc("The collective backend the step starts (nccl: the "
                     "buffers are device memory)"),
      llvm::cl::init("nccl")};
  Option<bool> report{
      *this, "report",
      llvm::cl::desc("Remark, at each public function, what one call "
                     "enqueues on the device: launches, allocations, "
                     "host copies and waits (dist-gpu-step-report)"),
      llvm::cl::init(false)};
};

/// dist-lower-cuda: addGPUMappedPasses (each mapped nest a gpu.launch, its
/// block reductions in shared memory), the launches outlined into
/// kernels, the host on one stream
/// (dist-gpu-host), NVVM for `chip` and the host's LLVM dialect, and the
/// kernels compiled by ptxas into the module, `kernel-modules` modules in
/// parallel (dist-gpu-module-to-binary).
void buildCUDAPipeline(OpPassManager &pm, const CUDAPipelineOptions &options);

/// Registers `dist-lower-cuda`.
void registerCUDAPipeline();

/// The top-level entry: `strategy` (a textual strategy pipeline such as
/// "dist-mirrored{replicas=2}", as dist-opt takes it; empty: the step
/// stays on one device), then the lowering for the CPU with `options`.
/// The strategy pipelines must be registered (dist::registerAllPasses,
/// distopt/InitAll.h); an unknown or malformed strategy is an error
/// written to `errorStream`, and `pm` is then left as it was.
LogicalResult buildDistributedPipeline(OpPassManager &pm, StringRef strategy,
                                       const CPUPipelineOptions &options,
                                       raw_ostream &errorStream);
/// The same with the lowering for NVIDIA GPUs (dist-lower-cuda).
LogicalResult buildDistributedPipeline(OpPassManager &pm, StringRef strategy,
                                       const CUDAPipelineOptions &options,
                                       raw_ostream &errorStream);

} // namespace mlir::train

#endif // DISTOPT_CONVERSION_PASSES_H
