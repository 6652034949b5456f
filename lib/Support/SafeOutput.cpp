//===- SafeOutput.cpp - the one safe writer of files ---------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Support/SafeOutput.h"
#include "distopt/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <csignal>
#include <cstdio>
#include <cstring>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace distopt;

//===----------------------------------------------------------------------===//
// What an output may replace
//===----------------------------------------------------------------------===//

/// The inputs no output may be (protectInput).
static std::vector<std::pair<std::string, std::string>> &getProtectedInputs() {
  static std::vector<std::pair<std::string, std::string>> inputs;
  return inputs;
}

void distopt::protectInput(llvm::StringRef what, llvm::StringRef path) {
  if (!path.empty() && path != "-")
    getProtectedInputs().push_back({what.str(), path.str()});
}

size_t distopt::getNumProtectedInputs() { return getProtectedInputs().size(); }

void distopt::unprotectInputs(size_t count) {
  if (count < getProtectedInputs().size())
    getProtectedInputs().resize(count);
}

std::string distopt::getCanonicalPath(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(llvm::sys::path::parent_path(absolute), real))
    return absolute.str().str();
  llvm::sys::path::append(real, llvm::sys::path::filename(absolute));
  return real.str().str();
}

bool distopt::isSameFile(llvm::StringRef a, llvm::StringRef b) {
  struct stat first, second;
  if (::stat(a.str().c_str(), &first) == 0 &&
      ::stat(b.str().c_str(), &second) == 0)
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
  return getCanonicalPath(a) == getCanonicalPath(b);
}

/// What is wrong with writing a `kind` output at `path`, as a phrase about
/// it ("is a FIFO, ..."); empty when nothing is. A path that cannot be
/// examined is left to the write, which reports why.
static std::string getTargetProblem(
    llvm::StringRef path, OutputKind kind,
    llvm::ArrayRef<std::pair<std::string, std::string>> inputs = {}) {
  struct stat status;
  bool exists = ::stat(path.str().c_str(), &status) == 0;
  if (kind == OutputKind::directory)
    return exists && !S_ISDIR(status.st_mode)
               ? std::string("is ") + describeFileType(status.st_mode) +
                     ", not a directory"
               : "";
  if (kind == OutputKind::stream && exists && !S_ISREG(status.st_mode) &&
      !S_ISFIFO(status.st_mode))
    return std::string("is ") + describeFileType(status.st_mode) +
           ", not a regular file or a FIFO";
  if (kind == OutputKind::file && exists && !S_ISREG(status.st_mode))
    return std::string("is ") + describeFileType(status.st_mode) +
           ", not a regular file (an output replaces only a regular file)";
  llvm::SmallVector<std::pair<std::string, std::string>> all(
      getProtectedInputs().begin(), getProtectedInputs().end());
  all.append(inputs.begin(), inputs.end());
  for (const auto &[what, input] : all)
    if (!input.empty() && input != "-" && isSameFile(path, input))
      return "is the same file as " + what + " '" + input +
             "': it would overwrite its input";
  return "";
}

llvm::Error distopt::checkOutputTarget(llvm::StringRef what,
                                       llvm::StringRef path, OutputKind kind) {
  return checkOutputTarget(what, path, kind, {});
}

llvm::Error distopt::checkOutputTarget(
    llvm::StringRef what, llvm::StringRef path, OutputKind kind,
    llvm::ArrayRef<std::pair<std::string, std::string>> inputs) {
  std::string problem = getTargetProblem(path, kind, inputs);
  if (problem.empty())
    return llvm::Error::success();
  if (llvm::StringRef(problem).starts_with("is the same file"))
    return llvm::createStringError(what + " '" + path + "' " + problem);
  return llvm::createStringError("cannot write " + what + " '" + path +
                                 "': it " + problem);
}

llvm::Expected<int> distopt::openOutputInPlace(llvm::StringRef what,
                                               llvm::StringRef path,
                                               bool append, OutputKind kind) {
  if (llvm::Error error = checkOutputTarget(what, path, kind))
    return std::move(error);
  auto failure = [&](const std::string &why) {
    return llvm::createStringError("cannot write " + what + " '" + path +
                                   "': " + why);
  };
  // A stream's FIFO is opened blocking (it waits for its reader) and
  // checked on the open descriptor.
  struct stat status = {};
  if (kind == OutputKind::stream && ::stat(path.str().c_str(), &status) == 0 &&
      S_ISFIFO(status.st_mode)) {
    int fd = ::open(path.str().c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
      return failure(std::strerror(errno));
    if (::fstat(fd, &status) != 0 || !S_ISFIFO(status.st_mode)) {
      ::close(fd);
      return failure(std::string("it is ") + describeFileType(status.st_mode) +
                     ", not a regular file or a FIFO");
    }
    return fd;
  }
  // Without blocking: opening a FIFO for writing would wait for a reader.
  int fd = ::open(path.str().c_str(),
                  O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                      (append ? O_APPEND : 0),
                  0666);
  if (fd < 0)
    return failure(errno == ENXIO ? "it is a FIFO, not a regular file"
                                  : std::strerror(errno));
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    return failure(std::string("it is ") + describeFileType(status.st_mode) +
                   ", not a regular file (an output replaces only a regular "
                   "file)");
  }
  if ((!append && ::ftruncate(fd, 0) != 0) ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return failure(why);
  }
  return fd;
}

//===----------------------------------------------------------------------===//
// PartialFile
//===----------------------------------------------------------------------===//

/// The file in progress, for removeCurrent (which may run in a signal
/// handler: a fixed buffer and a flag, no allocation).
static char currentPath[4096];
static volatile std::sig_atomic_t hasCurrent = 0;

void PartialFile::removeCurrent() {
  if (!hasCurrent)
    return;
  hasCurrent = 0;
  ::unlink(currentPath);
}

PartialFile::~PartialFile() {
  if (fd >= 0 || !path.empty())
    discard();
}

bool PartialFile::create(const std::string &destination, std::string &error) {
  this->destination = destination;
  if (std::string problem = getTargetProblem(destination, OutputKind::file);
      !problem.empty()) {
    error = "it " + problem;
    return false;
  }
  llvm::StringRef directory = llvm::sys::path::parent_path(destination);
  if (!directory.empty() && !llvm::sys::fs::is_directory(directory)) {
    error = "'" + directory.str() + "' " +
            (llvm::sys::fs::exists(directory) ? "is not a directory"
                                              : "does not exist");
    return false;
  }
  llvm::SmallString<256> created;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          destination + ".partial.%%%%%%", fd, created)) {
    error = ec.message();
    fd = -1;
    return false;
  }
  path = created.str().str();
  if (path.size() < sizeof(currentPath)) {
    std::memcpy(currentPath, path.c_str(), path.size() + 1);
    hasCurrent = 1;
  }
  return true;
}

bool distopt::writeAll(int fd, llvm::StringRef text, std::string &error) {
  const char *data = text.data();
  size_t size = text.size();
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      error = std::strerror(written < 0 ? errno : ENOSPC);
      return false;
    }
    data += written;
    size -= written;
  }
  return true;
}

bool PartialFile::write(const char *data, std::size_t size,
                        std::string &error) {
  if (writeAll(fd, llvm::StringRef(data, size), error))
    return true;
  discard();
  return false;
}

bool PartialFile::commit(std::string &error) {
  int closing = fd;
  fd = -1;
  int failure = ::fsync(closing) != 0 ? errno : 0;
  if (::close(closing) != 0 && !failure)
    failure = errno;
  if (failure) {
    error = std::strerror(failure);
    discard();
    return false;
  }
  // What the destination became since create(): still nothing or a
  // regular file that is no input.
  if (std::string problem = getTargetProblem(destination, OutputKind::file);
      !problem.empty()) {
    error = "it " + problem;
    discard();
    return false;
  }
  if (std::rename(path.c_str(), destination.c_str()) != 0) {
    error = std::strerror(errno);
    discard();
    return false;
  }
  hasCurrent = 0;
  path.clear();
  return true;
}

void PartialFile::discard() {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
  if (!path.empty()) {
    hasCurrent = 0;
    ::unlink(path.c_str());
  }
  path.clear();
}

bool distopt::checkWritable(const std::string &destination,
                            std::string &error) {
  PartialFile probe;
  if (!probe.create(destination, error))
    return false;
  probe.discard();
  return true;
}

//===----------------------------------------------------------------------===//
// Whole files
//===----------------------------------------------------------------------===//

llvm::Expected<std::unique_ptr<SafeOutputFile>>
SafeOutputFile::open(llvm::StringRef what, llvm::StringRef path) {
  std::unique_ptr<SafeOutputFile> output(new SafeOutputFile());
  output->what = what.str();
  output->destination = path.str();
  if (path == "-") {
    output->stream =
        std::make_unique<llvm::raw_fd_ostream>(1, /*shouldClose=*/false);
    return std::move(output);
  }
  if (llvm::Error error = checkOutputTarget(what, path))
    return std::move(error);
  std::string error;
  if (!output->file.create(path.str(), error))
    return llvm::createStringError("cannot write " + what + " '" + path +
                                   "': " + error);
  output->stream = std::make_unique<llvm::raw_fd_ostream>(
      output->file.getFD(), /*shouldClose=*/false);
  // A tool's SIGINT/SIGTERM (LLVM's handlers, InitLLVM) removes it too.
  llvm::sys::RemoveFileOnSignal(output->file.getPath());
  return std::move(output);
}

SafeOutputFile::~SafeOutputFile() {
  if (stream) {
    stream->flush();
    stream->clear_error();
  }
  if (!file.getPath().empty())
    llvm::sys::DontRemoveFileOnSignal(file.getPath());
}

llvm::Error SafeOutputFile::commit() {
  stream->flush();
  auto failure = [&](const std::string &why) {
    return llvm::createStringError("cannot write " + what + " '" + destination +
                                   "': " + why);
  };
  if (std::error_code ec = stream->error()) {
    stream->clear_error();
    file.discard();
    return failure(ec.message());
  }
  if (destination == "-")
    return llvm::Error::success();
  llvm::sys::DontRemoveFileOnSignal(file.getPath());
  std::string error;
  if (!file.commit(error))
    return failure(error);
  return llvm::Error::success();
}

llvm::Error distopt::writeFileAtomically(llvm::StringRef what,
                                         llvm::StringRef path,
                                         llvm::StringRef bytes) {
  if (llvm::Error error = checkOutputTarget(what, path))
    return error;
  PartialFile file;
  std::string error;
  if (!file.create(path.str(), error) ||
      !file.write(bytes.data(), bytes.size(), error) || !file.commit(error))
    return llvm::createStringError("cannot write " + what + " '" + path +
                                   "': " + error);
  return llvm::Error::success();
}
