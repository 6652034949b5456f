//===- Npz.h - NumPy .npz archives of named arrays --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads and writes the arrays of an .npz archive (a zip of .npy files):
// libzip for the archive (members CRC-checked), the .npy format (versions
// 1 to 3) parsed and written here. Every malformed input is an error naming
// the file and the member, checked before anything is allocated from it.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_NPZ_H
#define DISTOPT_RUNNER_NPZ_H

#include "distopt/Runner/Array.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distopt::runner {

/// Bytes of one element of `dtype` (4 or 8).
int64_t getElementBytes(const std::string &dtype);

/// What an .npy file's header says: the element type, the shape and where
/// the row-major data starts.
struct NpyLayout {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t dataStart = 0;
};

/// Parses the header of the .npy file `data` (the whole file: its size must
/// be exactly the data the header declares); false with `problem` set.
bool parseNpyHeader(llvm::StringRef data, NpyLayout &layout,
                    std::string &problem);
/// Parses one .npy file held in `data` into `array` (taking the bytes);
/// on failure returns false with `problem` set (what is wrong, without the
/// file's name).
bool parseNpy(std::vector<char> &data, Array &array, std::string &problem);
/// The .npy bytes of `array` (format version 1.0, or 2.0 for a huge header).
std::string writeNpy(const Array &array);

/// Reads every array of `path`; on failure returns false with `error` set.
bool readNpz(const std::string &path, Arrays &arrays, std::string &error);
/// Writes `arrays` to `path` through a partial file renamed onto it once
/// complete (distopt/Support/SafeOutput.h); `beforeRename`, when given, runs
/// once the partial file is written (tests interrupt the write there).
bool writeNpz(const std::string &path, const Arrays &arrays, std::string &error,
              llvm::function_ref<void()> beforeRename = {});

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_NPZ_H
