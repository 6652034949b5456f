//===- CheckpointReading.cpp - restoring and exporting checkpoints --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The reading half of Checkpoint.h: a checkpoint's index checked for
// consistency, its shards mapped and checked against their checksums and
// bindings, this rank's blocks restored (or, for an export, the global
// arrays assembled by one process), and --resume's checks that the run
// continues the same one.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFormat.h"
#include "distopt/Runner/Checkpoint.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/ShardTiling.h"
#include "distopt/Support/InputFile.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

#define DEBUG_TYPE "distopt-runner"

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;
using namespace distopt::runner::checkpoint;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
struct ShardRecord {
  std::string file;
  std::vector<int64_t> offsets, shape;
  uint32_t checksum;
  /// getShardBinding's hash (none for the losses).
  std::string binding;
};
struct ArrayRecord {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<ShardRecord> shards;
};
/// A checkpoint's index, checked for consistency.
struct Index {
  std::string path;
  RunPosition position;
  std::map<std::string, ArrayRecord> arrays;
  ShardRecord losses;
};
/// A mapped shard whose checksum and header were checked.
struct MappedShard {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  const char *data;
};
} // namespace

static bool readInts(const json::Array *array, std::vector<int64_t> &values) {
  if (!array)
    return false;
  for (const json::Value &value : *array) {
    std::optional<int64_t> v = value.getAsInteger();
    if (!v || *v < 0)
      return false;
    values.push_back(*v);
  }
  return true;
}

static bool readShard(const json::Object *object, ShardRecord &shard) {
  if (!object)
    return false;
  std::optional<StringRef> file = object->getString("file");
  std::optional<int64_t> checksum = object->getInteger("crc32");
  if (!file || !checksum || *checksum < 0 || *checksum > UINT32_MAX ||
      file->contains('/') || file->starts_with(".") ||
      !readInts(object->getArray("shape"), shard.shape))
    return false;
  shard.file = file->str();
  shard.checksum = uint32_t(*checksum);
  if (std::optional<StringRef> binding = object->getString("binding"))
    shard.binding = binding->str();
  return true;
}

/// Checks that the shards of array `name` (`record`) tile it exactly once
/// and that each is bound to it (index `arrays`: every array, to name the
/// one a misplaced shard belongs to); false with `problem` set.
static bool checkShards(StringRef name, const ArrayRecord &record,
                        const std::map<std::string, ArrayRecord> &arrays,
                        std::string &problem) {
  std::vector<ShardBox> boxes;
  for (const ShardRecord &shard : record.shards)
    boxes.push_back({shard.offsets, shard.shape});
  std::string tiling = checkTiling(record.shape, boxes);
  if (!tiling.empty()) {
    problem = "the shards of '" + name.str() + "' " + tiling;
    return false;
  }
  for (const ShardRecord &shard : record.shards) {
    auto bindingFor = [&](StringRef array, const ArrayRecord &as) {
      return getShardBinding(array, as.dtype, as.shape, shard.offsets,
                             shard.shape, shard.checksum);
    };
    if (shard.binding == bindingFor(name, record))
      continue;
    // Whose shard is it? Another array's binding at this box.
    for (const auto &[other, otherRecord] : arrays) {
      if (other == name || shard.binding != bindingFor(other, otherRecord))
        continue;
      problem = "shard '" + shard.file + "' holds '" + other +
                "', the index lists it for '" + name.str() + "'";
      return false;
    }
    problem = "shard '" + shard.file + "' is not bound to '" + name.str() +
              "' at [" +
              llvm::join(llvm::map_range(shard.offsets,
                                         [](int64_t offset) {
                                           return std::to_string(offset);
                                         }),
                         ", ") +
              "] (its binding does not match: the index was edited or "
              "damaged)";
    return false;
  }
  return true;
}

/// Reads and checks the index of the checkpoint at `path`; false with
/// `problem` set.
static bool readIndex(const std::string &path, Index &index,
                      std::string &problem) {
  index.path = path;
  std::string file = join(path, "index.json");
  // Bounded in size and depth before it is parsed (InputFile.h).
  llvm::Expected<json::Value> parsed = readBoundedJson(file, "its index.json");
  if (!parsed) {
    problem = llvm::toString(parsed.takeError());
    return false;
  }
  auto malformed = [&](const llvm::Twine &what) {
    problem = ("its index.json is malformed: " + what).str();
    return false;
  };
  const json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != kFormat)
    return malformed("not a distopt checkpoint index");
  std::optional<int64_t> version = root->getInteger("version");
  if (version && *version >= 1 && *version < kVersion) {
    problem = "it is of checkpoint format " + std::to_string(*version) +
              ", written by an older dist-run; this one reads format " +
              std::to_string(kVersion) +
              " (which binds each shard to its array): export it with the "
              "dist-run that wrote it";
    return false;
  }
  if (version != kVersion)
    return malformed("version is not " + llvm::Twine(kVersion));
  std::optional<int64_t> step = root->getInteger("step");
  if (!step || *step < 0)
    return malformed("no step");
  index.position.step = *step;
  if (const json::Object *dataset = root->getObject("dataset")) {
    std::optional<StringRef> datasetPath = dataset->getString("path");
    std::optional<int64_t> samples = dataset->getInteger("samples"),
                           batch = dataset->getInteger("batch");
    std::optional<uint64_t> seed = dataset->get("seed")
                                       ? dataset->get("seed")->getAsUINT64()
                                       : std::nullopt;
    std::optional<bool> shuffle = dataset->getBoolean("shuffle");
    if (!datasetPath || !samples || !batch || !seed || !shuffle ||
        *batch <= 0 || *samples < *batch)
      return malformed("bad dataset position");
    index.position.dataset = datasetPath->str();
    index.position.samples = *samples;
    index.position.batch = *batch;
    index.position.seed = *seed;
    index.position.shuffle = *shuffle;
  }
  const json::Object *data = root->getObject("data");
  std::optional<StringRef> source =
      data ? data->getString("source") : std::nullopt;
  std::optional<StringRef> fingerprint =
      data ? data->getString("fingerprint") : std::nullopt;
  if (!source || !fingerprint)
    return malformed("no data fingerprint");
  index.position.dataSource = source->str();
  index.position.dataFingerprint = fingerprint->str();
  const json::Object *losses = root->getObject("losses");
  std::optional<int64_t> lossCount =
      losses ? losses->getInteger("count") : std::nullopt;
  if (!readShard(losses, index.losses) || lossCount != *step ||
      index.losses.shape != std::vector<int64_t>{*step})
    return malformed("bad losses");
  index.losses.offsets = {0};
  const json::Object *arrays = root->getObject("arrays");
  if (!arrays)
    return malformed("no arrays");
  for (const auto &[name, value] : *arrays) {
    const json::Object *object = value.getAsObject();
    ArrayRecord record;
    std::optional<StringRef> dtype =
        object ? object->getString("dtype") : std::nullopt;
    const json::Array *shards = object ? object->getArray("shards") : nullptr;
    if (!dtype || !shards || !readInts(object->getArray("shape"), record.shape))
      return malformed("array '" + name.str() + "'");
    record.dtype = dtype->str();
    if (record.dtype != "<f4" && record.dtype != "<f8" &&
        record.dtype != "<i4" && record.dtype != "<i8")
      return malformed("array '" + name.str() + "' has dtype '" + record.dtype +
                       "'");
    for (const json::Value &shardValue : *shards) {
      ShardRecord shard;
      if (!readShard(shardValue.getAsObject(), shard) ||
          !readInts(shardValue.getAsObject()->getArray("offsets"),
                    shard.offsets) ||
          shard.offsets.size() != record.shape.size() ||
          shard.shape.size() != record.shape.size() || shard.binding.empty())
        return malformed("a shard of '" + name.str() + "'");
      record.shards.push_back(std::move(shard));
    }
    index.arrays[name.str()] = std::move(record);
  }
  // Each array's shards hold it exactly once, and are its own.
  for (const auto &[name, record] : index.arrays)
    if (!checkShards(name, record, index.arrays, problem))
      return false;
  return true;
}

/// Maps the shard `shard` of a `dtype` array of checkpoint `path` and
/// checks its checksum and header; false with `problem` set.
static bool mapShard(const std::string &path, const ShardRecord &shard,
                     StringRef dtype, MappedShard &mapped,
                     std::string &problem) {
  std::string file = join(path, shard.file);
  // Only a regular file (InputFile.h).
  auto buffer = readRegularFile(file, "an .npy file", UINT64_MAX,
                                "shard '" + shard.file + "'");
  if (!buffer) {
    problem = llvm::toString(buffer.takeError());
    return false;
  }
  StringRef bytes = (*buffer)->getBuffer();
  if (llvm::crc32(llvm::arrayRefFromStringRef(bytes)) != shard.checksum) {
    problem = "shard '" + shard.file + "' fails its CRC-32 checksum";
    return false;
  }
  NpyLayout layout;
  if (!parseNpyHeader(bytes, layout, problem)) {
    problem = "shard '" + shard.file + "': " + problem;
    return false;
  }
  if (layout.dtype != dtype || layout.shape != shard.shape) {
    problem = "shard '" + shard.file + "' holds " + layout.dtype + " [" +
              formatShape(layout.shape) + "], not the indexed " + dtype.str() +
              " [" + formatShape(shard.shape) + "]";
    return false;
  }
  mapped.data = bytes.data() + layout.dataStart;
  mapped.buffer = std::move(*buffer);
  return true;
}

/// Reads this rank's blocks of `index`'s arrays into `restored` (per
/// argument of `args`, its new bytes) and, on rank 0, the losses; false
/// with `problem` set when a shard is unreadable or corrupt. A checkpoint
/// of another model fails the run.
static llvm::Expected<bool> readBlocks(const Index &index,
                                       std::vector<Binding> &args,
                                       std::vector<std::vector<char>> &restored,
                                       std::vector<float> &losses,
                                       std::string &problem) {
  restored.assign(args.size(), {});
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (!isRestored(*arg.value))
      continue;
    const std::string &name = arg.value->name;
    auto it = index.arrays.find(name);
    if (it == index.arrays.end())
      return makeError(
          "the checkpoint '" + index.path + "' has no array '" + name +
          "', which the step takes: it was written by another model");
    const ArrayRecord &record = it->second;
    if (record.dtype != arg.dtype || record.shape != arg.globalShape)
      return makeError("the checkpoint '" + index.path + "' holds '" + name +
                       "' as " + record.dtype + " [" +
                       formatShape(record.shape) + "] but the step takes " +
                       arg.dtype + " [" + formatShape(arg.globalShape) +
                       "]: it was written by another model");
    restored[i].resize(arg.local.bytes.size());
    int64_t covered = 0;
    for (const ShardRecord &shard : record.shards) {
      // Only the shards overlapping this rank's block are read.
      int64_t overlap = 1;
      for (size_t d = 0; d < shard.shape.size(); ++d)
        overlap *= std::max<int64_t>(
            0, std::min(shard.offsets[d] + shard.shape[d],
                        arg.offsets[d] + arg.local.shape[d]) -
                   std::max(shard.offsets[d], arg.offsets[d]));
      if (overlap == 0)
        continue;
      MappedShard mapped;
      if (!mapShard(index.path, shard, record.dtype, mapped, problem))
        return false;
      copyOverlap(mapped.data, shard.offsets, shard.shape, restored[i].data(),
                  arg.offsets, arg.local.shape, getElementBytes(arg.dtype));
      covered += overlap;
    }
    if (covered != arg.local.getNumElements()) {
      problem = "its shards do not cover this rank's block of '" + name + "'";
      return false;
    }
  }
  if (distrt_rank() != 0)
    return true;
  MappedShard mapped;
  if (!mapShard(index.path, index.losses, "<f4", mapped, problem))
    return false;
  losses.assign(reinterpret_cast<const float *>(mapped.data),
                reinterpret_cast<const float *>(mapped.data) +
                    index.position.step);
  return true;
}

/// The lowest rank that could not read its part of a checkpoint, or -1.
static llvm::Expected<int64_t> getFirstFailure(bool succeeded) {
  int64_t size = distrt_size();
  if (size == 1)
    return succeeded ? -1 : 0;
  int64_t shape[] = {size}, axes[] = {0};
  distrt_group *world = distrt_get_group(shape, 1, axes, 1);
  if (!world)
    return makeRuntimeError();
  int64_t mine = succeeded;
  std::vector<int64_t> all(size);
  if (distrt_all_gather(world, &mine, all.data(), 1, DISTRT_I64))
    return makeRuntimeError();
  auto failed = llvm::find(all, 0);
  return failed == all.end() ? -1 : int64_t(failed - all.begin());
}

llvm::Expected<std::optional<RunPosition>>
CheckpointDir::restore(std::vector<Binding> &args, std::vector<float> &losses) {
  for (const auto &[step, path] : listCheckpoints(directory)) {
    Index index;
    std::string problem;
    std::vector<std::vector<char>> restored;
    std::vector<float> readLosses;
    bool read = readIndex(path, index, problem);
    if (read && index.position.step != step) {
      problem = "its index says step " + std::to_string(index.position.step);
      read = false;
    }
    if (read) {
      llvm::Expected<bool> blocks =
          readBlocks(index, args, restored, readLosses, problem);
      if (!blocks)
        return blocks.takeError();
      read = *blocks;
    }
    LLVM_DEBUG(llvm::dbgs() << "checkpoint '" << path
                            << "': " << (read ? "read" : problem) << "\n");
    // The lowest rank that failed names the problem (ranks holding
    // replicas would all name it).
    llvm::Expected<int64_t> firstFailure = getFirstFailure(read);
    if (!firstFailure)
      return firstFailure.takeError();
    int64_t failed = *firstFailure;
    if (failed == distrt_rank())
      warn("skipping the checkpoint '" + path + "': " + problem);
    if (failed >= 0)
      continue;
    for (auto [arg, bytes] : llvm::zip_equal(args, restored))
      if (isRestored(*arg.value))
        arg.local.bytes = std::move(bytes);
    losses = std::move(readLosses);
    return std::optional<RunPosition>(index.position);
  }
  return std::optional<RunPosition>();
}

bool CheckpointDir::exportNewest(Arrays &arrays, std::string &path) {
  for (const auto &[step, candidate] : listCheckpoints(directory)) {
    Index index;
    std::string problem;
    Arrays out;
    bool read = readIndex(candidate, index, problem);
    for (auto &[name, record] : index.arrays) {
      if (!read)
        break;
      // Every shard checked (and its size known) before the array is
      // allocated.
      std::vector<MappedShard> mapped(record.shards.size());
      for (auto [shard, map] : llvm::zip_equal(record.shards, mapped))
        if (!(read = mapShard(candidate, shard, record.dtype, map, problem)))
          break;
      if (!read)
        break;
      Array &global = out[name];
      global.dtype = record.dtype;
      global.shape = record.shape;
      global.bytes.resize(global.getNumElements() *
                          getElementBytes(record.dtype));
      for (auto [shard, map] : llvm::zip_equal(record.shards, mapped))
        copyOverlap(map.data, shard.offsets, shard.shape, global.bytes.data(),
                    std::vector<int64_t>(record.shape.size(), 0), record.shape,
                    getElementBytes(record.dtype));
    }
    MappedShard mapped;
    if (read &&
        (read = mapShard(candidate, index.losses, "<f4", mapped, problem)))
      out["loss"] = makeFloatArray(ArrayRef(
          reinterpret_cast<const float *>(mapped.data), index.position.step));
    if (!read) {
      warn("skipping the checkpoint '" + candidate + "': " + problem);
      continue;
    }
    arrays = std::move(out);
    path = candidate;
    return true;
  }
  return false;
}

llvm::Expected<RunPosition> CheckpointDir::resume(const RunPosition &fresh,
                                                  std::vector<Binding> &args,
                                                  std::vector<float> &losses,
                                                  uint64_t totalSteps,
                                                  bool allowDataChange) {
  llvm::Expected<std::optional<RunPosition>> read = restore(args, losses);
  if (!read)
    return read.takeError();
  std::optional<RunPosition> restored = std::move(*read);
  bool printing = print && distrt_rank() == 0;
  if (!restored) {
    if (printing)
      llvm::outs() << "no complete checkpoint in '" << directory
                   << "': starting from --state\n";
    return fresh;
  }
  auto mismatch = [&](const char *what, const llvm::Twine &then,
                      const llvm::Twine &now) {
    return makeEveryRankError("the checkpoint at step " +
                              llvm::Twine(restored->step) + " read " + what +
                              " " + then + ", this run " + now +
                              ": resuming would not continue the same run");
  };
  if (restored->dataset.empty() != fresh.dataset.empty())
    return mismatch("batches from",
                    restored->dataset.empty() ? "--data" : "--dataset",
                    fresh.dataset.empty() ? "from --data" : "from --dataset");
  if (!fresh.dataset.empty()) {
    if (restored->samples != fresh.samples || restored->batch != fresh.batch)
      return mismatch("a dataset of",
                      llvm::Twine(restored->samples) +
                          " samples in batches of " +
                          llvm::Twine(restored->batch),
                      llvm::Twine(fresh.samples) + " in batches of " +
                          llvm::Twine(fresh.batch));
    if (restored->seed != fresh.seed || restored->shuffle != fresh.shuffle)
      return mismatch("its samples in the order of",
                      restored->shuffle
                          ? "--seed=" + llvm::Twine(restored->seed)
                          : llvm::Twine("--shuffle=false"),
                      fresh.shuffle ? "--seed=" + llvm::Twine(fresh.seed)
                                    : llvm::Twine("--shuffle=false"));
  }
  // The data's contents (rank 0 holds this run's fingerprint).
  if (distrt_rank() == 0 &&
      restored->dataFingerprint != fresh.dataFingerprint) {
    std::string message =
        "the checkpoint at step " + std::to_string(restored->step) +
        " was trained on " + restored->dataSource + " (fingerprint " +
        restored->dataFingerprint + "), this run reads " + fresh.dataSource +
        " (fingerprint " + fresh.dataFingerprint + ")";
    if (!allowDataChange)
      return makeError(message + ": resuming would not continue the same run "
                                 "(--allow-data-change resumes on other data)");
    warn(message + ": resuming on other data (--allow-data-change)");
  }
  if (restored->step > totalSteps)
    return makeEveryRankError("the newest checkpoint in '" + directory +
                              "' is at step " + llvm::Twine(restored->step) +
                              ", past this run's " + llvm::Twine(totalSteps) +
                              " steps");
  if (printing)
    llvm::outs() << "resumed from step " << restored->step << " of '"
                 << directory << "'\n";
  RunPosition position = fresh;
  position.step = restored->step;
  return position;
}
