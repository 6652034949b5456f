//===- DistToRuntime.cpp - dist collectives to distrt calls ---------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RuntimeLowering.h"

#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTTORUNTIMEPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

#define DEBUG_TYPE "dist-to-runtime"

using namespace mlir;
using namespace mlir::dist;

FailureOr<StringRef> RuntimeLowering::getSuffix(Operation *op, Type type,
                                                bool reduces) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF32())
    return StringRef("f32");
  if (element.isF64())
    return StringRef("f64");
  if (element.isInteger(32))
    return StringRef("i32");
  if (element.isInteger(64))
    return StringRef("i64");
  // 16-bit floats are reduced too (compressed gradients).
  if (element.isF16())
    return StringRef("f16");
  if (element.isBF16())
    return StringRef("bf16");
  if (!reduces) {
    if (element.isInteger(1))
      return StringRef("i1");
    if (element.isInteger(8))
      return StringRef("i8");
  }
  return op->emitOpError("dist-to-runtime does not ")
         << (reduces ? "reduce " : "move ") << element << " elements yet ("
         << (reduces ? "" : "i1, i8, ") << "f16, bf16, f32, f64, i32, i64)";
}

func::FuncOp RuntimeLowering::declare(StringRef name, TypeRange args,
                                      TypeRange results, bool synchronous) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(args, results));
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  // (The runtime reads a call's descriptions, its ranked operands, on the
  // host.)
  func->setAttr(train::kHostOperandsAttrName, builder.getUnitAttr());
  if (synchronous)
    func->setAttr("distopt.sync_buffers", builder.getUnitAttr());
  return func;
}

void RuntimeLowering::call(StringRef name, ValueRange args, Location loc) {
  func::FuncOp callee = declare(name, args.getTypes(), {});
  func::CallOp::create(builder, loc, callee, args);
}

RuntimeLowering::Group RuntimeLowering::getGroup(Operation *op) {
  Location loc = op->getLoc();
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("mesh"));
  auto axes = op->getAttrOfType<ArrayAttr>("axes");
  SmallVector<int64_t> indices;
  for (Attribute axis : axes)
    indices.push_back(*mesh.getAxisIndex(cast<StringAttr>(axis).getValue()));
  auto constant = [&](ArrayRef<int64_t> values) -> Value {
    auto type =
        RankedTensorType::get({int64_t(values.size())}, builder.getI64Type());
    Value tensor = arith::ConstantOp::create(
        builder, loc, DenseIntElementsAttr::get(type, values));
    Value buffer = bufferization::ToBufferOp::create(
        builder, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, /*read_only=*/true);
    return memref::CastOp::create(
        builder, loc,
        MemRefType::get({ShapedType::kDynamic}, builder.getI64Type()), buffer);
  };
  return {mesh.getGroupSize(axes), constant(mesh.getShape()),
          constant(indices)};
}

Value RuntimeLowering::allocate(RankedTensorType type, Value value,
                                Location loc) {
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = memref::AllocOp::create(builder, loc, memrefType);
  // A copy that bufferization sees as a read of `value` here (a to_buffer
  // followed by a memref copy would let CSE merge two to_buffers and a copy
  // read a buffer reused in place in between).
  if (value) {
    auto copy = bufferization::MaterializeInDestinationOp::create(
        builder, loc, value, buffer);
    copy.setRestrict(true);
    copy.setWritable(true);
  }
  return buffer;
}

Value RuntimeLowering::unranked(Value buffer, Location loc) {
  auto type = cast<MemRefType>(buffer.getType());
  return memref::CastOp::create(
      builder, loc, UnrankedMemRefType::get(type.getElementType(), 0), buffer);
}

Value RuntimeLowering::groupRank(Value shape, Value axes, Location loc) {
  func::FuncOp callee =
      declare("distrt_mlir_group_rank", {shape.getType(), axes.getType()},
              {builder.getI64Type()});
  Value rank =
      func::CallOp::create(builder, loc, callee, ValueRange{shape, axes})
          .getResult(0);
  return arith::IndexCastOp::create(builder, loc, builder.getIndexType(), rank);
}

Value RuntimeLowering::packBlocks(Value input, int64_t dim, int64_t group,
                                  RankedTensorType blockType, Location loc) {
  int64_t rank = blockType.getRank();
  SmallVector<int64_t> packedShape = {group};
  llvm::append_range(packedShape, blockType.getShape());
  Value packed = tensor::EmptyOp::create(builder, loc, packedShape,
                                         blockType.getElementType());
  SmallVector<OpFoldResult> sizes, strides(rank, builder.getIndexAttr(1));
  for (int64_t size : blockType.getShape())
    sizes.push_back(builder.getIndexAttr(size));
  for (int64_t i = 0; i < group; ++i) {
    SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0));
    offsets[dim] = builder.getIndexAttr(i * blockType.getDimSize(dim));
    Value block = tensor::ExtractSliceOp::create(builder, loc, blockType, input,
                                                 offsets, sizes, strides);
    SmallVector<OpFoldResult> at(rank + 1, builder.getIndexAttr(0)),
        blockSizes = {builder.getIndexAttr(1)},
        blockStrides(rank + 1, builder.getIndexAttr(1));
    at[0] = builder.getIndexAttr(i);
    llvm::append_range(blockSizes, sizes);
    packed = tensor::InsertSliceOp::create(builder, loc, block, packed, at,
                                           blockSizes, blockStrides);
  }
  return packed;
}

Value RuntimeLowering::unpackBlocks(Value blocks, int64_t dim, int64_t group,
                                    RankedTensorType blockType,
                                    RankedTensorType resultType, Location loc) {
  int64_t rank = blockType.getRank();
  Value result = tensor::EmptyOp::create(builder, loc, resultType.getShape(),
                                         resultType.getElementType());
  SmallVector<OpFoldResult> sizes, strides(rank, builder.getIndexAttr(1));
  for (int64_t size : blockType.getShape())
    sizes.push_back(builder.getIndexAttr(size));
  for (int64_t i = 0; i < group; ++i) {
    SmallVector<OpFoldResult> at(rank + 1, builder.getIndexAttr(0)),
        blockSizes = {builder.getIndexAttr(1)},
        blockStrides(rank + 1, builder.getIndexAttr(1));
    at[0] = builder.getIndexAttr(i);
    llvm::append_range(blockSizes, sizes);
    Value block = tensor::ExtractSliceOp::create(
        builder, loc, blockType, blocks, at, blockSizes, blockStrides);
    SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0));
    offsets[dim] = builder.getIndexAttr(i * blockType.getDimSize(dim));
    result = tensor::InsertSliceOp::create(builder, loc, block, result, offsets,
                                           sizes, strides);
  }
  return result;
}

FailureOr<SmallVector<RuntimeLowering::Bucket>>
RuntimeLowering::prepareBuckets(Operation *op, ValueRange inputs,
                                SmallVectorImpl<Value> &buffers, Location loc) {
  // The inputs by element type, in order.
  SmallVector<StringRef> suffixes;
  DenseMap<StringRef, SmallVector<unsigned>> members;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = cast<RankedTensorType>(input.getType());
    FailureOr<StringRef> suffix = getSuffix(op, type, /*reduces=*/true);
    if (failed(suffix))
      return failure();
    if (!members.count(*suffix))
      suffixes.push_back(*suffix);
    members[*suffix].push_back(i);
    buffers.push_back(allocate(type, input, loc));
  }
  SmallVector<Bucket> buckets;
  for (StringRef suffix : suffixes) {
    ArrayRef<unsigned> indices = members[suffix];
    auto addressesType =
        MemRefType::get({int64_t(indices.size())}, builder.getIndexType());
    Value addresses = memref::AllocOp::create(builder, loc, addressesType);
    SmallVector<int64_t> counts;
    for (auto [slot, i] : llvm::enumerate(indices)) {
      Value address = memref::ExtractAlignedPointerAsIndexOp::create(
          builder, loc, buffers[i]);
      memref::StoreOp::create(
          builder, loc, address, addresses,
          ValueRange{arith::ConstantIndexOp::create(builder, loc, slot)});
      counts.push_back(
          cast<RankedTensorType>(inputs[i].getType()).getNumElements());
    }
    auto countsType =
        RankedTensorType::get({int64_t(counts.size())}, builder.getI64Type());
    Value countsBuffer = bufferization::ToBufferOp::create(
        builder, loc,
        MemRefType::get(countsType.getShape(), builder.getI64Type()),
        arith::ConstantOp::create(
            builder, loc, DenseIntElementsAttr::get(countsType, counts)),
        /*read_only=*/true);
    buckets.push_back(
        {suffix,
         memref::CastOp::create(
             builder, loc,
             MemRefType::get({ShapedType::kDynamic}, builder.getIndexType()),
             addresses),
         memref::CastOp::create(
             builder, loc,
             MemRefType::get({ShapedType::kDynamic}, builder.getI64Type()),
             countsBuffer),
         SmallVector<unsigned>(indices)});
  }
  return buckets;
}

LogicalResult RuntimeLowering::lowerAllReduce(AllReduceOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  Value reduction = arith::ConstantOp::create(
      builder, loc, builder.getI32IntegerAttr(int32_t(op.getReduction())));
  // A bucket is one collective (per element type).
  SmallVector<Value> buffers;
  FailureOr<SmallVector<Bucket>> buckets =
      prepareBuckets(op, op.getInputs(), buffers, loc);
  if (failed(buckets))
    return failure();
  for (const Bucket &bucket : *buckets)
    call(("distrt_mlir_all_reduce_" + bucket.suffix).str(),
         ValueRange{bucket.addresses, bucket.counts, shape, axes, reduction},
         loc);
  SmallVector<Value> results;
  for (auto [input, buffer] : llvm::zip(op.getInputs(), buffers))
    results.push_back(toTensor(
        builder, loc, cast<RankedTensorType>(input.getType()), buffer));
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

/// Fails unless every future of `op` is consumed by `dist.wait` ops of the
/// same block (the futures of a lowered start op are not values at run time).
static LogicalResult checkFutureUses(Operation *op) {
  for (Value future : op->getResults()) {
    // The collective writes its buffers until a wait completes it.
    if (future.use_empty())
      return op->emitOpError("dist-to-runtime needs every future consumed "
                             "by a dist.wait; result #")
             << cast<OpResult>(future).getResultNumber() << " is never waited";
    for (Operation *user : future.getUsers())
      if (!isa<WaitOp>(user) || user->getBlock() != op->getBlock())
        return op->emitOpError("dist-to-runtime needs every future consumed "
                               "by a dist.wait in the same block; one is "
                               "used by ")
               << user->getName();
  }
  return success();
}

LogicalResult RuntimeLowering::lowerAllReduceStart(AllReduceStartOp op) {
  if (failed(checkFutureUses(op)))
    return failure();
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  Value reduction = arith::ConstantOp::create(
      builder, loc, builder.getI32IntegerAttr(int32_t(op.getReduction())));
  // One request per bucket (per element type); the buffers stay untouched
  // until the first wait on any of its futures completes it.
  SmallVector<Value> buffers;
  FailureOr<SmallVector<Bucket>> buckets =
      prepareBuckets(op, op.getInputs(), buffers, loc);
  if (failed(buckets))
    return failure();
  for (const Bucket &bucket : *buckets) {
    Value request = callStart(
        ("distrt_mlir_all_reduce_start_" + bucket.suffix).str(),
        ValueRange{bucket.addresses, bucket.counts, shape, axes, reduction},
        loc);
    for (unsigned i : bucket.members) {
      auto type = cast<RankedTensorType>(op.getInputs()[i].getType());
      Value buffer = buffers[i];
      futures[op.getFutures()[i]] = {
          request, buffer, [this, type, buffer](Location at) {
            return toTensor(builder, at, type, buffer);
          }};
    }
  }
  lowered.push_back(op);
  return success();
}

Value RuntimeLowering::callStart(StringRef name, ValueRange args,
                                 Location loc) {
  func::FuncOp callee = declare(name, args.getTypes(), {builder.getI64Type()},
                                /*synchronous=*/false);
  return func::CallOp::create(builder, loc, callee, args).getResult(0);
}

LogicalResult
RuntimeLowering::lowerReduceScatterStart(ReduceScatterStartOp op) {
  if (failed(checkFutureUses(op)))
    return failure();
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  Value reduction = arith::ConstantOp::create(
      builder, loc, builder.getI32IntegerAttr(int32_t(op.getReduction())));
  for (auto [input, future, dim] :
       llvm::zip(op.getInputs(), op.getFutures(), op.getScatterDims())) {
    auto resultType = cast<FutureType>(future.getType()).getValueType();
    FailureOr<StringRef> suffix = getSuffix(op, resultType, /*reduces=*/true);
    if (failed(suffix))
      return failure();
    auto [send, recv] =
        prepareReduceScatter(input, dim, group, resultType, loc);
    Value request =
        callStart(("distrt_mlir_reduce_scatter_start_" + *suffix).str(),
                  ValueRange{unranked(send, loc), unranked(recv, loc), shape,
                             axes, reduction},
                  loc);
    futures[future] = {request, send, [this, resultType, recv](Location at) {
                         return toTensor(builder, at, resultType, recv);
                       }};
  }
  lowered.push_back(op);
  return success();
}

LogicalResult RuntimeLowering::lowerAllGatherStart(AllGatherStartOp op) {
  if (failed(checkFutureUses(op)))
    return failure();
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  RankedTensorType resultType = op.getFuture().getType().getValueType();
  FailureOr<StringRef> suffix = getSuffix(op, inputType, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  auto [send, recv] = prepareAllGather(op.getInput(), group, loc);
  Value request = callStart(
      ("distrt_mlir_all_gather_start_" + *suffix).str(),
      ValueRange{unranked(send, loc), unranked(recv, loc), shape, axes}, loc);
  int64_t dim = op.getGatherDim(), size = group;
  futures[op.getFuture()] = {
      request, send,
      [this, recv, dim, size, inputType, resultType](Location at) {
        return finishAllGather(recv, dim, size, inputType, resultType, at);
      }};
  lowered.push_back(op);
  return success();
}

LogicalResult RuntimeLowering::lowerWait(WaitOp op) {
  Location loc = op.getLoc();
  SmallVector<Value> results;
  for (auto [future, result] : llvm::zip(op.getFutures(), op.getResults())) {
    auto pending = futures.find(future);
    if (pending == futures.end())
      return op.emitOpError("dist-to-runtime lowers a wait only on futures "
                            "of start ops in the same function");
    // Lowered in program order: the first wait of a bucket completes it.
    if (waited.insert(pending->second.request).second) {
      Value sendAddress = memref::ExtractAlignedPointerAsIndexOp::create(
          builder, loc, pending->second.send);
      call("distrt_mlir_wait", ValueRange{pending->second.request, sendAddress},
           loc);
    }
    results.push_back(pending->second.take(loc));
  }
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

RuntimeLowering::Transfer
RuntimeLowering::prepareReduceScatter(Value input, int64_t dim, int64_t group,
                                      RankedTensorType resultType,
                                      Location loc) {
  auto inputType = cast<RankedTensorType>(input.getType());
  // The blocks of `dim` as [group, slice...].
  SmallVector<int64_t> packedShape = {group};
  llvm::append_range(packedShape, resultType.getShape());
  auto packedType = resultType.clone(packedShape);
  Value packed =
      dim == 0 ? input : packBlocks(input, dim, group, resultType, loc);
  return {allocate(dim != 0 ? packedType : inputType, packed, loc),
          allocate(resultType, Value(), loc)};
}

RuntimeLowering::Transfer
RuntimeLowering::prepareAllGather(Value input, int64_t group, Location loc) {
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> gatheredShape = {group};
  llvm::append_range(gatheredShape, inputType.getShape());
  return {allocate(inputType, input, loc),
          allocate(inputType.clone(gatheredShape), Value(), loc)};
}

Value RuntimeLowering::finishAllGather(Value recv, int64_t dim, int64_t group,
                                       RankedTensorType inputType,
                                       RankedTensorType resultType,
                                       Location loc) {
  auto gatheredType = cast<MemRefType>(recv.getType());
  Value gathered =
      toTensor(builder, loc,
               RankedTensorType::get(gatheredType.getShape(),
                                     gatheredType.getElementType()),
               recv);
  return unpackBlocks(gathered, dim, group, inputType, resultType, loc);
}

LogicalResult RuntimeLowering::lowerReduceScatter(ReduceScatterOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  Value reduction = arith::ConstantOp::create(
      builder, loc, builder.getI32IntegerAttr(int32_t(op.getReduction())));
  SmallVector<Value> results;
  for (auto [input, result, dim] :
       llvm::zip(op.getInputs(), op.getResults(), op.getScatterDims())) {
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(result.getType());
    FailureOr<StringRef> suffix = getSuffix(op, inputType, /*reduces=*/true);
    if (failed(suffix))
      return failure();
    auto [send, recv] =
        prepareReduceScatter(input, dim, group, resultType, loc);
    Value sendView = unranked(send, loc), recvView = unranked(recv, loc);
    call(("distrt_mlir_reduce_scatter_" + *suffix).str(),
         ValueRange{sendView, recvView, shape, axes, reduction}, loc);
    results.push_back(toTensor(builder, loc, resultType, recv));
  }
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerAllGather(AllGatherOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  FailureOr<StringRef> suffix = getSuffix(op, inputType, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  auto [send, recv] = prepareAllGather(op.getInput(), group, loc);
  call(("distrt_mlir_all_gather_" + *suffix).str(),
       ValueRange{unranked(send, loc), unranked(recv, loc), shape, axes}, loc);
  Value result = finishAllGather(recv, op.getGatherDim(), group, inputType,
                                 resultType, loc);
  op.getResult().replaceAllUsesWith(result);
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerAllToAll(AllToAllOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  FailureOr<StringRef> suffix = getSuffix(op, inputType, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  // Block j of the split dim goes to member j; the block received from
  // member j is the j-th block of the concat dim.
  SmallVector<int64_t> blockShape(inputType.getShape());
  blockShape[op.getSplitDim()] /= group;
  auto blockType = inputType.clone(blockShape);
  SmallVector<int64_t> packedShape = {group};
  llvm::append_range(packedShape, blockShape);
  auto packedType = inputType.clone(packedShape);
  Value send = allocate(
      packedType,
      packBlocks(op.getInput(), op.getSplitDim(), group, blockType, loc), loc);
  Value recv = allocate(packedType, Value(), loc);
  Value sendView = unranked(send, loc), recvView = unranked(recv, loc);
  call(("distrt_mlir_all_to_all_" + *suffix).str(),
       ValueRange{sendView, recvView, shape, axes}, loc);
  Value received = toTensor(builder, loc, packedType, recv);
  op.getResult().replaceAllUsesWith(unpackBlocks(
      received, op.getConcatDim(), group, blockType, resultType, loc));
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerBroadcast(BroadcastOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  auto type = cast<RankedTensorType>(op.getInput().getType());
  FailureOr<StringRef> suffix = getSuffix(op, type, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  Value buffer = allocate(type, op.getInput(), loc);
  Value view = unranked(buffer, loc);
  Value root = arith::ConstantOp::create(
      builder, loc, builder.getI64IntegerAttr(op.getRoot()));
  call(("distrt_mlir_broadcast_" + *suffix).str(),
       ValueRange{view, shape, axes, root}, loc);
  op.getResult().replaceAllUsesWith(toTensor(builder, loc, type, buffer));
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerLocalSlice(LocalSliceOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  int64_t rank = resultType.getRank(), dim = op.getDim();
  Value index = groupRank(shape, axes, loc);
  Value length =
      arith::ConstantIndexOp::create(builder, loc, resultType.getDimSize(dim));
  SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0)), sizes,
      strides(rank, builder.getIndexAttr(1));
  offsets[dim] = arith::MulIOp::create(builder, loc, index, length).getResult();
  for (int64_t size : resultType.getShape())
    sizes.push_back(builder.getIndexAttr(size));
  Value slice = tensor::ExtractSliceOp::create(
      builder, loc, resultType, op.getInput(), offsets, sizes, strides);
  op.getResult().replaceAllUsesWith(slice);
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerShardOffset(ShardOffsetOp op) {
  Location loc = op.getLoc();
  auto [group, shape, axes] = getGroup(op);
  Value index = groupRank(shape, axes, loc);
  Value length = arith::ConstantIndexOp::create(
      builder, loc, static_cast<int64_t>(op.getSize()) / group);
  op.getResult().replaceAllUsesWith(
      arith::MulIOp::create(builder, loc, index, length).getResult());
  op->erase();
  return success();
}

LogicalResult RuntimeLowering::lower(Operation *op) {
  builder.setInsertionPoint(op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](AllReduceOp op) { return lowerAllReduce(op); })
      .Case([&](ReduceScatterOp op) { return lowerReduceScatter(op); })
      .Case([&](AllGatherOp op) { return lowerAllGather(op); })
      .Case([&](LocalSliceOp op) { return lowerLocalSlice(op); })
      .Case([&](ShardOffsetOp op) { return lowerShardOffset(op); })
      .Case([&](AllToAllOp op) { return lowerAllToAll(op); })
      .Case([&](BroadcastOp op) { return lowerBroadcast(op); })
      .Case([&](AllReduceStartOp op) { return lowerAllReduceStart(op); })
      .Case(
          [&](ReduceScatterStartOp op) { return lowerReduceScatterStart(op); })
      .Case([&](AllGatherStartOp op) { return lowerAllGatherStart(op); })
      .Case([&](WaitOp op) { return lowerWait(op); })
      .Case<SendOp, RecvOp>([](Operation *op) {
        // Placed programs' transfers are lowered before this; any other is
        // outside one.
        return op->emitOpError("dist-to-runtime lowers point-to-point "
                               "transfers only at the top level of a placed "
                               "program (a function with 'dist.place')");
      })
      .Default([](Operation *) { return success(); });
}

/// Fails on a function that carries shardings (on its arguments, results
/// or `dist.annotate` ops) but was not partitioned: lowering it would run
/// the whole single-device step on every rank of a mesh it never splits.
static LogicalResult checkPartitioned(ModuleOp module) {
  WalkResult result = module.walk([](func::FuncOp func) {
    if (func->hasAttr(DistDialect::kPartitionedAttrName))
      return WalkResult::advance();
    auto hasSharding = [](ArrayAttr dicts) {
      return dicts && llvm::any_of(dicts, [](Attribute dict) {
               return cast<DictionaryAttr>(dict).contains(
                   DistDialect::kShardingAttrName);
             });
    };
    bool annotated =
        hasSharding(func.getArgAttrsAttr()) ||
        hasSharding(func.getResAttrsAttr()) ||
        func.walk([](AnnotateOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (!annotated)
      return WalkResult::advance();
    mlir::emitError(func.getLoc(), "function '")
        << func.getSymName()
        << "' carries shardings but is not partitioned: run "
           "--dist-propagate-sharding --dist-partition (or a strategy's "
           "pipeline) before lowering it";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {
/// The module attribute naming the backend a program was built for.
constexpr llvm::StringLiteral kBackendAttrName = "distrt.backend";

struct DistToRuntimePass
    : public mlir::train::impl::DistToRuntimePassBase<DistToRuntimePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    if (backend == "auto" || backend == "mpi" || backend == "local" ||
        backend == "nccl")
      return success();
    return emitError(UnknownLoc::get(context))
           << "dist-to-runtime: unknown backend '" << backend
           << "' (expected auto, mpi, local or nccl)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // What placed programs were made from is for passes that place again;
    // nothing runs it.
    dist::erasePlacementSource(module);
    if (failed(checkPartitioned(module)))
      return signalPassFailure();
    // Runners read the step's shardings and mesh, which this pass removes.
    if (failed(train::recordStepSignature(module)))
      return signalPassFailure();
    // NCCL matches messages by order, and cannot wait for whichever peer
    // speaks first.
    if (backend == "nccl") {
      WalkResult serves = module.walk([](ServeOp serve) {
        serve.emitOpError("waits for the first of several peers, which the "
                          "nccl backend cannot (parameter servers need the "
                          "mpi backend)");
        return WalkResult::interrupt();
      });
      if (serves.wasInterrupted())
        return signalPassFailure();
    }
    if (backend != "auto")
      module->setAttr(kBackendAttrName,
                      StringAttr::get(module.getContext(), backend));
    LLVM_DEBUG({
      CommunicationTally tally = tallyCommunication(module);
      llvm::dbgs() << DEBUG_TYPE << ": " << tally.collectives
                   << " collectives of " << tally.collectiveBytes << " bytes, "
                   << tally.transfers << " sends\n";
    });
    RuntimeLowering lowering(module);
    // Placed programs (pipelines, parameter servers): their transfers, then
    // their fragments (one function per distinct body, or in place).
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(DistDialect::kPlaceAttrName) && !func.isExternal() &&
          failed(lowering.lowerTransfers(func)))
        return signalPassFailure();
    SmallVector<FragmentOp> fragments;
    module.walk([&](FragmentOp op) { fragments.push_back(op); });
    if (outlineFragments)
      lowering.lowerFragments(fragments);
    else
      for (FragmentOp fragment : fragments)
        lowering.inlineFragment(fragment);
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<DistDialect>(op->getDialect()) && !isa<MeshOp, AnnotateOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      if (failed(lowering.lower(op)))
        return signalPassFailure();
    lowering.finish();
    // The program is plain SPMD code now: the shardings and blocks (which
    // dist-run reads before lowering) and the meshes have served.
    module.walk([](func::FuncOp func) {
      func->removeAttr(DistDialect::kPartitionedAttrName);
      func->removeAttr(DistDialect::kPlaceAttrName);
      func->removeAttr(DistDialect::kScheduleAttrName);
      for (StringRef name :
           {DistDialect::kShardingAttrName, DistDialect::kBlockAttrName,
            DistDialect::kCacheAttrName}) {
        auto attr = StringAttr::get(func.getContext(), name);
        for (unsigned i = 0; i < func.getNumArguments(); ++i)
          func.removeArgAttr(i, attr);
        for (unsigned i = 0; i < func.getNumResults(); ++i)
          func.removeResultAttr(i, attr);
      }
    });
    module.walk([](Operation *op) {
      op->removeAttr(DistDialect::kResultShardingsAttrName);
    });
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      mesh.erase();
  }
};
} // namespace
