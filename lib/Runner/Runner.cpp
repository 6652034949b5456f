//===- Runner.cpp - compile, run and gather the step ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Runner.h"

#include "distopt/Runner/CudaDevice.h"
#include "distopt/Runner/Error.h"
#include "distopt/Runner/Library.h"

#include "distopt/Conversion/Passes.h"
#include "distopt/Runtime/CpuKernels.h"
#include "distopt/Runtime/distrt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <set>
#include <sys/time.h>
#include <unistd.h>

#define DEBUG_TYPE "distopt-runner"

using namespace mlir;
using namespace distopt;
using namespace distopt::runner;

CompiledStep::~CompiledStep() = default;

llvm::Error CompiledStep::invoke(StringRef name,
                                 MutableArrayRef<void *> packed) {
  auto [it, inserted] = functions.try_emplace(name, nullptr);
  if (inserted) {
    std::string symbol = ("_mlir_ciface_" + name).str();
    if (engine) {
      auto function = engine->lookupPacked(symbol);
      if (!function) {
        functions.erase(name);
        return makeError("the step has no function '" + name +
                         "': " + llvm::toString(function.takeError()));
      }
      it->second = *function;
    } else {
      // ExecutionEngine wraps each function as `_mlir_<name>(void **)`.
      it->second = reinterpret_cast<void (*)(void **)>(
          dlsym(library, ("_mlir_" + symbol).c_str()));
      if (!it->second) {
        functions.erase(name);
        return makeError("the cached step '" + origin + "' has no function '" +
                         name + "'");
      }
    }
  }
  it->second(packed.data());
  return llvm::Error::success();
}

std::string runner::getDefaultCacheDirectory() {
  if (const char *env = std::getenv("DISTOPT_CACHE_DIR"); env && *env)
    return env;
  SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (!llvm::sys::path::home_directory(path))
    return "";
  else
    llvm::sys::path::append(path, ".cache");
  llvm::sys::path::append(path, "distopt");
  return path.str().str();
}

std::string runner::getCacheKey(uint64_t moduleHash,
                                const CompileOptions &options,
                                const char *argv0) {
  // What the compiled code depends on: the module, the options, the CPU it
  // is tuned for, LLVM, and this build of DistOpt (its passes are in this
  // tool; its runtime in the libraries the code links).
  std::string identity;
  llvm::raw_string_ostream os(identity);
  os << moduleHash << '\0' << options.backend << '\0' << options.optLevel
     << '\0' << options.opsPerFunction << '\0' << options.parallelMinIterations
     << '\0' << options.gpuMapped << '\0' << int(options.device) << '\0'
     << llvm::sys::getHostCPUName() << '\0' << LLVM_VERSION_STRING;
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> enabled;
  for (const auto &feature : features)
    if (feature.second)
      enabled.push_back(feature.first().str());
  llvm::sort(enabled);
  for (const std::string &feature : enabled)
    os << '\0' << feature;
  std::string tool = getToolPath(argv0);
  std::string lib = getLibDirectory(argv0);
  std::vector<std::string> paths = {tool, lib + "/libdistrt.so",
                                    lib + "/libdistopt_cpu.so"};
  // (A CUDA step calls libdistopt_cuda's distopt_cuda_* functions.)
  if (options.device == Device::cuda)
    paths.push_back(lib + "/libdistopt_cuda.so");
  for (const std::string &path : paths) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    os << '\0' << (buffer ? llvm::xxh3_64bits((*buffer)->getBuffer()) : 0);
  }
  return llvm::utohexstr(llvm::xxh3_64bits(identity), /*LowerCase=*/true);
}

/// Loads the cached step at `path`; null (with a warning) when it does not
/// load.
static std::unique_ptr<CompiledStep> loadCached(const std::string &path) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    warn("ignoring the cached step '" + path + "': " + dlerror());
    return nullptr;
  }
  auto compiled = std::make_unique<CompiledStep>();
  compiled->library = library;
  compiled->origin = path;
  // Recently used entries are kept longest.
  ::utimes(path.c_str(), nullptr);
  return compiled;
}

/// Compile-cache entries kept: the most recently used.
static constexpr size_t kCacheEntries = 64;

/// Removes the least recently used cached steps beyond kCacheEntries.
static void evictCached(StringRef directory) {
  std::vector<std::pair<llvm::sys::TimePoint<>, std::string>> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    llvm::sys::fs::file_status status;
    if (name.starts_with("step-") && name.ends_with(".so") &&
        !llvm::sys::fs::status(it->path(), status))
      entries.push_back({status.getLastModificationTime(), it->path()});
  }
  llvm::sort(entries, [](const auto &a, const auto &b) { return a > b; });
  for (size_t i = kCacheEntries; i < entries.size(); ++i)
    llvm::sys::fs::remove(entries[i].second);
}

/// compileStep without the device.
static llvm::Expected<std::unique_ptr<CompiledStep>>
compile(ModuleOp module, const CompileOptions &options, const char *argv0,
        const CompileCache &cache) {
  unsigned optLevel = options.optLevel;
  std::string cached;
  if (!cache.directory.empty() && !options.profile) {
    SmallString<256> path(cache.directory);
    llvm::sys::path::append(path, "step-" + cache.key + ".so");
    cached = path.str().str();
    LLVM_DEBUG(llvm::dbgs()
               << "compile cache entry '" << cached << "'"
               << (llvm::sys::fs::exists(cached) ? "" : ": none") << "\n");
    if (llvm::sys::fs::exists(cached))
      if (std::unique_ptr<CompiledStep> compiled = loadCached(cached))
        return std::move(compiled);
  }
  PassManager pm(module.getContext());
  if (options.device == Device::cuda) {
    train::CUDAPipelineOptions cuda;
    cuda.backend = options.backend;
    cuda.opsPerFunction = options.opsPerFunction;
    train::buildCUDAPipeline(pm, cuda);
  } else {
    // (gpu-mapped included: buildCPUPipeline routes it.)
    train::buildCPUPipeline(pm, options);
  }
  if (failed(pm.run(module)))
    return makeError("cannot compile the step (see the diagnostics above)");
  // With a cache: a shared library in it, loaded from there now and by
  // later runs.
  if (!cached.empty()) {
    std::string error;
    if (buildLibrary(module, optLevel, cached,
                     getRuntimeLibraries(argv0, options.device), error)) {
      evictCached(cache.directory);
      if (std::unique_ptr<CompiledStep> compiled = loadCached(cached))
        return std::move(compiled);
    } else {
      warn("not caching the compiled step: " + error);
    }
  }
  SmallVector<std::string> libraries =
      getRuntimeLibraries(argv0, options.device);
  SmallVector<StringRef> libraryRefs(libraries.begin(), libraries.end());
  // Optimize for this host's CPU: without a target machine, LLVM's
  // vectorizers see no vector registers.
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    return makeError("cannot target this host: " +
                     llvm::toString(hostBuilder.takeError()));
  auto host = hostBuilder->createTargetMachine();
  if (!host)
    return makeError("cannot target this host: " +
                     llvm::toString(host.takeError()));
  // The options hold a function_ref: the transformer it refers to must
  // outlive the engine's creation (a temporary was a stack-use-after-scope).
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(optLevel, 0, host->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = optimize;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel(optLevel);
  engineOptions.sharedLibPaths = libraryRefs;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return makeError("cannot JIT the step: " +
                     llvm::toString(engine.takeError()));
  auto compiled = std::make_unique<CompiledStep>();
  compiled->engine = std::move(*engine);
  compiled->origin = "the JIT";
  return std::move(compiled);
}

llvm::Expected<std::unique_ptr<CompiledStep>>
runner::compileStep(ModuleOp module, const CompileOptions &options,
                    const char *argv0, const CompileCache &cache) {
  // The device first: the step's kernels load onto it when it is compiled.
  CudaDevice *cuda = nullptr;
  if (options.device == Device::cuda) {
    llvm::Expected<CudaDevice *> loaded =
        CudaDevice::load(getLibDirectory(argv0));
    if (!loaded)
      return loaded.takeError();
    cuda = *loaded;
  }
  llvm::Expected<std::unique_ptr<CompiledStep>> compiled =
      compile(module, options, argv0, cache);
  if (!compiled)
    return compiled.takeError();
  CompiledStep &step = **compiled;
  step.device = cuda;
  if (!cuda && options.gpuMapped) {
    step.ownedDevice = std::make_unique<MappedDevice>();
    step.device = step.ownedDevice.get();
  }
  return std::move(*compiled);
}

llvm::Expected<float> runner::readScalar(const Binding &result) {
  const char *bytes = result.local.bytes.data();
  if (result.dtype == "<f4")
    return *reinterpret_cast<const float *>(bytes);
  if (result.dtype == "<f8")
    return float(*reinterpret_cast<const double *>(bytes));
  if (result.dtype == "<f2") {
    uint16_t bits;
    std::memcpy(&bits, bytes, sizeof(bits));
    return llvm::APFloat(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits))
        .convertToFloat();
  }
  return makeError("'" + result.value->name + "' has dtype " + result.dtype +
                   ", which the runner cannot report");
}

/// A result as the step returned it: its descriptor's allocation and data.
struct Returned {
  const char *data;
  void *allocated;
};

/// The results' descriptors (`words`), checked against their bindings.
static llvm::Expected<std::vector<Returned>>
readDescriptors(int64_t *words, std::vector<Binding> &results) {
  std::vector<Returned> returned;
  for (Binding &result : results) {
    int64_t resultRank = result.local.shape.size();
    ArrayRef<int64_t> sizes(words + 3, resultRank);
    if (sizes != ArrayRef<int64_t>(result.local.shape))
      return makeError("result '" + result.value->name + "' came back as [" +
                       formatShape(sizes) + "], not the recorded [" +
                       formatShape(result.local.shape) + "]");
    void *allocated = reinterpret_cast<void *>(words[0]);
    const char *data = reinterpret_cast<const char *>(words[1]) +
                       words[2] * getElementBytes(result.dtype);
    returned.push_back({data, allocated});
    words += 3 + 2 * resultRank;
  }
  return returned;
}

/// The loss among `results` (0 without one).
static llvm::Expected<float> readLoss(const std::vector<Binding> &results) {
  for (const Binding &result : results)
    if (result.value->role == train::Role::loss)
      return readScalar(result);
  return 0.0f;
}

/// Copies the results out of their memref descriptors (`words`), feeds the
/// state back (`feedBack`: per result, the argument it replaces, or -1: a
/// fed-back result is copied into that argument only, one copy per step;
/// its result binding is not kept up to date) and frees the buffers the
/// step allocated; returns the loss. `storage` is each argument's buffer as
/// the step saw it.
static llvm::Expected<float> readResults(int64_t *words,
                                         std::vector<Binding> &args,
                                         std::vector<Binding> &results,
                                         ArrayRef<int64_t> feedBack,
                                         ArrayRef<void *> storage) {
  llvm::Expected<std::vector<Returned>> read = readDescriptors(words, results);
  if (!read)
    return read.takeError();
  std::vector<Returned> &returned = *read;
  auto isArgument = [&](const Returned &from) {
    return llvm::is_contained(storage, from.allocated);
  };
  auto getTarget = [&](size_t i) -> std::vector<char> & {
    bool fedBack = i < feedBack.size() && feedBack[i] >= 0;
    return fedBack ? args[feedBack[i]].local.bytes : results[i].local.bytes;
  };
  // An argument's storage returned as a result (not in place) is read
  // before any argument is written: a step may return one state array as
  // another.
  for (auto [i, from] : llvm::enumerate(returned))
    if (isArgument(from) && getTarget(i).data() != from.data)
      from.data = static_cast<const char *>(
          std::memcpy(results[i].local.bytes.data(), from.data,
                      results[i].local.bytes.size()));
  for (auto [i, result] : llvm::enumerate(results)) {
    std::vector<char> &target = getTarget(i);
    if (target.size() != result.local.bytes.size())
      return makeError("result '" + result.value->name + "' has " +
                       llvm::Twine(result.local.bytes.size()) +
                       " bytes, the argument it replaces " +
                       llvm::Twine(target.size()));
    if (target.data() != returned[i].data)
      distopt_copy(target.data(), returned[i].data, target.size());
  }
  // A step may return one buffer in several results (a tied parameter):
  // each allocation is freed once, after every result was read.
  llvm::SmallPtrSet<void *, 8> freed;
  for (const Returned &from : returned)
    if (!isArgument(from) && freed.insert(from.allocated).second)
      std::free(from.allocated);
  return readLoss(results);
}

namespace {
/// A call's C interface, owned: the result pointer (a function without
/// results, a pipeline stage that only sends, lacks it), then the argument
/// descriptors, each over its buffer in `storage`.
struct PackedCall {
  PackedCall(std::vector<Binding> &args, ArrayRef<void *> storage,
             const std::vector<Binding> &results) {
    for (const Binding &result : results)
      resultWords.resize(resultWords.size() + 3 +
                         2 * result.local.shape.size());
    for (auto [arg, buffer] : llvm::zip_equal(args, storage)) {
      descriptors.push_back(describe(arg.local));
      descriptors.back()[0] = descriptors.back()[1] =
          reinterpret_cast<int64_t>(buffer);
    }
    if (!results.empty())
      pointers.push_back(resultWords.data());
    for (auto &words : descriptors)
      pointers.push_back(words.data());
    for (void *&pointer : pointers)
      packed.push_back(&pointer);
  }
  PackedCall(const PackedCall &) = delete;
  PackedCall &operator=(const PackedCall &) = delete;

  std::vector<int64_t> resultWords;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> pointers, packed;
};
} // namespace

namespace distopt::runner {
/// The functions of a step captured as graphs on its device, by name.
struct StepGraphs {
  struct Captured {
    /// The argument buffers it was captured on (it replays on those only).
    std::vector<void *> storage;
    /// The call it captured (a mapped graph calls it again).
    std::shared_ptr<PackedCall> call;
    std::unique_ptr<DeviceMemory::Graph> graph;
    /// Its first launch's results were found replayable.
    bool checked = false;
  };
  std::map<std::string, Captured> captured;
  /// Calls of each function (captured at its second).
  std::map<std::string, int64_t> calls;
  /// Functions that run launch by launch (why was said once).
  std::set<std::string> refused;

  void refuse(const std::string &name, const llvm::Twine &reason) {
    captured.erase(name);
    if (refused.insert(name).second)
      warn("'" + name +
           "' runs launch by launch, not as a captured graph: " + reason);
  }
};

/// The device copies of a step's arguments (--device=cuda, --gpu-mapped).
/// An argument a result feeds back (the state) is resident: copied to the
/// device once, then replaced by its result's device buffer after each
/// step, its host array out of date until pullState(). The others are
/// copied before every call.
class ResidentState {
public:
  explicit ResidentState(DeviceMemory &device) : device(device) {}
  ~ResidentState() {
    for (auto &[binding, copy] : copies)
      if (llvm::Error error = device.free(copy.buffer))
        llvm::consumeError(std::move(error));
  }

  struct Copy {
    void *buffer = nullptr;
    /// What the copy was made for: a binding at the same address with
    /// another value, size or host array is a new one.
    const train::StepSignature::Value *value = nullptr;
    const char *host = nullptr;
    size_t bytes = 0;
    /// The device holds the argument (resident ones only: the others are
    /// copied before every call).
    bool onDevice = false;
    /// The host array is out of date (a resident one after a step).
    bool hostStale = false;
  };

  /// The copy of `arg`, allocated when first needed.
  llvm::Expected<Copy *> get(const Binding &arg) {
    Copy &copy = copies[&arg];
    size_t bytes = arg.local.bytes.size();
    if (copy.buffer && (copy.value != arg.value || copy.bytes != bytes ||
                        copy.host != arg.local.bytes.data())) {
      if (llvm::Error error = device.free(copy.buffer))
        return std::move(error);
      copy = Copy();
    }
    if (!copy.buffer) {
      llvm::Expected<void *> allocated = device.allocate(bytes);
      if (!allocated)
        return allocated.takeError();
      copy.buffer = *allocated;
      copy.value = arg.value;
      copy.host = arg.local.bytes.data();
      copy.bytes = bytes;
    }
    return &copy;
  }

  /// Copies the device's `arg` to its host array when it is out of date.
  llvm::Error pull(const Binding &arg) {
    auto it = copies.find(&arg);
    if (it == copies.end() || !it->second.hostStale)
      return llvm::Error::success();
    Copy &copy = it->second;
    if (llvm::Error error = device.copyToHost(const_cast<char *>(copy.host),
                                              copy.buffer, copy.bytes))
      return error;
    copy.hostStale = false;
    return llvm::Error::success();
  }

  DeviceMemory &device;
  std::map<const Binding *, Copy> copies;
};
} // namespace distopt::runner

/// invokeStep on a device: see its comment. `resident[j]`: argument j is
/// fed back by some result.
static llvm::Expected<float>
invokeOnDevice(CompiledStep &compiled, StringRef entry,
               std::vector<Binding> &args, std::vector<Binding> &results,
               ArrayRef<int64_t> feedBack, const StagedInputs *staged) {
  DeviceMemory &device = *compiled.device;
  if (!compiled.resident)
    compiled.resident = std::make_unique<ResidentState>(device);
  ResidentState &state = *compiled.resident;
  std::vector<bool> isResident(args.size());
  for (int64_t j : feedBack)
    if (j >= 0)
      isResident[j] = true;
  std::vector<ResidentState::Copy *> copies;
  std::vector<void *> storage;
  for (auto [j, arg] : llvm::enumerate(args)) {
    llvm::Expected<ResidentState::Copy *> copy = state.get(arg);
    if (!copy)
      return copy.takeError();
    const void *stagedFrom =
        staged && j < staged->from.size() ? staged->from[j] : nullptr;
    // (A fixed batch stays on the device as the state does.)
    bool kept = isResident[j] || (staged && staged->fixedData && isData(arg));
    if (stagedFrom && !isResident[j]) {
      if (llvm::Error error =
              device.useStaged((*copy)->buffer, stagedFrom, (*copy)->bytes))
        return std::move(error);
    } else if (!(*copy)->onDevice || !kept) {
      if (llvm::Error error = device.copyToDevice(
              (*copy)->buffer, arg.local.bytes.data(), (*copy)->bytes))
        return std::move(error);
      (*copy)->onDevice = kept;
    }
    copies.push_back(*copy);
    storage.push_back((*copy)->buffer);
  }
  // The function as a graph (--step-graphs): captured at its second call
  // (the first allocates its workspaces and what its products keep), then
  // replayed while its arguments are where it was captured on.
  if (!compiled.graphs)
    compiled.graphs = std::make_unique<StepGraphs>();
  StepGraphs &graphs = *compiled.graphs;
  std::string name = entry.str();
  auto captured = graphs.captured.find(name);
  if (captured != graphs.captured.end() &&
      captured->second.storage != storage) {
    // (Arguments moved, as a state result not updated in place does.)
    graphs.captured.erase(captured);
    captured = graphs.captured.end();
    graphs.calls[name] = 0;
  }
  if (captured == graphs.captured.end() && compiled.captureGraphs &&
      !graphs.refused.count(name) && graphs.calls[name]++ >= 1) {
    auto call = std::make_shared<PackedCall>(args, storage, results);
    llvm::Expected<std::unique_ptr<DeviceMemory::Graph>> graph =
        device.capture([&compiled, name, call] {
          return compiled.invoke(name, call->packed);
        });
    if (graph)
      captured = graphs.captured
                     .emplace(name, StepGraphs::Captured{storage, call,
                                                         std::move(*graph)})
                     .first;
    else
      graphs.refuse(name, llvm::toString(graph.takeError()));
  }
  std::shared_ptr<PackedCall> call;
  bool replayed = captured != graphs.captured.end();
  if (replayed) {
    call = captured->second.call;
    if (llvm::Error error = captured->second.graph->launch())
      return std::move(error);
  } else {
    call = std::make_shared<PackedCall>(args, storage, results);
    if (llvm::Error error = compiled.invoke(entry, call->packed))
      return std::move(error);
  }
  if (staged && staged->whileRunning)
    if (llvm::Error error = staged->whileRunning())
      return std::move(error);
  // The host waits for the step only here, where it reads the results.
  if (llvm::Error error = device.synchronize("the step"))
    return std::move(error);
  llvm::Expected<std::vector<Returned>> read =
      readDescriptors(call->resultWords.data(), results);
  if (!read)
    return read.takeError();
  // A graph replays only a call whose results stay put: every state result
  // updated in place, every other result in the function's workspace (no
  // allocation of the caller's to free). Checked at its first launch,
  // whose results are this step's either way.
  if (replayed && !captured->second.checked) {
    captured->second.checked = true;
    for (auto [i, from] : llvm::enumerate(*read)) {
      int64_t j = i < feedBack.size() ? feedBack[i] : -1;
      if (j >= 0 ? from.data != storage[j] : from.allocated != nullptr) {
        graphs.refuse(name, "result '" + results[i].value->name + "' " +
                                (j >= 0 ? "is not updated in place"
                                        : "is allocated by each call"));
        break;
      }
    }
  }
  // Each fed-back result becomes its argument's buffer: the step's own
  // allocation when nothing else holds it, else a copy on the device (a
  // result that is an argument's buffer or a view, one buffer returned as
  // two state arrays); the rest are copied to the host.
  llvm::SmallPtrSet<void *, 16> held(storage.begin(), storage.end());
  llvm::SmallPtrSet<void *, 16> adopted, replaced;
  std::vector<void *> next(storage.begin(), storage.end());
  for (auto [i, from] : llvm::enumerate(*read)) {
    int64_t j = i < feedBack.size() ? feedBack[i] : -1;
    if (j < 0) {
      std::vector<char> &target = results[i].local.bytes;
      if (llvm::Error error =
              device.copyToHost(target.data(), from.data, target.size()))
        return std::move(error);
      continue;
    }
    size_t bytes = copies[j]->bytes;
    if (results[i].local.bytes.size() != bytes)
      return makeError("result '" + results[i].value->name + "' has " +
                       llvm::Twine(results[i].local.bytes.size()) +
                       " bytes, the argument it replaces " +
                       llvm::Twine(bytes));
    if (from.data == storage[j])
      continue; // updated in place
    if (from.data == from.allocated && !held.count(from.allocated) &&
        adopted.insert(from.allocated).second) {
      next[j] = from.allocated;
    } else {
      llvm::Expected<void *> fresh = device.allocate(bytes);
      if (!fresh)
        return fresh.takeError();
      if (llvm::Error error = device.copyOnDevice(*fresh, from.data, bytes))
        return std::move(error);
      next[j] = *fresh;
    }
    replaced.insert(storage[j]);
  }
  // Every result is read: free what no argument holds any more.
  llvm::SmallPtrSet<void *, 16> kept(next.begin(), next.end()), freed;
  for (const Returned &from : *read)
    if (!kept.count(from.allocated) && !held.count(from.allocated) &&
        freed.insert(from.allocated).second)
      if (llvm::Error error = device.free(from.allocated))
        return std::move(error);
  for (void *old : replaced)
    if (!kept.count(old) && freed.insert(old).second)
      if (llvm::Error error = device.free(old))
        return std::move(error);
  for (auto [j, arg] : llvm::enumerate(args)) {
    if (!isResident[j])
      continue;
    copies[j]->buffer = next[j];
    copies[j]->hostStale = true;
    device.markStale(arg.local.bytes.data(), copies[j]->bytes);
  }
  return readLoss(results);
}

llvm::Error runner::pullState(CompiledStep &compiled,
                              std::vector<Binding> &args, const Binding *only) {
  if (!compiled.resident)
    return llvm::Error::success();
  for (const Binding &arg : args)
    if (!only || only == &arg)
      if (llvm::Error error = compiled.resident->pull(arg))
        return error;
  return llvm::Error::success();
}

llvm::Expected<float>
runner::invokeStep(CompiledStep &compiled, StringRef entry,
                   std::vector<Binding> &args, std::vector<Binding> &results,
                   ArrayRef<int64_t> feedBack, const StagedInputs *staged) {
  if (compiled.device)
    return invokeOnDevice(compiled, entry, args, results, feedBack, staged);
  std::vector<void *> storage;
  for (Binding &arg : args)
    storage.push_back(arg.local.bytes.data());
  PackedCall call(args, storage, results);
  if (llvm::Error error = compiled.invoke(entry, call.packed))
    return std::move(error);
  return readResults(call.resultWords.data(), args, results, feedBack, storage);
}

/// "nan", "inf", "-inf".
static std::string formatNonFinite(double value) {
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

std::string runner::findNonFinite(const Binding &binding) {
  const Array &local = binding.local;
  bool f32 = binding.dtype == "<f4";
  if (!f32 && binding.dtype != "<f8")
    return "";
  int64_t count = local.getNumElements();
  for (int64_t i = 0; i < count; ++i) {
    double value;
    if (f32) {
      float v;
      std::memcpy(&v, local.bytes.data() + 4 * i, 4);
      value = v;
    } else {
      std::memcpy(&value, local.bytes.data() + 8 * i, 8);
    }
    if (std::isfinite(value))
      continue;
    std::string name = "'" + binding.value->name + "'";
    if (local.shape.empty())
      return name + " is " + formatNonFinite(value);
    // The global index of local element i.
    std::vector<int64_t> index(local.shape.size());
    int64_t rest = i;
    for (size_t d = local.shape.size(); d-- > 0;) {
      index[d] = rest % local.shape[d] + binding.offsets[d];
      rest /= local.shape[d];
    }
    return name + " holds " + formatNonFinite(value) + " at [" +
           llvm::join(llvm::map_range(
                          index, [](int64_t i) { return std::to_string(i); }),
                      ", ") +
           "]";
  }
  return "";
}

/// The first non-finite value of this rank's arguments after a step whose
/// loss was not finite: the hyper-parameters and the batch (what the step
/// read), then the state (what it wrote back).
static std::string describeNonFinite(const std::vector<Binding> &args) {
  for (bool state : {false, true})
    for (const Binding &arg : args) {
      if (!arg.value->role || isState(*arg.value) != state)
        continue;
      std::string found = findNonFinite(arg);
      if (!found.empty())
        return state ? found + " after it" : found;
    }
  return "";
}

llvm::Error runner::checkStateFinite(const std::vector<Binding> &args,
                                     uint64_t step, StringRef what) {
  std::string found;
  for (const Binding &arg : args)
    if (found.empty() && isState(*arg.value) && !arg.value->cache)
      found = findNonFinite(arg);
  // The lowest rank holding one reports it.
  int64_t size = distrt_size(), rank = distrt_rank(), first = -1;
  if (size == 1) {
    first = found.empty() ? -1 : 0;
  } else {
    int64_t shape[] = {size}, axes[] = {0};
    distrt_group *world = distrt_get_group(shape, 1, axes, 1);
    if (!world)
      return makeRuntimeError();
    int64_t mine = !found.empty();
    std::vector<int64_t> all(size);
    if (distrt_all_gather(world, &mine, all.data(), 1, DISTRT_I64))
      return makeRuntimeError();
    auto it = llvm::find(all, 1);
    first = it == all.end() ? -1 : it - all.begin();
  }
  if (first < 0)
    return llvm::Error::success();
  if (rank != first)
    return makeEveryRankError(
        "rank " + llvm::Twine(first) +
        " holds a non-finite value of the state after step " +
        llvm::Twine(step));
  return makeError(
      "after step " + llvm::Twine(step) + ", " + found + ": " + what +
      " is not written of this state (--on-nonfinite=continue writes it)");
  return llvm::Error::success();
}

namespace {
/// A run's batches staged to its device (RunHooks::stageBatches): each
/// batch arrays gets a pinned host buffer and a device staging buffer.
/// While step s runs, the host reads batch s+1 into the pinned buffers and
/// the copy stream copies them to the staging buffers; step s+1 then
/// starts with copies on the device (HBM, not PCIe) into its inputs, and
/// the host arrays get batch s+1 from the pinned buffers while it runs
/// (what the host reads of a step's batch: a non-finite loss's report).
class BatchStager {
public:
  BatchStager(DeviceMemory &device, std::vector<Binding> &args,
              const RunHooks &hooks)
      : device(device), args(args), hooks(hooks) {}
  ~BatchStager() {
    // (Staged copies still reading a pinned buffer finish first.)
    llvm::consumeError(device.waitStaged());
    for (Slot &slot : slots) {
      llvm::consumeError(device.freeHost(slot.pinned));
      llvm::consumeError(device.free(slot.staging));
    }
  }

  /// Allocates the buffers of each batch argument.
  llvm::Error allocate() {
    for (auto [j, arg] : llvm::enumerate(args)) {
      if (!hooks.isBatch(arg))
        continue;
      Slot slot{j, nullptr, nullptr, arg.local.bytes.size()};
      llvm::Expected<void *> pinned = device.allocateHost(slot.bytes);
      if (!pinned)
        return pinned.takeError();
      slot.pinned = *pinned;
      llvm::Expected<void *> staging = device.allocate(slot.bytes);
      if (!staging) {
        llvm::consumeError(device.freeHost(slot.pinned));
        return staging.takeError();
      }
      slot.staging = *staging;
      slots.push_back(slot);
    }
    return llvm::Error::success();
  }

  /// Whether the staging buffers hold batch `step`.
  bool holds(uint64_t step) const { return staged == step; }

  /// The staging buffers, per argument (for invokeStep).
  std::vector<const void *> getBuffers() const {
    std::vector<const void *> from(args.size());
    for (const Slot &slot : slots)
      from[slot.arg] = slot.staging;
    return from;
  }

  /// While step `step` runs (its batch staged when `used`): the host
  /// arrays get its batch, and batch `next` (if any) is staged.
  llvm::Error whileRunning(uint64_t step, bool used,
                           std::optional<uint64_t> next) {
    if (llvm::Error error = device.waitStaged())
      return error;
    if (used)
      for (const Slot &slot : slots)
        std::memcpy(args[slot.arg].local.bytes.data(), slot.pinned, slot.bytes);
    staged.reset();
    if (!next)
      return llvm::Error::success();
    for (const Slot &slot : slots) {
      hooks.fillBatch(*next, args[slot.arg], static_cast<char *>(slot.pinned));
      if (llvm::Error error =
              device.stage(slot.staging, slot.pinned, slot.bytes))
        return error;
    }
    staged = next;
    return llvm::Error::success();
  }

private:
  struct Slot {
    size_t arg;
    void *pinned, *staging;
    size_t bytes;
  };
  DeviceMemory &device;
  std::vector<Binding> &args;
  const RunHooks &hooks;
  std::vector<Slot> slots;
  /// The batch the staging buffers hold (or are being copied).
  std::optional<uint64_t> staged;
};
} // namespace

llvm::Expected<std::vector<float>>
runner::runSteps(CompiledStep &compiled, StringRef entry,
                 std::vector<Binding> &args, std::vector<Binding> &results,
                 uint64_t steps, int64_t lossRank, const RunHooks &hooks,
                 std::vector<float> losses) {
  std::vector<int64_t> feedBack;
  for (Binding &result : results) {
    auto arg = llvm::find_if(args, [&](const Binding &a) {
      return a.value->isSamePart(*result.value);
    });
    feedBack.push_back(
        isState(*result.value) && arg != args.end() ? arg - args.begin() : -1);
  }
  bool printing = hooks.print && distrt_rank() == 0;
  // Long runs also get a progress line (on stderr) every tenth of the steps.
  auto runStart = std::chrono::steady_clock::now(), lastFlush = runStart;
  uint64_t first = hooks.firstStep;
  uint64_t toRun = steps > first ? steps - first : 0;
  uint64_t progressEvery = toRun >= 20 ? toRun / 10 : 0;
  // The loss scale (a scalar rank lossScaleRank holds, with its replicas)
  // before and after each step: a drop means the step kept its parameters
  // and state.
  const Binding *lossScale = nullptr;
  if (hooks.lossScaleRank)
    for (const Binding &arg : args)
      if (arg.value->name == train::TrainDialect::kLossScaleStateName &&
          arg.dtype == "<f4" && arg.local.bytes.size() == sizeof(float))
        lossScale = &arg;
  auto readLossScale = [&]() -> llvm::Expected<float> {
    if (llvm::Error error = pullState(compiled, args, lossScale))
      return std::move(error);
    float value;
    std::memcpy(&value, lossScale->local.bytes.data(), sizeof(float));
    return value;
  };
  std::optional<BatchStager> stager;
  if (compiled.device && hooks.stageBatches && hooks.isBatch &&
      llvm::any_of(args, hooks.isBatch)) {
    stager.emplace(*compiled.device, args, hooks);
    if (llvm::Error error = stager->allocate())
      return std::move(error);
  }
  for (uint64_t s = first; s < steps; ++s) {
    if (hooks.beforeStep)
      if (llvm::Error error = hooks.beforeStep(s))
        return std::move(error);
    // The batch: staged while the step before ran, or read now.
    bool useStaged = stager && stager->holds(s);
    if (hooks.isBatch && !useStaged)
      for (Binding &arg : args)
        if (hooks.isBatch(arg))
          hooks.fillBatch(s, arg, arg.local.bytes.data());
    StagedInputs staging;
    // Without a dataset the batch is the same every step.
    staging.fixedData = !hooks.isBatch;
    if (stager) {
      if (useStaged)
        staging.from = stager->getBuffers();
      std::optional<uint64_t> next;
      if (s + 1 < steps)
        next = s + 1;
      staging.whileRunning = [&stager, s, useStaged, next] {
        return stager->whileRunning(s, useStaged, next);
      };
    }
    distrt_reset_stats();
    std::optional<float> scaleBefore;
    if (lossScale) {
      llvm::Expected<float> scale = readLossScale();
      if (!scale)
        return scale.takeError();
      scaleBefore = *scale;
    }
    std::optional<DeviceTraffic> trafficBefore;
    if (compiled.device)
      trafficBefore = compiled.device->getTraffic();
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<float> stepLoss =
        invokeStep(compiled, entry, args, results, feedBack, &staging);
    if (!stepLoss)
      return stepLoss.takeError();
    float loss = *stepLoss;
    auto end = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(end - start).count();
    StepReport report;
    report.step = s + 1;
    report.ms = ms;
    distrt_get_stats(&report.comm);
    if (trafficBefore)
      report.device = compiled.device->getTraffic() - *trafficBefore;
    if (lossRank != 0) {
      int64_t rank = distrt_rank();
      if (rank == lossRank && distrt_send(&loss, 1, DISTRT_F32, 0, 2) != 0)
        return makeRuntimeError();
      if (rank == 0 && distrt_recv(&loss, 1, DISTRT_F32, lossRank, 2) != 0)
        return makeRuntimeError();
    }
    losses.push_back(loss);
    if (hooks.lossScaleRank) {
      // Before and after, told to rank 0 by the rank that holds it.
      int64_t rank = distrt_rank(), from = *hooks.lossScaleRank;
      float scales[2] = {scaleBefore.value_or(0), 0};
      if (lossScale) {
        llvm::Expected<float> scale = readLossScale();
        if (!scale)
          return scale.takeError();
        scales[1] = *scale;
      } else if (rank == from)
        return makeError("the step scales its loss dynamically but rank " +
                         llvm::Twine(rank) + " has no float32 scalar '" +
                         train::TrainDialect::kLossScaleStateName + "'");
      if (from != 0) {
        if (rank == from && distrt_send(scales, 2, DISTRT_F32, 0, 3) != 0)
          return makeRuntimeError();
        if (rank == 0 && distrt_recv(scales, 2, DISTRT_F32, from, 3) != 0)
          return makeRuntimeError();
      }
      if (rank == 0 || rank == from) {
        scaleBefore = scales[0];
        report.lossScale = scales[1];
        report.skipped = scales[1] < scales[0];
      }
    }
    if (printing) {
      llvm::outs() << llvm::formatv("step {0}: loss {1:F6} ({2:F2} ms)", s + 1,
                                    loss, ms);
      if (report.skipped)
        llvm::outs() << ", update skipped: a gradient is not finite; loss "
                        "scale "
                     << llvm::format("%g", *scaleBefore) << " -> "
                     << llvm::format("%g", *report.lossScale);
      llvm::outs() << "\n";
    }
    // A non-finite loss ends the run before anything of the step is saved
    // (rank 0 fails, which ends every rank), unless dynamic loss scaling
    // skipped the step's update.
    if (distrt_rank() == 0 && !std::isfinite(loss) && !report.skipped) {
      if (hooks.stopOnNonFinite) {
        if (llvm::Error error = pullState(compiled, args))
          return std::move(error);
        std::string found = describeNonFinite(args);
        return makeError(
            "step " + llvm::Twine(s + 1) + ": the loss is " +
            formatNonFinite(loss) + (found.empty() ? "" : " (" + found + ")") +
            ": stopping without saving this state (--on-nonfinite=continue "
            "trains on)");
      }
      static bool warned = false;
      if (!warned)
        warn("step " + llvm::Twine(s + 1) + ": the loss is " +
             formatNonFinite(loss) + ": training on (--on-nonfinite=continue)");
      warned = true;
    }
    report.loss = loss;
    if (hooks.afterStep)
      if (llvm::Error error = hooks.afterStep(report, losses))
        return std::move(error);
    if (hooks.stopAfter) {
      llvm::Expected<bool> stop = hooks.stopAfter(s + 1);
      if (!stop)
        return stop.takeError();
      if (*stop)
        break;
    }
    if (!printing)
      continue;
    // Whoever watches the output (a log, mpirun) sees progress: the first
    // step's line at once, then at most every tenth of a second.
    if (s == first || end - lastFlush > std::chrono::milliseconds(100)) {
      llvm::outs().flush();
      lastFlush = end;
    }
    uint64_t done = s + 1 - first;
    if (progressEvery && done % progressEvery == 0) {
      double elapsed = std::chrono::duration<double>(end - runStart).count();
      llvm::outs().flush();
      llvm::errs() << llvm::formatv(
          "progress: {0}/{1} steps, {2:F1} s elapsed, about {3:F1} s left\n",
          s + 1, steps, elapsed, elapsed / done * (steps - s - 1));
    }
  }
  return std::move(losses);
}

/// gatherState for an MPMD step: each state array from the devices of the
/// first program that holds it, or, when programs hold blocks of it (a
/// parameter server's row shards), from every program with a block.
static llvm::Expected<Arrays>
gatherProgramState(std::vector<Binding> &args, const train::StepSignature &step,
                   const std::set<std::string> *only) {
  int64_t rank = distrt_rank();
  Arrays out;
  std::map<std::string, std::set<std::vector<int64_t>>> blocksDone;
  for (const train::StepSignature::Program &program : step.programs) {
    for (const train::StepSignature::Value &value : program.arguments) {
      // A worker's cached copy is not state of its own: the holder's is.
      if (!isState(value) || value.cache || (only && !only->count(value.name)))
        continue;
      std::vector<int64_t> offsets(value.blockOffsets.begin(),
                                   value.blockOffsets.end());
      bool newBlock = blocksDone[value.name].insert(offsets).second;
      if (out.count(value.name) && (value.blockOffsets.empty() || !newBlock))
        continue;
      Binding *mine = nullptr;
      for (Binding &arg : args)
        if (arg.value->isSamePart(value))
          mine = &arg;
      // Every rank marks the name gathered; rank 0 keeps the array.
      Array &global = out[value.name];
      for (int64_t device : program.devices) {
        Binding block = bind(value, step, device);
        if (device != 0 && rank == device &&
            distrt_send(mine->local.bytes.data(), mine->local.bytes.size(),
                        DISTRT_I8, 0, 1) != 0)
          return makeRuntimeError();
        if (rank != 0)
          continue;
        if (global.bytes.empty()) {
          global.dtype = block.dtype;
          global.shape = block.globalShape;
          global.bytes.resize(global.getNumElements() *
                              getElementBytes(block.dtype));
        }
        if (device == 0)
          block.local = mine->local;
        else if (distrt_recv(block.local.bytes.data(), block.local.bytes.size(),
                             DISTRT_I8, device, 1) != 0)
          return makeRuntimeError();
        copyBlock(global, block.local, block.offsets, /*toGlobal=*/true);
      }
    }
  }
  if (rank != 0)
    out.clear();
  return std::move(out);
}

llvm::Expected<Arrays> runner::gatherState(std::vector<Binding> &args,
                                           const train::StepSignature &step,
                                           const std::set<std::string> *only) {
  if (step.isMPMD())
    return gatherProgramState(args, step, only);
  int64_t rank = distrt_rank(), worldSize = distrt_size();
  Arrays out;
  for (Binding &arg : args) {
    if (!isState(*arg.value) || (only && !only->count(arg.value->name)))
      continue;
    Array global;
    if (rank == 0) {
      global.dtype = arg.dtype;
      global.shape = arg.globalShape;
      global.bytes.resize(global.getNumElements() * getElementBytes(arg.dtype));
    }
    ArrayAttr split = arg.split;
    for (int64_t r = 0; r < worldSize; ++r) {
      if (r != 0 && rank == r &&
          distrt_send(arg.local.bytes.data(), arg.local.bytes.size(), DISTRT_I8,
                      0, 1) != 0)
        return makeRuntimeError();
      if (rank != 0)
        continue;
      Array block = arg.local;
      if (r != 0 && distrt_recv(block.bytes.data(), block.bytes.size(),
                                DISTRT_I8, r, 1) != 0)
        return makeRuntimeError();
      std::vector<int64_t> offsets =
          split ? getBlockOffsets(split, step, r, arg.local.shape)
                : std::vector<int64_t>(arg.local.shape.size(), 0);
      copyBlock(global, block, offsets, /*toGlobal=*/true);
    }
    if (rank == 0)
      out[arg.value->name] = std::move(global);
  }
  return std::move(out);
}
