//===- PartialFile.h - files written next to their destination --*- C++ -*-===//
//
// dist-run writes every output as `OUT.partial.XXXXXX` in OUT's directory
// and renames it onto OUT once complete, so OUT is either the old file or
// the whole new one. The file in progress is removed on every failure
// path: by the object, by fail() (which ends the process without running
// destructors) and by the SIGINT/SIGTERM handlers.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_TOOLS_DIST_RUN_PARTIALFILE_H
#define DISTOPT_TOOLS_DIST_RUN_PARTIALFILE_H

#include <cstddef>
#include <string>

namespace distrun {

/// One file in progress; at most one exists at a time.
class PartialFile {
public:
  PartialFile() = default;
  PartialFile(const PartialFile &) = delete;
  PartialFile &operator=(const PartialFile &) = delete;
  /// Removes the file unless committed.
  ~PartialFile();

  /// Creates `destination.partial.XXXXXX`; false with `error` set (what is
  /// wrong, as every call here) when its directory does not exist or is not
  /// writable.
  bool create(const std::string &destination, std::string &error);
  /// Appends `size` bytes.
  bool write(const char *data, std::size_t size, std::string &error);
  /// Flushes and closes the file and renames it onto the destination.
  bool commit(std::string &error);
  /// Closes and removes the file.
  void discard();
  const std::string &getPath() const { return path; }

  /// Removes the file in progress, if any; async-signal-safe.
  static void removeCurrent();

private:
  std::string destination, path;
  int fd = -1;
};

/// Checks that `destination` can be written (its directory exists and
/// takes a new file; it is not a directory) by creating and removing a
/// partial file; false with `error` set.
bool checkWritable(const std::string &destination, std::string &error);

} // namespace distrun

#endif // DISTOPT_TOOLS_DIST_RUN_PARTIALFILE_H
