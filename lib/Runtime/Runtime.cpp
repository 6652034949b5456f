//===- Runtime.cpp - the C ABI of distrt.h --------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Mesh groups, gradient buckets and errors on top of a Backend.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

using namespace distrt;

struct distrt_group {
  std::unique_ptr<Group> group;
};

struct distrt_request {
  std::unique_ptr<Request> request;
  /// A traced receive: its event, whose times the wait sets (-1: none).
  int64_t event = -1;
};

namespace {
/// The recorded timeline (distrt_trace_*).
struct Trace {
  bool on = false;
  std::vector<distrt_event> events;
  /// The unit begun and not yet ended (-1: none).
  int64_t open = -1;
};
} // namespace

static Trace &getTrace() {
  static Trace trace;
  return trace;
}

static double now() {
  timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return time.tv_sec + time.tv_nsec * 1e-9;
}

/// distrt_get_stats' counters.
static distrt_stats stats;

namespace {
/// Adds the time from its construction to its destruction to the time
/// inside communication, and `bytes` to a byte counter.
struct CommTimer {
  explicit CommTimer(int64_t collectiveBytes = 0, int64_t sentBytes = 0) {
    stats.collective_bytes += collectiveBytes;
    stats.sent_bytes += sentBytes;
    ++stats.calls;
  }
  ~CommTimer() { stats.comm_seconds += now() - start; }
  double start = now();
};
} // namespace

/// Records an event of `kind` beginning now; returns its index (-1 when
/// tracing is off).
static int64_t beginEvent(distrt_event_kind kind, int64_t stage,
                          int64_t microbatch, int64_t peer, int64_t tag,
                          int64_t bytes) {
  Trace &trace = getTrace();
  if (!trace.on)
    return -1;
  double time = now();
  trace.events.push_back(
      {kind, stage, microbatch, peer, tag, bytes, time, time});
  return trace.events.size() - 1;
}

static void endEvent(int64_t event) {
  Trace &trace = getTrace();
  if (event >= 0 && event < static_cast<int64_t>(trace.events.size()))
    trace.events[event].end = now();
}

namespace {
/// The runtime's process-wide state.
struct State {
  std::unique_ptr<Backend> backend;
  /// distrt_set_timeout's value, handed to every backend started.
  double timeout = 0;
  /// Groups by (mesh shape, axes).
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
           std::unique_ptr<distrt_group>>
      groups;
  /// distrt_get_nodes' answer, found once.
  std::vector<int64_t> nodes;
  std::vector<std::string> nodeNames;
};
} // namespace

static State &getState() {
  static State state;
  return state;
}

static thread_local std::string lastError;

/// Records `message` for distrt_last_error, prefixed with the rank and the
/// call, and returns -1.
static int fail(const char *call, const std::string &message) {
  State &state = getState();
  std::string rank =
      state.backend ? std::to_string(state.backend->getRank()) : "?";
  lastError = "distrt: rank " + rank + ": " + call + ": " + message;
  return -1;
}

/// 0, or fail(call, status).
static int report(const char *call, const Status &status) {
  return status.empty() ? 0 : fail(call, status);
}

/// Fails `call` when the runtime is not started or `dtype` is unknown.
static bool checkReady(const char *call, distrt_dtype dtype) {
  if (!getState().backend) {
    fail(call, "the runtime is not started (call distrt_init)");
    return false;
  }
  if (getElementSize(dtype) == 0) {
    fail(call, "unknown element type " + std::to_string(int(dtype)));
    return false;
  }
  return true;
}

/// The nccl backend from libdistrt_nccl.so: the one next to this library
/// (build and install trees keep them together), else the loader's.
static std::unique_ptr<Backend> createNCCLBackend(double timeout,
                                                  Status &error) {
  const char *name = "libdistrt_nccl.so";
  std::string path = name;
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&distrt_init), &self) && self.dli_fname) {
    std::string here = self.dli_fname;
    std::string beside = here.substr(0, here.rfind('/') + 1) + name;
    if (here.find('/') != std::string::npos &&
        ::access(beside.c_str(), F_OK) == 0)
      path = beside;
  }
  // Never closed: the backend's code runs until the process ends.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    error = std::string("the nccl backend is not available: ") + dlerror();
    return nullptr;
  }
  auto factory = reinterpret_cast<NCCLBackendFactory>(
      dlsym(library, "distrt_create_nccl_backend"));
  if (!factory) {
    error = std::string("the nccl backend is not available: ") + dlerror();
    return nullptr;
  }
  std::unique_ptr<Backend> backend(factory(timeout, &error));
  if (!backend)
    error = "the nccl backend did not start: " +
            (error.empty() ? std::string("no reason given") : error);
  return backend;
}

extern "C" {

int distrt_init(const char *backend) {
  State &state = getState();
  if (state.backend)
    return fail("distrt_init", std::string("already started with backend '") +
                                   state.backend->getName() + "'");
  std::string name = backend ? backend : "";
  if (name == "local") {
    state.backend = createLocalBackend();
    state.backend->timeout = state.timeout;
    return 0;
  }
  if (name == "mpi") {
    Status error;
    state.backend = createMPIBackend(error);
    if (state.backend)
      state.backend->timeout = state.timeout;
    return report("distrt_init", error);
  }
  if (name == "nccl") {
    Status error;
    state.backend = createNCCLBackend(state.timeout, error);
    if (state.backend)
      state.backend->timeout = state.timeout;
    return report("distrt_init", error);
  }
  return fail("distrt_init", "unknown backend '" + name +
                                 "' (expected 'local', 'mpi' or 'nccl')");
}

int distrt_finalize(void) {
  State &state = getState();
  if (!state.backend)
    return 0;
  state.groups.clear();
  Status status = state.backend->finalize();
  int result = report("distrt_finalize", status);
  state.backend.reset();
  return result;
}

void distrt_abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  State &state = getState();
  if (state.backend)
    state.backend->abort(code);
  ::_exit(code);
}

int distrt_set_timeout(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", seconds);
    return fail("distrt_set_timeout",
                std::string("the timeout must be a finite number of seconds "
                            ">= 0, not ") +
                    text);
  }
  State &state = getState();
  state.timeout = seconds;
  if (state.backend)
    state.backend->timeout = seconds;
  return 0;
}

int64_t distrt_rank(void) {
  State &state = getState();
  return state.backend ? state.backend->getRank() : 0;
}

int64_t distrt_size(void) {
  State &state = getState();
  return state.backend ? state.backend->getSize() : 1;
}

distrt_group *distrt_get_group(const int64_t *shape, int64_t meshRank,
                               const int64_t *axes, int64_t numAxes) {
  const char *call = "distrt_get_group";
  State &state = getState();
  if (!state.backend) {
    fail(call, "the runtime is not started (call distrt_init)");
    return nullptr;
  }
  std::vector<int64_t> meshShape(shape, shape + meshRank);
  std::vector<int64_t> groupAxes(axes, axes + numAxes);
  auto key = std::make_pair(meshShape, groupAxes);
  if (auto it = state.groups.find(key); it != state.groups.end())
    return it->second.get();

  int64_t devices = 1;
  for (int64_t size : meshShape) {
    if (size < 1) {
      fail(call, "mesh axis sizes must be positive");
      return nullptr;
    }
    devices *= size;
  }
  int64_t worldSize = state.backend->getSize();
  if (devices != worldSize) {
    fail(call, "the mesh has " + std::to_string(devices) +
                   " devices but the program runs on " +
                   std::to_string(worldSize) + " processes");
    return nullptr;
  }
  std::vector<bool> inGroup(meshRank, false);
  for (int64_t axis : groupAxes) {
    if (axis < 0 || axis >= meshRank || inGroup[axis]) {
      fail(call, "mesh axis " + std::to_string(axis) +
                     " is out of range or repeated");
      return nullptr;
    }
    inGroup[axis] = true;
  }
  // This device's coordinates (row-major), its index in the group and the
  // group's color (the coordinates of the other axes).
  int64_t rank = state.backend->getRank();
  std::vector<int64_t> coords(meshRank);
  for (int64_t d = meshRank - 1, r = rank; d >= 0; --d) {
    coords[d] = r % meshShape[d];
    r /= meshShape[d];
  }
  int64_t index = 0, color = 0, groupSize = 1;
  for (int64_t axis : groupAxes) {
    index = index * meshShape[axis] + coords[axis];
    groupSize *= meshShape[axis];
  }
  for (int64_t d = 0; d < meshRank; ++d)
    if (!inGroup[d])
      color = color * meshShape[d] + coords[d];
  // The members' world ranks, in group order.
  std::vector<int64_t> members;
  for (int64_t member = 0; member < groupSize; ++member) {
    std::vector<int64_t> c = coords;
    for (int64_t i = numAxes - 1, m = member; i >= 0; --i) {
      c[groupAxes[i]] = m % meshShape[groupAxes[i]];
      m /= meshShape[groupAxes[i]];
    }
    int64_t world = 0;
    for (int64_t d = 0; d < meshRank; ++d)
      world = world * meshShape[d] + c[d];
    members.push_back(world);
  }
  auto group = std::make_unique<distrt_group>();
  if (report(call,
             state.backend->createGroup(members, index, color, group->group)))
    return nullptr;
  return (state.groups[key] = std::move(group)).get();
}

int64_t distrt_group_size(const distrt_group *group) {
  return group ? group->group->size : 0;
}

int64_t distrt_group_rank(const distrt_group *group) {
  return group ? group->group->rank : -1;
}

/// The bytes of `n` buffers of `counts[i]` elements of `dtype` (0 for a
/// dtype the runtime refuses: the call reports it).
static int64_t sumBytes(const int64_t *counts, int64_t n, distrt_dtype dtype) {
  if (dtype < DISTRT_F32 || dtype > DISTRT_I8 || !counts)
    return 0;
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += counts[i];
  return total * int64_t(getElementSize(dtype));
}

/// The bytes of one block of `count` elements per member of `group`.
static int64_t groupBytes(distrt_group *group, int64_t count,
                          distrt_dtype dtype) {
  return group ? sumBytes(&count, 1, dtype) * distrt_group_size(group) : 0;
}

int distrt_all_reduce(distrt_group *group, void *const *buffers,
                      const int64_t *counts, int64_t n, distrt_dtype dtype,
                      distrt_reduction reduction) {
  CommTimer timer(sumBytes(counts, n, dtype));
  const char *call = "distrt_all_reduce";
  if (!checkReady(call, dtype))
    return -1;
  if (!group || n < 1)
    return fail(call, "needs a group and at least one buffer");
  return report(call, getState().backend->allReduceMany(
                          *group->group, buffers, counts, n, dtype, reduction));
}

distrt_request *distrt_all_reduce_start(distrt_group *group,
                                        void *const *buffers,
                                        const int64_t *counts, int64_t n,
                                        distrt_dtype dtype,
                                        distrt_reduction reduction) {
  CommTimer timer(sumBytes(counts, n, dtype));
  const char *call = "distrt_all_reduce_start";
  if (!checkReady(call, dtype))
    return nullptr;
  if (!group || n < 1) {
    fail(call, "needs a group and at least one buffer");
    return nullptr;
  }
  auto request = std::make_unique<distrt_request>();
  if (report(call, getState().backend->allReduceManyStart(
                       *group->group, buffers, counts, n, dtype, reduction,
                       request->request)))
    return nullptr;
  return request.release();
}

/// Starts a collective through `start` (a backend call filling the request)
/// under the name `call`; null on error.
static distrt_request *startRequest(
    const char *call, distrt_group *group, distrt_dtype dtype,
    const std::function<Status(Backend &, Group &, std::unique_ptr<Request> &)>
        &start) {
  if (!checkReady(call, dtype))
    return nullptr;
  if (!group) {
    fail(call, "needs a group");
    return nullptr;
  }
  auto request = std::make_unique<distrt_request>();
  if (report(call, start(*getState().backend, *group->group, request->request)))
    return nullptr;
  return request.release();
}

distrt_request *distrt_reduce_scatter_start(distrt_group *group,
                                            const void *send, void *recv,
                                            int64_t recv_count,
                                            distrt_dtype dtype,
                                            distrt_reduction reduction) {
  CommTimer timer(groupBytes(group, recv_count, dtype));
  return startRequest(
      "distrt_reduce_scatter_start", group, dtype,
      [&](Backend &backend, Group &g, std::unique_ptr<Request> &request) {
        return backend.reduceScatterStart(g, send, recv, recv_count, dtype,
                                          reduction, request);
      });
}

distrt_request *distrt_all_gather_start(distrt_group *group, const void *send,
                                        void *recv, int64_t send_count,
                                        distrt_dtype dtype) {
  CommTimer timer(sumBytes(&send_count, 1, dtype));
  return startRequest(
      "distrt_all_gather_start", group, dtype,
      [&](Backend &backend, Group &g, std::unique_ptr<Request> &request) {
        return backend.allGatherStart(g, send, recv, send_count, dtype,
                                      request);
      });
}

int distrt_wait(distrt_request *request) {
  CommTimer timer;
  if (!request)
    return fail("distrt_wait", "no request");
  std::unique_ptr<distrt_request> owned(request);
  if (owned->event >= 0)
    getTrace().events[owned->event].begin = now();
  int status = report("distrt_wait", owned->request->wait());
  endEvent(owned->event);
  return status;
}

int distrt_reduce_scatter(distrt_group *group, const void *send, void *recv,
                          int64_t recvCount, distrt_dtype dtype,
                          distrt_reduction reduction) {
  CommTimer timer(groupBytes(group, recvCount, dtype));
  const char *call = "distrt_reduce_scatter";
  if (!checkReady(call, dtype))
    return -1;
  if (!group)
    return fail(call, "no group");
  return report(call,
                getState().backend->reduceScatter(*group->group, send, recv,
                                                  recvCount, dtype, reduction));
}

int distrt_all_gather(distrt_group *group, const void *send, void *recv,
                      int64_t sendCount, distrt_dtype dtype) {
  CommTimer timer(sumBytes(&sendCount, 1, dtype));
  const char *call = "distrt_all_gather";
  if (!checkReady(call, dtype))
    return -1;
  if (!group)
    return fail(call, "no group");
  return report(call, getState().backend->allGather(*group->group, send, recv,
                                                    sendCount, dtype));
}

int distrt_all_to_all(distrt_group *group, const void *send, void *recv,
                      int64_t blockCount, distrt_dtype dtype) {
  CommTimer timer(groupBytes(group, blockCount, dtype));
  const char *call = "distrt_all_to_all";
  if (!checkReady(call, dtype))
    return -1;
  if (!group)
    return fail(call, "no group");
  return report(call, getState().backend->allToAll(*group->group, send, recv,
                                                   blockCount, dtype));
}

int distrt_broadcast(distrt_group *group, void *buffer, int64_t count,
                     distrt_dtype dtype, int64_t root) {
  CommTimer timer(sumBytes(&count, 1, dtype));
  const char *call = "distrt_broadcast";
  if (!checkReady(call, dtype))
    return -1;
  if (!group)
    return fail(call, "no group");
  return report(call, getState().backend->broadcast(*group->group, buffer,
                                                    count, dtype, root));
}

int distrt_send(const void *buffer, int64_t count, distrt_dtype dtype,
                int64_t dest, int64_t tag) {
  CommTimer timer(0, sumBytes(&count, 1, dtype));
  const char *call = "distrt_send";
  if (!checkReady(call, dtype))
    return -1;
  return report(call,
                getState().backend->send(buffer, count, dtype, dest, tag));
}

int distrt_recv(void *buffer, int64_t count, distrt_dtype dtype, int64_t source,
                int64_t tag) {
  CommTimer timer;
  const char *call = "distrt_recv";
  if (!checkReady(call, dtype))
    return -1;
  return report(call,
                getState().backend->recv(buffer, count, dtype, source, tag));
}

int distrt_probe_any(const int64_t *sources, const int64_t *tags, int64_t count,
                     int64_t start, int64_t *found) {
  CommTimer timer;
  const char *call = "distrt_probe_any";
  if (!checkReady(call, DISTRT_I8))
    return -1;
  int64_t k = -1;
  if (report(call,
             getState().backend->probeAny(sources, tags, count, start, k)))
    return -1;
  if (found)
    *found = k;
  return 0;
}

/// Starts a point-to-point transfer through `start`; null on error.
static distrt_request *startTransfer(
    const char *call, distrt_dtype dtype,
    const std::function<Status(Backend &, std::unique_ptr<Request> &)> &start) {
  if (!checkReady(call, dtype))
    return nullptr;
  auto request = std::make_unique<distrt_request>();
  if (report(call, start(*getState().backend, request->request)))
    return nullptr;
  return request.release();
}

distrt_request *distrt_send_start(const void *buffer, int64_t count,
                                  distrt_dtype dtype, int64_t dest,
                                  int64_t tag) {
  CommTimer timer(0, sumBytes(&count, 1, dtype));
  int64_t event = beginEvent(DISTRT_EVENT_SEND, -1, -1, dest, tag,
                             count * getElementSize(dtype));
  distrt_request *request = startTransfer(
      "distrt_send_start", dtype,
      [&](Backend &backend, std::unique_ptr<Request> &request) {
        return backend.sendStart(buffer, count, dtype, dest, tag, request);
      });
  endEvent(event);
  return request;
}

distrt_request *distrt_recv_start(void *buffer, int64_t count,
                                  distrt_dtype dtype, int64_t source,
                                  int64_t tag) {
  CommTimer timer;
  distrt_request *request = startTransfer(
      "distrt_recv_start", dtype,
      [&](Backend &backend, std::unique_ptr<Request> &request) {
        return backend.recvStart(buffer, count, dtype, source, tag, request);
      });
  if (request)
    request->event = beginEvent(DISTRT_EVENT_RECV, -1, -1, source, tag,
                                count * getElementSize(dtype));
  return request;
}

void distrt_trace_enable(int on) { getTrace().on = on != 0; }

const distrt_event *distrt_trace_events(int64_t *count) {
  Trace &trace = getTrace();
  if (count)
    *count = trace.events.size();
  return trace.events.data();
}

void distrt_trace_clear(void) {
  getTrace().events.clear();
  getTrace().open = -1;
}

void distrt_trace_unit_begin(int32_t kind, int64_t stage, int64_t microbatch) {
  getTrace().open = beginEvent(static_cast<distrt_event_kind>(kind), stage,
                               microbatch, -1, -1, -1);
}

void distrt_trace_unit_end(void) {
  endEvent(getTrace().open);
  getTrace().open = -1;
}

namespace {
/// One profile site's totals, and when its open call began.
struct ProfileSite {
  int64_t calls = 0;
  std::chrono::steady_clock::duration total{};
  std::chrono::steady_clock::time_point begin;
};
} // namespace

static std::vector<ProfileSite> &getProfile() {
  static std::vector<ProfileSite> sites;
  return sites;
}

void distrt_profile_begin(int64_t site) {
  std::vector<ProfileSite> &sites = getProfile();
  if (site < 0)
    return;
  if (static_cast<size_t>(site) >= sites.size())
    sites.resize(site + 1);
  sites[site].begin = std::chrono::steady_clock::now();
}

void distrt_profile_end(int64_t site) {
  auto now = std::chrono::steady_clock::now();
  std::vector<ProfileSite> &sites = getProfile();
  if (site < 0 || static_cast<size_t>(site) >= sites.size())
    return;
  ProfileSite &entry = sites[site];
  entry.total += now - entry.begin;
  ++entry.calls;
}

void distrt_profile_read(int64_t count, int64_t *calls, double *seconds) {
  const std::vector<ProfileSite> &sites = getProfile();
  for (int64_t i = 0; i < count; ++i) {
    bool reached = static_cast<size_t>(i) < sites.size();
    calls[i] = reached ? sites[i].calls : 0;
    seconds[i] =
        reached ? std::chrono::duration<double>(sites[i].total).count() : 0;
  }
}

void distrt_profile_reset(void) { getProfile().clear(); }

int distrt_barrier(void) {
  CommTimer timer;
  if (!getState().backend)
    return fail("distrt_barrier",
                "the runtime is not started (call distrt_init)");
  return report("distrt_barrier", getState().backend->barrier());
}

int64_t distrt_get_nodes(int64_t *nodes) {
  const char *call = "distrt_get_nodes";
  if (!getState().backend)
    return fail(call, "the runtime is not started (call distrt_init)");
  State &state = getState();
  if (state.nodeNames.empty()) {
    std::vector<int64_t> found;
    std::vector<std::string> names;
    // For tests: a layout of several nodes on one machine.
    if (const char *fake = std::getenv("DISTRT_TEST_NODES"); fake && *fake) {
      std::string text = fake;
      size_t start = 0;
      while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos)
          end = text.size();
        std::string name = text.substr(start, end - start);
        auto it = std::find(names.begin(), names.end(), name);
        found.push_back(it - names.begin());
        if (it == names.end())
          names.push_back(name);
        start = end + 1;
      }
      if (int64_t(found.size()) != state.backend->getSize())
        return fail(call, "DISTRT_TEST_NODES names " +
                              std::to_string(found.size()) +
                              " ranks' nodes, not " +
                              std::to_string(state.backend->getSize()));
    } else if (report(call, state.backend->getNodes(found, names))) {
      return -1;
    }
    state.nodes = std::move(found);
    state.nodeNames = std::move(names);
  }
  if (nodes)
    std::copy(state.nodes.begin(), state.nodes.end(), nodes);
  return state.nodeNames.size();
}

const char *distrt_node_name(int64_t node) {
  State &state = getState();
  if (node < 0 || node >= int64_t(state.nodeNames.size()))
    return "";
  return state.nodeNames[node].c_str();
}

void distrt_get_stats(distrt_stats *out) {
  if (out)
    *out = stats;
}

void distrt_reset_stats(void) { stats = distrt_stats{}; }

const char *distrt_last_error(void) { return lastError.c_str(); }

} // extern "C"
