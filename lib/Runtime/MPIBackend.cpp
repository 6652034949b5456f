//===- MPIBackend.cpp - one process per device over MPI -------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#ifdef DISTOPT_HAVE_MPI
#include "MPIUtils.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include <unistd.h>

using namespace distrt;

/// The MPI datatype of `dtype`; f16 and bf16 move as 16-bit words.
static MPI_Datatype getMPIType(distrt_dtype dtype) {
  switch (dtype) {
  case DISTRT_F32:
    return MPI_FLOAT;
  case DISTRT_F64:
    return MPI_DOUBLE;
  case DISTRT_F16:
  case DISTRT_BF16:
    return MPI_UINT16_T;
  case DISTRT_I32:
    return MPI_INT32_T;
  case DISTRT_I64:
    return MPI_INT64_T;
  case DISTRT_I8:
    return MPI_INT8_T;
  }
  return MPI_DATATYPE_NULL;
}

static MPI_Op getMPIOp(distrt_reduction reduction) {
  switch (reduction) {
  case DISTRT_SUM:
    return MPI_SUM;
  case DISTRT_MAX:
    return MPI_MAX;
  case DISTRT_MIN:
    return MPI_MIN;
  }
  return MPI_OP_NULL;
}

//===----------------------------------------------------------------------===//
// Reductions of 16-bit floats
//===----------------------------------------------------------------------===//
//
// MPI has no 16-bit float type: f16 and bf16 move as 16-bit words and are
// combined by user-defined operations. Each pairwise step widens both
// elements to f32, combines them there and rounds the result once to the
// 16-bit type (nearest even), as NCCL's 16-bit reductions do: an n-rank sum
// rounds at most n-1 times, each time by at most half a 16-bit ulp of the
// partial sum.

static float widenBF16(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

static uint16_t narrowBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value))
    return uint16_t((bits >> 16) | 0x40); // Quiet, sign kept.
  bits += 0x7fff + ((bits >> 16) & 1);    // Round to nearest even.
  return uint16_t(bits >> 16);
}

static float widenF16(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, sizeof(half));
  return float(half);
}

static uint16_t narrowF16(float value) {
  _Float16 half = _Float16(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

/// `inout[i] = in[i] (reduction) inout[i]` on 16-bit floats, in f32.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float),
          distrt_reduction Reduction>
static void reduce16(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *lhs = static_cast<const uint16_t *>(in);
  auto *rhs = static_cast<uint16_t *>(inout);
  for (int i = 0, e = *length; i < e; ++i) {
    float a = Widen(lhs[i]), b = Widen(rhs[i]);
    float r = Reduction == DISTRT_SUM   ? a + b
              : Reduction == DISTRT_MAX ? (std::isnan(a) || a > b ? a : b)
                                        : (std::isnan(a) || a < b ? a : b);
    rhs[i] = Narrow(r);
  }
}

namespace {
/// The user-defined operations reducing f16 and bf16, created after
/// MPI_Init and freed before MPI_Finalize.
class HalfOps {
public:
  Status create() {
    using Fn = MPI_User_function *;
    const std::pair<distrt_dtype, std::array<Fn, 3>> table[] = {
        {DISTRT_BF16,
         {reduce16<widenBF16, narrowBF16, DISTRT_SUM>,
          reduce16<widenBF16, narrowBF16, DISTRT_MAX>,
          reduce16<widenBF16, narrowBF16, DISTRT_MIN>}},
        {DISTRT_F16,
         {reduce16<widenF16, narrowF16, DISTRT_SUM>,
          reduce16<widenF16, narrowF16, DISTRT_MAX>,
          reduce16<widenF16, narrowF16, DISTRT_MIN>}}};
    for (const auto &[dtype, functions] : table)
      for (distrt_reduction reduction : {DISTRT_SUM, DISTRT_MAX, DISTRT_MIN})
        if (Status s =
                checkMPI(MPI_Op_create(functions[reduction],
                                       /*commute=*/1, &slot(dtype, reduction)),
                         "MPI_Op_create");
            !s.empty())
          return s;
    return {};
  }
  void free() {
    for (MPI_Op &op : ops)
      if (op != MPI_OP_NULL)
        MPI_Op_free(&op);
  }
  /// The operation reducing `dtype` by `reduction`.
  MPI_Op get(distrt_dtype dtype, distrt_reduction reduction) {
    if (dtype != DISTRT_F16 && dtype != DISTRT_BF16)
      return getMPIOp(reduction);
    return slot(dtype, reduction);
  }

private:
  MPI_Op &slot(distrt_dtype dtype, distrt_reduction reduction) {
    return ops[(dtype == DISTRT_BF16 ? 3 : 0) + reduction];
  }
  std::array<MPI_Op, 6> ops{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL,
                            MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};
} // namespace

Status distrt::checkMPI(int code, const char *call) {
  if (code == MPI_SUCCESS)
    return {};
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(call) + " failed: " + std::string(text, length);
}

/// MPI counts are int: larger buffers are an error, not a silent wrap.
static Status checkCount(int64_t count) {
  if (count < 0 || count > INT32_MAX)
    return "element count " + std::to_string(count) +
           " does not fit an MPI count";
  return {};
}

/// Polls `test` (MPI_Test or MPI_Testall on the caller's requests) as
/// MPICH's blocking calls do until it reports done or `timeout` seconds
/// (0: no limit) passed: "" when done, the error or the timeout message else.
static Status pollMPI(const char *call, double timeout,
                      const std::function<int(int *)> &test) {
  return pollWithin(call, timeout, [&](bool &done) {
    int flag = 0;
    Status status = checkMPI(test(&flag), call);
    done = flag;
    return status;
  });
}

Status distrt::completeMPI(MPI_Request &request, const char *call,
                           double timeout, bool cancellable) {
  if (timeout <= 0)
    return checkMPI(MPI_Wait(&request, MPI_STATUS_IGNORE), call);
  Status status = pollMPI(call, timeout, [&](int *done) {
    return MPI_Test(&request, done, MPI_STATUS_IGNORE);
  });
  if (status != getTimeoutMessage(call, timeout))
    return status;
  if (cancellable && MPI_Cancel(&request) == MPI_SUCCESS)
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  return status;
}

Status distrt::completeAllMPI(std::vector<MPI_Request> &requests,
                              const char *call, double timeout) {
  int count = static_cast<int>(requests.size());
  if (timeout <= 0)
    return checkMPI(MPI_Waitall(count, requests.data(), MPI_STATUSES_IGNORE),
                    call);
  return pollMPI(call, timeout, [&](int *done) {
    return MPI_Testall(count, requests.data(), done, MPI_STATUSES_IGNORE);
  });
}

Status distrt::getMPINodes(MPI_Comm comm, std::vector<int64_t> &nodes,
                           std::vector<std::string> &names) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The ranks sharing memory with this one; their lowest world rank names
  // the node.
  MPI_Comm shared;
  if (int code = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                     MPI_INFO_NULL, &shared))
    return checkMPI(code, "MPI_Comm_split_type");
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  std::vector<int> leaders(size);
  if (int code =
          MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm))
    return checkMPI(code, "MPI_Allgather");
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(size_t(size) * MPI_MAX_PROCESSOR_NAME);
  if (int code =
          MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                        MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm))
    return checkMPI(code, "MPI_Allgather");
  nodes.assign(size, -1);
  names.clear();
  for (int64_t r = 0; r < size; ++r) {
    if (leaders[r] == r) {
      names.emplace_back(&all[r * MPI_MAX_PROCESSOR_NAME]);
      nodes[r] = names.size() - 1;
    }
  }
  for (int64_t r = 0; r < size; ++r)
    nodes[r] = nodes[leaders[r]];
  return {};
}

void distrt::abortMPI(int code, int64_t size) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // MPICH's launcher can end the job before it forwarded what this
    // process printed last (the message saying why): a moment for it.
    if (size > 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  ::_exit(code);
}

namespace {
class MPIGroup : public Group {
public:
  MPIGroup(int64_t size, int64_t rank, MPI_Comm comm)
      : Group(size, rank), comm(comm) {}
  ~MPIGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
  MPI_Comm comm;
};

class MPIRequest : public Request {
public:
  MPIRequest(MPI_Request request, const char *call, double timeout,
             std::function<void()> done, bool cancellable = false)
      : request(request), call(call), timeout(timeout), done(std::move(done)),
        cancellable(cancellable) {}
  Status wait() override {
    Status status = completeMPI(request, call, timeout, cancellable);
    if (status.empty() && done)
      done();
    return status;
  }

private:
  MPI_Request request;
  const char *call;
  double timeout;
  std::function<void()> done;
  bool cancellable;
};

/// Every blocking call is its nonblocking form completed by `completeMPI`, so
/// that a timeout applies to all of them.
class MPIBackend : public Backend {
public:
  MPIBackend() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(nullptr, nullptr);
      ownsMPI = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int r = 0, s = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    rank = r;
    size = s;
    // The runtime's own messages (group creation) on a copy of the world,
    // apart from the program's point-to-point tags.
    MPI_Comm_dup(MPI_COMM_WORLD, &control);
    MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  }

  /// Creates what the constructor cannot report a failure of.
  Status initialize() { return halfOps.create(); }

  const char *getName() const override { return "mpi"; }
  int64_t getRank() const override { return rank; }
  int64_t getSize() const override { return size; }

  Status createGroup(const std::vector<int64_t> &members, int64_t index,
                     int64_t color, std::unique_ptr<Group> &group) override {
    // Only the members take part (MPI_Comm_create_group, not a split of
    // the world): in a step of placed programs (a pipeline stage running
    // data or tensor parallelism) the other ranks run other programs and
    // create their groups at other times, or never. A barrier of the
    // members with the timeout first, so that a member that stopped
    // answering is noticed here.
    std::vector<int> ranks(members.begin(), members.end());
    if (timeout > 0 && ranks.size() > 1) {
      std::vector<MPI_Request> requests;
      for (int peer : ranks) {
        if (peer == rank)
          continue;
        for (bool isSend : {false, true}) {
          MPI_Request &r = requests.emplace_back();
          int code = isSend ? MPI_Isend(nullptr, 0, MPI_BYTE, peer, kGroupTag,
                                        control, &r)
                            : MPI_Irecv(nullptr, 0, MPI_BYTE, peer, kGroupTag,
                                        control, &r);
          if (Status s = checkMPI(code, "MPI_Comm_create_group"); !s.empty())
            return s;
        }
      }
      if (Status s = completeAllMPI(requests, "MPI_Comm_create_group", timeout);
          !s.empty())
        return s;
    }
    MPI_Group world = MPI_GROUP_NULL, subgroup = MPI_GROUP_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    Status status = checkMPI(MPI_Comm_group(control, &world), "MPI_Comm_group");
    if (status.empty())
      status = checkMPI(MPI_Group_incl(world, static_cast<int>(ranks.size()),
                                       ranks.data(), &subgroup),
                        "MPI_Group_incl");
    if (status.empty())
      status =
          checkMPI(MPI_Comm_create_group(control, subgroup, kGroupTag, &comm),
                   "MPI_Comm_create_group");
    if (subgroup != MPI_GROUP_NULL)
      MPI_Group_free(&subgroup);
    if (world != MPI_GROUP_NULL)
      MPI_Group_free(&world);
    if (!status.empty())
      return status;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    group = std::make_unique<MPIGroup>(members.size(), index, comm);
    return {};
  }

  Status allReduce(Group &group, void *buffer, int64_t count,
                   distrt_dtype dtype, distrt_reduction reduction) override {
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startAndComplete("MPI_Allreduce", [&](MPI_Request *r) {
      return MPI_Iallreduce(MPI_IN_PLACE, buffer, count, getMPIType(dtype),
                            halfOps.get(dtype, reduction), comm(group), r);
    });
  }

  Status allReduceStart(Group &group, void *buffer, int64_t count,
                        distrt_dtype dtype, distrt_reduction reduction,
                        std::function<void()> done,
                        std::unique_ptr<Request> &request) override {
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startRequest(
        "MPI_Iallreduce",
        [&](MPI_Request *r) {
          return MPI_Iallreduce(MPI_IN_PLACE, buffer, count, getMPIType(dtype),
                                halfOps.get(dtype, reduction), comm(group), r);
        },
        request, std::move(done));
  }

  Status reduceScatter(Group &group, const void *send, void *recv,
                       int64_t recvCount, distrt_dtype dtype,
                       distrt_reduction reduction) override {
    if (Status s = checkCount(recvCount * group.size); !s.empty())
      return s;
    return startAndComplete("MPI_Reduce_scatter_block", [&](MPI_Request *r) {
      return MPI_Ireduce_scatter_block(send, recv, recvCount, getMPIType(dtype),
                                       halfOps.get(dtype, reduction),
                                       comm(group), r);
    });
  }

  Status reduceScatterStart(Group &group, const void *send, void *recv,
                            int64_t recvCount, distrt_dtype dtype,
                            distrt_reduction reduction,
                            std::unique_ptr<Request> &request) override {
    if (Status s = checkCount(recvCount * group.size); !s.empty())
      return s;
    return startRequest(
        "MPI_Ireduce_scatter_block",
        [&](MPI_Request *r) {
          return MPI_Ireduce_scatter_block(
              send, recv, recvCount, getMPIType(dtype),
              halfOps.get(dtype, reduction), comm(group), r);
        },
        request);
  }

  Status allGatherStart(Group &group, const void *send, void *recv,
                        int64_t sendCount, distrt_dtype dtype,
                        std::unique_ptr<Request> &request) override {
    if (Status s = checkCount(sendCount * group.size); !s.empty())
      return s;
    MPI_Datatype type = getMPIType(dtype);
    return startRequest(
        "MPI_Iallgather",
        [&](MPI_Request *r) {
          return MPI_Iallgather(send, sendCount, type, recv, sendCount, type,
                                comm(group), r);
        },
        request);
  }

  Status allGather(Group &group, const void *send, void *recv,
                   int64_t sendCount, distrt_dtype dtype) override {
    if (Status s = checkCount(sendCount * group.size); !s.empty())
      return s;
    MPI_Datatype type = getMPIType(dtype);
    return startAndComplete("MPI_Allgather", [&](MPI_Request *r) {
      return MPI_Iallgather(send, sendCount, type, recv, sendCount, type,
                            comm(group), r);
    });
  }

  Status allToAll(Group &group, const void *send, void *recv,
                  int64_t blockCount, distrt_dtype dtype) override {
    if (Status s = checkCount(blockCount * group.size); !s.empty())
      return s;
    MPI_Datatype type = getMPIType(dtype);
    return startAndComplete("MPI_Alltoall", [&](MPI_Request *r) {
      return MPI_Ialltoall(send, blockCount, type, recv, blockCount, type,
                           comm(group), r);
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
    return startAndComplete("MPI_Bcast", [&](MPI_Request *r) {
      return MPI_Ibcast(buffer, count, getMPIType(dtype), root, comm(group), r);
    });
  }

  Status send(const void *buffer, int64_t count, distrt_dtype dtype,
              int64_t dest, int64_t tag) override {
    if (Status s = checkPeer(dest); !s.empty())
      return s;
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startAndComplete("MPI_Send", [&](MPI_Request *r) {
      return MPI_Isend(buffer, count, getMPIType(dtype), dest, tag,
                       MPI_COMM_WORLD, r);
    });
  }

  Status recv(void *buffer, int64_t count, distrt_dtype dtype, int64_t source,
              int64_t tag) override {
    if (Status s = checkPeer(source); !s.empty())
      return s;
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startAndComplete(
        "MPI_Recv",
        [&](MPI_Request *r) {
          return MPI_Irecv(buffer, count, getMPIType(dtype), source, tag,
                           MPI_COMM_WORLD, r);
        },
        /*cancellable=*/true);
  }

  Status sendStart(const void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t dest, int64_t tag,
                   std::unique_ptr<Request> &request) override {
    if (Status s = checkPeer(dest); !s.empty())
      return s;
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startRequest(
        "MPI_Isend",
        [&](MPI_Request *r) {
          return MPI_Isend(buffer, count, getMPIType(dtype), dest, tag,
                           MPI_COMM_WORLD, r);
        },
        request);
  }

  Status recvStart(void *buffer, int64_t count, distrt_dtype dtype,
                   int64_t source, int64_t tag,
                   std::unique_ptr<Request> &request) override {
    if (Status s = checkPeer(source); !s.empty())
      return s;
    if (Status s = checkCount(count); !s.empty())
      return s;
    return startRequest(
        "MPI_Irecv",
        [&](MPI_Request *r) {
          return MPI_Irecv(buffer, count, getMPIType(dtype), source, tag,
                           MPI_COMM_WORLD, r);
        },
        request, {}, /*cancellable=*/true);
  }

  Status probeAny(const int64_t *sources, const int64_t *tags, int64_t count,
                  int64_t start, int64_t &found) override {
    if (count < 1)
      return "nothing to wait for: no peer given";
    for (int64_t k = 0; k < count; ++k)
      if (Status s = checkPeer(sources[k]); !s.empty())
        return s;
    int64_t next = ((start % count) + count) % count;
    auto test = [&](int *done) {
      for (int64_t i = 0; i < count && !*done; ++i, next = (next + 1) % count)
        if (int code = MPI_Iprobe(sources[next], tags[next], MPI_COMM_WORLD,
                                  done, MPI_STATUS_IGNORE);
            code != MPI_SUCCESS)
          return code;
      if (*done)
        found = (next + count - 1) % count;
      return MPI_SUCCESS;
    };
    return pollMPI("MPI_Iprobe", timeout, test);
  }

  Status barrier() override {
    return startAndComplete("MPI_Barrier", [&](MPI_Request *r) {
      return MPI_Ibarrier(MPI_COMM_WORLD, r);
    });
  }

  Status getNodes(std::vector<int64_t> &nodes,
                  std::vector<std::string> &names) override {
    return getMPINodes(control, nodes, names);
  }

  Status finalize() override {
    halfOps.free();
    if (!ownsMPI)
      return {};
    // MPI_Finalize waits for every rank: a barrier with the timeout first.
    if (timeout > 0 && size > 1)
      if (Status s = startAndComplete(
              "MPI_Finalize",
              [&](MPI_Request *r) { return MPI_Ibarrier(MPI_COMM_WORLD, r); });
          !s.empty())
        return s;
    ownsMPI = false;
    if (control != MPI_COMM_NULL)
      MPI_Comm_free(&control);
    return checkMPI(MPI_Finalize(), "MPI_Finalize");
  }

  [[noreturn]] void abort(int code) override { abortMPI(code, size); }

private:
  static MPI_Comm comm(Group &group) {
    return static_cast<MPIGroup &>(group).comm;
  }
  /// Starts a nonblocking call through `start` and completes it.
  /// Starts `call` and hands its request to `request`, which completes it
  /// (then runs `done`) within the timeout; a receive is `cancellable`.
  Status startRequest(const char *call,
                      const std::function<int(MPI_Request *)> &start,
                      std::unique_ptr<Request> &request,
                      std::function<void()> done = {},
                      bool cancellable = false) const {
    MPI_Request handle;
    if (Status s = checkMPI(start(&handle), call); !s.empty())
      return s;
    request = std::make_unique<MPIRequest>(handle, call, timeout,
                                           std::move(done), cancellable);
    return {};
  }

  Status startAndComplete(const char *call,
                          const std::function<int(MPI_Request *)> &start,
                          bool cancellable = false) const {
    MPI_Request request;
    if (Status s = checkMPI(start(&request), call); !s.empty())
      return s;
    return completeMPI(request, call, timeout, cancellable);
  }
  Status checkPeer(int64_t peer) const {
    if (peer < 0 || peer >= size)
      return "rank " + std::to_string(peer) + " is not in a world of " +
             std::to_string(size) + " processes";
    return {};
  }

  /// The tag of the runtime's messages on `control`.
  static constexpr int kGroupTag = 1;

  int64_t rank = 0, size = 1;
  bool ownsMPI = false;
  HalfOps halfOps;
  MPI_Comm control = MPI_COMM_NULL;
};
} // namespace

std::unique_ptr<Backend> distrt::createMPIBackend(Status &error) {
  auto backend = std::make_unique<MPIBackend>();
  if (Status s = backend->initialize(); !s.empty()) {
    error = s;
    return nullptr;
  }
  return backend;
}

#else // !DISTOPT_HAVE_MPI

std::unique_ptr<distrt::Backend> distrt::createMPIBackend(Status &error) {
  error = "this runtime was built without MPI";
  return nullptr;
}

#endif
