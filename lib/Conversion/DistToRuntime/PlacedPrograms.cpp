//===- PlacedPrograms.cpp - dist-to-runtime on placed programs ------------===//
//
// The point-to-point transfers and fragments of placed programs (one
// program per pipeline stage): see RuntimeLowering::lowerTransfers.
//
//===----------------------------------------------------------------------===//

#include "RuntimeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::dist;

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
  return lowerTransfersIn(program.front(), own);
}

LogicalResult RuntimeLowering::lowerTransfersIn(Block &block, PlaceAttr own) {
  SmallVector<std::pair<Value, Value>> sends;
  auto i64 = [&](int64_t value, Location loc) -> Value {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getI64IntegerAttr(value));
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    Location loc = op.getLoc();
    if (auto serve = dyn_cast<ServeOp>(op)) {
      if (failed(lowerServe(serve, own)))
        return failure();
      continue;
    }
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
  // The sends complete before the program returns, or the case of a
  // dist.serve ends (their buffers live until then).
  Operation *terminator = block.getTerminator();
  builder.setInsertionPoint(terminator);
  for (auto [request, buffer] : sends) {
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(
        builder, terminator->getLoc(), buffer);
    call("distrt_mlir_wait", ValueRange{request, address},
         terminator->getLoc());
  }
  return success();
}

LogicalResult RuntimeLowering::lowerServe(ServeOp serve, PlaceAttr own) {
  Location loc = serve.getLoc();
  builder.setInsertionPoint(serve);
  // The peers' world ranks and the probed channels, as i64 buffers.
  SmallVector<Value> sources, tags;
  for (auto [peer, channel] : llvm::zip(serve.getPeers(), serve.getChannels())) {
    FailureOr<Value> source =
        getPeerRank(serve, own, cast<PlaceAttr>(peer));
    if (failed(source))
      return failure();
    sources.push_back(*source);
    tags.push_back(arith::ConstantOp::create(
        builder, loc, builder.getI64IntegerAttr(channel)));
  }
  auto buffer = [&](ValueRange values) -> Value {
    Value tensor = tensor::FromElementsOp::create(builder, loc, values);
    auto type = cast<RankedTensorType>(tensor.getType());
    Value memref = bufferization::ToBufferOp::create(
        builder, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, /*read_only=*/true);
    return memref::CastOp::create(
        builder, loc,
        MemRefType::get({ShapedType::kDynamic}, builder.getI64Type()), memref);
  };
  Value sourceBuffer = buffer(sources), tagBuffer = buffer(tags);
  func::FuncOp probe = declare(
      "distrt_mlir_probe_any", {sourceBuffer.getType(), tagBuffer.getType(),
                                builder.getI64Type()},
      {builder.getI64Type()});

  // count times: wait for a request, run its peer's case.
  SmallVector<Value> inits(serve.getInits());
  inits.push_back(
      arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(0)));
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value count = arith::ConstantIndexOp::create(builder, loc, serve.getCount());
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto loop = scf::ForOp::create(builder, loc, zero, count, one, inits);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(loop.getBody());
  ValueRange carried = loop.getRegionIterArgs().drop_back();
  Value next = loop.getRegionIterArgs().back();
  Value found =
      func::CallOp::create(builder, loc, probe,
                           ValueRange{sourceBuffer, tagBuffer, next})
          .getResult(0);
  Value index =
      arith::IndexCastOp::create(builder, loc, builder.getIndexType(), found);
  SmallVector<int64_t> cases;
  for (unsigned k = 0; k < serve.getCases().size(); ++k)
    cases.push_back(k);
  auto dispatch = scf::IndexSwitchOp::create(
      builder, loc, serve.getResultTypes(), index, cases, cases.size());
  for (auto [k, region] : llvm::enumerate(serve.getCases())) {
    Region &target = dispatch.getCaseRegions()[k];
    target.takeBody(region);
    Block &block = target.front();
    for (auto [arg, value] : llvm::zip(block.getArguments(), carried))
      arg.replaceAllUsesWith(value);
    block.eraseArguments(0, block.getNumArguments());
    auto yield = cast<YieldOp>(block.getTerminator());
    builder.setInsertionPoint(yield);
    scf::YieldOp::create(builder, yield.getLoc(), yield.getValues());
    yield->erase();
    if (failed(lowerTransfersIn(block, own)))
      return failure();
  }
  // Not reached: the runtime returns one of the cases.
  Block &fallback = dispatch.getDefaultRegion().emplaceBlock();
  builder.setInsertionPointToStart(&fallback);
  scf::YieldOp::create(builder, loc, carried);
  builder.setInsertionPointAfter(dispatch);
  Value after = arith::AddIOp::create(
      builder, loc, found,
      arith::ConstantOp::create(builder, loc, builder.getI64IntegerAttr(1)));
  SmallVector<Value> yielded(dispatch.getResults());
  yielded.push_back(after);
  scf::YieldOp::create(builder, loc, yielded);
  serve.replaceAllUsesWith(loop.getResults().drop_back());
  serve->erase();
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
