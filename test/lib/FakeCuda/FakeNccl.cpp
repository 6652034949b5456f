//===- FakeNccl.cpp - NCCL of one rank over the fake driver ---------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libnccl.so.2 for the fake driver (FakeDriver.cpp): communicators of one
// rank, whose collectives are copies (a sum over one rank is the rank's
// buffer) enqueued on the stream given, so that the nccl backend's
// communication stream, its fork and join events and its place in a
// captured graph run without a GPU. Every buffer must be device memory;
// a send is paired with its receive by ncclGroupEnd.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <nccl.h>

#include <cstring>
#include <deque>
#include <string>

using namespace fakecuda;

struct ncclComm {
  int ranks = 1;
  bool aborted = false;
};

namespace {
struct Transfer {
  void *buffer;
  size_t bytes;
  CUstream stream;
};

struct Groups {
  int depth = 0;
  std::deque<Transfer> sends, receives;
  std::string lastError;
};

Groups &getGroups() {
  thread_local Groups groups;
  return groups;
}

size_t getElementBytes(ncclDataType_t type) {
  switch (type) {
  case ncclInt8:
  case ncclUint8:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

ncclResult_t refuse(const std::string &message) {
  violate(message);
  getGroups().lastError = message;
  return ncclInvalidUsage;
}

/// Destroys `comm` (`call` names how); a violation when it is not live.
ncclResult_t destroy(ncclComm_t comm, const char *call) {
  if (getHandles<ncclComm>().destroy(comm))
    return ncclSuccess;
  return refuse(std::string(call) + " of a communicator that is not live");
}

/// `recv` = `send` (`bytes` each), on `stream`, after checking both.
ncclResult_t collective(const char *call, const void *send, void *recv,
                        size_t bytes, ncclComm_t comm, cudaStream_t stream) {
  if (!comm || comm->aborted)
    return refuse(std::string(call) + ": no communicator, or an aborted one");
  if (!checkDevice(send, bytes, std::string(call) + " send buffer") ||
      !checkDevice(recv, bytes, std::string(call) + " receive buffer"))
    return ncclInvalidArgument;
  CUresult result = enqueue(reinterpret_cast<CUstream>(stream),
                            Work::Collective, call, [send, recv, bytes] {
                              if (send != recv)
                                std::memmove(recv, send, bytes);
                            });
  return result == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
}

/// Pairs the sends and receives recorded so far (one rank: each with
/// itself), in order.
ncclResult_t pairTransfers() {
  Groups &groups = getGroups();
  while (!groups.sends.empty() && !groups.receives.empty()) {
    Transfer send = groups.sends.front(), recv = groups.receives.front();
    groups.sends.pop_front();
    groups.receives.pop_front();
    if (send.bytes != recv.bytes)
      return refuse("ncclSend of " + std::to_string(send.bytes) +
                    " bytes paired with ncclRecv of " +
                    std::to_string(recv.bytes));
    const void *from = send.buffer;
    void *to = recv.buffer;
    size_t bytes = send.bytes;
    if (enqueue(recv.stream, Work::Collective, "ncclSend/ncclRecv",
                [from, to, bytes] { std::memmove(to, from, bytes); }) !=
        CUDA_SUCCESS)
      return ncclUnhandledCudaError;
  }
  if (groups.depth == 0 &&
      (!groups.sends.empty() || !groups.receives.empty())) {
    groups.sends.clear();
    groups.receives.clear();
    return refuse("an ncclSend or ncclRecv without its peer's call (one "
                  "rank sends to itself inside ncclGroupStart/End only)");
  }
  return ncclSuccess;
}

ncclResult_t transfer(bool isSend, void *buffer, size_t count,
                      ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  const char *call = isSend ? "ncclSend" : "ncclRecv";
  if (!comm || peer != 0)
    return refuse(std::string(call) + " to peer " + std::to_string(peer) +
                  " of a one-rank communicator");
  size_t bytes = count * getElementBytes(type);
  if (!checkDevice(buffer, bytes, std::string(call) + " buffer"))
    return ncclInvalidArgument;
  Groups &groups = getGroups();
  (isSend ? groups.sends : groups.receives)
      .push_back({buffer, bytes, reinterpret_cast<CUstream>(stream)});
  return groups.depth ? ncclSuccess : pairTransfers();
}
} // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof(*id));
  std::strcpy(id->internal, "fake-nccl");
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int ranks,
                                    ncclUniqueId id, int rank, ncclConfig_t *) {
  if (ranks != 1 || rank != 0)
    return refuse("the fake NCCL has one rank, not " + std::to_string(ranks));
  if (std::strcmp(id.internal, "fake-nccl"))
    return refuse("ncclCommInitRank: an id ncclGetUniqueId did not make");
  *comm = getHandles<ncclComm>().create();
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id,
                              int rank) {
  return ncclCommInitRankConfig(comm, ranks, id, rank, nullptr);
}

ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return destroy(comm, "ncclCommDestroy");
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return destroy(comm, "ncclCommAbort");
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *state) {
  *state = ncclSuccess;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  return result == ncclSuccess ? "no error" : "the fake NCCL refused a call";
}

const char *ncclGetLastError(ncclComm_t) {
  return getGroups().lastError.c_str();
}

ncclResult_t ncclGroupStart() {
  ++getGroups().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  Groups &groups = getGroups();
  if (groups.depth == 0)
    return refuse("ncclGroupEnd without ncclGroupStart");
  if (--groups.depth)
    return ncclSuccess;
  return pairTransfers();
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective("ncclAllReduce", send, recv, count * getElementBytes(type),
                    comm, stream);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t,
                               ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduceScatter", send, recv,
                    count * getElementBytes(type), comm, stream);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective("ncclAllGather", send, recv, count * getElementBytes(type),
                    comm, stream);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                           ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (root != 0)
    return refuse("ncclBroadcast from root " + std::to_string(root) +
                  " of a one-rank communicator");
  return collective("ncclBroadcast", send, recv, count * getElementBytes(type),
                    comm, stream);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  return transfer(true, const_cast<void *>(send), count, type, peer, comm,
                  stream);
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return transfer(false, recv, count, type, peer, comm, stream);
}
