//===- RuntimeLowering.h - dist ops to distrt calls -------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The builder of `dist-to-runtime`: DistToRuntime.cpp lowers the
// collectives, PlacedPrograms.cpp the transfers and fragments of placed
// programs (pipelines).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CONVERSION_DISTTORUNTIME_RUNTIMELOWERING_H
#define DISTOPT_LIB_CONVERSION_DISTTORUNTIME_RUNTIMELOWERING_H

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace mlir::dist {

/// Builds the runtime calls of one module.
class RuntimeLowering {
public:
  explicit RuntimeLowering(ModuleOp module)
      : module(module), builder(module.getContext()) {}

  LogicalResult lower(Operation *op);
  /// Erases the lowered start ops (after every op is lowered).
  void finish() {
    for (Operation *op : lowered)
      op->erase();
  }

private:
  /// The suffix of the runtime entry points for `type`'s elements, or
  /// failure. A collective that only moves elements takes any type of 1, 2,
  /// 4 or 8 bytes (i1 is stored as a byte); one that `reduces` them needs a
  /// type the runtime adds.
  FailureOr<StringRef> getSuffix(Operation *op, Type type, bool reduces);
  /// Declares `name(args...) -> results` (C interface) once. A
  /// `synchronous` callee is marked `distopt.sync_buffers` (it uses its
  /// buffer arguments only while it runs, so they may be freed right
  /// after the call); a nonblocking start uses them until its wait.
  func::FuncOp declare(StringRef name, TypeRange args, TypeRange results,
                       bool synchronous = true);
  /// A collective's group: its size and the mesh shape and group axes as
  /// i64 buffers, the runtime's way of naming it.
  struct Group {
    int64_t size;
    Value shape, axes;
  };
  Group getGroup(Operation *op);
  /// Calls runtime function `name` (declared from the arguments' types).
  void call(StringRef name, ValueRange args, Location loc);
  /// A fresh contiguous buffer holding `value` (or uninitialized, of
  /// `type`, when `value` is null).
  Value allocate(RankedTensorType type, Value value, Location loc);
  /// The buffer as `memref<*xT>`.
  Value unranked(Value buffer, Location loc);
  /// A bucket of `inputs` for one all-reduce call per element type: fresh
  /// buffers holding them, and per element suffix the buffers' addresses
  /// and element counts as `memref<?xindex>` and `memref<?xi64>`.
  struct Bucket {
    StringRef suffix;
    Value addresses, counts;
    /// The positions of the bucket's buffers among the inputs.
    SmallVector<unsigned> members;
  };
  FailureOr<SmallVector<Bucket>> prepareBuckets(Operation *op,
                                                ValueRange inputs,
                                                SmallVectorImpl<Value> &buffers,
                                                Location loc);
  /// This device's index in the group, as an index.
  Value groupRank(Value shape, Value axes, Location loc);

  /// The `group` blocks of `input` along `dim` (each of `blockType`) as one
  /// `[group, block...]` tensor (contiguous blocks for the runtime).
  Value packBlocks(Value input, int64_t dim, int64_t group,
                   RankedTensorType blockType, Location loc);
  /// The `[group, block...]` tensor laid out along `dim` as `resultType`.
  Value unpackBlocks(Value blocks, int64_t dim, int64_t group,
                     RankedTensorType blockType, RankedTensorType resultType,
                     Location loc);

  LogicalResult lowerAllReduce(AllReduceOp op);
  LogicalResult lowerAllToAll(AllToAllOp op);
  LogicalResult lowerBroadcast(BroadcastOp op);
  LogicalResult lowerReduceScatter(ReduceScatterOp op);
  LogicalResult lowerAllGather(AllGatherOp op);
  /// The buffers of one reduce-scatter of `input` along `dim` into
  /// `resultType`: `send` holds the blocks of `dim` as `[group, slice...]`.
  struct Transfer {
    Value send, recv;
  };
  Transfer prepareReduceScatter(Value input, int64_t dim, int64_t group,
                                RankedTensorType resultType, Location loc);
  /// The buffers of an all-gather of `input`: `recv` is `[group, input...]`.
  Transfer prepareAllGather(Value input, int64_t group, Location loc);
  /// The gathered `[group, input...]` buffer laid out along `dim`.
  Value finishAllGather(Value recv, int64_t dim, int64_t group,
                        RankedTensorType inputType, RankedTensorType resultType,
                        Location loc);
  /// Calls the start entry point `name` and returns its request handle.
  Value callStart(StringRef name, ValueRange args, Location loc);

  LogicalResult lowerAllReduceStart(AllReduceStartOp op);
  LogicalResult lowerReduceScatterStart(ReduceScatterStartOp op);
  LogicalResult lowerAllGatherStart(AllGatherStartOp op);
  LogicalResult lowerWait(WaitOp op);
  LogicalResult lowerLocalSlice(LocalSliceOp op);
  LogicalResult lowerShardOffset(ShardOffsetOp op);

public:
  /// Lowers the point-to-point transfers of a placed program: each send
  /// starts at its place and is completed before the program returns (so
  /// no program blocks in a send, as dist-verify's deadlock check assumes);
  /// each receive is posted before the fragment that precedes it and
  /// completed where it stood.
  LogicalResult lowerTransfers(func::FuncOp program);
  /// The transfers of `block` (a program's body or a case of dist.serve),
  /// its sends completed before its terminator.
  LogicalResult lowerTransfersIn(Block &block, PlaceAttr own);
  /// A dist.serve as a loop of `count` iterations: the runtime's probe for
  /// the next request, then an `scf.index_switch` over the cases.
  LogicalResult lowerServe(ServeOp serve, PlaceAttr own);
  /// Inlines a fragment's body where it stands, between runtime calls that
  /// mark its unit (for dist-run --trace).
  void inlineFragment(FragmentOp fragment);
  /// Lowers `fragments`: each class of fragments whose bodies are the same
  /// computation (up to the start of static slices: the microbatch each
  /// reads) becomes one private function, called by each fragment of the
  /// class between the runtime calls that mark its unit; a fragment like
  /// no other is inlined. A pipeline's program is then O(stages) code, not
  /// O(stages x microbatches).
  void lowerFragments(ArrayRef<FragmentOp> fragments);

private:
  /// The runtime calls that mark the start and the end of `fragment`'s
  /// unit (none for a fragment without one), at the builder's point.
  void beginUnit(FragmentOp fragment);
  void endUnit(FragmentOp fragment);
  /// The world rank of the device of `peer` that `program` (placed at
  /// `own`) exchanges with: this device's coordinates on the axes `peer`
  /// leaves free.
  FailureOr<Value> getPeerRank(Operation *op, PlaceAttr own, PlaceAttr peer);

  /// What a future of a lowered start op holds until its `dist.wait`: the
  /// runtime request, the buffer the collective reads (kept alive until the
  /// wait: the wait takes its address, so deallocation cannot free it while
  /// the request is in flight), and how to read the result once it
  /// completed (at the wait's location).
  struct Pending {
    Value request, send;
    std::function<Value(Location)> take;
  };
  DenseMap<Value, Pending> futures;
  /// Requests already completed by a wait (one request serves every future
  /// of a bucketed start; its first wait completes it).
  DenseSet<Value> waited;
  /// Start ops lowered, erased by `finish` once their waits are gone.
  SmallVector<Operation *> lowered;

  ModuleOp module;
  OpBuilder builder;
};

/// Reads `buffer` back as a tensor of `type`.
inline Value toTensor(OpBuilder &builder, Location loc, RankedTensorType type,
                      Value buffer) {
  return bufferization::ToTensorOp::create(builder, loc, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

} // namespace mlir::dist

#endif // DISTOPT_LIB_CONVERSION_DISTTORUNTIME_RUNTIMELOWERING_H
