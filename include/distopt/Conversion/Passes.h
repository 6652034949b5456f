//===- Passes.h - conversions out of the train and dist dialects -*- C++
//-*-===//

#ifndef DISTOPT_CONVERSION_PASSES_H
#define DISTOPT_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::train {

#define GEN_PASS_DECL
#include "distopt/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "distopt/Conversion/Passes.h.inc"

/// True when `op` is an f32 `linalg.generic` contraction (two inputs, one
/// output, a multiply-add body) of the kind `dist-matmul-to-blas` turns
/// into sgemm calls once bufferized; `dist-fuse-elementwise` keeps such
/// ops out of fusion so that they stay BLAS calls.
bool isBlasContraction(linalg::LinalgOp op);

/// True when `op` is one of the f32 stride-1 convolution contractions
/// (`train-to-linalg`'s direct form) that `dist-conv-to-kernels` turns into
/// distopt_conv2d_f32 calls once bufferized; kept out of fusion too.
bool isConvContraction(linalg::LinalgOp op);

/// Adds `dist-lower-cpu` to `pm`: dist-to-runtime (collectives to runtime
/// calls; records the step's interface), train-to-linalg, elementwise
/// fusion, (with `opsPerFunction` > 0) large functions cut into parts,
/// one-shot bufferization, (with `blas`) f32 matrix products through
/// OpenBLAS and f32 stride-1 convolutions through LIBXSMM, deallocation,
/// and the lowering of loops, arith, math, memref and func to the LLVM
/// dialect.
/// With `approximateMath`, f32 tanh, exp and log become polynomial
/// approximations (dist-approximate-math) instead of libm calls; `backend`
/// is dist-to-runtime's. With `profile`, each op that does work is
/// bracketed by runtime profile calls (dist-name-train-ops,
/// dist-profile-ops: the `distopt.profile` table of sites). Loop nests of
/// at least `parallelMinIterations` iterations run their outermost
/// parallel loop on the OpenMP team (dist-parallel-loops,
/// convert-scf-to-openmp; 0: every loop serial).
void buildCPUPipeline(OpPassManager &pm, bool blas = true,
                      bool approximateMath = true, StringRef backend = "auto",
                      unsigned opsPerFunction = 1000, bool profile = false,
                      int64_t parallelMinIterations = 32768);

/// Registers `dist-lower-cpu` (buildCPUPipeline with its options).
void registerCPUPipeline();

} // namespace mlir::train

#endif // DISTOPT_CONVERSION_PASSES_H
