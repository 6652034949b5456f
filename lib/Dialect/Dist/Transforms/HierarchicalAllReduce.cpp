//===- HierarchicalAllReduce.cpp - intra/inter-host all-reduce ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Debug.h"

namespace mlir::dist {
#define GEN_PASS_DEF_DISTHIERARCHICALALLREDUCEPASS
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

#define DEBUG_TYPE "dist-hierarchical-all-reduce"

using namespace mlir;
using namespace mlir::dist;

/// Splits `axes` into those crossing hosts and those within a host.
static std::pair<ArrayAttr, ArrayAttr> splitAxes(MeshOp mesh, ArrayAttr axes) {
  SmallVector<Attribute> inter, intra;
  std::optional<ArrayAttr> hostAxes = mesh.getHostAxes();
  for (Attribute axis : axes)
    (hostAxes && llvm::is_contained(*hostAxes, axis) ? inter : intra)
        .push_back(axis);
  MLIRContext *context = mesh.getContext();
  return {ArrayAttr::get(context, inter), ArrayAttr::get(context, intra)};
}

static LogicalResult decompose(AllReduceOp op) {
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  auto [inter, intra] = splitAxes(mesh, op.getAxes());
  if (inter.empty() || intra.empty() || op.getReduction() != ReductionKind::sum)
    return success();
  int64_t local = mesh.getGroupSize(intra);
  OpBuilder builder(op);
  Location loc = op.getLoc();
  StringRef meshName = mesh.getSymName();

  // Intra-host reduce-scatter of every tensor that has a divisible dim (one
  // variadic op for the bucket), all-reduce of the others.
  SmallVector<std::optional<int64_t>> scatterDims;
  SmallVector<Value> scattered, whole;
  SmallVector<Type> scatteredTypes;
  SmallVector<int64_t> dims;
  for (Value input : op.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    std::optional<int64_t> dim;
    for (int64_t d = 0; d < type.getRank() && !dim; ++d)
      if (type.getDimSize(d) % local == 0)
        dim = d;
    scatterDims.push_back(dim);
    if (!dim) {
      op.emitRemark("tensor of type ")
          << type << " has no dim divisible by the " << local
          << " devices of a host: all-reduced within the host, then across "
             "hosts";
      whole.push_back(input);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape[*dim] /= local;
    scattered.push_back(input);
    scatteredTypes.push_back(type.clone(shape));
    dims.push_back(*dim);
  }
  ValueRange scatteredSlices, wholeSums;
  if (!scattered.empty())
    scatteredSlices =
        ReduceScatterOp::create(builder, loc, scatteredTypes, scattered,
                                builder.getDenseI64ArrayAttr(dims),
                                ReductionKind::sum, meshName, intra)
            .getResults();
  if (!whole.empty())
    wholeSums = AllReduceOp::create(builder, loc, ValueRange(whole).getTypes(),
                                    whole, ReductionKind::sum, meshName, intra)
                    .getResults();
  SmallVector<Value> slices;
  unsigned nextScattered = 0, nextWhole = 0;
  for (const std::optional<int64_t> &dim : scatterDims)
    slices.push_back(dim ? scatteredSlices[nextScattered++]
                         : wholeSums[nextWhole++]);
  // One inter-host all-reduce of all slices.
  auto across =
      AllReduceOp::create(builder, loc, ValueRange(slices).getTypes(), slices,
                          ReductionKind::sum, meshName, inter);
  // Intra-host all-gather back to whole tensors.
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    Value value = across.getResult(i);
    if (std::optional<int64_t> dim = scatterDims[i])
      value = AllGatherOp::create(builder, loc, result.getType(), value, *dim,
                                  meshName, intra);
    result.replaceAllUsesWith(value);
  }
  op.erase();
  return success();
}

namespace {
struct DistHierarchicalAllReducePass
    : public mlir::dist::impl::DistHierarchicalAllReducePassBase<
          DistHierarchicalAllReducePass> {
  void runOnOperation() override {
    [[maybe_unused]] int64_t before =
        tallyCommunication(getOperation()).collectives;
    SmallVector<AllReduceOp> ops;
    getOperation().walk([&](AllReduceOp op) { ops.push_back(op); });
    for (AllReduceOp op : ops)
      if (failed(decompose(op)))
        return signalPassFailure();
    [[maybe_unused]] int64_t after =
        tallyCommunication(getOperation()).collectives;
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE << ": " << before
                            << " collectives into " << after << "\n");
  }
};
} // namespace
