//===- Bindings.cpp - the step's arrays on this rank ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Bindings.h"
#include "distopt/Runner/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

/// The npy type of `element`; empty for one dist-run does not move.
static std::string getNpyType(Type element) {
  if (element.isF32())
    return "<f4";
  if (element.isF64())
    return "<f8";
  if (element.isInteger(32))
    return "<i4";
  if (element.isInteger(64))
    return "<i8";
  return "";
}

std::string runner::formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  for (int64_t size : shape)
    text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

llvm::Error runner::checkBindable(const train::StepSignature::Value &value) {
  auto type = cast<RankedTensorType>(value.type);
  if (!getNpyType(type.getElementType()).empty())
    return llvm::Error::success();
  std::string element;
  llvm::raw_string_ostream(element) << type.getElementType();
  return makeError("'" + value.name + "' has element type " + element +
                   ", which dist-run does not move (f32, f64, i32, i64)");
}

Binding runner::bind(const train::StepSignature::Value &value,
                     const train::StepSignature &step, int64_t rank) {
  Binding binding;
  binding.value = &value;
  binding.localType = cast<RankedTensorType>(value.type);
  binding.dtype = getNpyType(binding.localType.getElementType());
  ArrayRef<int64_t> shape = binding.localType.getShape();
  binding.globalShape.assign(shape.begin(), shape.end());
  binding.offsets.assign(shape.size(), 0);
  if (!value.blockOffsets.empty()) {
    binding.globalShape.assign(value.globalShape.begin(),
                               value.globalShape.end());
    binding.offsets.assign(value.blockOffsets.begin(),
                           value.blockOffsets.end());
  } else if (ArrayAttr split = value.split) {
    binding.split = split;
    for (auto [dim, axes] : llvm::enumerate(split.getAsRange<ArrayAttr>()))
      binding.globalShape[dim] *= step.getGroupSize(axes);
    binding.offsets = getBlockOffsets(split, step, rank, shape);
  }
  binding.local.dtype = binding.dtype;
  binding.local.shape.assign(shape.begin(), shape.end());
  binding.local.bytes.resize(binding.local.getNumElements() *
                             getElementBytes(binding.dtype));
  return binding;
}

std::vector<int64_t> runner::getBlockOffsets(ArrayAttr split,
                                             const train::StepSignature &step,
                                             int64_t rank,
                                             ArrayRef<int64_t> localShape) {
  ArrayRef<int64_t> meshShape = step.meshShape;
  std::vector<int64_t> coords(meshShape.size());
  for (int64_t d = meshShape.size() - 1, r = rank; d >= 0; --d) {
    coords[d] = r % meshShape[d];
    r /= meshShape[d];
  }
  std::vector<int64_t> offsets;
  for (auto [dim, axes] : llvm::enumerate(split.getAsRange<ArrayAttr>())) {
    int64_t index = 0;
    for (Attribute axis : axes) {
      int64_t a = step.getAxisIndex(cast<StringAttr>(axis).getValue());
      index = index * meshShape[a] + coords[a];
    }
    offsets.push_back(index * localShape[dim]);
  }
  return offsets;
}

void runner::copyOverlap(const char *source, ArrayRef<int64_t> sourceOffsets,
                         ArrayRef<int64_t> sourceShape, char *target,
                         ArrayRef<int64_t> targetOffsets,
                         ArrayRef<int64_t> targetShape, int64_t elementBytes) {
  int64_t rank = sourceShape.size();
  // The overlap, in global coordinates: [begin, end) per dim.
  std::vector<int64_t> begin(rank), end(rank);
  for (int64_t d = 0; d < rank; ++d) {
    begin[d] = std::max(sourceOffsets[d], targetOffsets[d]);
    end[d] = std::min(sourceOffsets[d] + sourceShape[d],
                      targetOffsets[d] + targetShape[d]);
    if (begin[d] >= end[d])
      return;
  }
  // Row-major element strides of both boxes.
  std::vector<int64_t> sourceStrides(rank + 1, 1), targetStrides(rank + 1, 1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    sourceStrides[d] = sourceStrides[d + 1] * sourceShape[d];
    targetStrides[d] = targetStrides[d + 1] * targetShape[d];
  }
  // Copy runs along the innermost dim, stepping the outer dims.
  int64_t run =
      rank ? (end[rank - 1] - begin[rank - 1]) * elementBytes : elementBytes;
  std::vector<int64_t> index(begin);
  while (true) {
    int64_t from = 0, to = 0;
    for (int64_t d = 0; d < rank; ++d) {
      from += (index[d] - sourceOffsets[d]) * sourceStrides[d + 1];
      to += (index[d] - targetOffsets[d]) * targetStrides[d + 1];
    }
    std::memcpy(target + to * elementBytes, source + from * elementBytes, run);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < end[d])
        break;
      index[d] = begin[d];
    }
    if (d < 0)
      return;
  }
}

void runner::copyBlock(Array &global, Array &local, ArrayRef<int64_t> offsets,
                       bool toGlobal) {
  std::vector<int64_t> origin(global.shape.size(), 0);
  int64_t bytes = getElementBytes(local.dtype);
  if (toGlobal)
    copyOverlap(local.bytes.data(), offsets, local.shape, global.bytes.data(),
                origin, global.shape, bytes);
  else
    copyOverlap(global.bytes.data(), origin, global.shape, local.bytes.data(),
                offsets, local.shape, bytes);
}

std::vector<int64_t> runner::describe(Array &array) {
  std::vector<int64_t> words = {int64_t(array.bytes.data()),
                                int64_t(array.bytes.data()), 0};
  llvm::append_range(words, array.shape);
  int64_t stride = 1;
  std::vector<int64_t> strides(array.shape.size());
  for (int64_t d = array.shape.size() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= array.shape[d];
  }
  llvm::append_range(words, strides);
  return words;
}

bool runner::isData(const Binding &binding) {
  return binding.value->role == train::Role::input ||
         binding.value->role == train::Role::label;
}

bool runner::isState(const train::StepSignature::Value &value) {
  return value.role == train::Role::param ||
         value.role == train::Role::opt_state;
}

/// Per dim, the mesh axes `value` is split over (none for a value whole on
/// every device, however the record says so).
static std::vector<std::vector<std::string>>
getSplitAxes(const train::StepSignature::Value &value) {
  std::vector<std::vector<std::string>> split(value.type.getRank());
  if (value.split)
    for (auto [dim, axes] :
         llvm::enumerate(value.split.getAsRange<ArrayAttr>()))
      for (Attribute axis : axes)
        split[dim].push_back(cast<StringAttr>(axis).getValue().str());
  return split;
}

/// `tensor<2x5xf32> split [["data"], []]`.
static std::string formatLayout(const train::StepSignature::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value.type << " split [";
  llvm::interleaveComma(getSplitAxes(value), os, [&](const auto &axes) {
    os << "[";
    llvm::interleaveComma(axes, os,
                          [&](const std::string &a) { os << '"' << a << '"'; });
    os << "]";
  });
  os << "]";
  return text;
}

llvm::Error runner::checkStepContract(const train::StepSignature &step) {
  for (const train::StepSignature::Value &result : step.results) {
    if (!isState(result) || result.name.empty())
      continue;
    const auto *arg = llvm::find_if(
        step.arguments, [&](const auto &a) { return a.isSamePart(result); });
    if (arg == step.arguments.end())
      continue;
    if (arg->type == result.type && getSplitAxes(*arg) == getSplitAxes(result))
      continue;
    return makeEveryRankError(
        "result '" + result.name + "' comes back as " + formatLayout(result) +
        " but the step takes " + formatLayout(*arg) +
        "; the program does not keep the step contract (re-run "
        "the strategy / dist-opt --dist-verify)");
  }
  return llvm::Error::success();
}
