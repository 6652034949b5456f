//===- NCCLBackend.cpp - device buffers over NCCL, started over MPI -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libdistrt_nccl.so: the `nccl` backend, which libdistrt loads with dlopen
// (only this library needs CUDA and NCCL). One process per device, started
// by an MPI launcher as under `mpi`; every buffer is device memory of the
// process's device, which libdistopt_cuda owns (CudaRuntime.h).
//
// Streams. Every NCCL call is enqueued on the backend's communication
// stream, after the work enqueued so far on distopt_cuda_stream(), the
// stream of the step's kernels (an event recorded there, which the
// communication stream waits for), so collectives run while the kernels
// enqueued after them do. The blocking calls other than barrier and
// finalize (allReduce, send, recv, ...) return once their work is
// enqueued, with the step's stream waiting for it (an event recorded on
// the communication stream after it): the kernels enqueued after them run
// after it completed, and the host sees the result once it waits on the
// step's stream (distopt_cuda_synchronize, a copy to the host). A started
// collective (allReduceStart, a bucket of allReduceManyStart, ...) is not
// waited for until its request's wait, where the compiler put it (before
// the first op that reads the result or reuses the buffer): the backward's
// kernels between the two overlap it. A wait only makes the step's stream
// wait, unless a callback must run on the host after it (allReduceStart's
// `done`): that wait waits for the collective. Both streams' work joins at
// every wait, so a step captured as a CUDA graph forks and joins within
// it.
//
// Point to point. A send and a receive enqueued one after the other on one
// stream run one after the other, so two ranks that each start a send to
// the other before their receive would each wait in its send forever.
// sendStart and recvStart therefore only record their transfer; the
// transfers recorded go out as one NCCL group (all at once) at the first
// wait, blocking send or recv, collective or barrier after them. NCCL has
// no tags: the messages between two ranks match in the order posted.
//
// Watchdog. The communicators are nonblocking: a call that waits for peers
// (a communicator's creation, a first connection) returns at once, and
// every wait of the host (creations, enqueues, event and stream waits,
// finalize) polls the communicators' errors and gives up after `timeout`
// seconds. A timeout or an error aborts every communicator (ncclCommAbort
// ends the kernels still waiting) and fails the call; every later call
// fails with the same reason.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "MPIUtils.h"

#include "distopt/Runtime/CudaRuntime.h"

#include <cuda.h>
#include <nccl.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace distrt;

static ncclDataType_t getNCCLType(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
    return ncclFloat32;
  case DISTRT_F64:
    return ncclFloat64;
  case DISTRT_F16:
    return ncclFloat16;
  case DISTRT_BF16:
    return ncclBfloat16;
  case DISTRT_I32:
    return ncclInt32;
  case DISTRT_I64:
    return ncclInt64;
  case DISTRT_I8:
    return ncclInt8;
  }
  return ncclInt8;
}

/// The NCCL operation of `reduction`; false for an unknown value.
static bool getNCCLOp(distrt_reduction reduction, ncclRedOp_t &op) {
  switch (reduction) {
  case DISTRT_SUM:
    op = ncclSum;
    return true;
  case DISTRT_MAX:
    op = ncclMax;
    return true;
  case DISTRT_MIN:
    op = ncclMin;
    return true;
  }
  return false;
}

/// Whether `result` is a failure (a nonblocking communicator answers
/// ncclInProgress while a call goes on in the background).
static bool isFailure(ncclResult_t result) {
  return result != ncclSuccess && result != ncclInProgress;
}

/// "" unless `result` is a failure, else "<call> failed: <NCCL's string>
/// (<NCCL's last error>)".
static Status checkNCCL(ncclResult_t result, const char *call) {
  if (!isFailure(result))
    return {};
  std::string message =
      std::string(call) + " failed: " + ncclGetErrorString(result);
  if (const char *last = ncclGetLastError(nullptr); last && *last)
    message += std::string(" (") + last + ")";
  return message;
}

/// "" for CUDA_SUCCESS, else "<call> failed: <CUDA's name>: <CUDA's
/// string>".
static Status checkCU(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return {};
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUDA error " + std::to_string(result));
  if (text)
    message += std::string(": ") + text;
  return message;
}

/// libdistopt_cuda's last failure (it names the call and the CUDA error).
static Status getCudaRuntimeError() {
  const char *error = distopt_cuda_last_error();
  return error && *error ? error : "libdistopt_cuda gave no reason";
}

static Status checkCount(int64_t count) {
  if (count < 0)
    return "element count " + std::to_string(count) + " is negative";
  return {};
}

namespace {
class NCCLBackend;

class NCCLGroup : public Group {
public:
  NCCLGroup(int64_t size, int64_t rank, ncclComm_t comm)
      : Group(size, rank), comm(comm) {}
  /// Owned by the backend, which ends its communicators when it stops.
  const ncclComm_t comm;
};

/// A send or a receive recorded for the next batch of transfers.
struct Transfer {
  bool isSend;
  void *buffer;
  size_t count;
  ncclDataType_t type;
  int peer;
};

class NCCLRequest : public Request {
public:
  NCCLRequest(NCCLBackend &backend, const char *call, uint64_t batch)
      : backend(backend), call(call), batch(batch) {}
  ~NCCLRequest() override {
    if (event)
      cuEventDestroy(event);
  }
  Status wait() override;

  NCCLBackend &backend;
  const char *call;
  /// The batch of a transfer (0 for a collective, enqueued when started).
  uint64_t batch;
  /// A started collective's: recorded on the communication stream after
  /// it (null for a transfer, joined when it is enqueued).
  CUevent event = nullptr;
  std::function<void()> done;
};

class NCCLBackend : public Backend {
public:
  const char *getName() const override { return "nccl"; }
  int64_t getRank() const override { return rank; }
  int64_t getSize() const override { return size; }

  /// Starts MPI (unless the program did), chooses the device (the
  /// process's rank on its node, unless libdistopt_cuda already has one)
  /// and creates the world's communicator.
  Status start() {
    int devices = distopt_cuda_device_count();
    if (devices < 1)
      return "no CUDA device (" + getCudaRuntimeError() + ")";
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      if (Status s = checkMPI(MPI_Init(nullptr, nullptr), "MPI_Init");
          !s.empty())
        return s;
      ownsMPI = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int worldRank = 0, worldSize = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    rank = worldRank;
    size = worldSize;
    // The runtime's own messages (unique ids) on a copy of the world.
    if (Status s =
            checkMPI(MPI_Comm_dup(MPI_COMM_WORLD, &control), "MPI_Comm_dup");
        !s.empty())
      return s;
    MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
    if (distopt_cuda_device() < 0) {
      int local = 0;
      if (Status s = getNodeRank(local); !s.empty())
        return s;
      if (distopt_cuda_set_device(local % devices) != 0)
        return getCudaRuntimeError();
    }
    stream = static_cast<CUstream>(distopt_cuda_stream());
    if (!stream)
      return getCudaRuntimeError();
    // The communication stream, of the highest priority (its kernels go
    // first where they compete with the step's for the SMs, as PyTorch's
    // NCCL streams may), and the events that order it with the step's.
    int least = 0, greatest = 0;
    if (Status s = checkCU(cuCtxGetStreamPriorityRange(&least, &greatest),
                           "cuCtxGetStreamPriorityRange");
        !s.empty())
      return s;
    if (Status s = checkCU(cuStreamCreateWithPriority(
                               &commStream, CU_STREAM_NON_BLOCKING, greatest),
                           "cuStreamCreateWithPriority");
        !s.empty())
      return s;
    for (CUevent *e : {&forkEvent, &joinEvent})
      if (Status s = checkCU(cuEventCreate(e, CU_EVENT_DISABLE_TIMING),
                             "cuEventCreate");
          !s.empty())
        return s;
    ncclUniqueId id = {};
    if (rank == 0)
      if (Status s = checkNCCL(ncclGetUniqueId(&id), "ncclGetUniqueId");
          !s.empty())
        return s;
    MPI_Request request;
    if (Status s = checkMPI(
            MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, control, &request),
            "MPI_Bcast");
        !s.empty())
      return s;
    if (Status s = completeMPI(request, "MPI_Bcast", timeout); !s.empty())
      return s;
    return createComm(id, size, rank, world);
  }

  Status createGroup(const std::vector<int64_t> &members, int64_t index,
                     int64_t color, std::unique_ptr<Group> &group) override {
    if (!failure.empty())
      return failure;
    int64_t count = members.size();
    // The world in world order: its communicator.
    bool isWorld = count == size;
    for (int64_t i = 0; isWorld && i < count; ++i)
      isWorld = members[i] == i;
    if (isWorld) {
      group = std::make_unique<NCCLGroup>(count, index, world);
      return {};
    }
    // Only the members call createGroup (the other ranks may run other
    // programs), so no split of the world, which every rank of the world
    // would have to call: member 0 makes a unique id and sends it to the
    // others over MPI, as MPI_Comm_create_group would, in the order the
    // members create their groups.
    ncclUniqueId id = {};
    std::vector<MPI_Request> requests;
    if (index == 0) {
      if (Status s = checkNCCL(ncclGetUniqueId(&id), "ncclGetUniqueId");
          !s.empty())
        return s;
      for (int64_t i = 1; i < count; ++i)
        if (Status s = checkMPI(MPI_Isend(&id, sizeof(id), MPI_BYTE,
                                          int(members[i]), kGroupTag, control,
                                          &requests.emplace_back()),
                                "MPI_Send");
            !s.empty())
          return s;
      if (Status s = completeAllMPI(requests, "MPI_Send", timeout); !s.empty())
        return s;
    } else {
      MPI_Request request;
      if (Status s =
              checkMPI(MPI_Irecv(&id, sizeof(id), MPI_BYTE, int(members[0]),
                                 kGroupTag, control, &request),
                       "MPI_Recv");
          !s.empty())
        return s;
      if (Status s = completeMPI(request, "MPI_Recv", timeout,
                                 /*cancellable=*/true);
          !s.empty())
        return s;
    }
    ncclComm_t comm = nullptr;
    if (Status s = createComm(id, count, index, comm); !s.empty())
      return s;
    group = std::make_unique<NCCLGroup>(count, index, comm);
    return {};
  }

  Status allReduce(Group &group, void *buffer, int64_t count,
                   distrt_dtype dtype, distrt_reduction reduction) override {
    return allReduceMany(group, &buffer, &count, 1, dtype, reduction);
  }

  Status allReduceStart(Group &group, void *buffer, int64_t count,
                        distrt_dtype dtype, distrt_reduction reduction,
                        std::function<void()> done,
                        std::unique_ptr<Request> &request) override {
    return startCollective("ncclAllReduce", std::move(done), request, [&] {
      return allReduce(group, buffer, count, dtype, reduction);
    });
  }

  /// A bucket: one ncclAllReduce per buffer, in place, as one group.
  Status allReduceMany(Group &group, void *const *buffers,
                       const int64_t *counts, int64_t n, distrt_dtype dtype,
                       distrt_reduction reduction) override {
    ncclRedOp_t op;
    if (!getNCCLOp(reduction, op))
      return "unknown reduction " + std::to_string(int(reduction));
    for (int64_t i = 0; i < n; ++i)
      if (Status s = checkCount(counts[i]); !s.empty())
        return s;
    ncclComm_t comm = getComm(group);
    ncclDataType_t type = getNCCLType(dtype);
    // A group of calls is bounded (2048 calls in some NCCL versions).
    for (int64_t first = 0; first < n; first += kMaxGroupCalls) {
      int64_t end = std::min(n, first + kMaxGroupCalls);
      if (Status s = enqueue(comm, "ncclAllReduce",
                             [&] {
                               for (int64_t i = first; i < end; ++i)
                                 if (ncclResult_t r = ncclAllReduce(
                                         buffers[i], buffers[i], counts[i],
                                         type, op, comm, commStream);
                                     isFailure(r))
                                   return r;
                               return ncclSuccess;
                             });
          !s.empty())
        return s;
    }
    return {};
  }

  Status allReduceManyStart(Group &group, void *const *buffers,
                            const int64_t *counts, int64_t n,
                            distrt_dtype dtype, distrt_reduction reduction,
                            std::unique_ptr<Request> &request) override {
    return startCollective("ncclAllReduce", {}, request, [&] {
      return allReduceMany(group, buffers, counts, n, dtype, reduction);
    });
  }

  Status reduceScatter(Group &group, const void *send, void *recv,
                       int64_t recvCount, distrt_dtype dtype,
                       distrt_reduction reduction) override {
    ncclRedOp_t op;
    if (!getNCCLOp(reduction, op))
      return "unknown reduction " + std::to_string(int(reduction));
    if (Status s = checkCount(recvCount); !s.empty())
      return s;
    ncclComm_t comm = getComm(group);
    return enqueue(comm, "ncclReduceScatter", [&] {
      return ncclReduceScatter(send, recv, recvCount, getNCCLType(dtype), op,
                               comm, commStream);
    });
  }

  Status reduceScatterStart(Group &group, const void *send, void *recv,
                            int64_t recvCount, distrt_dtype dtype,
                            distrt_reduction reduction,
                            std::unique_ptr<Request> &request) override {
    return startCollective("ncclReduceScatter", {}, request, [&] {
      return reduceScatter(group, send, recv, recvCount, dtype, reduction);
    });
  }

  Status allGather(Group &group, const void *send, void *recv,
                   int64_t sendCount, distrt_dtype dtype) override {
    if (Status s = checkCount(sendCount); !s.empty())
      return s;
    ncclComm_t comm = getComm(group);
    return enqueue(comm, "ncclAllGather", [&] {
      return ncclAllGather(send, recv, sendCount, getNCCLType(dtype), comm,
                           commStream);
    });
  }

  Status allGatherStart(Group &group, const void *send, void *recv,
                        int64_t sendCount, distrt_dtype dtype,
                        std::unique_ptr<Request> &request) override {
    return startCollective("ncclAllGather", {}, request, [&] {
      return allGather(group, send, recv, sendCount, dtype);
    });
  }

  /// Block j to member j and member j's block into block j: a send and a
  /// receive per member, as one group.
  Status allToAll(Group &group, const void *send, void *recv,
                  int64_t blockCount, distrt_dtype dtype) override {
    if (Status s = checkCount(blockCount); !s.empty())
      return s;
    ncclComm_t comm = getComm(group);
    ncclDataType_t type = getNCCLType(dtype);
    size_t bytes = blockCount * getElementSize(dtype);
    return enqueue(comm, "ncclSend/ncclRecv", [&] {
      for (int64_t j = 0; j < group.size; ++j) {
        if (ncclResult_t r =
                ncclSend(static_cast<const char *>(send) + j * bytes,
                         blockCount, type, j, comm, commStream);
            isFailure(r))
          return r;
        if (ncclResult_t r = ncclRecv(static_cast<char *>(recv) + j * bytes,
                                      blockCount, type, j, comm, commStream);
            isFailure(r))
          return r;
      }
      return ncclSuccess;
    });
  }

  Status broadcast(Group &group, void *buffer, int64_t count,
                   distrt_dtype dtype, int64_t root) override {
    if (root < 0 || root >= group.size)
      return "broadcast root " + std::to_string(root) +
             " is not in a group of " + std::to_string(group.size) +
             " processes";
    if (Status s = checkCount(count); !s.empty())
      return s;
    ncclComm_t comm = getComm(group);
    return enqueue(comm, "ncclBroadcast", [&] {
      return ncclBroadcast(buffer, buffer, count, getNCCLType(dtype), root,
                           comm, commStream);
    });
  }

  /// A blocking send or receive goes out at once (with the transfers
  /// started before it): the kernels enqueued after it may reuse the
  /// buffer or read what arrived.
  Status send(const void *buffer, int64_t count, distrt_dtype dtype,
              int64_t dest, int64_t tag) override {
    if (Status s = record(true, const_cast<void *>(buffer), count, dtype, dest);
        !s.empty())
      return s;
    return flushTransfers();
  }

  Status recv(void *buffer, int64_t count, distrt_dtype dtype, int64_t source,
              int64_t tag) override {
    if (Status s = record(false, buffer, count, dtype, source); !s.empty())
      return s;
    return flushTransfers();
  }

  Status sendStart(const void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t dest, int64_t tag,
                   std::unique_ptr<Request> &request) override {
    if (Status s = record(true, const_cast<void *>(buffer), count, dtype, dest);
        !s.empty())
      return s;
    request = std::make_unique<NCCLRequest>(*this, "ncclSend", enqueued + 1);
    return {};
  }

  Status recvStart(void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t source, int64_t tag,
                   std::unique_ptr<Request> &request) override {
    if (Status s = record(false, buffer, count, dtype, source); !s.empty())
      return s;
    request = std::make_unique<NCCLRequest>(*this, "ncclRecv", enqueued + 1);
    return {};
  }

  Status probeAny(const int64_t *, const int64_t *, int64_t, int64_t,
                  int64_t &) override {
    return "the nccl backend has no probe (parameter servers need the mpi "
           "backend)";
  }

  /// Every rank's enqueued work completed, then an MPI barrier.
  Status barrier() override {
    if (Status s = synchronizeStream(); !s.empty())
      return s;
    MPI_Request request;
    if (Status s = checkMPI(MPI_Ibarrier(control, &request), "MPI_Barrier");
        !s.empty())
      return s;
    return completeMPI(request, "MPI_Barrier", timeout);
  }

  Status getNodes(std::vector<int64_t> &nodes,
                  std::vector<std::string> &names) override {
    return getMPINodes(control, nodes, names);
  }

  /// Waits for the enqueued work, finalizes every communicator (all at
  /// once: their members may finalize them in another order) and MPI.
  Status finalize() override {
    Status status = synchronizeStream();
    for (ncclComm_t comm : comms)
      if (status.empty())
        status = checkNCCL(ncclCommFinalize(comm), "ncclCommFinalize");
    if (status.empty())
      status = watch("ncclCommFinalize", [&](bool &done) -> Status {
        done = true;
        for (ncclComm_t comm : comms) {
          ncclResult_t state = ncclSuccess;
          if (Status s = checkNCCL(ncclCommGetAsyncError(comm, &state),
                                   "ncclCommGetAsyncError");
              !s.empty())
            return s;
          done = done && state != ncclInProgress;
          if (Status s = checkNCCL(state, "ncclCommFinalize"); !s.empty())
            return s;
        }
        return {};
      });
    if (!status.empty()) {
      // The job has to end: MPI_Finalize would wait for the other ranks.
      abortAll(status);
      return status;
    }
    for (ncclComm_t comm : comms)
      ncclCommDestroy(comm);
    comms.clear();
    world = nullptr;
    for (CUevent *e : {&event, &forkEvent, &joinEvent}) {
      if (*e)
        cuEventDestroy(*e);
      *e = nullptr;
    }
    if (commStream)
      cuStreamDestroy(commStream);
    commStream = nullptr;
    if (!ownsMPI)
      return {};
    // MPI_Finalize waits for every rank: a barrier with the timeout first.
    if (timeout > 0 && size > 1) {
      MPI_Request request;
      if (Status s = checkMPI(MPI_Ibarrier(control, &request), "MPI_Finalize");
          !s.empty())
        return s;
      if (Status s = completeMPI(request, "MPI_Finalize", timeout); !s.empty())
        return s;
    }
    ownsMPI = false;
    MPI_Comm_free(&control);
    return checkMPI(MPI_Finalize(), "MPI_Finalize");
  }

  [[noreturn]] void abort(int code) override { abortMPI(code, size); }

  /// Aborts every communicator, after `reason`, which every later call
  /// reports.
  void abortAll(const Status &reason) {
    for (ncclComm_t comm : comms)
      ncclCommAbort(comm);
    comms.clear();
    world = nullptr;
    transfers.clear();
    if (failure.empty())
      failure = "the nccl communicators were aborted after: " + reason;
  }

  /// Enqueues the transfers recorded so far, as one group.
  Status flushTransfers() {
    if (transfers.empty())
      return {};
    std::vector<Transfer> batch;
    batch.swap(transfers);
    ++enqueued;
    // (Joined at once, even ahead of a started collective: a transfer's
    // request has no event of its own.)
    bool deferred = deferJoin;
    deferJoin = false;
    Status status = launch(world, "ncclSend/ncclRecv", [&] {
      for (const Transfer &t : batch)
        if (ncclResult_t r = t.isSend ? ncclSend(t.buffer, t.count, t.type,
                                                 t.peer, world, commStream)
                                      : ncclRecv(t.buffer, t.count, t.type,
                                                 t.peer, world, commStream);
            isFailure(r))
          return r;
      return ncclSuccess;
    });
    deferJoin = deferred;
    return status;
  }

  /// Waits until `until` completed, watching the communicators.
  Status synchronize(CUevent until, const char *call) {
    return watch(call, [&](bool &done) -> Status {
      CUresult result = cuEventQuery(until);
      done = result == CUDA_SUCCESS;
      if (result != CUDA_SUCCESS && result != CUDA_ERROR_NOT_READY)
        return checkCU(result, "cuEventQuery");
      return checkAsyncErrors(call);
    });
  }

  /// The failure of an earlier call or a communicator's asynchronous error
  /// (which aborts the communicators).
  Status checkAsyncErrors(const char *call) {
    if (!failure.empty())
      return failure;
    for (ncclComm_t comm : comms) {
      ncclResult_t state = ncclSuccess;
      Status status = checkNCCL(ncclCommGetAsyncError(comm, &state),
                                "ncclCommGetAsyncError");
      if (status.empty())
        status = checkNCCL(state, call);
      if (!status.empty()) {
        abortAll(status);
        return status;
      }
    }
    return {};
  }

  /// The number of batches of transfers enqueued so far.
  uint64_t enqueued = 0;

private:
  static ncclComm_t getComm(Group &group) {
    return static_cast<NCCLGroup &>(group).comm;
  }

  /// This process's rank among the ranks of its node.
  Status getNodeRank(int &local) {
    MPI_Comm node;
    if (Status s = checkMPI(MPI_Comm_split_type(control, MPI_COMM_TYPE_SHARED,
                                                rank, MPI_INFO_NULL, &node),
                            "MPI_Comm_split_type");
        !s.empty())
      return s;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return {};
  }

  /// Creates `comm`, this process's communicator of rank `index` among
  /// `count` that share `id`, within the timeout.
  Status createComm(const ncclUniqueId &id, int64_t count, int64_t index,
                    ncclComm_t &comm) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    comm = nullptr;
    ncclResult_t result =
        ncclCommInitRankConfig(&comm, int(count), id, int(index), &config);
    if (comm)
      comms.push_back(comm);
    if (Status s = checkNCCL(result, "ncclCommInitRank"); !s.empty())
      return s;
    return settle(comm, "ncclCommInitRank");
  }

  /// Polls `test` within the timeout; a failure (the timeout included)
  /// aborts every communicator.
  Status watch(const char *call,
               const std::function<Status(bool &done)> &test) {
    Status status = pollWithin(call, timeout, test);
    if (!status.empty())
      abortAll(status);
    return status;
  }

  /// Waits until `comm` is done with the host side of its last call (the
  /// work is then enqueued, or the communicator created).
  Status settle(ncclComm_t comm, const char *call) {
    return watch(call, [&](bool &done) -> Status {
      ncclResult_t state = ncclSuccess;
      if (Status s = checkNCCL(ncclCommGetAsyncError(comm, &state),
                               "ncclCommGetAsyncError");
          !s.empty())
        return s;
      done = state != ncclInProgress;
      return checkNCCL(state, call);
    });
  }

  /// Runs `calls` (NCCL calls on `comm`) as one group and waits until NCCL
  /// enqueued them.
  Status launch(ncclComm_t comm, const char *call,
                const std::function<ncclResult_t()> &calls) {
    if (!failure.empty())
      return failure;
    // After the step's work so far (the buffers' producers).
    if (Status s = follow(commStream, stream, forkEvent); !s.empty())
      return s;
    if (Status s = checkNCCL(ncclGroupStart(), "ncclGroupStart"); !s.empty())
      return s;
    ncclResult_t result = calls();
    ncclResult_t end = ncclGroupEnd();
    if (Status s = checkNCCL(isFailure(result) ? result : end, call);
        !s.empty())
      return s;
    if (Status s = settle(comm, call); !s.empty())
      return s;
    // A blocking call: the step's later work after it. (A started one is
    // joined by its request's wait.)
    return deferJoin ? Status() : follow(stream, commStream, joinEvent);
  }

  /// Makes `waiter` wait for the work enqueued so far on `first`, through
  /// `event` (recorded on `first`; an event may be recorded again once a
  /// stream waits for it: the wait holds what it recorded then).
  Status follow(CUstream waiter, CUstream first, CUevent event) {
    if (Status s = checkCU(cuEventRecord(event, first), "cuEventRecord");
        !s.empty())
      return s;
    return checkCU(cuStreamWaitEvent(waiter, event, 0), "cuStreamWaitEvent");
  }

  /// Enqueues a started collective (`enqueueAll`, through launch()) without
  /// joining it: `request`'s wait does, through an event recorded on the
  /// communication stream after it.
  Status startCollective(const char *call, std::function<void()> done,
                         std::unique_ptr<Request> &request,
                         const std::function<Status()> &enqueueAll) {
    deferJoin = true;
    Status status = enqueueAll();
    deferJoin = false;
    if (!status.empty())
      return status;
    return makeRequest(call, std::move(done), request);
  }

  /// launch, after the transfers recorded before (stream order is the
  /// order of the calls).
  Status enqueue(ncclComm_t comm, const char *call,
                 const std::function<ncclResult_t()> &calls) {
    if (Status s = flushTransfers(); !s.empty())
      return s;
    return launch(comm, call, calls);
  }

  /// Records a transfer for the next batch.
  Status record(bool isSend, void *buffer, int64_t count, distrt_dtype dtype,
                int64_t peer) {
    if (!failure.empty())
      return failure;
    if (peer < 0 || peer >= size)
      return "rank " + std::to_string(peer) + " is not in a world of " +
             std::to_string(size) + " processes";
    if (Status s = checkCount(count); !s.empty())
      return s;
    transfers.push_back(
        {isSend, buffer, size_t(count), getNCCLType(dtype), int(peer)});
    return {};
  }

  /// The request of a collective just started on the communication
  /// stream: its event, recorded there after it, is what the request's wait
  /// makes the step's stream wait for; `done` (if any) runs on the host
  /// once it completed.
  Status makeRequest(const char *call, std::function<void()> done,
                     std::unique_ptr<Request> &request) {
    auto result = std::make_unique<NCCLRequest>(*this, call, 0);
    if (Status s =
            checkCU(cuEventCreate(&result->event, CU_EVENT_DISABLE_TIMING),
                    "cuEventCreate");
        !s.empty())
      return s;
    if (Status s =
            checkCU(cuEventRecord(result->event, commStream), "cuEventRecord");
        !s.empty())
      return s;
    result->done = std::move(done);
    request = std::move(result);
    return {};
  }

  /// Waits until everything enqueued on the stream completed.
  Status synchronizeStream() {
    const char *call = "the enqueued collectives";
    if (Status s = flushTransfers(); !s.empty())
      return s;
    if (Status s = checkAsyncErrors(call); !s.empty())
      return s;
    // (With a collective started and never waited for: its work too.)
    if (Status s = follow(stream, commStream, joinEvent); !s.empty())
      return s;
    if (!event)
      if (Status s = checkCU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                             "cuEventCreate");
          !s.empty())
        return s;
    if (Status s = checkCU(cuEventRecord(event, stream), "cuEventRecord");
        !s.empty())
      return s;
    return synchronize(event, call);
  }

  /// The tag of the unique ids on `control`.
  static constexpr int kGroupTag = 1;
  static constexpr int64_t kMaxGroupCalls = 2048;

  int64_t rank = 0, size = 1;
  bool ownsMPI = false;
  MPI_Comm control = MPI_COMM_NULL;

public:
  /// The step's stream (distopt_cuda_stream()) and the one every NCCL call
  /// is enqueued on.
  CUstream stream = nullptr, commStream = nullptr;

private:
  /// Orders the communication stream after the step's (fork) and the
  /// step's after a blocking call (join).
  CUevent forkEvent = nullptr, joinEvent = nullptr;
  /// Set while a started collective is enqueued: launch() leaves the join
  /// to its request's wait.
  bool deferJoin = false;
  /// Every communicator this backend created (the world's first), which
  /// finalize ends; a backend destroyed without finalize leaves them to
  /// the end of the process.
  std::vector<ncclComm_t> comms;
  ncclComm_t world = nullptr;
  /// The transfers started and not yet enqueued.
  std::vector<Transfer> transfers;
  /// The event of synchronizeStream.
  CUevent event = nullptr;
  /// Why the communicators were aborted ("": they were not).
  Status failure;
};
} // namespace

Status NCCLRequest::wait() {
  if (batch > backend.enqueued)
    if (Status s = backend.flushTransfers(); !s.empty())
      return s;
  if (!event)
    return backend.checkAsyncErrors(call);
  // The step's later work after the collective.
  if (Status s = checkCU(cuStreamWaitEvent(backend.stream, event, 0),
                         "cuStreamWaitEvent");
      !s.empty())
    return s;
  if (!done)
    return backend.checkAsyncErrors(call);
  Status status = backend.synchronize(event, call);
  if (status.empty() && done)
    done();
  return status;
}

extern "C" __attribute__((visibility("default"))) Backend *
distrt_create_nccl_backend(double timeout, Status *error) {
  auto backend = std::make_unique<NCCLBackend>();
  backend->timeout = timeout;
  if (Status status = backend->start(); !status.empty()) {
    backend->abortAll(status);
    if (error)
      *error = status;
    return nullptr;
  }
  return backend.release();
}
