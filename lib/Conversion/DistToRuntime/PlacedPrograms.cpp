//===- PlacedPrograms.cpp - dist-to-runtime on placed programs ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The point-to-point transfers and fragments of placed programs (one
// program per pipeline stage): see RuntimeLowering::lowerTransfers.
//
//===----------------------------------------------------------------------===//

#include "RuntimeLowering.h"

#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

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
  Value rank =
      func::CallOp::create(builder, loc, callee, ValueRange{}).getResult(0);
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
      Value request = callStart(
          ("distrt_mlir_send_start_" + *suffix).str(),
          ValueRange{unranked(buffer, loc), *dest, i64(send.getChannel(), loc)},
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
    Value request = callStart(
        ("distrt_mlir_recv_start_" + *suffix).str(),
        ValueRange{unranked(buffer, loc), *source, i64(recv.getChannel(), loc)},
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
  for (auto [peer, channel] :
       llvm::zip(serve.getPeers(), serve.getChannels())) {
    FailureOr<Value> source = getPeerRank(serve, own, cast<PlaceAttr>(peer));
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
      "distrt_mlir_probe_any",
      {sourceBuffer.getType(), tagBuffer.getType(), builder.getI64Type()},
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
  Value found = func::CallOp::create(builder, loc, probe,
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

void RuntimeLowering::beginUnit(FragmentOp fragment) {
  ScheduleUnitAttr unit = fragment.getUnitAttr();
  if (!unit)
    return;
  Location loc = fragment.getLoc();
  auto i64 = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getI64IntegerAttr(value));
  };
  call("distrt_mlir_unit_begin",
       ValueRange{i64(static_cast<int64_t>(unit.getKind())),
                  i64(unit.getStage()), i64(unit.getMicrobatch())},
       loc);
}

void RuntimeLowering::endUnit(FragmentOp fragment) {
  if (fragment.getUnitAttr())
    call("distrt_mlir_unit_end", ValueRange{}, fragment.getLoc());
}

void RuntimeLowering::inlineFragment(FragmentOp fragment) {
  builder.setInsertionPoint(fragment);
  beginUnit(fragment);
  Block &body = fragment.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [arg, input] : llvm::zip(body.getArguments(), fragment.getInputs()))
    arg.replaceAllUsesWith(input);
  fragment->replaceAllUsesWith(yield.getValues());
  yield->erase();
  Block *parent = fragment->getBlock();
  parent->getOperations().splice(fragment->getIterator(), body.getOperations());
  builder.setInsertionPoint(fragment);
  endUnit(fragment);
  fragment->erase();
}

namespace {
/// A class of fragments with the same body: the first is the model, the
/// others differ from it at most in the start of static slices.
struct FragmentClass {
  SmallVector<FragmentOp> members;
  /// Per top-level op of the body (by position) that is a train.slice whose
  /// start differs between members: the dims whose start differs.
  llvm::MapVector<unsigned, SmallVector<unsigned>> varying;
  /// Members that start the model's running sums: called with zeros as
  /// the sums (isFirstOfSums).
  DenseSet<Operation *> startsSums;
};
} // namespace

/// Compares the first `numOps` ops of `model`'s and `fragment`'s bodies in
/// lock-step, `same` mapping model values to fragment values (seeded with
/// the block arguments): true when they compute the same, up to the start
/// (and limit) of train.slice ops of one shape, whose varying dims are
/// added to `found` (position in the body -> dims).
static bool matchOps(FragmentOp model, FragmentOp fragment, unsigned numOps,
                     DenseMap<Value, Value> &same,
                     llvm::MapVector<unsigned, SmallVector<unsigned>> &found) {
  auto check = [&](Value x, Value y) { return success(same.lookup(x) == y); };
  auto mark = [&](Value x, Value y) { same[x] = y; };
  Block &a = model.getBodyBlock(), &b = fragment.getBodyBlock();
  auto x = a.begin(), y = b.begin();
  for (unsigned position = 0; position < numOps; ++position, ++x, ++y) {
    auto sliceX = dyn_cast<train::SliceOp>(&*x);
    auto sliceY = dyn_cast<train::SliceOp>(&*y);
    if (sliceX && sliceY) {
      if (failed(check(sliceX.getOperand(), sliceY.getOperand())) ||
          sliceX.getType() != sliceY.getType() ||
          sliceX.getStridesAttr() != sliceY.getStridesAttr())
        return false;
      ArrayRef<int64_t> startX = sliceX.getStart(), startY = sliceY.getStart();
      for (unsigned dim = 0; dim < startX.size(); ++dim)
        if (startX[dim] != startY[dim])
          found[position].push_back(dim);
      mark(sliceX.getResult(), sliceY.getResult());
      continue;
    }
    if (!OperationEquivalence::isEquivalentTo(
            &*x, &*y, check, mark, OperationEquivalence::IgnoreLocations))
      return false;
  }
  return true;
}

/// Adds the varying dims `found` for one more member to `varying`.
static void
mergeVarying(const llvm::MapVector<unsigned, SmallVector<unsigned>> &found,
             llvm::MapVector<unsigned, SmallVector<unsigned>> &varying) {
  for (auto &[position, dims] : found) {
    SmallVector<unsigned> &all = varying[position];
    for (unsigned dim : dims)
      if (!llvm::is_contained(all, dim))
        all.push_back(dim);
    llvm::sort(all);
  }
}

/// True when `fragment`'s body computes what `model`'s does, up to the
/// start (and limit) of train.slice ops of one shape: those are added to
/// `varying` (position in the body -> the dims whose start differs).
static bool
isSameComputation(FragmentOp model, FragmentOp fragment,
                  llvm::MapVector<unsigned, SmallVector<unsigned>> &varying) {
  if (model->getResultTypes() != fragment->getResultTypes() ||
      model.getInputs().getTypes() != fragment.getInputs().getTypes())
    return false;
  Block &a = model.getBodyBlock(), &b = fragment.getBodyBlock();
  if (a.getOperations().size() != b.getOperations().size())
    return false;
  DenseMap<Value, Value> same;
  for (auto [x, y] : llvm::zip(a.getArguments(), b.getArguments()))
    same[x] = y;
  llvm::MapVector<unsigned, SmallVector<unsigned>> found;
  // Every op, the terminator included (its operands map).
  if (!matchOps(model, fragment, a.getOperations().size(), same, found))
    return false;
  mergeVarying(found, varying);
  return true;
}

/// True when `fragment` is `model` for the first of the microbatches whose
/// sums `model` carries: `model` takes k more inputs, the running sums,
/// and ends with k train.add ops, each adding one to what `fragment`
/// yields in its place. Called with zeros as the sums, `model` computes
/// `fragment` (0 + x is x). Varying slice starts are added to `varying`.
static bool
isFirstOfSums(FragmentOp model, FragmentOp fragment,
              llvm::MapVector<unsigned, SmallVector<unsigned>> &varying) {
  unsigned numInputs = fragment.getInputs().size();
  unsigned numSums = model.getInputs().size() - numInputs;
  if (model.getInputs().size() <= numInputs ||
      model->getResultTypes() != fragment->getResultTypes() ||
      TypeRange(model.getInputs().take_front(numInputs)) !=
          TypeRange(fragment.getInputs()))
    return false;
  Block &a = model.getBodyBlock(), &b = fragment.getBodyBlock();
  size_t numOps = b.getOperations().size() - 1;
  if (a.getOperations().size() != numOps + numSums + 1)
    return false;
  // The sums: the model's last k ops, sum_i = add(arg_{n+i}, x_i), yielded
  // as its last k values.
  auto modelYield = cast<YieldOp>(a.getTerminator());
  auto yield = cast<YieldOp>(b.getTerminator());
  unsigned numResults = yield.getValues().size();
  if (numResults < numSums)
    return false;
  SmallVector<train::AddOp> sums;
  auto it = std::next(a.begin(), numOps);
  for (unsigned i = 0; i < numSums; ++i, ++it) {
    auto add = dyn_cast<train::AddOp>(&*it);
    if (!add || add.getLhs() != a.getArgument(numInputs + i) ||
        modelYield.getValues()[numResults - numSums + i] != add.getResult() ||
        !add.getResult().hasOneUse() || add.getType() != add.getRhs().getType())
      return false;
    sums.push_back(add);
  }
  DenseMap<Value, Value> same;
  for (unsigned i = 0; i < numInputs; ++i)
    same[a.getArgument(i)] = b.getArgument(i);
  llvm::MapVector<unsigned, SmallVector<unsigned>> found;
  if (!matchOps(model, fragment, numOps, same, found))
    return false;
  for (unsigned i = 0; i < numResults; ++i) {
    Value x = i < numResults - numSums
                  ? modelYield.getValues()[i]
                  : sums[i - (numResults - numSums)].getRhs();
    if (same.lookup(x) != yield.getValues()[i])
      return false;
  }
  mergeVarying(found, varying);
  return true;
}

void RuntimeLowering::lowerFragments(ArrayRef<FragmentOp> fragments) {
  // Classes of fragments with the same body, found among those of the
  // same result and input types and body size.
  SmallVector<FragmentClass> classes;
  DenseMap<std::pair<Operation *, size_t>, SmallVector<unsigned>> buckets;
  for (FragmentOp fragment : fragments) {
    // Only fragments of tensors and scalars: a future (a collective started
    // in one fragment and awaited in another) stays where it is.
    auto plain = [](Type type) {
      return isa<RankedTensorType>(type) || type.isIntOrIndexOrFloat();
    };
    if (!llvm::all_of(fragment->getResultTypes(), plain) ||
        !llvm::all_of(fragment.getInputs().getTypes(), plain)) {
      classes.push_back({{fragment}, {}});
      continue;
    }
    auto key = std::make_pair(
        fragment->getParentOfType<ModuleOp>().getOperation(),
        llvm::hash_combine(
            fragment.getBodyBlock().getOperations().size(),
            llvm::hash_combine_range(fragment->getResultTypes().begin(),
                                     fragment->getResultTypes().end()),
            llvm::hash_combine_range(fragment.getInputs().getTypes().begin(),
                                     fragment.getInputs().getTypes().end())));
    SmallVector<unsigned> &bucket = buckets[key];
    bool placed = false;
    for (unsigned index : bucket) {
      FragmentClass &candidate = classes[index];
      if (isSameComputation(candidate.members.front(), fragment,
                            candidate.varying)) {
        candidate.members.push_back(fragment);
        placed = true;
        break;
      }
    }
    if (!placed) {
      bucket.push_back(classes.size());
      classes.push_back({{fragment}, {}});
    }
  }
  // A fragment like no other may be the first microbatch of a class that
  // carries sums (a pipeline stage's backward): it joins the class.
  for (FragmentClass &single : classes) {
    if (single.members.size() != 1)
      continue;
    FragmentOp fragment = single.members.front();
    for (FragmentClass &candidate : classes) {
      if (&candidate == &single || candidate.members.empty() ||
          !isFirstOfSums(candidate.members.front(), fragment,
                         candidate.varying))
        continue;
      candidate.members.push_back(fragment);
      candidate.startsSums.insert(fragment);
      single.members.clear();
      break;
    }
  }
  SymbolTable symbols(module);
  for (FragmentClass &fragmentClass : classes) {
    if (fragmentClass.members.empty())
      continue;
    if (fragmentClass.members.size() == 1) {
      inlineFragment(fragmentClass.members.front());
      continue;
    }
    FragmentOp model = fragmentClass.members.front();
    Location loc = model.getLoc();
    // The function: the fragment's inputs, then one index per varying
    // slice start.
    SmallVector<Type> inputs(model.getInputs().getTypes());
    // (The model is erased once called: its input count, kept.)
    size_t numModelInputs = inputs.size();
    unsigned numVarying = 0;
    for (auto &entry : fragmentClass.varying)
      numVarying += entry.second.size();
    inputs.append(numVarying, builder.getIndexType());
    auto program = model->getParentOfType<func::FuncOp>();
    std::string name = (program ? program.getSymName().str() : "fragment");
    if (ScheduleUnitAttr unit = model.getUnitAttr())
      name += llvm::formatv("_{0}{1}", stringifyUnitKind(unit.getKind()),
                            unit.getStage());
    builder.setInsertionPointToEnd(module.getBody());
    auto function = func::FuncOp::create(
        builder, loc, name,
        builder.getFunctionType(inputs, model->getResultTypes()));
    function.setPrivate();
    symbols.insert(function);
    Block *entry = function.addEntryBlock();
    IRMapping mapping;
    Block &body = model.getBodyBlock();
    for (auto [arg, input] :
         llvm::zip(body.getArguments(),
                   entry->getArguments().take_front(body.getNumArguments())))
      mapping.map(arg, input);
    builder.setInsertionPointToEnd(entry);
    unsigned nextIndex = body.getNumArguments();
    for (auto [position, op] : llvm::enumerate(body.getOperations())) {
      if (auto yield = dyn_cast<YieldOp>(op)) {
        SmallVector<Value> results;
        for (Value value : yield.getValues())
          results.push_back(mapping.lookup(value));
        func::ReturnOp::create(builder, yield.getLoc(), results);
        continue;
      }
      auto it = fragmentClass.varying.find(position);
      if (it == fragmentClass.varying.end()) {
        builder.clone(op, mapping);
        continue;
      }
      // A slice whose start varies: one whose start in the varying dims
      // is an argument.
      auto slice = cast<train::SliceOp>(op);
      auto type = cast<RankedTensorType>(slice.getType());
      SmallVector<OpFoldResult> offsets, sizes, strides;
      std::optional<ArrayRef<int64_t>> steps = slice.getStrides();
      for (unsigned dim = 0; dim < type.getRank(); ++dim) {
        if (llvm::is_contained(it->second, dim))
          offsets.push_back(entry->getArgument(nextIndex++));
        else
          offsets.push_back(builder.getIndexAttr(slice.getStart()[dim]));
        sizes.push_back(builder.getIndexAttr(type.getDimSize(dim)));
        strides.push_back(builder.getIndexAttr(steps ? (*steps)[dim] : 1));
      }
      Value sliced = tensor::ExtractSliceOp::create(
          builder, slice.getLoc(), type, mapping.lookup(slice.getOperand()),
          offsets, sizes, strides);
      mapping.map(slice.getResult(), sliced);
    }
    // Each fragment: a call with its inputs and its slices' starts.
    for (FragmentOp fragment : fragmentClass.members) {
      Location at = fragment.getLoc();
      builder.setInsertionPoint(fragment);
      SmallVector<Value> operands(fragment.getInputs());
      if (fragmentClass.startsSums.contains(fragment))
        for (Type type : ArrayRef<Type>(inputs).slice(
                 operands.size(), numModelInputs - operands.size())) {
          auto tensor = cast<RankedTensorType>(type);
          operands.push_back(arith::ConstantOp::create(
              builder, at,
              DenseElementsAttr::get(
                  tensor, builder.getZeroAttr(tensor.getElementType()))));
        }
      Block &own = fragment.getBodyBlock();
      for (auto &[position, dims] : fragmentClass.varying) {
        auto slice = cast<train::SliceOp>(*std::next(own.begin(), position));
        for (unsigned dim : dims)
          operands.push_back(arith::ConstantIndexOp::create(
              builder, at, slice.getStart()[dim]));
      }
      beginUnit(fragment);
      auto call = func::CallOp::create(builder, at, function, operands);
      fragment->replaceAllUsesWith(call.getResults());
      endUnit(fragment);
      fragment->erase();
    }
  }
}
