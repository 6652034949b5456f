//===- StridedCopiesToLoops.cpp - strided memref copies as loop nests -----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTSTRIDEDCOPIESTOLOOPSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when `type` is a buffer the LLVM lowering copies with one memcpy.
static bool isContiguous(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref::isStaticShapeAndContiguousRowMajor(memref);
}

namespace {
struct DistStridedCopiesToLoopsPass
    : public mlir::train::impl::DistStridedCopiesToLoopsPassBase<
          DistStridedCopiesToLoopsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) {
      Type source = copy.getSource().getType(),
           target = copy.getTarget().getType();
      if (isa<MemRefType>(source) && isa<MemRefType>(target) &&
          !(isContiguous(source) && isContiguous(target)))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder builder(copy);
      linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy->erase();
    }
  }
};
} // namespace
