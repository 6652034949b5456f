//===- DistOps.cpp - dist dialect ops -------------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Interfaces/OpCost.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

/// `singular` when `n` is 1, else `plural`: "1 axis", "2 axes".
static StringRef plural(int64_t n, StringRef singular, StringRef plural) {
  return n == 1 ? singular : plural;
}

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  int64_t rank = shape.size();
  if (shape.empty())
    return emitOpError("needs at least one axis");
  int64_t numNames = getAxes().size();
  if (numNames != rank)
    return emitOpError("has ")
           << numNames << " " << plural(numNames, "axis name", "axis names")
           << " for a " << rank << "-D shape";
  llvm::SmallSet<StringRef, 8> names;
  int64_t numDevices = 1;
  for (auto [name, size] : llvm::zip(getAxes(), shape)) {
    StringRef axis = cast<StringAttr>(name).getValue();
    if (axis.empty())
      return emitOpError("axis names must be non-empty");
    if (!names.insert(axis).second)
      return emitOpError("axis '") << axis << "' is declared twice";
    if (size < 1)
      return emitOpError("axis '")
             << axis << "' has size " << size << "; sizes must be positive";
    if (llvm::MulOverflow(numDevices, size, numDevices))
      return emitOpError("the device count (the product of the axis sizes) "
                         "exceeds ")
             << std::numeric_limits<int64_t>::max();
  }
  if (std::optional<ArrayAttr> hostAxes = getHostAxes()) {
    llvm::SmallSet<StringRef, 8> hosts;
    for (Attribute attr : *hostAxes) {
      StringRef axis = cast<StringAttr>(attr).getValue();
      if (!names.contains(axis))
        return emitOpError("host axis '")
               << axis << "' is not an axis of the mesh";
      if (!hosts.insert(axis).second)
        return emitOpError("host axis '") << axis << "' is listed twice";
    }
  }
  for (auto [what, figure, values] :
       {std::tuple{"bandwidths", "bandwidth", getBandwidths()},
        {"latencies", "latency", getLatencies()}}) {
    if (!values)
      continue;
    int64_t numValues = values->size();
    if (numValues != rank)
      return emitOpError() << what << " has " << numValues << " "
                           << plural(numValues, "entry", "entries") << " for "
                           << rank << " " << plural(rank, "axis", "axes");
    for (auto [name, attr] : llvm::zip(getAxes(), *values)) {
      APFloat value = cast<FloatAttr>(attr).getValue();
      if (value.isFinite() && !value.isNegative() && !value.isZero())
        continue;
      SmallString<16> text;
      value.toString(text);
      return emitOpError() << figure << " of axis '"
                           << cast<StringAttr>(name).getValue()
                           << "' must be finite and positive, got '" << text
                           << "'";
    }
  }
  return success();
}

std::optional<int64_t> MeshOp::getAxisIndex(StringRef name) {
  for (auto [index, axis] : llvm::enumerate(getAxes()))
    if (cast<StringAttr>(axis).getValue() == name)
      return index;
  return std::nullopt;
}

int64_t MeshOp::getAxisSize(StringRef name) {
  return getShape()[*getAxisIndex(name)];
}

int64_t MeshOp::getGroupSize(ArrayAttr axes) {
  int64_t size = 1;
  for (Attribute axis : axes)
    size *= getAxisSize(cast<StringAttr>(axis).getValue());
  return size;
}

int64_t MeshOp::getNumDevices() {
  int64_t size = 1;
  for (int64_t axis : getShape())
    size *= axis;
  return size;
}

//===----------------------------------------------------------------------===//
// Shardings on meshes
//===----------------------------------------------------------------------===//

FailureOr<MeshOp>
mlir::dist::lookupMesh(Operation *from, FlatSymbolRefAttr name,
                       function_ref<InFlightDiagnostic()> emitError,
                       SymbolTableCollection *tables) {
  Operation *symbol = tables ? tables->lookupNearestSymbolFrom(from, name)
                             : SymbolTable::lookupNearestSymbolFrom(from, name);
  if (!symbol)
    return emitError() << "mesh " << name << " does not exist";
  auto mesh = dyn_cast<MeshOp>(symbol);
  if (!mesh)
    return emitError() << "symbol " << name << " is a '" << symbol->getName()
                       << "', not a '" << MeshOp::getOperationName() << "'";
  return mesh;
}

/// Checks that every name in `axes` is an axis of `mesh`.
static LogicalResult checkAxesExist(ArrayAttr axes, MeshOp mesh,
                                    function_ref<InFlightDiagnostic()> emit) {
  for (Attribute axis : axes)
    if (!mesh.getAxisIndex(cast<StringAttr>(axis).getValue()))
      return emit() << "axis '" << cast<StringAttr>(axis).getValue()
                    << "' is not an axis of mesh @" << mesh.getSymName();
  return success();
}

/// Checks that `sharding` has one list of axes per dim of `type`, a ranked
/// tensor (what needs no mesh).
static LogicalResult
checkShardingRank(ShardingAttr sharding, Type type,
                  function_ref<InFlightDiagnostic()> emit) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emit() << "a sharding needs a ranked tensor, got " << type;
  if (tensor.getRank() != sharding.getRank())
    return emit() << "sharding has " << sharding.getRank() << " "
                  << plural(sharding.getRank(), "dim", "dims")
                  << " but the tensor " << type << " has rank "
                  << tensor.getRank();
  return success();
}

LogicalResult mlir::dist::verifyShardingFor(
    ShardingAttr sharding, Type type, MeshOp mesh, StringRef what,
    function_ref<InFlightDiagnostic()> emitError, bool checkDivisible) {
  auto emit = [&]() {
    InFlightDiagnostic diag = emitError();
    if (!what.empty())
      diag << what << ": ";
    return diag;
  };
  if (failed(checkShardingRank(sharding, type, emit)))
    return failure();
  auto tensor = cast<RankedTensorType>(type);
  for (auto [dim, axes] : llvm::enumerate(sharding.getDims())) {
    if (failed(checkAxesExist(axes, mesh, emit)))
      return failure();
    int64_t group = mesh.getGroupSize(axes);
    if (!checkDivisible || tensor.isDynamicDim(dim))
      continue;
    if (tensor.getDimSize(dim) % group)
      return emit() << "dim " << dim << " of size " << tensor.getDimSize(dim)
                    << " does not divide over " << axes << " (" << group
                    << " devices)";
  }
  return checkAxesExist(sharding.getPartial(), mesh, emit);
}

SmallVector<int64_t> mlir::dist::getLocalShape(ArrayRef<int64_t> shape,
                                               ShardingAttr sharding,
                                               MeshOp mesh) {
  SmallVector<int64_t> local(shape);
  for (auto [dim, axes] : llvm::enumerate(sharding.getDims()))
    local[dim] /= mesh.getGroupSize(axes);
  return local;
}

FunctionShardingUpdate::FunctionShardingUpdate(FunctionOpInterface func)
    : func(func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    arguments.emplace_back(func.getArgAttrDict(i));
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    results.emplace_back(func.getResultAttrDict(i));
}

void FunctionShardingUpdate::setArgument(unsigned index,
                                         ShardingAttr sharding) {
  arguments[index].set(DistDialect::kShardingAttrName, sharding);
  argumentsChanged = true;
}

void FunctionShardingUpdate::setResult(unsigned index, ShardingAttr sharding) {
  results[index].set(DistDialect::kShardingAttrName, sharding);
  resultsChanged = true;
}

void FunctionShardingUpdate::apply() {
  MLIRContext *context = func->getContext();
  auto dicts = [&](ArrayRef<NamedAttrList> lists) {
    SmallVector<DictionaryAttr> result;
    for (const NamedAttrList &list : lists)
      result.push_back(list.getDictionary(context));
    return result;
  };
  if (argumentsChanged)
    func.setAllArgAttrs(dicts(arguments));
  if (resultsChanged)
    func.setAllResultAttrs(dicts(results));
  argumentsChanged = resultsChanged = false;
}

TensorSharding mlir::dist::toTensorSharding(ShardingAttr attr, MeshOp mesh) {
  auto indices = [&](ArrayAttr axes) {
    AxisIndices result;
    for (Attribute axis : axes)
      result.push_back(*mesh.getAxisIndex(cast<StringAttr>(axis).getValue()));
    return result;
  };
  TensorSharding sharding;
  for (ArrayAttr axes : attr.getDims())
    sharding.dims.push_back(indices(axes));
  sharding.partial = indices(attr.getPartial());
  return sharding;
}

ShardingAttr mlir::dist::toShardingAttr(const TensorSharding &sharding,
                                        MeshOp mesh) {
  MLIRContext *context = mesh.getContext();
  auto names = [&](ArrayRef<int64_t> axes) {
    SmallVector<Attribute> result;
    for (int64_t axis : axes)
      result.push_back(mesh.getAxes()[axis]);
    return ArrayAttr::get(context, result);
  };
  SmallVector<ArrayAttr> dims;
  for (const AxisIndices &axes : sharding.dims)
    dims.push_back(names(axes));
  return ShardingAttr::get(context,
                           FlatSymbolRefAttr::get(mesh.getSymNameAttr()), dims,
                           names(sharding.partial));
}

//===----------------------------------------------------------------------===//
// AnnotateOp
//===----------------------------------------------------------------------===//

LogicalResult AnnotateOp::verify() {
  return checkShardingRank(getSharding(), getInput().getType(),
                           [&]() { return emitOpError(); });
}

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto emit = [&]() { return emitOpError(); };
  FailureOr<MeshOp> mesh =
      lookupMesh(*this, getSharding().getMesh(), emit, &tables);
  if (failed(mesh))
    return failure();
  return verifyShardingFor(getSharding(), getInput().getType(), *mesh, "",
                           emit);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// A collective's `verify()` checks what needs no mesh, so that it runs when
// the op is verified alone; `verifySymbolUses`, which only runs once every op
// verified, resolves the mesh and checks the shapes against the group size.

/// Checks a collective's own list of axes: at least one, each listed once.
static LogicalResult verifyAxes(Operation *op, ArrayAttr axes) {
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  llvm::SmallSet<StringRef, 4> seen;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (!seen.insert(name).second)
      return op->emitOpError("axis '") << name << "' is listed twice";
  }
  return success();
}

/// Resolves a collective's mesh, whose axes its own must be, and returns the
/// group size.
template <typename OpT>
static FailureOr<int64_t> verifyGroup(OpT op, SymbolTableCollection &tables) {
  auto emit = [&]() { return op.emitOpError(); };
  FailureOr<MeshOp> mesh = lookupMesh(op, op.getMeshAttr(), emit, &tables);
  if (failed(mesh) || failed(checkAxesExist(op.getAxes(), *mesh, emit)))
    return failure();
  return mesh->getGroupSize(op.getAxes());
}

template <typename OpT> static int64_t lookupGroupSize(OpT op) {
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  return mesh.getGroupSize(op.getAxes());
}

/// Checks that `dim` (the op's attribute `dimName`) indexes `input` and that
/// `result` keeps the rank and element type of `input`.
static LogicalResult checkResized(Operation *op, RankedTensorType input,
                                  RankedTensorType result, int64_t dim,
                                  StringRef dimName) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError() << dimName << " " << dim
                             << " is out of range for rank " << input.getRank();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError("result type ")
           << result << " must have the rank and element type of " << input;
  return success();
}

/// Checks that dim `dim` of `input` (the op's attribute `dimName`) splits into
/// `group` equal slices; a dynamic dim can only be checked at run time.
static LogicalResult checkDivides(Operation *op, RankedTensorType input,
                                  int64_t dim, StringRef dimName,
                                  int64_t group) {
  int64_t size = input.getDimSize(dim);
  if (ShapedType::isDynamic(size) || size % group == 0)
    return success();
  return op->emitOpError() << dimName << " " << dim << " of size " << size
                           << " does not divide over " << group << " devices";
}

/// The size of one of `group` slices of `size`: dynamic stays dynamic.
static int64_t getSlicedSize(int64_t size, int64_t group) {
  return ShapedType::isDynamic(size) ? size : size / group;
}

/// The size of dim `dim` of `input` (the op's attribute `dimName`) once
/// `group` devices' pieces are concatenated: dynamic stays dynamic; fails when
/// the size overflows.
static FailureOr<int64_t> getGatheredSize(Operation *op, RankedTensorType input,
                                          int64_t dim, StringRef dimName,
                                          int64_t group) {
  int64_t size = input.getDimSize(dim), gathered;
  if (ShapedType::isDynamic(size))
    return size;
  if (llvm::MulOverflow(size, group, gathered))
    return op->emitOpError()
           << dimName << " " << dim << " of size " << size
           << " overflows when gathered from " << group << " devices";
  return gathered;
}

/// Checks the expected local result shape of a collective.
static LogicalResult checkResultShape(Operation *op, RankedTensorType result,
                                      ArrayRef<int64_t> expected) {
  if (result.getShape() == expected)
    return success();
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      expected, os,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          os << '?';
        else
          os << size;
      },
      "x");
  return op->emitOpError("result type ")
         << result << " must have shape " << text;
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyGroup(*this, tables);
}

/// The name of input `index`'s scatter dim in messages.
static std::string scatterDimName(unsigned index) {
  return ("input #" + Twine(index) + " scatter_dim").str();
}

/// The tensor types a collective produces: its results', or the value types
/// of the futures of its start form.
static SmallVector<RankedTensorType> getProducedTypes(TypeRange types) {
  SmallVector<RankedTensorType> produced;
  for (Type type : types)
    produced.push_back(isa<FutureType>(type)
                           ? cast<FutureType>(type).getValueType()
                           : cast<RankedTensorType>(type));
  return produced;
}

/// The checks of a reduce-scatter (synchronous or started) that need no
/// mesh.
static LogicalResult verifyReduceScatter(Operation *op, TypeRange inputs,
                                         TypeRange results,
                                         ArrayRef<int64_t> dims) {
  if (inputs.empty())
    return op->emitOpError("needs at least one input");
  if (results.size() != inputs.size() || dims.size() != inputs.size())
    return op->emitOpError(
               "needs one result and one scatter dim per input, got ")
           << inputs.size() << " inputs, " << results.size() << " results and "
           << dims.size() << " scatter dims";
  for (auto [i, input, result, dim] :
       llvm::enumerate(inputs, getProducedTypes(results), dims))
    if (failed(checkResized(op, cast<RankedTensorType>(input), result, dim,
                            scatterDimName(i))))
      return failure();
  return success();
}

/// The checks of a reduce-scatter over a group of `group` devices.
static LogicalResult verifyReduceScatterGroup(Operation *op, TypeRange inputs,
                                              TypeRange results,
                                              ArrayRef<int64_t> dims,
                                              int64_t group) {
  for (auto [i, input, result, dim] :
       llvm::enumerate(inputs, getProducedTypes(results), dims)) {
    auto type = cast<RankedTensorType>(input);
    if (failed(checkDivides(op, type, dim, scatterDimName(i), group)))
      return failure();
    SmallVector<int64_t> expected(type.getShape());
    expected[dim] = getSlicedSize(expected[dim], group);
    if (failed(checkResultShape(op, result, expected)))
      return failure();
  }
  return success();
}

/// The checks of an all-gather over a group of `group` devices.
static LogicalResult verifyAllGatherGroup(Operation *op, RankedTensorType input,
                                          RankedTensorType result, int64_t dim,
                                          int64_t group) {
  FailureOr<int64_t> gathered =
      getGatheredSize(op, input, dim, "gather_dim", group);
  if (failed(gathered))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] = *gathered;
  return checkResultShape(op, result, expected);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return verifyReduceScatter(*this, getInputs().getTypes(),
                             getResults().getTypes(), getScatterDims());
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  return verifyReduceScatterGroup(*this, getInputs().getTypes(),
                                  getResults().getTypes(), getScatterDims(),
                                  *group);
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return checkResized(*this, getInput().getType(), getResult().getType(),
                      getGatherDim(), "gather_dim");
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  return verifyAllGatherGroup(*this, getInput().getType(),
                              getResult().getType(), getGatherDim(), *group);
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (failed(checkResized(*this, input, result, getSplitDim(), "split_dim")) ||
      failed(checkResized(*this, input, result, getConcatDim(), "concat_dim")))
    return failure();
  if (getSplitDim() == getConcatDim())
    return emitOpError("split_dim and concat_dim must differ");
  return success();
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(checkDivides(*this, input, split, "split_dim", *group)))
    return failure();
  FailureOr<int64_t> gathered =
      getGatheredSize(*this, input, concat, "concat_dim", *group);
  if (failed(gathered))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[split] = getSlicedSize(expected[split], *group);
  expected[concat] = *gathered;
  return checkResultShape(*this, getResult().getType(), expected);
}

LogicalResult BroadcastOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  int64_t root = getRoot();
  if (root < 0)
    return emitOpError("root ") << root << " must be non-negative";
  return success();
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  int64_t root = getRoot();
  if (root >= *group)
    return emitOpError("root ") << root << " is not in a group of " << *group
                                << " " << plural(*group, "device", "devices");
  return success();
}

LogicalResult LocalSliceOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return checkResized(*this, getInput().getType(), getResult().getType(),
                      getDim(), "dim");
}

LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType();
  int64_t dim = getDim();
  if (failed(checkDivides(*this, input, dim, "dim", *group)))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] = getSlicedSize(expected[dim], *group);
  return checkResultShape(*this, getResult().getType(), expected);
}

int64_t AllReduceOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t ReduceScatterOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t AllGatherOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t AllToAllOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t BroadcastOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t LocalSliceOp::getGroupSize() { return lookupGroupSize(*this); }

#define GET_OP_CLASSES
#include "distopt/Dialect/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ShardOffsetOp
//===----------------------------------------------------------------------===//

LogicalResult ShardOffsetOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  if (static_cast<int64_t>(getSize()) < 0)
    return emitOpError("size ")
           << static_cast<int64_t>(getSize()) << " must be non-negative";
  return success();
}

LogicalResult ShardOffsetOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  int64_t size = getSize();
  if (size % *group)
    return emitOpError("size ")
           << size << " does not divide over " << *group << " devices";
  return success();
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  if (getFutures().size() != getInputs().size())
    return emitOpError("needs one future per input, got ")
           << getFutures().size() << " for " << getInputs().size();
  for (auto [i, input, produced] : llvm::enumerate(
           getInputs().getTypes(), getProducedTypes(getFutures().getTypes())))
    if (input != produced)
      return emitOpError("future #")
             << i << " must hold " << input << ", got " << produced;
  return success();
}

LogicalResult
AllReduceStartOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyGroup(*this, tables);
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return verifyReduceScatter(*this, getInputs().getTypes(),
                             getFutures().getTypes(), getScatterDims());
}

LogicalResult
ReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  return verifyReduceScatterGroup(*this, getInputs().getTypes(),
                                  getFutures().getTypes(), getScatterDims(),
                                  *group);
}

LogicalResult AllGatherStartOp::verify() {
  if (failed(verifyAxes(*this, getAxes())))
    return failure();
  return checkResized(*this, getInput().getType(),
                      getFuture().getType().getValueType(), getGatherDim(),
                      "gather_dim");
}

LogicalResult
AllGatherStartOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  return verifyAllGatherGroup(*this, getInput().getType(),
                              getFuture().getType().getValueType(),
                              getGatherDim(), *group);
}

int64_t AllReduceStartOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t ReduceScatterStartOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t AllGatherStartOp::getGroupSize() { return lookupGroupSize(*this); }

LogicalResult WaitOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &types) {
  for (Value future : operands) {
    auto type = dyn_cast<FutureType>(future.getType());
    if (!type)
      return failure();
    types.push_back(type.getValueType());
  }
  return success();
}

LogicalResult WaitOp::verify() {
  if (getFutures().empty())
    return emitOpError("needs at least one future");
  return success();
}

CommunicationTally mlir::dist::tallyCommunication(Operation *root) {
  CommunicationTally tally;
  auto operandBytes = [](Operation *op) {
    int64_t bytes = 0;
    for (Type type : op->getOperandTypes())
      if (isa<RankedTensorType>(type))
        bytes += getTensorBytes(type);
    return bytes;
  };
  root->walk([&](Operation *op) {
    if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp, BroadcastOp,
            AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp>(op)) {
      ++tally.collectives;
      tally.collectiveBytes += operandBytes(op);
    } else if (isa<SendOp>(op)) {
      ++tally.transfers;
      tally.transferBytes += operandBytes(op);
    }
  });
  return tally;
}
