//===- DistToRuntime.cpp - dist collectives to distrt calls ---------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTTORUNTIMEPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;
using namespace mlir::dist;

namespace {
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
  /// Declares `name(args...) -> results` (C interface) once.
  func::FuncOp declare(StringRef name, TypeRange args, TypeRange results);
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
                        RankedTensorType inputType,
                        RankedTensorType resultType, Location loc);
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
  /// Inlines a fragment's body where it stands, between runtime calls that
  /// mark its unit (for dist-run --trace).
  void inlineFragment(FragmentOp fragment);

private:
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
} // namespace

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
  if (!reduces) {
    if (element.isInteger(1))
      return StringRef("i1");
    if (element.isInteger(8))
      return StringRef("i8");
    if (element.isF16())
      return StringRef("f16");
    if (element.isBF16())
      return StringRef("bf16");
  }
  return op->emitOpError("dist-to-runtime does not ")
         << (reduces ? "reduce " : "move ") << element
         << " elements yet (" << (reduces ? "" : "i1, i8, f16, bf16, ")
         << "f32, f64, i32, i64)";
}

func::FuncOp RuntimeLowering::declare(StringRef name, TypeRange args,
                                      TypeRange results) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(args, results));
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
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

/// Reads `buffer` back as a tensor of `type`.
static Value toTensor(OpBuilder &builder, Location loc, RankedTensorType type,
                      Value buffer) {
  return bufferization::ToTensorOp::create(builder, loc, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
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
                                SmallVectorImpl<Value> &buffers,
                                Location loc) {
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
    auto addressesType = MemRefType::get({int64_t(indices.size())},
                                         builder.getIndexType());
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
        builder, loc, MemRefType::get(countsType.getShape(), builder.getI64Type()),
        arith::ConstantOp::create(builder, loc,
                                  DenseIntElementsAttr::get(countsType, counts)),
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
    results.push_back(toTensor(builder, loc,
                               cast<RankedTensorType>(input.getType()),
                               buffer));
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
  func::FuncOp callee = declare(name, args.getTypes(), {builder.getI64Type()});
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
    FailureOr<StringRef> suffix =
        getSuffix(op, resultType, /*reduces=*/true);
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
  Value request =
      callStart(("distrt_mlir_all_gather_start_" + *suffix).str(),
                ValueRange{unranked(send, loc), unranked(recv, loc), shape,
                           axes},
                loc);
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
      call("distrt_mlir_wait",
           ValueRange{pending->second.request, sendAddress}, loc);
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
  Value gathered = toTensor(
      builder, loc,
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

FailureOr<Value> RuntimeLowering::getPeerRank(Operation *op, PlaceAttr own,
                                              PlaceAttr peer) {
  Location loc = op->getLoc();
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, peer.getMesh());
  if (!mesh || own.getMesh() != peer.getMesh())
    return op->emitOpError("dist-to-runtime needs the peer on the mesh of "
                           "the program's place");
  ArrayRef<int64_t> shape = mesh.getShape();
  // Row-major: the stride of each axis, and the move along the fixed axes.
  int64_t stride = 1, delta = 0, fixedDevice = 0;
  bool allFixed = true;
  for (int64_t axis = shape.size() - 1; axis >= 0; --axis) {
    StringRef name = cast<StringAttr>(mesh.getAxes()[axis]).getValue();
    std::optional<int64_t> to = peer.getCoord(name), from = own.getCoord(name);
    if (to && !from)
      return op->emitOpError("dist-to-runtime cannot address ")
             << peer << " from " << own << ": axis '" << name
             << "' is fixed only in the peer";
    if (to) {
      delta += (*to - *from) * stride;
      fixedDevice += *to * stride;
    }
    allFixed &= to.has_value();
    stride *= shape[axis];
  }
  if (allFixed)
    return Value(arith::ConstantOp::create(
        builder, loc, builder.getI64IntegerAttr(fixedDevice)));
  func::FuncOp callee =
      declare("distrt_mlir_world_rank", {}, {builder.getI64Type()});
  Value rank = func::CallOp::create(builder, loc, callee, ValueRange{})
                   .getResult(0);
  Value move =
      arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(delta));
  return Value(arith::AddIOp::create(builder, loc, rank, move));
}

LogicalResult RuntimeLowering::lowerTransfers(func::FuncOp program) {
  auto own = program->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName);
  SmallVector<std::pair<Value, Value>> sends;
  auto i64 = [&](int64_t value, Location loc) -> Value {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getI64IntegerAttr(value));
  };
  for (Operation &op : llvm::make_early_inc_range(program.front())) {
    Location loc = op.getLoc();
    if (auto send = dyn_cast<SendOp>(op)) {
      builder.setInsertionPoint(send);
      auto type = cast<RankedTensorType>(send.getInput().getType());
      FailureOr<StringRef> suffix = getSuffix(send, type, /*reduces=*/false);
      FailureOr<Value> dest = getPeerRank(send, own, send.getTo());
      if (failed(suffix) || failed(dest))
        return failure();
      Value buffer = allocate(type, send.getInput(), loc);
      Value request =
          callStart(("distrt_mlir_send_start_" + *suffix).str(),
                    ValueRange{unranked(buffer, loc), *dest,
                               i64(send.getChannel(), loc)},
                    loc);
      sends.push_back({request, buffer});
      send->erase();
      continue;
    }
    auto recv = dyn_cast<RecvOp>(op);
    if (!recv)
      continue;
    // Posted before the previous fragment: the message can arrive while
    // that unit computes.
    Operation *post = recv;
    for (Operation *before = recv->getPrevNode(); before;
         before = before->getPrevNode())
      if (isa<FragmentOp>(before)) {
        post = before;
        break;
      }
    builder.setInsertionPoint(post);
    auto type = cast<RankedTensorType>(recv.getType());
    FailureOr<StringRef> suffix = getSuffix(recv, type, /*reduces=*/false);
    FailureOr<Value> source = getPeerRank(recv, own, recv.getFrom());
    if (failed(suffix) || failed(source))
      return failure();
    Value buffer = allocate(type, Value(), loc);
    Value request = callStart(("distrt_mlir_recv_start_" + *suffix).str(),
                              ValueRange{unranked(buffer, loc), *source,
                                         i64(recv.getChannel(), loc)},
                              loc);
    builder.setInsertionPoint(recv);
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer);
    call("distrt_mlir_wait", ValueRange{request, address}, loc);
    recv.getResult().replaceAllUsesWith(toTensor(builder, loc, type, buffer));
    recv->erase();
  }
  // The sends complete before the program returns (their buffers live
  // until then).
  Operation *terminator = program.front().getTerminator();
  builder.setInsertionPoint(terminator);
  for (auto [request, buffer] : sends) {
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(
        builder, terminator->getLoc(), buffer);
    call("distrt_mlir_wait", ValueRange{request, address},
         terminator->getLoc());
  }
  return success();
}

void RuntimeLowering::inlineFragment(FragmentOp fragment) {
  Location loc = fragment.getLoc();
  builder.setInsertionPoint(fragment);
  if (ScheduleUnitAttr unit = fragment.getUnitAttr()) {
    auto i64 = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(builder, loc,
                                       builder.getI64IntegerAttr(value));
    };
    call("distrt_mlir_unit_begin",
         ValueRange{i64(static_cast<int64_t>(unit.getKind())),
                    i64(unit.getStage()), i64(unit.getMicrobatch())},
         loc);
  }
  Block &body = fragment.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [arg, input] : llvm::zip(body.getArguments(), fragment.getInputs()))
    arg.replaceAllUsesWith(input);
  fragment->replaceAllUsesWith(yield.getValues());
  yield->erase();
  Block *parent = fragment->getBlock();
  parent->getOperations().splice(fragment->getIterator(), body.getOperations());
  builder.setInsertionPoint(fragment);
  if (fragment.getUnitAttr())
    call("distrt_mlir_unit_end", ValueRange{}, loc);
  fragment->erase();
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
      .Case([&](ReduceScatterStartOp op) {
        return lowerReduceScatterStart(op);
      })
      .Case([&](AllGatherStartOp op) { return lowerAllGatherStart(op); })
      .Case([&](WaitOp op) { return lowerWait(op); })
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
    bool annotated = hasSharding(func.getArgAttrsAttr()) ||
                     hasSharding(func.getResAttrsAttr()) ||
                     func.walk([](AnnotateOp) {
                           return WalkResult::interrupt();
                         }).wasInterrupted();
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
    if (backend == "auto" || backend == "mpi" || backend == "local")
      return success();
    return emitError(UnknownLoc::get(context))
           << "dist-to-runtime: unknown backend '" << backend
           << "' (expected auto, mpi or local)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkPartitioned(module)))
      return signalPassFailure();
    // Runners read the step's shardings and mesh, which this pass removes.
    if (failed(train::recordStepSignature(module)))
      return signalPassFailure();
    if (backend != "auto")
      module->setAttr(kBackendAttrName,
                      StringAttr::get(module.getContext(), backend));
    RuntimeLowering lowering(module);
    // Placed programs (pipelines, parameter servers): their transfers, then
    // their fragments' bodies in place.
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(DistDialect::kPlaceAttrName) && !func.isExternal() &&
          failed(lowering.lowerTransfers(func)))
        return signalPassFailure();
    SmallVector<FragmentOp> fragments;
    module.walk([&](FragmentOp op) { fragments.push_back(op); });
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
    // The program is plain SPMD code now: the shardings (which dist-run reads
    // before lowering) and the meshes have served.
    module.walk([](func::FuncOp func) {
      func->removeAttr(DistDialect::kPartitionedAttrName);
      func->removeAttr(DistDialect::kPlaceAttrName);
      func->removeAttr(DistDialect::kScheduleAttrName);
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, DistDialect::kShardingAttrName);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        func.removeResultAttr(
            i,
            StringAttr::get(func.getContext(), DistDialect::kShardingAttrName));
    });
    module.walk([](Operation *op) {
      op->removeAttr(DistDialect::kResultShardingsAttrName);
    });
    for (MeshOp mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
      mesh.erase();
  }
};
} // namespace
