//===- Events.cpp - dist-run --events and --control -----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Events.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/Run.h"
#include "distopt/Support/InputFile.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace distopt::runner;
using namespace distopt;

/// `event` as one line of text.
static std::string formatLine(const llvm::json::Object &event) {
  std::string line;
  llvm::raw_string_ostream(line)
      << llvm::json::Value(llvm::json::Object(event)) << "\n";
  return line;
}

EventStream::~EventStream() {
  if (fd >= 0)
    ::close(fd);
}

llvm::Error EventStream::open(llvm::StringRef path, bool resumed) {
  this->path = path.str();
  // Appended to, so that the other ranks' error lines (O_APPEND too) land
  // after rank 0's; a fresh run empties a regular file first.
  llvm::Expected<int> opened =
      openOutputInPlace("--events", path,
                        /*append=*/true, OutputKind::stream);
  if (!opened)
    return opened.takeError();
  fd = *opened;
  struct stat status = {};
  if (!resumed && ::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
      ::ftruncate(fd, 0) != 0)
    return llvm::createStringError("cannot write --events '" + path +
                                   "': " + std::strerror(errno));
  return llvm::Error::success();
}

llvm::Error EventStream::write(const llvm::json::Object &event) {
  if (fd < 0)
    return llvm::Error::success();
  std::string error;
  if (!writeAll(fd, formatLine(event), error))
    return llvm::createStringError("cannot write --events '" + path +
                                   "': " + error);
  return llvm::Error::success();
}

void runner::appendErrorEvent(llvm::StringRef path, int64_t rank,
                              llvm::StringRef message) {
  if (path.empty())
    return;
  int fd = ::open(path.str().c_str(),
                  O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat status = {};
  if (::fstat(fd, &status) == 0 &&
      (S_ISREG(status.st_mode) || S_ISFIFO(status.st_mode))) {
    std::string error;
    (void)writeAll(fd,
                   formatLine(llvm::json::Object{{"event", "error"},
                                                 {"rank", rank},
                                                 {"message", message.str()}}),
                   error);
  }
  ::close(fd);
}

ControlChannel::~ControlChannel() {
  if (fd >= 0)
    ::close(fd);
}

llvm::Expected<bool> ControlChannel::readDecision(std::string &warning) {
  if (ended)
    return false;
  auto stop = [&](const std::string &why) {
    warning = "cannot read --control '" + path + "': " + why + ": stopping";
    ended = true;
    return false;
  };
  if (fd < 0) {
    // Blocking: a FIFO's open waits for its writer.
    fd = ::open(path.c_str(), O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
      return stop(std::strerror(errno));
    struct stat status = {};
    if (::fstat(fd, &status) != 0 ||
        (!S_ISREG(status.st_mode) && !S_ISFIFO(status.st_mode)))
      return stop(std::string("it is ") + describeFileType(status.st_mode) +
                  ", not a regular file or a FIFO");
  }
  // One byte at a time: nothing past the line is taken from a FIFO.
  std::string line;
  while (true) {
    char c;
    ssize_t got = ::read(fd, &c, 1);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return stop(std::strerror(errno));
    if (got == 0) {
      ended = true;
      if (line.empty())
        return false;
      break;
    }
    if (c == '\n')
      break;
    if (line.size() <= 256)
      line.push_back(c);
  }
  ++lineNumber;
  llvm::StringRef decision = llvm::StringRef(line).rtrim("\r");
  if (decision == "continue")
    return true;
  if (decision == "stop")
    return false;
  std::string shown = decision.size() > 64
                          ? decision.take_front(64).str() + "..."
                          : decision.str();
  return llvm::createStringError("--control '" + path + "' line " +
                                 std::to_string(lineNumber) + " is '" + shown +
                                 "': expected 'continue' or 'stop'");
}

llvm::Expected<bool>
distopt::runner::broadcastDecision(bool goOn, double collectiveTimeout) {
  int64_t size = distrt_size();
  if (size == 1)
    return goOn;
  int64_t shape[] = {size}, axes[] = {0};
  distrt_group *world = distrt_get_group(shape, 1, axes, 1);
  int32_t value = goOn ? 1 : 0;
  if (!world || distrt_set_timeout(0) != 0 ||
      distrt_broadcast(world, &value, 1, DISTRT_I32, 0) != 0 ||
      distrt_set_timeout(collectiveTimeout) != 0)
    return llvm::createStringError(getRuntimeError());
  return value != 0;
}

//===----------------------------------------------------------------------===//
// RunObserver, EventFileObserver
//===----------------------------------------------------------------------===//

RunObserver::~RunObserver() = default;

void RunObserver::onEvent(const llvm::json::Object &event) {}

llvm::Expected<bool> RunObserver::continueAfterEpoch(uint64_t epoch) {
  return true;
}

void RunObserver::onRuntimeStarted(int64_t rank, int64_t size) {}

llvm::Error RunObserver::takeError() { return llvm::Error::success(); }

bool RunObserver::stopRequested() { return false; }

struct EventFileObserver::Impl {
  std::string eventsPath, controlPath;
  bool resumed;
  EventStream events;
  std::unique_ptr<ControlChannel> control;
  llvm::Error failure = llvm::Error::success();
};

EventFileObserver::EventFileObserver(std::string eventsPath,
                                     std::string controlPath, bool resumed)
    : impl(std::make_unique<Impl>()) {
  impl->eventsPath = std::move(eventsPath);
  impl->controlPath = std::move(controlPath);
  impl->resumed = resumed;
}

EventFileObserver::~EventFileObserver() {
  llvm::consumeError(std::move(impl->failure));
}

llvm::Error EventFileObserver::open() {
  if (distrt_rank() != 0)
    return llvm::Error::success();
  if (!impl->controlPath.empty())
    impl->control = std::make_unique<ControlChannel>(impl->controlPath);
  if (impl->eventsPath.empty() || impl->events.isOpen())
    return llvm::Error::success();
  if (llvm::Error error = impl->events.open(impl->eventsPath, impl->resumed))
    return makeError(llvm::toString(std::move(error)));
  return llvm::Error::success();
}

void EventFileObserver::onEvent(const llvm::json::Object &event) {
  if (impl->failure || !impl->events.isOpen())
    return;
  if (llvm::Error error = impl->events.write(event))
    impl->failure = makeError(llvm::toString(std::move(error)));
}

llvm::Expected<bool> EventFileObserver::continueAfterEpoch(uint64_t epoch) {
  if (!impl->control)
    return true;
  std::string warning;
  llvm::Expected<bool> decision = impl->control->readDecision(warning);
  if (!decision)
    return makeError(llvm::toString(decision.takeError()));
  if (!warning.empty())
    warn(warning);
  return *decision;
}

llvm::Error EventFileObserver::takeError() { return std::move(impl->failure); }
