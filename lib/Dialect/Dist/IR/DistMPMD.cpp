//===- DistMPMD.cpp - placement, fragments, send/recv ---------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The MPMD half of the dist dialect: `#dist.place`, `#dist.unit`,
// `dist.fragment` (computation placed on a part of a mesh) and the
// point-to-point `dist.send` / `dist.recv`. What an op says on its own is
// checked by `verify()`; what needs the mesh (the axes exist, coordinates
// in range) by `verifySymbolUses`, as for the collectives.
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// PlaceAttr
//===----------------------------------------------------------------------===//

Attribute PlaceAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<StringAttr> axes;
  SmallVector<int64_t> coords;
  if (parser.parseLess() || parser.parseAttribute(mesh))
    return {};
  while (succeeded(parser.parseOptionalComma())) {
    std::string axis;
    int64_t coord;
    if (parser.parseKeywordOrString(&axis) || parser.parseEqual() ||
        parser.parseInteger(coord))
      return {};
    axes.push_back(parser.getBuilder().getStringAttr(axis));
    coords.push_back(coord);
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<PlaceAttr>(parser.getContext(), mesh,
                                      ArrayRef<StringAttr>(axes),
                                      ArrayRef<int64_t>(coords));
}

void PlaceAttr::print(AsmPrinter &printer) const {
  printer << '<' << getMesh();
  for (auto [axis, coord] : llvm::zip_equal(getAxes(), getCoords())) {
    printer << ", ";
    printer.printKeywordOrString(axis.getValue());
    printer << " = " << coord;
  }
  printer << '>';
}

LogicalResult PlaceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                FlatSymbolRefAttr mesh,
                                ArrayRef<StringAttr> axes,
                                ArrayRef<int64_t> coords) {
  if (axes.size() != coords.size())
    return emitError() << "a place needs one coordinate per axis, got "
                       << axes.size() << " axes and " << coords.size()
                       << " coordinates";
  llvm::SmallSet<StringRef, 4> seen;
  for (auto [axis, coord] : llvm::zip_equal(axes, coords)) {
    if (axis.getValue().empty())
      return emitError() << "a place's axes must be non-empty names";
    if (!seen.insert(axis.getValue()).second)
      return emitError() << "axis '" << axis.getValue()
                         << "' is fixed twice in one place";
    if (coord < 0)
      return emitError() << "axis '" << axis.getValue()
                         << "' has the negative coordinate " << coord;
  }
  return success();
}

std::optional<int64_t> PlaceAttr::getCoord(StringRef axis) const {
  for (auto [name, coord] : llvm::zip_equal(getAxes(), getCoords()))
    if (name.getValue() == axis)
      return coord;
  return std::nullopt;
}

LogicalResult mlir::dist::verifyPlace(PlaceAttr place, Operation *from,
                                      function_ref<InFlightDiagnostic()> emit,
                                      SymbolTableCollection *tables) {
  FailureOr<MeshOp> mesh = lookupMesh(from, place.getMesh(), emit, tables);
  if (failed(mesh))
    return failure();
  for (auto [axis, coord] :
       llvm::zip_equal(place.getAxes(), place.getCoords())) {
    if (!mesh->getAxisIndex(axis.getValue()))
      return emit() << "axis '" << axis.getValue()
                    << "' is not an axis of mesh @" << mesh->getSymName();
    int64_t size = mesh->getAxisSize(axis.getValue());
    if (coord >= size)
      return emit() << "coordinate " << coord << " is out of range for axis '"
                    << axis.getValue() << "' of size " << size;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScheduleUnitAttr
//===----------------------------------------------------------------------===//

LogicalResult
ScheduleUnitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         UnitKind kind, int64_t stage, int64_t microbatch) {
  if (stage < 0 || microbatch < 0)
    return emitError() << "a schedule unit's stage and microbatch must be "
                          "non-negative, got stage "
                       << stage << " and microbatch " << microbatch;
  return success();
}

//===----------------------------------------------------------------------===//
// FragmentOp
//===----------------------------------------------------------------------===//

void FragmentOp::build(OpBuilder &builder, OperationState &state,
                       TypeRange resultTypes, ValueRange inputs,
                       PlaceAttr place, ScheduleUnitAttr unit) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getPlaceAttrName(state.name), place);
  if (unit)
    state.addAttribute(getUnitAttrName(state.name), unit);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult FragmentOp::verify() {
  Block &block = getBodyBlock();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but its "
                         << "body takes " << block.getNumArguments()
                         << " arguments";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(getInputs(), block.getArguments()))) {
    auto [input, arg] = pair;
    if (input.getType() != arg.getType())
      return emitOpError() << "input #" << i << " is " << input.getType()
                           << " but the body's argument #" << i << " is "
                           << arg.getType();
  }
  // Placed computation does not nest: a fragment is one device group's
  // work, and transfers happen between fragments.
  WalkResult nested = getBody().walk([&](Operation *op) {
    if (isa<FragmentOp, SendOp, RecvOp, ServeOp>(op)) {
      op->emitOpError() << "must not be inside a '" << getOperationName()
                        << "'";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return failure();
  if (ScheduleUnitAttr unit = getUnitAttr();
      unit && unit.getKind() == UnitKind::update && unit.getMicrobatch() != 0 &&
      !isa<ServeOp>((*this)->getParentOp()))
    return emitOpError() << "is an update unit (U), which runs once per step "
                            "(microbatch 0, got "
                         << unit.getMicrobatch()
                         << ") unless it serves a request in a dist.serve";
  if (auto program = (*this)->getParentOfType<FunctionOpInterface>())
    if (auto place =
            program->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName);
        place && place != getPlace())
      return emitOpError() << "is placed on " << getPlace()
                           << " inside the program of " << place;
  return success();
}

LogicalResult FragmentOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyPlace(
      getPlace(), *this, [&]() { return emitOpError(); }, &tables);
}

LogicalResult YieldOp::verify() {
  Operation *parent = (*this)->getParentOp();
  StringRef what = isa<ServeOp>(parent) ? "dist.serve" : "fragment";
  if (getValues().size() != parent->getNumResults())
    return emitOpError() << "yields " << getValues().size()
                         << " values but the " << what << " has "
                         << parent->getNumResults() << " results";
  for (auto [i, pair] : llvm::enumerate(
           llvm::zip_equal(getValues(), parent->getResultTypes()))) {
    auto [value, type] = pair;
    if (value.getType() != type)
      return emitOpError() << "yields " << value.getType() << " as value #" << i
                           << " but the " << what << "'s result #" << i
                           << " is " << type;
  }
  return success();
}

static LogicalResult verifyPeer(Operation *op, PlaceAttr peer, int64_t channel,
                                StringRef direction);

//===----------------------------------------------------------------------===//
// ServeOp
//===----------------------------------------------------------------------===//

LogicalResult ServeOp::verify() {
  size_t cases = getCases().size();
  if (getPeers().size() != cases || getChannels().size() != cases)
    return emitOpError() << "has " << cases << " cases, " << getPeers().size()
                         << " peers and " << getChannels().size()
                         << " channels: one of each per peer";
  if (cases == 0)
    return emitOpError() << "needs at least one peer";
  if (getCount() < 1)
    return emitOpError() << "count must be at least 1, got " << getCount();
  if (getInits().getTypes() != getResultTypes())
    return emitOpError() << "its results must have the types of its inits "
                            "(the values carried from case to case)";
  llvm::SmallDenseSet<Attribute> seen;
  for (auto [k, peer] : llvm::enumerate(getPeers())) {
    if (!seen.insert(peer).second)
      return emitOpError() << "serves " << peer << " twice";
    if (getChannels()[k] < 0)
      return emitOpError() << "channel of peer #" << k
                           << " must be non-negative, got " << getChannels()[k];
    if (failed(verifyPeer(*this, cast<PlaceAttr>(peer), getChannels()[k],
                          "serves")))
      return failure();
  }
  return success();
}

LogicalResult ServeOp::verifyRegions() {
  for (auto [k, region] : llvm::enumerate(getCases())) {
    Block &block = region.front();
    auto peer = cast<PlaceAttr>(getPeers()[k]);
    if (block.getArgumentTypes() != getInits().getTypes())
      return emitOpError() << "case #" << k
                           << " must take the carried values as arguments ("
                           << getInits().size() << ", of the inits' types)";
    if (!isa_and_nonnull<YieldOp>(block.empty() ? nullptr : &block.back()))
      return emitOpError() << "case #" << k << " must end with dist.yield";
    unsigned probed = 0;
    for (Operation &op : block) {
      PlaceAttr other;
      if (auto send = dyn_cast<SendOp>(op))
        other = send.getTo();
      else if (auto recv = dyn_cast<RecvOp>(op)) {
        other = recv.getFrom();
        probed += other == peer && recv.getChannel() == getChannels()[k];
      } else if (!isa<FragmentOp, YieldOp>(op))
        return op.emitOpError()
               << "is in a case of dist.serve, which holds only "
                  "dist.fragment, dist.send and dist.recv";
      if (other && other != peer)
        return op.emitOpError() << "talks to " << other << " in the case of "
                                << peer << ": a case talks to its peer only";
    }
    if (probed != 1)
      return emitOpError() << "case #" << k << " must receive the probed "
                           << "message (channel " << getChannels()[k]
                           << " from " << peer << ") once, it does " << probed
                           << " times";
  }
  return success();
}

LogicalResult ServeOp::verifySymbolUses(SymbolTableCollection &tables) {
  for (Attribute peer : getPeers())
    if (failed(verifyPlace(
            cast<PlaceAttr>(peer), *this, [&]() { return emitOpError(); },
            &tables)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SendOp / RecvOp
//===----------------------------------------------------------------------===//

/// Checks what a send or receive says on its own: a non-negative channel,
/// and, inside a placed program, a peer that is another place of the
/// program's mesh.
static LogicalResult verifyPeer(Operation *op, PlaceAttr peer, int64_t channel,
                                StringRef direction) {
  if (channel < 0)
    return op->emitOpError() << "channel must be non-negative, got " << channel;
  auto program = op->getParentOfType<FunctionOpInterface>();
  auto place =
      program ? program->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName)
              : nullptr;
  if (!place)
    return success();
  if (place.getMesh() != peer.getMesh())
    return op->emitOpError()
           << direction << " " << peer
           << " is on another mesh than its program (" << place << ")";
  if (place == peer)
    return op->emitOpError() << direction << " its own place " << peer;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getTo(), getChannel(), "sends to");
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyPlace(getTo(), *this, [&]() { return emitOpError(); }, &tables);
}

LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getFrom(), getChannel(), "receives from");
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyPlace(
      getFrom(), *this, [&]() { return emitOpError(); }, &tables);
}

LogicalResult BlockAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayRef<int64_t> offsets,
                                ArrayRef<int64_t> shape) {
  if (offsets.size() != shape.size())
    return emitError() << "a block needs one offset per dim of the global "
                          "shape, got "
                       << offsets.size() << " offsets and " << shape.size()
                       << " dims";
  for (auto [d, offset, size] : llvm::enumerate(offsets, shape))
    if (offset < 0 || size < 0)
      return emitError() << "dim " << d << " of a block has offset " << offset
                         << " in size " << size
                         << ": both must be non-negative";
  return success();
}
