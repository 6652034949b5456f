//===- InputFile.h - files read only when regular and bounded --*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every file dist-run and dist-compile read as data (npz archives, dataset
// members, checkpoint shards and indexes) is opened only when it is a
// regular file: opened without blocking and checked on the open
// descriptor, so a FIFO or a device named like an input never stalls the
// process. A JSON file is read only up to a size and checked for its
// nesting depth by a cheap scan before it is parsed (LLVM's parser recurses
// once per level: 100,000 '[' overflow its stack).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_SUPPORT_INPUTFILE_H
#define DISTOPT_SUPPORT_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace distopt {

/// The largest JSON file read (a checkpoint index of thousands of sharded
/// arrays is a few MiB).
constexpr uint64_t kMaxJsonBytes = 256ull << 20;
/// The deepest nesting of JSON arrays and objects read (a checkpoint index
/// nests 5 levels).
constexpr unsigned kMaxJsonDepth = 64;

/// "a FIFO", "a character device", "a directory", ... for a file's
/// st_mode.
const char *describeFileType(unsigned mode);

/// Opens `path` to read if it is a regular file; else fails with
/// "NAME is a FIFO, not `expected`" (`expected`: "an .npz file"; `name`:
/// how messages call the file, default "'PATH'") or "cannot read NAME:
/// why". Returns the descriptor (blocking reads).
llvm::Expected<int> openRegularFile(llvm::StringRef path,
                                    llvm::StringRef expected,
                                    llvm::StringRef name = "");

/// Reads the regular file `path` whole (see openRegularFile), refusing one
/// of more than `maxBytes`.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readRegularFile(llvm::StringRef path, llvm::StringRef expected,
                uint64_t maxBytes = UINT64_MAX, llvm::StringRef name = "");

/// Fails, naming `name` (how messages call the file: "'PATH'" or "its
/// index.json"), when `text` nests JSON arrays and objects deeper than
/// `maxDepth`; strings are skipped.
llvm::Error checkJsonDepth(llvm::StringRef text, llvm::StringRef name,
                           unsigned maxDepth = kMaxJsonDepth);

/// Reads and parses the JSON file `path` once it is known to be a regular
/// file of at most `maxBytes` nesting at most `maxDepth` levels. `name` is
/// how messages call it (default: "'PATH'").
llvm::Expected<llvm::json::Value>
readBoundedJson(llvm::StringRef path, llvm::StringRef name = "",
                uint64_t maxBytes = kMaxJsonBytes,
                unsigned maxDepth = kMaxJsonDepth);

} // namespace distopt

#endif // DISTOPT_SUPPORT_INPUTFILE_H
