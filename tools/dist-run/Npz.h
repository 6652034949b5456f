//===- Npz.h - NumPy .npz archives of named arrays --------------*- C++ -*-===//
//
// Reads and writes the arrays of an .npz archive (a zip of .npy files) with
// libzip for the archive and xtensor's npy reader and writer for the arrays.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_NPZ_H
#define DISTOPT_TOOLS_DIST_RUN_NPZ_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distrun {

/// One array: its npy type string (`<f4`, `<i4`, ...), row-major shape and
/// bytes.
struct Array {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  int64_t getNumElements() const;
};

using Arrays = std::map<std::string, Array>;

/// Reads every array of `path`; on failure returns false with `error` set.
bool readNpz(const std::string &path, Arrays &arrays, std::string &error);
/// Writes `arrays` to `path` (replacing it only once everything is written).
bool writeNpz(const std::string &path, const Arrays &arrays,
              std::string &error);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_NPZ_H
