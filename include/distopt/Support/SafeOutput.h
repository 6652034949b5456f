//===- SafeOutput.h - the one safe writer of files -------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every writer of DistOpt (dist-run, dist-compile, dist-opt -o, the runner
// library, Python through the extension) writes its outputs here. A file
// is written as `OUT.partial.XXXXXX` in OUT's directory
// and renames it onto OUT once complete, so OUT is either the old file or
// the whole new one. The file in progress is removed on every failure
// path: by the object, by a tool's failure path (which may end the
// process without running destructors) and by its SIGINT/SIGTERM handlers
// (removeCurrent() is async-signal-safe).
//
// Every writer goes through the checks here:
// an output replaces nothing but a regular file (never a device, FIFO,
// socket or directory) and never one of the process's inputs (the same
// device and inode: a symbolic or hard link of it). The checks run at
// start-up, before any step, and again right before each rename.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_SUPPORT_SAFEOUTPUT_H
#define DISTOPT_SUPPORT_SAFEOUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <string>
#include <utility>

namespace distopt {

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
  /// The open file's descriptor (-1 when none).
  int getFD() const { return fd; }

  /// Removes the file in progress, if any; async-signal-safe.
  static void removeCurrent();

private:
  std::string destination, path;
  int fd = -1;
};

/// Writes `text` whole to `fd` (as many write() calls as the kernel needs,
/// retried on EINTR); false with `error` set (strerror) on a failure.
bool writeAll(int fd, llvm::StringRef text, std::string &error);

/// What an output is: a file (replaced whole by a rename), a directory
/// (written into, e.g. --checkpoint-dir) or a stream (a regular file or a
/// FIFO written in place, e.g. --events).
enum class OutputKind { file, directory, stream };

/// Registers an input of this process (`what`: the option naming it, for
/// messages): no output may be the same file. Kept for the process's life.
void protectInput(llvm::StringRef what, llvm::StringRef path);

/// The inputs registered so far, and forgetting those registered after
/// `count` of them (a library call that protected its own inputs for its
/// duration, such as runner::run()).
size_t getNumProtectedInputs();
void unprotectInputs(size_t count);

/// Fails, naming `what` (an option such as "--out") and `path`, when the
/// output cannot be written there without harm: `path` exists and is not a
/// regular file (for a directory output: not a directory), or it is the
/// same file as a protected input. Nothing is created.
llvm::Error checkOutputTarget(llvm::StringRef what, llvm::StringRef path,
                              OutputKind kind = OutputKind::file);
/// checkOutputTarget() with `inputs` ((what, path) pairs) refused too,
/// beside the protected ones.
llvm::Error
checkOutputTarget(llvm::StringRef what, llvm::StringRef path, OutputKind kind,
                  llvm::ArrayRef<std::pair<std::string, std::string>> inputs);

/// Opens `path` to be written in place (appended to with `append`, else
/// emptied): an output that is not renamed, such as --metrics. Checks it as
/// checkOutputTarget() does, and again on the open file (opened without
/// blocking: a FIFO never stalls it); returns the descriptor. A `stream`
/// output may also be a FIFO: that one is opened blocking (it waits for
/// its reader) and never emptied.
llvm::Expected<int> openOutputInPlace(llvm::StringRef what,
                                      llvm::StringRef path, bool append,
                                      OutputKind kind = OutputKind::file);

/// The absolute path of `path` with its directory's links and dots
/// resolved, for comparing paths of files that may not exist yet.
std::string getCanonicalPath(llvm::StringRef path);

/// True when `a` and `b` are one file: the same device and inode, or, for
/// files that do not exist yet, the same canonical path.
bool isSameFile(llvm::StringRef a, llvm::StringRef b);

/// Checks that `destination` can be written (its directory exists and
/// takes a new file; it is nothing or a regular file) by creating and
/// removing a partial file; false with `error` set.
bool checkWritable(const std::string &destination, std::string &error);

/// A whole file written through a stream: `dist-opt -o`. "-" is stdout;
/// any other path is checked (checkOutputTarget) and written as a
/// PartialFile renamed onto it by commit().
class SafeOutputFile {
public:
  /// Opens `path` for `what` (an option, "-o"); the error names both.
  static llvm::Expected<std::unique_ptr<SafeOutputFile>>
  open(llvm::StringRef what, llvm::StringRef path);
  ~SafeOutputFile();

  llvm::raw_ostream &os() { return *stream; }
  /// Flushes the stream and renames the file onto its destination (stdout:
  /// flushes it). The file is removed on an error and when never
  /// committed.
  llvm::Error commit();

private:
  SafeOutputFile() = default;
  std::string what, destination;
  PartialFile file;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
};

/// Writes `bytes` to `path` as a whole new file (checked as
/// checkOutputTarget() does, written beside it and renamed); `what` names
/// the output in errors.
llvm::Error writeFileAtomically(llvm::StringRef what, llvm::StringRef path,
                                llvm::StringRef bytes);

} // namespace distopt

#endif // DISTOPT_SUPPORT_SAFEOUTPUT_H
