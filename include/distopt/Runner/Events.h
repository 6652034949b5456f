//===- Events.h - the --events stream and --control channel -----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The run as it happens, for whoever drives it (Python's fit, a progress
// bar): rank 0 appends one JSON object per line to the --events file or
// FIFO ("start", "step", "eval", "checkpoint", "epoch_end", "end"; any rank
// that fails appends an "error"), each line in one write() call. With
// --control, after each epoch but the last, rank 0 reads one line from the
// control file or FIFO ("continue" or "stop"; end of file: stop) and every
// rank follows its decision. These are the pieces of EventFileObserver
// (Run.h).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_EVENTS_H
#define DISTOPT_RUNNER_EVENTS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace distopt::runner {

/// The --events stream of rank 0 (nothing on the other ranks or without a
/// path).
class EventStream {
public:
  EventStream() = default;
  EventStream(const EventStream &) = delete;
  EventStream &operator=(const EventStream &) = delete;
  ~EventStream();

  /// Opens `path` (a regular file, emptied unless `resumed`, or a FIFO:
  /// waits for its reader) through the safe writer's in-place open.
  llvm::Error open(llvm::StringRef path, bool resumed);
  bool isOpen() const { return fd >= 0; }
  /// Appends `event` as one line, in one write().
  llvm::Error write(const llvm::json::Object &event);

private:
  std::string path;
  int fd = -1;
};

/// Appends {"event":"error","rank":R,"message":M} to the events file at
/// `path` (opened for this line with O_APPEND and without blocking: a FIFO
/// without a reader, or anything but a regular file or FIFO, is skipped).
/// Called while failing: never fails itself.
void appendErrorEvent(llvm::StringRef path, int64_t rank,
                      llvm::StringRef message);

/// The --control channel of rank 0: one decision per line.
class ControlChannel {
public:
  explicit ControlChannel(std::string path) : path(std::move(path)) {}
  ControlChannel(const ControlChannel &) = delete;
  ControlChannel &operator=(const ControlChannel &) = delete;
  ~ControlChannel();

  /// Reads the next line (blocking; the channel is opened at the first
  /// read, which waits for a FIFO's writer): true for "continue", false for
  /// "stop", at the end of the file and when the channel cannot be read
  /// (with `warning` set to why); an error naming the line for anything
  /// else.
  llvm::Expected<bool> readDecision(std::string &warning);

private:
  std::string path;
  int fd = -1;
  bool ended = false;
  uint64_t lineNumber = 0;
};

/// Rank 0's decision `goOn` sent to every rank (a broadcast over the world
/// that waits however long rank 0 takes: the collective timeout is lifted
/// for it and restored to `collectiveTimeout`). Every rank calls it.
llvm::Expected<bool> broadcastDecision(bool goOn, double collectiveTimeout);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_EVENTS_H
