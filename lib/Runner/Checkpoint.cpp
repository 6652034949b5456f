//===- Checkpoint.cpp - sharded checkpoints of a training run -------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Checkpoint.h"
#include "CheckpointFormat.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/ShardTiling.h"
#include "distopt/Support/InputFile.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cstdio>
#include <fcntl.h>
#include <map>
#include <set>
#include <unistd.h>

#define DEBUG_TYPE "distopt-runner"

using namespace mlir;
using namespace distopt::runner;
using namespace distopt;
using namespace distopt::runner::checkpoint;
namespace json = llvm::json;

static constexpr int kChecksumTag = 3;

bool runner::isRestored(const train::StepSignature::Value &value) {
  return isState(value) || value.cache;
}

/// What binds a shard to its place: a hash (xxh3, 16 hex digits) of its
/// array's name, dtype and global shape, its box and its bytes' CRC-32. An
/// index whose records were swapped, copied or moved fails it.
std::string distopt::runner::checkpoint::getShardBinding(
    StringRef name, StringRef dtype, ArrayRef<int64_t> globalShape,
    ArrayRef<int64_t> offsets, ArrayRef<int64_t> shape, uint32_t checksum) {
  std::string text = name.str() + '\0' + dtype.str() + '\0' +
                     formatShape(globalShape) + '\0' + formatShape(offsets) +
                     '\0' + formatShape(shape) + '\0' +
                     std::to_string(checksum);
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true,
                         /*Width=*/16);
}

//===----------------------------------------------------------------------===//
// What is saved, and by whom
//===----------------------------------------------------------------------===//

namespace distopt::runner {
/// One distinct block of a saved array and the rank that writes it.
struct ShardBlock {
  int64_t owner;
  std::vector<int64_t> offsets, shape;
};

/// One saved array: its description and its distinct blocks.
struct ArrayPlan {
  const train::StepSignature::Value *value;
  std::string dtype, program, file;
  std::vector<int64_t> globalShape;
  std::vector<ShardBlock> blocks;
};
} // namespace distopt::runner

/// "layer1.0.weight" -> "layer1.0.weight"; anything but letters, digits,
/// '.', '-' and '_' becomes '_'.
static std::string sanitize(StringRef name) {
  std::string file;
  for (char c : name)
    file += llvm::isAlnum(c) || c == '.' || c == '-' || c == '_' ? c : '_';
  return file.empty() || file[0] == '.' ? "_" + file : file;
}

/// The saved arrays of `step` in a fixed order, each distinct block owned
/// by the lowest rank holding it (a replicated array: rank 0's copy).
static std::vector<ArrayPlan> planArrays(const train::StepSignature &step) {
  std::vector<ArrayPlan> plans;
  std::map<std::string, size_t> byName;
  std::set<std::string> files;
  auto add = [&](const train::StepSignature::Value &value, StringRef program,
                 ArrayRef<int64_t> devices) {
    if (!isState(value) || value.cache)
      return;
    auto [it, inserted] = byName.try_emplace(value.name, plans.size());
    if (inserted) {
      ArrayPlan plan;
      plan.value = &value;
      plan.program = program.str();
      plan.file = sanitize(value.name);
      while (!files.insert(plan.file).second)
        plan.file += "~";
      plans.push_back(std::move(plan));
    }
    ArrayPlan &plan = plans[it->second];
    for (int64_t device : devices) {
      Binding binding = bind(value, step, device);
      plan.dtype = binding.dtype;
      plan.globalShape = binding.globalShape;
      if (llvm::any_of(plan.blocks, [&](const ShardBlock &block) {
            return block.offsets == binding.offsets;
          }))
        continue;
      plan.blocks.push_back({device, binding.offsets, binding.local.shape});
    }
  };
  if (step.isMPMD()) {
    for (const train::StepSignature::Program &program : step.programs)
      for (const train::StepSignature::Value &value : program.arguments)
        add(value, program.entry, program.devices);
  } else {
    SmallVector<int64_t> devices;
    for (int64_t r = 0, e = step.getNumDevices(); r < e; ++r)
      devices.push_back(r);
    for (const train::StepSignature::Value &value : step.arguments)
      add(value, "", devices);
  }
  return plans;
}

static std::string getShardFile(const ArrayPlan &plan, size_t block) {
  return plan.blocks.size() == 1
             ? plan.file + ".npy"
             : plan.file + "." + std::to_string(block) + ".npy";
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// Writes `contents` to `path` (synced; through a partial file).
static llvm::Expected<uint32_t> writeFile(const std::string &path,
                                          StringRef contents) {
  PartialFile file;
  std::string error;
  if (!file.create(path, error) ||
      !file.write(contents.data(), contents.size(), error) ||
      !file.commit(error))
    return makeError("cannot write '" + path + "': " + error);
  return llvm::crc32(llvm::arrayRefFromStringRef(contents));
}

/// Flushes a directory's entries (a rename in it) to the disk.
static void syncDirectory(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string distopt::runner::checkpoint::join(StringRef directory,
                                              StringRef name) {
  SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

static std::string getCheckpointName(uint64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "ckpt-%08llu",
                static_cast<unsigned long long>(step));
  return name;
}

/// The complete checkpoints of `directory`, newest first (`ckpt-<step>`
/// directories; partial ones start with a dot).
std::vector<std::pair<uint64_t, std::string>>
distopt::runner::checkpoint::listCheckpoints(StringRef directory) {
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    uint64_t step;
    if (!name.consume_front("ckpt-") || name.getAsInteger(10, step) ||
        !llvm::sys::fs::is_directory(it->path()))
      continue;
    found.push_back({step, it->path()});
  }
  llvm::sort(found, [](const auto &a, const auto &b) { return a > b; });
  return found;
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

/// Writes and removes a partial checkpoint holding one file, named as
/// save() names them, so that a directory no checkpoint can be written to
/// (read-only, full, a path too long) is refused before any step runs;
/// false with `error` set.
static bool probeDirectory(const std::string &directory, std::string &error) {
  std::string probe = join(directory, "." + getCheckpointName(0) + ".partial");
  llvm::sys::fs::remove_directories(probe, /*IgnoreErrors=*/true);
  if (std::error_code ec = llvm::sys::fs::create_directory(probe)) {
    error = "cannot create '" + probe + "': " + ec.message();
    return false;
  }
  PartialFile file;
  bool ok = file.create(join(probe, "index.json"), error);
  if (!ok)
    error = "cannot write in '" + probe + "': " + error;
  file.discard();
  llvm::sys::fs::remove_directories(probe, /*IgnoreErrors=*/true);
  return ok;
}

std::string CheckpointDir::getCheckpointPath(uint64_t step) const {
  return join(directory, getCheckpointName(step));
}

llvm::Error CheckpointDir::open() {
  if (distrt_rank() == 0) {
    if (llvm::Error error = checkOutputTarget("--checkpoint-dir", directory,
                                              OutputKind::directory))
      return makeError(llvm::toString(std::move(error)));
    if (std::error_code ec = llvm::sys::fs::create_directories(directory))
      return makeError("cannot create --checkpoint-dir '" + directory +
                       "': " + ec.message());
    std::string error;
    if (!probeDirectory(directory, error))
      return makeError("cannot write checkpoints in --checkpoint-dir '" +
                       directory + "': " + error);
    // Partial checkpoints are the leftovers of runs that crashed.
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(directory, ec), end;
         !ec && it != end; it.increment(ec)) {
      StringRef name = llvm::sys::path::filename(it->path());
      if (name.starts_with(".ckpt-") && name.ends_with(".partial"))
        llvm::sys::fs::remove_directories(it->path(), /*IgnoreErrors=*/true);
    }
  }
  if (distrt_barrier() != 0)
    return makeRuntimeError();
  if (!llvm::sys::fs::is_directory(directory))
    return makeError(
        "--checkpoint-dir '" + directory +
        "' is not a directory this rank sees (checkpoints need a file "
        "system every rank shares)");
  return llvm::Error::success();
}

static json::Array toJSON(ArrayRef<int64_t> values) {
  json::Array array;
  for (int64_t value : values)
    array.push_back(value);
  return array;
}

/// The index of a checkpoint (rank 0's, once every shard's checksum is in).
static json::Object buildIndex(const RunPosition &position,
                               const train::StepSignature &step,
                               ArrayRef<ArrayPlan> plans,
                               ArrayRef<std::vector<uint32_t>> checksums,
                               uint32_t lossChecksum, size_t lossCount) {
  json::Object index{
      {"format", kFormat}, {"version", kVersion}, {"step", position.step}};
  if (position.dataset.empty()) {
    index["dataset"] = nullptr;
  } else {
    uint64_t perEpoch = position.samples / position.batch;
    index["dataset"] =
        json::Object{{"path", position.dataset},
                     {"samples", position.samples},
                     {"batch", position.batch},
                     {"epoch", position.step / perEpoch},
                     {"batch_in_epoch", position.step % perEpoch},
                     {"shuffle", position.shuffle},
                     {"seed", position.seed}};
  }
  index["data"] = json::Object{{"source", position.dataSource},
                               {"fingerprint", position.dataFingerprint}};
  json::Array axes;
  for (const std::string &axis : step.meshAxes)
    axes.push_back(axis);
  index["writer"] = json::Object{{"devices", step.getNumDevices()},
                                 {"mesh_shape", toJSON(step.meshShape)},
                                 {"mesh_axes", std::move(axes)}};
  index["losses"] = json::Object{{"file", "losses.npy"},
                                 {"count", lossCount},
                                 {"shape", json::Array{lossCount}},
                                 {"crc32", lossChecksum}};
  json::Object arrays;
  for (auto [plan, sums] : llvm::zip_equal(plans, checksums)) {
    json::Array shards;
    for (auto [b, block] : llvm::enumerate(plan.blocks))
      shards.push_back(json::Object{
          {"file", getShardFile(plan, b)},
          {"offsets", toJSON(block.offsets)},
          {"shape", toJSON(block.shape)},
          {"crc32", sums[b]},
          {"binding",
           getShardBinding(plan.value->name, plan.dtype, plan.globalShape,
                           block.offsets, block.shape, sums[b])}});
    json::Value split = nullptr;
    if (plan.value->split) {
      json::Array dims;
      for (ArrayAttr dim : plan.value->split.getAsRange<ArrayAttr>()) {
        json::Array names;
        for (StringAttr axis : dim.getAsRange<StringAttr>())
          names.push_back(axis.getValue());
        dims.push_back(std::move(names));
      }
      split = std::move(dims);
    }
    json::Object record{{"dtype", plan.dtype},
                        {"shape", toJSON(plan.globalShape)},
                        {"role", train::stringifyRole(*plan.value->role)},
                        {"split", std::move(split)},
                        {"shards", std::move(shards)}};
    if (!plan.program.empty())
      record["program"] = plan.program;
    arrays[plan.value->name] = std::move(record);
  }
  index["arrays"] = std::move(arrays);
  return index;
}

llvm::Error CheckpointDir::save(const RunPosition &position,
                                std::vector<Binding> &args,
                                const train::StepSignature &wholeStep,
                                ArrayRef<float> losses,
                                llvm::function_ref<void()> beforeCommit) {
  int64_t rank = distrt_rank();
  std::string name = getCheckpointName(position.step);
  std::string final = join(directory, name);
  std::string partial = join(directory, "." + name + ".partial");
  // Every rank decides alike (the directory is shared): a checkpoint of
  // this step is never overwritten.
  bool exists = llvm::sys::fs::exists(final);
  LLVM_DEBUG(llvm::dbgs() << "rank " << rank << ": checkpoint '" << final << "'"
                          << (exists ? " exists" : "") << "\n");
  if (rank == 0 && !exists) {
    // A partial checkpoint of this step is a crashed run's leftover.
    llvm::sys::fs::remove_directories(partial, /*IgnoreErrors=*/true);
    if (std::error_code ec = llvm::sys::fs::create_directory(partial))
      return makeError("cannot create '" + partial + "': " + ec.message());
  }
  if (distrt_barrier() != 0)
    return makeRuntimeError();
  if (exists) {
    if (rank == 0 && print)
      llvm::outs() << "checkpoint: " << final << " exists, not written again\n";
    return llvm::Error::success();
  }

  // This rank's blocks.
  std::vector<ArrayPlan> plans = planArrays(wholeStep);
  std::vector<std::vector<uint32_t>> checksums(plans.size());
  std::vector<uint32_t> mine;
  for (auto [plan, sums] : llvm::zip_equal(plans, checksums)) {
    sums.resize(plan.blocks.size());
    for (auto [b, block] : llvm::enumerate(plan.blocks)) {
      if (block.owner != rank)
        continue;
      auto arg = llvm::find_if(args, [&](const Binding &a) {
        return a.value->name == plan.value->name && a.offsets == block.offsets;
      });
      if (arg == args.end())
        return makeError("no argument holds block [" +
                         formatShape(block.offsets) + "] of '" +
                         plan.value->name + "' on this rank");
      llvm::Expected<uint32_t> sum =
          writeFile(join(partial, getShardFile(plan, b)), writeNpy(arg->local));
      if (!sum)
        return sum.takeError();
      sums[b] = *sum;
      mine.push_back(sums[b]);
    }
  }
  if (beforeCommit)
    beforeCommit();
  if (rank != 0 && !mine.empty() &&
      distrt_send(mine.data(), mine.size(), DISTRT_I32, 0, kChecksumTag))
    return makeRuntimeError();
  if (rank == 0)
    if (llvm::Error error = commit(position, partial, final, wholeStep, plans,
                                   checksums, losses))
      return error;
  // The checkpoint is complete once every rank goes on: a rank killed in
  // the next step cannot lose it.
  if (distrt_barrier() != 0)
    return makeRuntimeError();
  return llvm::Error::success();
}

llvm::Error CheckpointDir::commit(const RunPosition &position,
                                  const std::string &partial,
                                  const std::string &final,
                                  const train::StepSignature &wholeStep,
                                  ArrayRef<ArrayPlan> plans,
                                  std::vector<std::vector<uint32_t>> &checksums,
                                  ArrayRef<float> losses) {
  // Rank 0: the others' checksums, in the plan's order.
  std::map<int64_t, std::vector<uint32_t>> received;
  for (const ArrayPlan &plan : plans)
    for (const ShardBlock &block : plan.blocks)
      if (block.owner != 0)
        received[block.owner].push_back(0);
  for (auto &[owner, sums] : received)
    if (distrt_recv(sums.data(), sums.size(), DISTRT_I32, owner, kChecksumTag))
      return makeRuntimeError();
  std::map<int64_t, size_t> next;
  for (auto [plan, sums] : llvm::zip_equal(plans, checksums))
    for (auto [b, block] : llvm::enumerate(plan.blocks))
      if (block.owner != 0)
        sums[b] = received[block.owner][next[block.owner]++];
  llvm::Expected<uint32_t> lossChecksum =
      writeFile(join(partial, "losses.npy"), writeNpy(makeFloatArray(losses)));
  if (!lossChecksum)
    return lossChecksum.takeError();
  json::Object index = buildIndex(position, wholeStep, plans, checksums,
                                  *lossChecksum, losses.size());
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", json::Value(std::move(index))) << "\n";
  if (llvm::Expected<uint32_t> written =
          writeFile(join(partial, "index.json"), text);
      !written)
    return written.takeError();
  syncDirectory(partial);
  if (std::error_code ec = llvm::sys::fs::rename(partial, final))
    return makeError("cannot rename '" + partial + "' to '" + final +
                     "': " + ec.message());
  syncDirectory(directory);
  if (print)
    llvm::outs() << "checkpoint: " << final << "\n";
  // Keep the newest `keep`.
  if (!keep)
    return llvm::Error::success();
  auto checkpoints = listCheckpoints(directory);
  for (size_t i = keep; i < checkpoints.size(); ++i)
    llvm::sys::fs::remove_directories(checkpoints[i].second,
                                      /*IgnoreErrors=*/true);
  return llvm::Error::success();
}
