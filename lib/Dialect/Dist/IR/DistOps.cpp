//===- DistOps.cpp - dist dialect ops -------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitOpError("needs at least one axis");
  if (getAxes().size() != shape.size())
    return emitOpError("has ") << getAxes().size() << " axis names for a "
                               << shape.size() << "-D shape";
  llvm::SmallSet<StringRef, 8> names;
  for (auto [name, size] : llvm::zip(getAxes(), shape)) {
    StringRef axis = cast<StringAttr>(name).getValue();
    if (axis.empty())
      return emitOpError("axis names must be non-empty");
    if (!names.insert(axis).second)
      return emitOpError("axis '") << axis << "' is declared twice";
    if (size < 1)
      return emitOpError("axis '") << axis << "' has size " << size
                                   << "; sizes must be positive";
  }
  if (std::optional<ArrayAttr> hostAxes = getHostAxes())
    for (Attribute axis : *hostAxes)
      if (!names.contains(cast<StringAttr>(axis).getValue()))
        return emitOpError("host axis ")
               << axis << " is not an axis of the mesh";
  for (auto [what, values] :
       {std::pair{"bandwidths", getBandwidths()}, {"latencies", getLatencies()}}) {
    if (!values)
      continue;
    if (values->size() != shape.size())
      return emitOpError() << what << " has " << values->size()
                           << " entries for " << shape.size() << " axes";
    for (Attribute value : *values)
      if (!(cast<FloatAttr>(value).getValueAsDouble() > 0))
        return emitOpError() << what << " must be positive, got " << value;
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
                       function_ref<InFlightDiagnostic()> emitError) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, name);
  if (!mesh)
    return emitError() << "mesh " << name << " does not exist";
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

LogicalResult
mlir::dist::verifyShardingFor(ShardingAttr sharding, Type type, MeshOp mesh,
                              StringRef what,
                              function_ref<InFlightDiagnostic()> emitError,
                              bool checkDivisible) {
  auto emit = [&]() {
    InFlightDiagnostic diag = emitError();
    if (!what.empty())
      diag << what << ": ";
    return diag;
  };
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emit() << "a sharding needs a ranked tensor, got " << type;
  if (tensor.getRank() != sharding.getRank())
    return emit() << "sharding has " << sharding.getRank()
                  << " dims but the tensor " << type << " has rank "
                  << tensor.getRank();
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

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto emit = [&]() { return emitOpError(); };
  auto mesh = tables.lookupNearestSymbolFrom<MeshOp>(*this,
                                                     getSharding().getMesh());
  if (!mesh)
    return emitOpError("mesh ") << getSharding().getMesh()
                                << " does not exist";
  return verifyShardingFor(getSharding(), getInput().getType(), mesh, "", emit);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Resolves a collective's mesh and axes (which must exist and be distinct)
/// and returns the group size.
template <typename OpT>
static FailureOr<int64_t> verifyGroup(OpT op, SymbolTableCollection &tables) {
  auto mesh = tables.lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  if (!mesh)
    return op.emitOpError("mesh ") << op.getMeshAttr() << " does not exist";
  if (op.getAxes().empty())
    return op.emitOpError("needs at least one mesh axis");
  llvm::SmallSet<StringRef, 4> seen;
  for (Attribute axis : op.getAxes())
    if (!seen.insert(cast<StringAttr>(axis).getValue()).second)
      return op.emitOpError("axis ") << axis << " is listed twice";
  if (failed(checkAxesExist(op.getAxes(), mesh,
                            [&]() { return op.emitOpError(); })))
    return failure();
  return mesh.getGroupSize(op.getAxes());
}

template <typename OpT>
static int64_t lookupGroupSize(OpT op) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  return mesh.getGroupSize(op.getAxes());
}

/// Checks that `dim` (the op's attribute `dimName`) indexes `input` and that
/// `result` keeps the rank and element type of `input`.
static LogicalResult checkResized(Operation *op, RankedTensorType input,
                                  RankedTensorType result, int64_t dim,
                                  StringRef dimName) {
  if (dim < 0 || dim >= input.getRank())
    return op->emitOpError() << dimName << " " << dim
                             << " is out of range for rank "
                             << input.getRank();
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError("result type ")
           << result << " must have the rank and element type of " << input;
  return success();
}

/// Checks the expected local result shape of a collective.
static LogicalResult checkResultShape(Operation *op, RankedTensorType result,
                                      ArrayRef<int64_t> expected) {
  if (result.getShape() != expected) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleave(expected, os, "x");
    return op->emitOpError("result type ")
           << result << " must have shape " << text;
  }
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  return verifyGroup(*this, tables);
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  int64_t dim = getScatterDim();
  if (failed(checkResized(*this, input, result, dim, "scatter_dim")))
    return failure();
  if (input.getDimSize(dim) % *group)
    return emitOpError("scatter_dim ")
           << dim << " of size " << input.getDimSize(dim)
           << " does not divide over " << *group << " devices";
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] /= *group;
  return checkResultShape(*this, result, expected);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  int64_t dim = getGatherDim();
  if (failed(checkResized(*this, input, result, dim, "gather_dim")))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] *= *group;
  return checkResultShape(*this, result, expected);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(checkResized(*this, input, result, split, "split_dim")) ||
      failed(checkResized(*this, input, result, concat, "concat_dim")))
    return failure();
  if (split == concat)
    return emitOpError("split_dim and concat_dim must differ");
  if (input.getDimSize(split) % *group)
    return emitOpError("split_dim ")
           << split << " of size " << input.getDimSize(split)
           << " does not divide over " << *group << " devices";
  SmallVector<int64_t> expected(input.getShape());
  expected[split] /= *group;
  expected[concat] *= *group;
  return checkResultShape(*this, result, expected);
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  int64_t root = getRoot();
  if (root < 0 || root >= *group)
    return emitOpError("root ") << root << " is not in a group of "
                                << *group << " devices";
  return success();
}

LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<int64_t> group = verifyGroup(*this, tables);
  if (failed(group))
    return failure();
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  int64_t dim = getDim();
  if (failed(checkResized(*this, input, result, dim, "dim")))
    return failure();
  if (input.getDimSize(dim) % *group)
    return emitOpError("dim ") << dim << " of size " << input.getDimSize(dim)
                               << " does not divide over " << *group
                               << " devices";
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] /= *group;
  return checkResultShape(*this, result, expected);
}

int64_t AllReduceOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t ReduceScatterOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t AllGatherOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t AllToAllOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t BroadcastOp::getGroupSize() { return lookupGroupSize(*this); }
int64_t LocalSliceOp::getGroupSize() { return lookupGroupSize(*this); }

#define GET_OP_CLASSES
#include "distopt/Dialect/Dist/IR/DistOps.cpp.inc"
