//===- FakeDriver.cpp - a CUDA driver over host memory, for tests ---------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libcuda.so.1 for a machine without a GPU: the driver API that
// libdistopt_cuda and the nccl backend call, over host memory, so that
// their device paths (resident state, staging, graph capture and replay,
// the communication stream) run in CI. Kernels do not run (a launch is
// counted, checked and ordered, nothing more), so numbers are not the
// point: the fake enforces the rules a real device enforces, or silently
// breaks on, and reports what each stream did.
//
//  * Memory: device allocations are host memory, kept after they are freed
//    so that a later use is caught; every copy, set, product and
//    collective must lie inside one live allocation of the right kind.
//  * Streams run lazily, in order, only when the host waits for them
//    (cuStreamSynchronize, cuEventSynchronize, a copy to pageable memory):
//    a pinned copy's destination reads 0xff until then, and a pinned
//    source is read when the copy runs, as on a device.
//  * Capture (cuStreamBeginCapture): work on a capturing stream becomes a
//    graph's nodes; calls a capture forbids (synchronous allocation, a wait
//    on the host, a copy from pageable memory, a wait on an event recorded
//    outside the capture) fail it as CUDA does; a stream forked into it
//    must be joined back before it ends.
//
// DISTOPT_FAKE_CUDA_REPORT names a JSON file written at exit: the
// violations, the calls, each stream's work and each graph's nodes and
// launches (docs/guides/fake-cuda.md).
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace fakecuda;

// The driver's handles are the fake's own structs.
struct CUctx_st {};
struct CUmod_st;
struct CUfunc_st {
  CUmod_st *module;
  std::string name;
};
struct CUmod_st {
  std::string image;
  bool loaded = true;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;
};
struct CUgraphNode_st {
  CUgraphNodeType type;
  std::string name;
  Work kind;
  std::function<void()> work;
};
struct CUgraph_st {
  std::vector<std::shared_ptr<CUgraphNode_st>> nodes;
};
struct CUgraphExec_st {
  std::vector<std::shared_ptr<CUgraphNode_st>> nodes;
  size_t index = 0;
  int64_t launches = 0;
};
struct Capture;
struct CUstream_st {
  int id = 0;
  unsigned flags = 0;
  bool destroyed = false;
  /// Work not yet run: its sequence number, the ticket it was queued
  /// with, the work.
  struct Queued {
    uint64_t sequence, ticket;
    std::function<void()> work;
  };
  std::deque<Queued> queue;
  uint64_t enqueued = 0;
  Capture *capture = nullptr;
  /// Nodes this stream added to its capture.
  size_t captured = 0;
  /// The report's counts, by kind.
  std::map<Work, int64_t> counts;
};
struct CUevent_st {
  CUstream_st *stream = nullptr;
  uint64_t sequence = 0;
  /// Recorded in a capture (its id; 0: none): by which stream, after how
  /// many of its nodes. The capture may have ended since.
  uint64_t captureId = 0;
  CUstream_st *capturedOn = nullptr;
  size_t capturedAfter = 0;
};

struct Capture {
  uint64_t id;
  CUstream_st *origin;
  std::thread::id thread;
  bool threadLocal;
  /// CU_STREAM_CAPTURE_MODE_RELAXED: no call is forbidden.
  bool relaxed;
  CUgraph_st *graph;
  std::string failure;
  std::set<CUstream_st *> members;
  /// How many nodes of each member the origin has waited for.
  std::map<CUstream_st *, size_t> joined;
};

namespace {
enum class Kind { Device, Managed, Pinned };

struct Allocation {
  size_t bytes;
  Kind kind;
  bool live = true;
  /// The ticket of the free (work queued from then on may not use it).
  uint64_t freedAt = 0;
};

const char *getKindName(Work kind) {
  switch (kind) {
  case Work::Kernel:
    return "kernels";
  case Work::Product:
    return "products";
  case Work::Collective:
    return "collectives";
  case Work::Copy:
    return "copies";
  case Work::Memset:
    return "memsets";
  case Work::Wait:
    return "waits";
  }
  return "?";
}

struct Driver {
  std::recursive_mutex mutex;
  bool initialized = false;
  CUctx_st context;
  /// Every allocation ever made, by its base address (freed ones stay).
  std::map<uintptr_t, Allocation> memory;
  std::vector<std::unique_ptr<CUstream_st>> streams;
  CUstream_st legacy;
  std::vector<std::unique_ptr<Capture>> captures;
  std::vector<std::unique_ptr<CUgraphExec_st>> execs;
  std::vector<std::string> violations;
  std::map<std::string, int64_t> calls;
  int64_t allocations = 0, allocationsAfterCapture = 0, graphLaunches = 0,
          kernelsRun = 0;
  /// Counts every queued work and free, in host order; the ticket of the
  /// work running now (0: none), which the checks it makes when it runs
  /// use: memory freed after it was queued is still its.
  uint64_t tickets = 0, running = 0;

  Driver() { legacy.id = 0; }

  void writeReport();
};

/// The driver, never destroyed (what it holds stays reachable, and
/// allocated, to the end of the process); the report is written at exit.
Driver &getDriver() {
  static Driver *driver = [] {
    auto *created = new Driver();
    std::atexit([] { getDriver().writeReport(); });
    return created;
  }();
  return *driver;
}

/// Locks the driver and counts the call.
struct Call {
  std::lock_guard<std::recursive_mutex> lock;
  explicit Call(const char *name) : lock(getDriver().mutex) {
    ++getDriver().calls[name];
  }
};

CUstream_st *getStream(CUstream stream) {
  return stream ? stream : &getDriver().legacy;
}

std::string formatPointer(const void *pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

/// The allocation holding `pointer`, or null.
const std::pair<const uintptr_t, Allocation> *find(const void *pointer) {
  auto &memory = getDriver().memory;
  auto address = reinterpret_cast<uintptr_t>(pointer);
  auto it = memory.upper_bound(address);
  if (it == memory.begin())
    return nullptr;
  --it;
  if (address >= it->first + std::max<size_t>(it->second.bytes, 1))
    return nullptr;
  return &*it;
}

/// The capture `id` names while it lasts, else null.
Capture *getCapture(uint64_t id) {
  for (auto &capture : getDriver().captures)
    if (id && capture->id == id)
      return capture.get();
  return nullptr;
}

bool isKind(const void *pointer, Kind kind) {
  const auto *found = find(pointer);
  return found && found->second.kind == kind && found->second.live;
}

/// The capture the calling thread's unsafe calls would break.
Capture *getThreadCapture() {
  for (auto &capture : getDriver().captures)
    if (capture->relaxed)
      continue;
    else if (!capture->threadLocal ||
             capture->thread == std::this_thread::get_id())
      return capture.get();
  return nullptr;
}

/// Fails a call a capture forbids (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
/// the capture invalidated), as the driver does.
bool forbidDuringCapture(const char *call) {
  Capture *capture = getThreadCapture();
  if (!capture)
    return false;
  std::string message = std::string(call) + " while stream " +
                        std::to_string(capture->origin->id) +
                        " is captured (a capture forbids it)";
  violate(message);
  if (capture->failure.empty())
    capture->failure = message;
  return true;
}

/// Runs `stream`'s work up to sequence number `upTo`.
void run(CUstream_st *stream, uint64_t upTo) {
  Driver &driver = getDriver();
  while (!stream->queue.empty() && stream->queue.front().sequence <= upTo) {
    CUstream_st::Queued queued = std::move(stream->queue.front());
    stream->queue.pop_front();
    uint64_t outer = driver.running;
    driver.running = queued.ticket;
    queued.work();
    driver.running = outer;
  }
}

/// Queues `work` on `stream` with a new ticket.
void push(CUstream_st *stream, std::function<void()> work) {
  uint64_t ticket = ++getDriver().tickets;
  stream->queue.push_back({++stream->enqueued, ticket, std::move(work)});
}

void runAll(CUstream_st *stream) { run(stream, stream->enqueued); }

CUresult allocate(CUdeviceptr *pointer, size_t bytes, Kind kind) {
  if (!pointer)
    return CUDA_ERROR_INVALID_VALUE;
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *memory = std::aligned_alloc(256, rounded);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  // (Fresh device memory holds garbage: a read before a write shows.)
  std::memset(memory, 0xa5, rounded);
  Driver &driver = getDriver();
  driver.memory[reinterpret_cast<uintptr_t>(memory)] = {bytes, kind};
  ++driver.allocations;
  // (Once a graph replays: the steady state.)
  if (driver.graphLaunches)
    ++driver.allocationsAfterCapture;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

/// Marks the allocation at `pointer` freed (its memory stays, so that a
/// later use is caught).
CUresult release(CUdeviceptr pointer, Kind kind, const char *call) {
  auto &memory = getDriver().memory;
  auto it = memory.find(static_cast<uintptr_t>(pointer));
  if (it == memory.end() || it->second.kind != kind) {
    violate(std::string(call) + ": " +
            formatPointer(reinterpret_cast<void *>(pointer)) +
            " is not the start of an allocation it frees");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!it->second.live) {
    violate(std::string(call) + ": " +
            formatPointer(reinterpret_cast<void *>(pointer)) +
            " is freed twice");
    return CUDA_ERROR_INVALID_VALUE;
  }
  it->second.live = false;
  it->second.freedAt = ++getDriver().tickets;
  return CUDA_SUCCESS;
}

bool checkHost(const void *pointer, size_t bytes, const std::string &what) {
  if (bytes && !pointer) {
    violate(what + ": a null host pointer");
    return false;
  }
  if (find(pointer) && !isKind(pointer, Kind::Pinned) &&
      !isKind(pointer, Kind::Managed)) {
    violate(what + ": " + formatPointer(pointer) +
            " is device memory, not host memory");
    return false;
  }
  return true;
}

/// A capture may copy from and to pinned memory only.
bool checkCapturedHost(CUstream_st *stream, const void *pointer,
                       const std::string &what) {
  if (!stream->capture || isKind(pointer, Kind::Pinned))
    return true;
  violate(what + ": pageable host memory " + formatPointer(pointer) +
          " in a captured stream");
  if (stream->capture->failure.empty())
    stream->capture->failure = what + " of pageable memory";
  return false;
}

CUresult copy(const char *call, void *to, const void *from, size_t bytes,
              CUstream stream, bool toDevice, bool fromDevice) {
  CUstream_st *s = getStream(stream);
  std::string what = call;
  if (toDevice ? !checkDevice(to, bytes, what + " destination")
               : !checkHost(to, bytes, what + " destination"))
    return CUDA_ERROR_INVALID_VALUE;
  if (fromDevice ? !checkDevice(from, bytes, what + " source")
                 : !checkHost(from, bytes, what + " source"))
    return CUDA_ERROR_INVALID_VALUE;
  if ((!toDevice && !checkCapturedHost(s, to, what + " destination")) ||
      (!fromDevice && !checkCapturedHost(s, from, what + " source")))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  // A pageable source is read now (the driver stages it before it returns);
  // a pinned one when the copy runs.
  if (!fromDevice && !isKind(from, Kind::Pinned) && !s->capture) {
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(from),
        static_cast<const char *>(from) + bytes);
    return enqueue(stream, Work::Copy, call, [to, staged] {
      std::memcpy(to, staged->data(), staged->size());
    });
  }
  bool pinnedTarget = !toDevice && isKind(to, Kind::Pinned);
  if (pinnedTarget && !s->capture)
    std::memset(to, 0xff, bytes);
  CUresult result = enqueue(stream, Work::Copy, call, [to, from, bytes] {
    std::memmove(to, from, bytes);
  });
  // A copy to pageable memory returns once it is done.
  if (result == CUDA_SUCCESS && !toDevice && !pinnedTarget && !s->capture)
    runAll(s);
  return result;
}

template <typename T>
CUresult set(const char *call, CUdeviceptr to, T value, size_t count,
             CUstream stream) {
  void *pointer = reinterpret_cast<void *>(to);
  if (!checkDevice(pointer, count * sizeof(T), call))
    return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, Work::Memset, call, [pointer, value, count] {
    T *data = static_cast<T *>(pointer);
    for (size_t i = 0; i < count; ++i)
      data[i] = value;
  });
}

void Driver::writeReport() {
  const char *path = std::getenv("DISTOPT_FAKE_CUDA_REPORT");
  if (!path || !*path)
    return;
  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_Text);
  if (error) {
    std::fprintf(stderr, "fake-cuda: cannot write the report '%s': %s\n", path,
                 error.message().c_str());
    return;
  }
  llvm::json::OStream json(os, 2);
  json.object([&] {
    json.attributeArray("violations", [&] {
      for (const std::string &violation : violations)
        json.value(violation);
    });
    json.attributeObject("calls", [&] {
      for (const auto &[name, count] : calls)
        json.attribute(name, count);
    });
    json.attribute("allocations", allocations);
    json.attribute("allocations_after_capture", allocationsAfterCapture);
    json.attribute("graph_launches", graphLaunches);
    json.attribute("kernels_run", kernelsRun);
    json.attributeArray("streams", [&] {
      auto write = [&](const CUstream_st &stream) {
        json.object([&] {
          json.attribute("id", stream.id);
          for (const auto &[kind, count] : stream.counts)
            json.attribute(getKindName(kind), count);
        });
      };
      write(legacy);
      for (const auto &stream : streams)
        write(*stream);
    });
    json.attributeArray("graphs", [&] {
      for (const auto &exec : execs)
        json.object([&] {
          std::map<Work, int64_t> counts;
          for (const auto &node : exec->nodes)
            ++counts[node->kind];
          json.attribute("nodes", static_cast<int64_t>(exec->nodes.size()));
          for (const auto &[kind, count] : counts)
            json.attribute(getKindName(kind), count);
          json.attribute("launches", exec->launches);
        });
    });
  });
  os << "\n";
}
} // namespace

//===----------------------------------------------------------------------===//
// The fake libraries' services (FakeCuda.h)
//===----------------------------------------------------------------------===//

void fakecuda::violate(const std::string &message) {
  std::lock_guard<std::recursive_mutex> lock(getDriver().mutex);
  std::fprintf(stderr, "fake-cuda: violation: %s\n", message.c_str());
  getDriver().violations.push_back(message);
}

std::vector<std::string> fakecuda::getViolations() {
  std::lock_guard<std::recursive_mutex> lock(getDriver().mutex);
  return getDriver().violations;
}

bool fakecuda::checkDevice(const void *pointer, size_t bytes,
                           const std::string &what) {
  std::lock_guard<std::recursive_mutex> lock(getDriver().mutex);
  const auto *found = find(pointer);
  if (!found || found->second.kind == Kind::Pinned) {
    violate(what + ": " + formatPointer(pointer) + " is not device memory");
    return false;
  }
  // (Work that runs now was queued with a ticket: memory freed after that
  // is still its.)
  uint64_t now =
      getDriver().running ? getDriver().running : getDriver().tickets + 1;
  if (!found->second.live && found->second.freedAt < now) {
    violate(what + ": " + formatPointer(pointer) +
            " is in device memory already freed");
    return false;
  }
  size_t offset = reinterpret_cast<uintptr_t>(pointer) - found->first;
  if (offset + bytes > found->second.bytes) {
    violate(what + ": " + std::to_string(bytes) + " bytes at offset " +
            std::to_string(offset) + " of a " +
            std::to_string(found->second.bytes) +
            "-byte allocation run past its end");
    return false;
  }
  return true;
}

CUresult fakecuda::enqueue(CUstream stream, Work kind, const std::string &name,
                           std::function<void()> work) {
  std::lock_guard<std::recursive_mutex> lock(getDriver().mutex);
  CUstream_st *s = getStream(stream);
  if (s->destroyed) {
    violate(name + " on a destroyed stream");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (s == &getDriver().legacy) {
    if (Capture *capture = getThreadCapture()) {
      violate(name + " on the legacy default stream while stream " +
              std::to_string(capture->origin->id) + " is captured");
      if (capture->failure.empty())
        capture->failure = name + " on the legacy stream";
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
  }
  ++s->counts[kind];
  if (Capture *capture = s->capture) {
    if (!capture->failure.empty())
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
    if (kind == Work::Copy)
      type = CU_GRAPH_NODE_TYPE_MEMCPY;
    else if (kind == Work::Memset)
      type = CU_GRAPH_NODE_TYPE_MEMSET;
    else if (kind == Work::Wait)
      type = CU_GRAPH_NODE_TYPE_EMPTY;
    capture->graph->nodes.push_back(std::make_shared<CUgraphNode_st>(
        CUgraphNode_st{type, name, kind, std::move(work)}));
    ++s->captured;
    return CUDA_SUCCESS;
  }
  push(s, std::move(work));
  return CUDA_SUCCESS;
}

bool fakecuda::isCapturing(CUstream stream) {
  std::lock_guard<std::recursive_mutex> lock(getDriver().mutex);
  return getStream(stream)->capture != nullptr;
}

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

CUresult cuInit(unsigned int flags) {
  Call call("cuInit");
  getDriver().initialized = true;
  return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  Call call("cuDeviceGetCount");
  if (!getDriver().initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  Call call("cuDeviceGet");
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  Call call("cuDevicePrimaryCtxRetain");
  if (device != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *context = &getDriver().context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  Call call("cuCtxSetCurrent");
  return context == &getDriver().context ? CUDA_SUCCESS
                                         : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  Call call("cuCtxGetStreamPriorityRange");
  if (least)
    *least = 0;
  if (greatest)
    *greatest = -5;
  return CUDA_SUCCESS;
}

static const std::map<CUresult, std::pair<const char *, const char *>> &
getErrors() {
  static const std::map<CUresult, std::pair<const char *, const char *>>
      errors = {
          {CUDA_SUCCESS, {"CUDA_SUCCESS", "no error"}},
          {CUDA_ERROR_INVALID_VALUE,
           {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
          {CUDA_ERROR_OUT_OF_MEMORY,
           {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
          {CUDA_ERROR_NOT_INITIALIZED,
           {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"}},
          {CUDA_ERROR_INVALID_DEVICE,
           {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"}},
          {CUDA_ERROR_INVALID_CONTEXT,
           {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"}},
          {CUDA_ERROR_INVALID_IMAGE,
           {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"}},
          {CUDA_ERROR_INVALID_HANDLE,
           {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"}},
          {CUDA_ERROR_NOT_FOUND,
           {"CUDA_ERROR_NOT_FOUND", "named symbol not "
                                    "found"}},
          {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
           {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            "too many resources requested for launch"}},
          {CUDA_ERROR_INVALID_VALUE,
           {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
          {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
           {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
            "operation not permitted when stream is capturing"}},
          {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
           {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
            "operation failed due to a previous error during capture"}},
          {CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
           {"CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
            "capture was not joined back into the origin stream"}},
          {CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
           {"CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
            "dependency created on uncaptured work in another stream"}},
          {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
           {"CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
            "the capture was not initiated in this stream"}},
          {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
           {"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
            "operation would make the legacy stream depend on a capturing "
            "blocking stream"}},
      };
  return errors;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  auto it = getErrors().find(error);
  *name = it == getErrors().end() ? nullptr : it->second.first;
  return it == getErrors().end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  auto it = getErrors().find(error);
  *text = it == getErrors().end() ? nullptr : it->second.second;
  return it == getErrors().end() ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  Call call("cuMemAlloc");
  if (forbidDuringCapture("cuMemAlloc"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return allocate(pointer, bytes, Kind::Device);
}

CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t bytes, unsigned int) {
  Call call("cuMemAllocManaged");
  if (forbidDuringCapture("cuMemAllocManaged"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return allocate(pointer, bytes, Kind::Managed);
}

CUresult cuMemAllocAsync(CUdeviceptr *pointer, size_t bytes, CUstream stream) {
  Call call("cuMemAllocAsync");
  CUresult result = allocate(pointer, bytes, Kind::Device);
  if (result != CUDA_SUCCESS)
    return result;
  CUstream_st *s = getStream(stream);
  if (s->capture) {
    // An allocation node: the memory is the graph's.
    s->capture->graph->nodes.push_back(std::make_shared<CUgraphNode_st>(
        CUgraphNode_st{CU_GRAPH_NODE_TYPE_MEM_ALLOC, "cuMemAllocAsync",
                       Work::Memset, [] {}}));
    ++s->captured;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream stream) {
  Call call("cuMemFreeAsync");
  CUstream_st *s = getStream(stream);
  // Stream-ordered: any work enqueued after it that uses the memory is a
  // use after free, so it is marked freed now.
  CUresult result = release(pointer, Kind::Device, "cuMemFreeAsync");
  if (result == CUDA_SUCCESS && s->capture) {
    s->capture->graph->nodes.push_back(std::make_shared<CUgraphNode_st>(
        CUgraphNode_st{CU_GRAPH_NODE_TYPE_MEM_FREE, "cuMemFreeAsync",
                       Work::Memset, [] {}}));
    ++s->captured;
  }
  return result;
}

CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned int) {
  Call call("cuMemHostAlloc");
  if (forbidDuringCapture("cuMemHostAlloc"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUdeviceptr address = 0;
  CUresult result = allocate(&address, bytes, Kind::Pinned);
  *pointer = reinterpret_cast<void *>(address);
  return result;
}

CUresult cuMemFreeHost(void *pointer) {
  Call call("cuMemFreeHost");
  if (forbidDuringCapture("cuMemFreeHost"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  // (Waits for the work that may use it, as the driver does.)
  for (auto &stream : getDriver().streams)
    runAll(stream.get());
  runAll(&getDriver().legacy);
  return release(reinterpret_cast<CUdeviceptr>(pointer), Kind::Pinned,
                 "cuMemFreeHost");
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr to, const void *from, size_t bytes,
                           CUstream stream) {
  Call call("cuMemcpyHtoDAsync");
  return copy("cuMemcpyHtoDAsync", reinterpret_cast<void *>(to), from, bytes,
              stream, true, false);
}

CUresult cuMemcpyDtoHAsync(void *to, CUdeviceptr from, size_t bytes,
                           CUstream stream) {
  Call call("cuMemcpyDtoHAsync");
  return copy("cuMemcpyDtoHAsync", to, reinterpret_cast<void *>(from), bytes,
              stream, false, true);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                           CUstream stream) {
  Call call("cuMemcpyDtoDAsync");
  return copy("cuMemcpyDtoDAsync", reinterpret_cast<void *>(to),
              reinterpret_cast<void *>(from), bytes, stream, true, true);
}

CUresult cuMemcpyAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                       CUstream stream) {
  Call call("cuMemcpyAsync");
  // Unified addressing: each side is what its address is.
  auto *target = reinterpret_cast<void *>(to);
  auto *source = reinterpret_cast<void *>(from);
  auto onDevice = [](const void *pointer) {
    const auto *found = find(pointer);
    return found && found->second.kind != Kind::Pinned;
  };
  return copy("cuMemcpyAsync", target, source, bytes, stream, onDevice(target),
              onDevice(source));
}

CUresult cuMemsetD32Async(CUdeviceptr to, unsigned int value, size_t count,
                          CUstream stream) {
  Call call("cuMemsetD32Async");
  return set<uint32_t>("cuMemsetD32Async", to, value, count, stream);
}

CUresult cuMemsetD16Async(CUdeviceptr to, unsigned short value, size_t count,
                          CUstream stream) {
  Call call("cuMemsetD16Async");
  return set<uint16_t>("cuMemsetD16Async", to, value, count, stream);
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

static CUresult createStream(CUstream *stream, unsigned int flags) {
  Driver &driver = getDriver();
  driver.streams.push_back(std::make_unique<CUstream_st>());
  driver.streams.back()->id = static_cast<int>(driver.streams.size());
  driver.streams.back()->flags = flags;
  *stream = driver.streams.back().get();
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  Call call("cuStreamCreate");
  return createStream(stream, flags);
}

CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned int flags, int) {
  Call call("cuStreamCreateWithPriority");
  return createStream(stream, flags);
}

CUresult cuStreamDestroy(CUstream stream) {
  Call call("cuStreamDestroy");
  CUstream_st *s = getStream(stream);
  if (s->capture) {
    violate("cuStreamDestroy of stream " + std::to_string(s->id) +
            " while it is captured");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  // (Its work still runs, as the driver lets it finish.)
  runAll(s);
  s->destroyed = true;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  Call call("cuStreamSynchronize");
  CUstream_st *s = getStream(stream);
  if (s->capture) {
    violate("cuStreamSynchronize of stream " + std::to_string(s->id) +
            " while it is captured");
    if (s->capture->failure.empty())
      s->capture->failure = "cuStreamSynchronize";
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  runAll(s);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  Call call("cuEventCreate");
  *event = getHandles<CUevent_st>().create();
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  Call call("cuEventDestroy");
  if (!getHandles<CUevent_st>().destroy(event)) {
    violate("cuEventDestroy of " + formatPointer(event) +
            ", which is not a live event");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  Call call("cuEventRecord");
  CUstream_st *s = getStream(stream);
  if (s->capture) {
    *event = CUevent_st{nullptr, 0, s->capture->id, s, s->captured};
    return CUDA_SUCCESS;
  }
  *event = CUevent_st{s, s->enqueued, 0, nullptr, 0};
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  Call call("cuStreamWaitEvent");
  CUstream_st *s = getStream(stream);
  if (event->captureId && !getCapture(event->captureId))
    return CUDA_SUCCESS; // (its capture ended: nothing to wait for)
  if (Capture *capture = getCapture(event->captureId)) {
    if (!s->capture) {
      // A fork: the stream joins the capture.
      s->capture = capture;
      s->captured = 0;
      capture->members.insert(s);
    } else if (s->capture != capture) {
      violate("cuStreamWaitEvent: stream " + std::to_string(s->id) +
              " waits on an event of another capture");
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    size_t &joined = capture->joined[event->capturedOn];
    if (s == capture->origin)
      joined = std::max(joined, event->capturedAfter);
    return CUDA_SUCCESS;
  }
  if (s->capture) {
    // A replay would not wait for it: the captured graph would race.
    violate("cuStreamWaitEvent: captured stream " + std::to_string(s->id) +
            " waits on an event recorded outside the capture");
    if (s->capture->failure.empty())
      s->capture->failure = "a wait on an uncaptured event";
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (!event->stream)
    return CUDA_SUCCESS; // never recorded: nothing to wait for
  CUstream_st *from = event->stream;
  uint64_t upTo = event->sequence;
  return enqueue(stream, Work::Wait, "cuStreamWaitEvent",
                 [from, upTo] { run(from, upTo); });
}

CUresult cuEventSynchronize(CUevent event) {
  Call call("cuEventSynchronize");
  if (getCapture(event->captureId) || forbidDuringCapture("cuEventSynchronize"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (event->stream)
    run(event->stream, event->sequence);
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event) {
  Call call("cuEventQuery");
  if (getCapture(event->captureId)) {
    violate("cuEventQuery of an event recorded in a capture");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  // (A device would be done at some point: the fake is done now.)
  if (event->stream)
    run(event->stream, event->sequence);
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Capture and graphs
//===----------------------------------------------------------------------===//

CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  Call call("cuStreamBeginCapture");
  CUstream_st *s = getStream(stream);
  if (s == &getDriver().legacy) {
    violate("cuStreamBeginCapture of the legacy default stream");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (s->capture) {
    violate("cuStreamBeginCapture of stream " + std::to_string(s->id) +
            ", which is already captured");
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  auto capture = std::make_unique<Capture>();
  static uint64_t captures = 0;
  capture->id = ++captures;
  capture->origin = s;
  capture->thread = std::this_thread::get_id();
  capture->threadLocal = mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  capture->relaxed = mode == CU_STREAM_CAPTURE_MODE_RELAXED;
  capture->graph = getHandles<CUgraph_st>().create();
  capture->members.insert(s);
  s->capture = capture.get();
  s->captured = 0;
  // (Captured work never runs now: what was queued before runs first.)
  getDriver().captures.push_back(std::move(capture));
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  Call call("cuStreamIsCapturing");
  Capture *capture = getStream(stream)->capture;
  *status = !capture                   ? CU_STREAM_CAPTURE_STATUS_NONE
            : capture->failure.empty() ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                       : CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  Call call("cuStreamEndCapture");
  CUstream_st *s = getStream(stream);
  *graph = nullptr;
  Capture *capture = s->capture;
  if (!capture || capture->origin != s) {
    violate("cuStreamEndCapture of stream " + std::to_string(s->id) +
            ", which did not begin a capture");
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  CUresult result = CUDA_SUCCESS;
  for (CUstream_st *member : capture->members) {
    if (member == s || member->captured <= capture->joined[member])
      continue;
    violate("cuStreamEndCapture: stream " + std::to_string(member->id) +
            " was forked into the capture and not joined back (" +
            std::to_string(member->captured - capture->joined[member]) +
            " of its nodes unwaited)");
    result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  }
  for (CUstream_st *member : capture->members)
    member->capture = nullptr;
  if (result == CUDA_SUCCESS && !capture->failure.empty())
    result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (result == CUDA_SUCCESS)
    *graph = capture->graph;
  else
    getHandles<CUgraph_st>().destroy(capture->graph);
  auto &captures = getDriver().captures;
  for (auto it = captures.begin(); it != captures.end(); ++it)
    if (it->get() == capture) {
      captures.erase(it);
      break;
    }
  return result;
}

CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
  Call call("cuGraphGetNodes");
  if (nodes)
    for (size_t i = 0; i < std::min(*count, graph->nodes.size()); ++i)
      nodes[i] = graph->nodes[i].get();
  *count = graph->nodes.size();
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type) {
  Call call("cuGraphNodeGetType");
  *type = node->type;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                            unsigned long long) {
  Call call("cuGraphInstantiate");
  auto instance = std::make_unique<CUgraphExec_st>();
  instance->nodes = graph->nodes;
  auto &execs = getDriver().execs;
  instance->index = execs.size();
  // (Counted again from here: a step replayed allocates nothing.)
  getDriver().allocationsAfterCapture = 0;
  *exec = instance.get();
  execs.push_back(std::move(instance));
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph graph) {
  Call call("cuGraphDestroy");
  if (!getHandles<CUgraph_st>().destroy(graph)) {
    violate("cuGraphDestroy of " + formatPointer(graph) +
            ", which is not a live graph");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec) {
  Call call("cuGraphExecDestroy");
  // (Kept for the report.)
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  Call call("cuGraphLaunch");
  CUstream_st *s = getStream(stream);
  if (s->capture) {
    violate("cuGraphLaunch into a captured stream");
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  ++exec->launches;
  ++getDriver().graphLaunches;
  for (const auto &node : exec->nodes) {
    std::shared_ptr<CUgraphNode_st> held = node;
    push(s, [held] { held->work(); });
  }
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

/// The bytes of a cubin (ELF), fatbin or PTX image; 0 when it is none.
static size_t getImageSize(const void *image) {
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (!std::memcmp(bytes,
                   "\x7f"
                   "ELF",
                   4) &&
      bytes[4] == 2) {
    uint64_t sectionHeaders;
    uint16_t entrySize, entries;
    std::memcpy(&sectionHeaders, bytes + 0x28, 8);
    std::memcpy(&entrySize, bytes + 0x3a, 2);
    std::memcpy(&entries, bytes + 0x3c, 2);
    return sectionHeaders + uint64_t(entrySize) * entries;
  }
  uint32_t magic;
  std::memcpy(&magic, bytes, 4);
  if (magic == 0xba55ed50) {
    uint16_t headerSize;
    uint64_t fatSize;
    std::memcpy(&headerSize, bytes + 6, 2);
    std::memcpy(&fatSize, bytes + 8, 8);
    return headerSize + fatSize;
  }
  const char *text = static_cast<const char *>(image);
  if (!std::strncmp(text, "//", 2) || !std::strncmp(text, ".version", 8))
    return std::strlen(text);
  return 0;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  Call call("cuModuleLoadData");
  size_t size = image ? getImageSize(image) : 0;
  if (!size) {
    violate("cuModuleLoadData: the image is not a cubin, fatbin or PTX");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  // (Never destroyed: a kernel of it launched after an unload is caught.)
  CUmod_st *loaded = getHandles<CUmod_st>().create();
  loaded->image.assign(static_cast<const char *>(image), size);
  *module = loaded;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  Call call("cuModuleUnload");
  if (!module->loaded) {
    violate("cuModuleUnload of a module unloaded before");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  // (Kept: a kernel of it launched later is caught.)
  module->loaded = false;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  Call call("cuModuleGetFunction");
  // The name as the image's string table holds it.
  std::string key = std::string(name) + '\0';
  if (module->image.find(key) == std::string::npos) {
    violate(std::string("cuModuleGetFunction: no kernel '") + name +
            "' in the module");
    return CUDA_ERROR_NOT_FOUND;
  }
  auto &slot = module->functions[name];
  if (!slot)
    slot.reset(new CUfunc_st{module, name});
  *function = slot.get();
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedMemory,
                        CUstream stream, void **params, void **extra) {
  Call call("cuLaunchKernel");
  if (!function || !function->module->loaded) {
    violate("cuLaunchKernel of a kernel whose module is not loaded");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  std::string name = function->name;
  uint64_t threads = uint64_t(blockX) * blockY * blockZ;
  if (!gridX || !gridY || !gridZ || !threads || gridY > 65535 ||
      gridZ > 65535 || blockX > 1024 || blockY > 1024 || blockZ > 64 ||
      threads > 1024) {
    violate("cuLaunchKernel '" + name + "': grid " + std::to_string(gridX) +
            "x" + std::to_string(gridY) + "x" + std::to_string(gridZ) +
            ", block " + std::to_string(blockX) + "x" + std::to_string(blockY) +
            "x" + std::to_string(blockZ) + " is outside the device's limits");
    return CUDA_ERROR_INVALID_VALUE;
  }
  // (Over 48 KiB of dynamic shared memory needs an opt-in attribute.)
  if (sharedMemory > 48 * 1024) {
    violate("cuLaunchKernel '" + name + "': " + std::to_string(sharedMemory) +
            " bytes of dynamic shared memory (over 48 KiB without "
            "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (params && extra) {
    violate("cuLaunchKernel '" + name + "': both kernelParams and extra");
    return CUDA_ERROR_INVALID_VALUE;
  }
  return enqueue(stream, Work::Kernel, name, [] { ++getDriver().kernelsRun; });
}
