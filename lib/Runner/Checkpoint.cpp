//===- Checkpoint.cpp - sharded checkpoints of a training run -------------===//

#include "distopt/Runner/Checkpoint.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/ShardTiling.h"
#include "distopt/Support/InputFile.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Runtime/distrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
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

using namespace mlir;
using namespace distopt::runner;
using namespace distopt;
namespace json = llvm::json;

static constexpr int kChecksumTag = 3;
static constexpr llvm::StringLiteral kFormat = "distopt-checkpoint";
/// 2: each shard carries its binding (getShardBinding) and the index the
/// fingerprint of the run's data.
static constexpr int64_t kVersion = 2;

bool runner::isRestored(const train::StepSignature::Value &value) {
  return isState(value) || value.cache;
}

/// What binds a shard to its place: a hash (xxh3, 16 hex digits) of its
/// array's name, dtype and global shape, its box and its bytes' CRC-32. An
/// index whose records were swapped, copied or moved fails it.
static std::string getShardBinding(StringRef name, StringRef dtype,
                                   ArrayRef<int64_t> globalShape,
                                   ArrayRef<int64_t> offsets,
                                   ArrayRef<int64_t> shape, uint32_t checksum) {
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

static std::string join(StringRef directory, StringRef name) {
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
static std::vector<std::pair<uint64_t, std::string>>
listCheckpoints(StringRef directory) {
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
