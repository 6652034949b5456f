//===- InputFile.cpp - files read only when regular and bounded -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Support/InputFile.h"

#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace distopt;

const char *distopt::describeFileType(unsigned mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "a special file";
}

/// How messages call `path`: `name`, else the path quoted.
static std::string getName(llvm::StringRef path, llvm::StringRef name) {
  return name.empty() ? "'" + path.str() + "'" : name.str();
}

llvm::Expected<int> distopt::openRegularFile(llvm::StringRef path,
                                             llvm::StringRef expected,
                                             llvm::StringRef name) {
  // Without blocking (a FIFO would wait for a writer), then checked on the
  // descriptor: what was opened is what is read.
  int fd =
      ::open(path.str().c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return llvm::createStringError("cannot read " + getName(path, name) + ": " +
                                   std::strerror(errno));
  struct stat status = {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    return llvm::createStringError(getName(path, name) + " is " +
                                   describeFileType(status.st_mode) + ", not " +
                                   expected);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
distopt::readRegularFile(llvm::StringRef path, llvm::StringRef expected,
                         uint64_t maxBytes, llvm::StringRef name) {
  llvm::Expected<int> fd = openRegularFile(path, expected, name);
  if (!fd)
    return fd.takeError();
  struct stat status;
  if (::fstat(*fd, &status) == 0 && uint64_t(status.st_size) > maxBytes) {
    ::close(*fd);
    return llvm::createStringError(
        getName(path, name) + " is " + llvm::Twine(uint64_t(status.st_size)) +
        " bytes, more than the " + llvm::Twine(maxBytes) + " allowed");
  }
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      llvm::sys::fs::convertFDToNativeFile(*fd), path, status.st_size,
      /*RequiresNullTerminator=*/false);
  ::close(*fd);
  if (!buffer)
    return llvm::createStringError("cannot read " + getName(path, name) + ": " +
                                   buffer.getError().message());
  return std::move(*buffer);
}

llvm::Error distopt::checkJsonDepth(llvm::StringRef text, llvm::StringRef name,
                                    unsigned maxDepth) {
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      // Skip the string, escapes included (an unterminated one is the
      // parser's to report).
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return llvm::createStringError(name + ": JSON nests deeper than " +
                                       llvm::Twine(maxDepth) + " levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value> distopt::readBoundedJson(llvm::StringRef path,
                                                           llvm::StringRef name,
                                                           uint64_t maxBytes,
                                                           unsigned maxDepth) {
  std::string quoted = getName(path, name);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readRegularFile(path, "a JSON file", maxBytes, name);
  if (!buffer)
    return buffer.takeError();
  llvm::StringRef text = (*buffer)->getBuffer();
  if (llvm::Error error = checkJsonDepth(text, quoted, maxDepth))
    return std::move(error);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return llvm::createStringError(quoted + " is not JSON (" +
                                   llvm::toString(parsed.takeError()) + ")");
  return parsed;
}
