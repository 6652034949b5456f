//===- Array.h - the runner's host arrays -----------------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// An array as the runner holds it on the host: a NumPy dtype string
// ("<f4", "<f8", "<i4", "<i8"), a shape and its bytes in C order. Arrays are
// named (a step's `train.name`s, "loss").
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_ARRAY_H
#define DISTOPT_RUNNER_ARRAY_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distopt::runner {

struct Array {
  /// The NumPy dtype string: "<f4", "<f8", "<i4" or "<i8".
  std::string dtype;
  std::vector<int64_t> shape;
  /// The elements in C order.
  std::vector<char> bytes;

  int64_t getNumElements() const;
};

/// Arrays by name (sorted, as an .npz lists them).
using Arrays = std::map<std::string, Array>;

/// The device a step is compiled for and runs on.
enum class Device { cpu, cuda };

/// A float32 vector (the per-step losses).
Array makeFloatArray(llvm::ArrayRef<float> values);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_ARRAY_H
