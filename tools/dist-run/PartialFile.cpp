//===- PartialFile.cpp - files written next to their destination ----------===//

#include "PartialFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <csignal>
#include <cstdio>
#include <cstring>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

using namespace distrun;

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
  if (llvm::sys::fs::is_directory(destination)) {
    error = "it is a directory";
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

bool PartialFile::write(const char *data, std::size_t size,
                        std::string &error) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      error = std::strerror(written < 0 ? errno : ENOSPC);
      discard();
      return false;
    }
    data += written;
    size -= written;
  }
  return true;
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

bool distrun::checkWritable(const std::string &destination,
                            std::string &error) {
  PartialFile probe;
  if (!probe.create(destination, error))
    return false;
  probe.discard();
  return true;
}
