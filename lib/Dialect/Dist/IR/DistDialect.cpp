//===- DistDialect.cpp - dist dialect and #dist.sharding ------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "distopt/Dialect/Dist/IR/DistEnums.cpp.inc"
#include "distopt/Dialect/Dist/IR/DistOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistOpsTypes.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "distopt/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "distopt/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "distopt/Dialect/Dist/IR/DistOpsTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

/// Parses `[axis, "axis", ...]` (bare identifiers or strings).
static FailureOr<ArrayAttr> parseAxisList(AsmParser &parser) {
  SmallVector<Attribute> axes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    if (parser.parseKeywordOrString(&name))
      return failure();
    axes.push_back(parser.getBuilder().getStringAttr(name));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAxis))
    return failure();
  return parser.getBuilder().getArrayAttr(axes);
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<ArrayAttr> dims;
  ArrayAttr partial = parser.getBuilder().getArrayAttr({});
  auto parseDim = [&]() -> ParseResult {
    FailureOr<ArrayAttr> axes = parseAxisList(parser);
    if (failed(axes))
      return failure();
    dims.push_back(*axes);
    return success();
  };
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual())
      return {};
    FailureOr<ArrayAttr> axes = parseAxisList(parser);
    if (failed(axes))
      return {};
    partial = *axes;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardingAttr>(parser.getContext(), mesh, dims,
                                         partial);
}

static void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer, [&](Attribute axis) {
    printer.printKeywordOrString(cast<StringAttr>(axis).getValue());
  });
  printer << ']';
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<' << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer,
                        [&](ArrayAttr axes) { printAxisList(printer, axes); });
  printer << ']';
  if (isPartial()) {
    printer << ", partial = ";
    printAxisList(printer, getPartial());
  }
  printer << '>';
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh,
                                   ArrayRef<ArrayAttr> dims,
                                   ArrayAttr partial) {
  llvm::SmallSet<StringRef, 8> seen;
  auto check = [&](ArrayAttr axes) -> LogicalResult {
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name || name.getValue().empty())
        return emitError() << "mesh axes must be non-empty names, got " << axis;
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' is used twice in one sharding";
    }
    return success();
  };
  for (ArrayAttr axes : dims)
    if (failed(check(axes)))
      return failure();
  return check(partial);
}

bool ShardingAttr::isReplicated() const {
  return !isPartial() &&
         llvm::all_of(getDims(), [](ArrayAttr axes) { return axes.empty(); });
}

SmallVector<StringAttr> ShardingAttr::getUsedAxes() const {
  SmallVector<StringAttr> axes;
  for (ArrayAttr dim : getDims())
    for (Attribute axis : dim)
      axes.push_back(cast<StringAttr>(axis));
  for (Attribute axis : getPartial())
    axes.push_back(cast<StringAttr>(axis));
  return axes;
}

//===----------------------------------------------------------------------===//
// Function argument and result attributes
//===----------------------------------------------------------------------===//

/// A `dist.block` on argument or result `index` of a placed program.
static LogicalResult verifyValueBlock(Operation *op, StringRef what,
                                      unsigned index, NamedAttribute attr,
                                      function_ref<InFlightDiagnostic()> emit) {
  auto block = dyn_cast<BlockAttr>(attr.getValue());
  if (!block)
    return emit() << "'" << DistDialect::kBlockAttrName
                  << "' must be a #dist.block, got " << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || !func->hasAttr(DistDialect::kPlaceAttrName))
    return emit() << "'" << DistDialect::kBlockAttrName
                  << "' belongs on a placed program (a function with '"
                  << DistDialect::kPlaceAttrName << "')";
  DictionaryAttr attrs = what == "argument" ? func.getArgAttrDict(index)
                                            : func.getResultAttrDict(index);
  if (attrs && attrs.contains(DistDialect::kShardingAttrName))
    return emit() << "has both '" << DistDialect::kBlockAttrName << "' and '"
                  << DistDialect::kShardingAttrName << "'";
  Type type = what == "argument" ? func.getArgumentTypes()[index]
                                 : func.getResultTypes()[index];
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor ||
      tensor.getRank() != static_cast<int64_t>(block.getShape().size()))
    return emit() << block << " has " << block.getShape().size()
                  << " dims but the value is " << type;
  for (auto [d, offset, size, global] :
       llvm::enumerate(block.getOffsets(), tensor.getShape(), block.getShape()))
    if (ShapedType::isDynamic(size) || offset + size > global)
      return emit() << "dim " << d << " of " << type << " at offset " << offset
                    << " does not fit in " << global << " (" << block << ")";
  return success();
}

static LogicalResult verifyValueSharding(Operation *op, StringRef what,
                                         unsigned index, NamedAttribute attr) {
  // At the argument's own location (the function's for a result), without
  // the whole function printed after the error.
  auto emit = [&]() {
    Location loc = op->getLoc();
    auto func = dyn_cast<FunctionOpInterface>(op);
    // The entry block may not match the signature yet: the function's own
    // verifier, which says so, runs after the attribute verifiers.
    if (func && what == "argument" && !func.isExternal() &&
        index < func.getFunctionBody().getNumArguments())
      loc = func.getArgument(index).getLoc();
    return mlir::emitError(loc)
           << "'" << op->getName() << "' op " << what << " #" << index << ": ";
  };
  if (attr.getName() == DistDialect::kBlockAttrName)
    return verifyValueBlock(op, what, index, attr, emit);
  if (attr.getName() == DistDialect::kCacheAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !func ||
        !func->hasAttr(DistDialect::kPlaceAttrName))
      return emit() << "'" << DistDialect::kCacheAttrName
                    << "' is a unit attribute of a placed program's "
                       "argument or result";
    return success();
  }
  if (attr.getName() != DistDialect::kShardingAttrName)
    return emit() << "unknown attribute '" << attr.getName().getValue() << "'";
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  if (!sharding)
    return emit() << "'" << DistDialect::kShardingAttrName
                  << "' must be a #dist.sharding, got " << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  Type type = what == "argument" ? func.getArgumentTypes()[index]
                                 : func.getResultTypes()[index];
  FailureOr<MeshOp> mesh = lookupMesh(op, sharding.getMesh(), emit);
  if (failed(mesh))
    return failure();
  // A partitioned function has local types: the sharding describes how the
  // global array was split, so only the divisibility is not checked.
  return verifyShardingFor(sharding, type, *mesh, "", emit,
                           !op->hasAttr(DistDialect::kPartitionedAttrName));
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kPartitionedAttrName) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << kPartitionedAttrName
                               << "' must be a unit attribute on a function";
    return success();
  }
  if (attr.getName() == kPlaceAttrName) {
    auto place = dyn_cast<PlaceAttr>(attr.getValue());
    if (!place || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << kPlaceAttrName
                               << "' must be a #dist.place on a function";
    return verifyPlace(place, op, [&]() { return op->emitOpError(); });
  }
  if (attr.getName() == kPlacementAttrName)
    return verifyPlacementAttr(op, attr.getValue());
  if (attr.getName() == kScheduleAttrName) {
    if (!isa<DictionaryAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << kScheduleAttrName
                               << "' must be a dictionary on a function";
    return success();
  }
  if (attr.getName() != kResultShardingsAttrName)
    return op->emitOpError()
           << "unknown attribute '" << attr.getName().getValue() << "'";
  auto shardings = dyn_cast<ArrayAttr>(attr.getValue());
  if (!shardings || shardings.size() != op->getNumResults() ||
      !llvm::all_of(shardings, llvm::IsaPred<ShardingAttr>))
    return op->emitOpError() << "'" << kResultShardingsAttrName
                             << "' must hold one #dist.sharding per result ("
                             << op->getNumResults() << ")";
  auto func = op->getParentOfType<FunctionOpInterface>();
  bool local = func && func->hasAttr(kPartitionedAttrName);
  for (auto [i, attr] : llvm::enumerate(shardings)) {
    auto sharding = cast<ShardingAttr>(attr);
    auto emit = [&, i = i]() {
      return op->emitOpError()
             << "'" << kResultShardingsAttrName << "' #" << i << ": ";
    };
    FailureOr<MeshOp> mesh = lookupMesh(op, sharding.getMesh(), emit);
    if (failed(mesh) ||
        failed(verifyShardingFor(sharding, op->getResult(i).getType(), *mesh,
                                 "", emit, !local)))
      return failure();
  }
  return success();
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  return verifyValueSharding(op, "argument", argIndex, attr);
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  return verifyValueSharding(op, "result", resultIndex, attr);
}
