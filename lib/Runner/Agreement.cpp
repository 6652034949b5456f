//===- Agreement.cpp - the ranks agree on what they run -------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Agreement.h"
#include "distopt/Runner/Error.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

using namespace distopt;
using namespace distopt::runner;

uint64_t runner::hashText(llvm::StringRef text) {
  return llvm::xxh3_64bits(text);
}

uint64_t runner::hashArrays(const Arrays &arrays) {
  // Each array's description and bytes hashed apart, then the list.
  std::vector<uint64_t> hashes;
  for (const auto &[name, array] : arrays) {
    hashes.push_back(hashText(name + '\0' + array.dtype));
    for (int64_t size : array.shape)
      hashes.push_back(uint64_t(size));
    hashes.push_back(
        hashText(llvm::StringRef(array.bytes.data(), array.bytes.size())));
  }
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(hashes.data()),
                              hashes.size() * sizeof(uint64_t)));
}

bool runner::hashDataset(llvm::StringRef directory,
                         llvm::ArrayRef<std::string> names, uint64_t &hash,
                         std::string &error) {
  std::vector<std::string> sorted(names.begin(), names.end());
  llvm::sort(sorted);
  std::vector<uint64_t> hashes;
  for (const std::string &name : sorted) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name + ".npy");
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      error = "cannot read '" + path.str().str() +
              "': " + buffer.getError().message();
      return false;
    }
    hashes.push_back(hashText(name));
    hashes.push_back(hashText((*buffer)->getBuffer()));
  }
  hash = llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(hashes.data()),
                              hashes.size() * sizeof(uint64_t)));
  return true;
}

std::string runner::formatFingerprint(uint64_t hash) {
  return "xxh3:" + llvm::utohexstr(hash, /*LowerCase=*/true, /*Width=*/16);
}

llvm::Error runner::checkRanksAgree(llvm::ArrayRef<AgreementItem> items) {
  int64_t size = distrt_size();
  if (size == 1)
    return llvm::Error::success();
  int64_t shape[] = {size}, axes[] = {0};
  distrt_group *world = distrt_get_group(shape, 1, axes, 1);
  if (!world)
    return makeRuntimeError();
  int64_t count = items.size();
  std::vector<int64_t> mine, all(count * size);
  for (const AgreementItem &item : items)
    mine.push_back(int64_t(item.hash));
  if (distrt_all_gather(world, mine.data(), all.data(), count, DISTRT_I64))
    return makeRuntimeError();
  for (int64_t i = 0; i < count; ++i) {
    std::vector<std::string> differing;
    for (int64_t r = 1; r < size; ++r)
      if (all[r * count + i] != all[i])
        differing.push_back(std::to_string(r));
    if (differing.empty())
      continue;
    const AgreementItem &item = items[i];
    bool plural = item.noun == "contents";
    std::string subject =
        differing.size() == 1
            ? "rank " + differing[0] + "'s " + item.noun
            : "the " + item.noun + " of ranks " + llvm::join(differing, ", ");
    return makeEveryRankError("ranks disagree on " + item.what + ": " +
                              subject + (plural ? " differ" : " differs") +
                              " from rank 0's");
  }
  return llvm::Error::success();
}
