//===- StepInputs.cpp - initializing and checking the step's inputs -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/StepInputs.h"
#include "distopt/Runner/Error.h"

#include "distopt/Dialect/Train/IR/TrainOps.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

/// The global rows of the tables that gathers index with `indices`: the
/// argument's global shape when the table is an argument of the step (a
/// vocabulary-sharded table holds a block of them), else its own rows
/// unless it is such a block.
static std::optional<int64_t> getTableRows(Value indices,
                                           ArrayRef<Binding> bindings) {
  std::optional<int64_t> rows;
  for (Operation *user : indices.getUsers()) {
    auto gather = dyn_cast<train::GatherOp>(user);
    if (!gather || gather.getIndices() != indices)
      continue;
    std::optional<int64_t> tableRows;
    auto arg = dyn_cast<BlockArgument>(gather.getTable());
    if (arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
        arg.getArgNumber() < bindings.size())
      tableRows = bindings[arg.getArgNumber()].globalShape[0];
    else if (!gather.getRowOffset())
      tableRows =
          cast<RankedTensorType>(gather.getTable().getType()).getShape()[0];
    if (tableRows)
      rows = std::min(rows.value_or(*tableRows), *tableRows);
  }
  return rows;
}

static bool isInteger(const std::string &dtype) { return dtype[1] == 'i'; }

std::optional<IndexRange> runner::getIndexRange(func::FuncOp entry,
                                                const Binding &binding,
                                                ArrayRef<Binding> bindings) {
  const train::StepSignature::Value &value = *binding.value;
  Value arg = entry ? entry.getArgument(value.index) : Value();
  if (value.role == train::Role::label) {
    std::optional<int64_t> classes;
    if (auto recorded =
            entry ? entry.getArgAttrOfType<IntegerAttr>(
                        value.index, train::TrainDialect::kClassesAttrName)
                  : IntegerAttr())
      classes = recorded.getInt(); // A cross-entropy rewritten into reductions.
    else
      classes = arg ? train::getCrossEntropyClasses(arg) : value.classes;
    if (classes)
      return IndexRange{*classes, "the classes of the cross-entropy"};
  }
  if (value.role == train::Role::input && isInteger(binding.dtype) && arg)
    if (std::optional<int64_t> rows = getTableRows(arg, bindings))
      return IndexRange{*rows, "the rows of the table it indexes"};
  return std::nullopt;
}

/// The value of element `i` of an integer array of `dtype` at `data`.
static int64_t getInteger(StringRef dtype, const char *data, int64_t i) {
  if (dtype == "<i4") {
    int32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, data + 8 * i, 8);
  return v;
}

/// "[3]" or "[1, 2]" for flat index `i` of `shape`; "" for a scalar.
static std::string formatIndex(ArrayRef<int64_t> shape, int64_t i) {
  if (shape.empty())
    return "";
  std::vector<int64_t> index(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    index[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  std::string text = "[";
  for (auto [d, at] : llvm::enumerate(index))
    text += (d ? ", " : "") + std::to_string(at);
  return text + "]";
}

llvm::Error runner::checkIndexRange(const Binding &binding, const Array &global,
                                    const IndexRange &range) {
  return checkIndexRange(binding, global.dtype, global.shape,
                         global.bytes.data(), range, "");
}

llvm::Error runner::checkIndexRange(const Binding &binding, StringRef dtype,
                                    ArrayRef<int64_t> shape, const char *data,
                                    const IndexRange &range, StringRef where) {
  if (!isInteger(dtype.str()))
    return llvm::Error::success();
  const char *kind =
      binding.value->role == train::Role::label ? "label" : "input";
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = getInteger(dtype, data, i);
    if (v >= 0 && v < range.bound)
      continue;
    return makeEveryRankError(llvm::Twine(kind) + " '" + binding.value->name +
                              "'" + formatIndex(shape, i) + where + " is " +
                              llvm::Twine(v) + ", outside [0, " +
                              llvm::Twine(range.bound) + ") (" + range.origin +
                              ")");
  }
  return llvm::Error::success();
}

/// True when `param` is the scale of a normalization (initialized to one).
static bool isNormScale(Value param) {
  return llvm::any_of(param.getUses(), [](OpOperand &use) {
    if (auto norm = dyn_cast<train::LayerNormOp>(use.getOwner()))
      return use.get() == norm.getWeight();
    if (auto norm = dyn_cast<train::BatchNormOp>(use.getOwner()))
      return use.get() == norm.getWeight();
    return false;
  });
}

llvm::Expected<Array> runner::initialize(func::FuncOp entry, ModuleOp module,
                                         const Binding &binding,
                                         ArrayRef<Binding> bindings,
                                         std::mt19937_64 &random) {
  const train::StepSignature::Value &value = *binding.value;
  Value arg = entry.getArgument(value.index);
  ArrayRef<int64_t> shape = binding.globalShape;
  Array array;
  array.dtype = binding.dtype;
  array.shape.assign(shape.begin(), shape.end());
  int64_t count = array.getNumElements();
  std::vector<double> values(count, 0.0);
  std::optional<IndexRange> range = getIndexRange(entry, binding, bindings);
  // The step's own initial value (`train.init`: the loss scale, PowerSGD's
  // warm-start matrix) comes before the runner's scheme.
  Attribute init =
      entry.getArgAttr(value.index, train::TrainDialect::kInitAttrName);
  if (auto splat = dyn_cast_or_null<FloatAttr>(init)) {
    std::fill(values.begin(), values.end(), splat.getValueAsDouble());
  } else if (init) {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (double &v : values)
      v = normal(random);
  } else {
    switch (*value.role) {
    case train::Role::param:
      if (shape.size() >= 2) {
        int64_t fanIn = count / shape[0];
        double bound = 1.0 / std::sqrt(double(fanIn));
        std::uniform_real_distribution<double> uniform(-bound, bound);
        for (double &v : values)
          v = uniform(random);
      } else if (isNormScale(arg)) {
        std::fill(values.begin(), values.end(), 1.0);
      }
      break;
    case train::Role::hyper:
      if (!isInteger(array.dtype))
        std::fill(values.begin(), values.end(), 0.01);
      break;
    case train::Role::input:
      if (range) {
        std::uniform_int_distribution<int64_t> uniform(0, range->bound - 1);
        for (double &v : values)
          v = double(uniform(random));
      } else {
        std::normal_distribution<double> normal(0.0, 1.0);
        for (double &v : values)
          v = normal(random);
      }
      break;
    case train::Role::label: {
      // Float labels (a regression's targets): standard normal.
      if (!isInteger(array.dtype)) {
        std::normal_distribution<double> normal(0.0, 1.0);
        for (double &v : values)
          v = normal(random);
        break;
      }
      if (!range)
        return makeError(
            "--init-data cannot tell the range of the integer labels '" +
            value.name +
            "': no cross_entropy reads them (write the batch yourself; "
            "--init-state alone needs no labels)");
      std::uniform_int_distribution<int64_t> uniform(0, range->bound - 1);
      for (double &v : values)
        v = double(uniform(random));
      break;
    }
    default:
      break;
    }
  }
  int64_t bytes = getElementBytes(array.dtype);
  array.bytes.resize(count * bytes);
  for (int64_t i = 0; i < count; ++i) {
    char *at = array.bytes.data() + i * bytes;
    if (array.dtype == "<f4") {
      float v = values[i];
      std::memcpy(at, &v, 4);
    } else if (array.dtype == "<f8") {
      std::memcpy(at, &values[i], 8);
    } else if (array.dtype == "<i4") {
      int32_t v = values[i];
      std::memcpy(at, &v, 4);
    } else {
      int64_t v = values[i];
      std::memcpy(at, &v, 8);
    }
  }
  return array;
}
