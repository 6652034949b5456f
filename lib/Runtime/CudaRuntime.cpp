//===- CudaRuntime.cpp - the host functions of CUDA steps -----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libdistopt_cuda: what a step lowered by `dist-lower-cuda` calls. MLIR's
// GPU lowering emits mgpu* calls (module load, kernel launch, stream,
// stream-ordered allocation and copies); Debian ships no implementation of
// them, so this is the project's own, over the CUDA driver API. Products
// are cuBLAS calls behind the same `distopt_matmul_f32` interface the CPU
// library implements with OpenBLAS (and `distopt_matmul_bf16` / `_f16`:
// cublasGemmStridedBatchedEx with 16-bit inputs and output, f32 compute).
// Each is named `distopt_cuda_<f>` (dist-gpu-host renames a CUDA step's
// calls), never libdistopt_cpu's `distopt_<f>`: whichever of the two a
// process loads first would otherwise take both kinds of steps' calls.
//
// One device and one stream per process: mgpuStreamCreate answers the
// process's stream (and mgpuStreamDestroy leaves it), so every kernel,
// copy, allocation and product of a step is ordered on it (NCCL's
// collectives fork from it onto the nccl backend's communication stream
// and join it back) and the host never waits inside a step. The mgpu*
// functions cannot
// return errors: the first failure is kept (later ones are usually its
// consequences) and reported by the next distopt_cuda_synchronize, which
// the runner calls after every step.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CudaRuntime.h"
#include "MatrixOperand.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {
struct State {
  int device = -1;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  cublasHandle_t blas = nullptr;
  /// cuBLASLt's handle: the products with epilogues.
  cublasLtHandle_t blasLt = nullptr;
  /// The first failure since the last distopt_cuda_synchronize.
  std::string error;
  /// distopt_cuda_last_error's message.
  std::string lastError;
  /// Product groups' device arrays of pointers, by their addresses.
  std::map<std::vector<uintptr_t>, CUdeviceptr> pointerArrays;
  /// The grouped products cuBLAS refused, by their function
  /// (cublasSgemmGroupedBatched_64, cublasGemmGroupedBatchedEx_64 for each
  /// 16-bit type): a group of those then runs one call per row, said once
  /// on stderr for each.
  std::set<std::string> refusedGroups;
  /// distopt_cuda_product_stats's counts.
  DistoptCudaProductStats productStats{};
  /// Each function's workspace (distopt_workspace), by its key: the buffer
  /// and its bytes.
  std::map<int64_t, std::pair<CUdeviceptr, int64_t>> workspaces;
  /// distopt_cuda_workspace_stats's counts.
  DistoptCudaWorkspaceStats workspaceStats{};
  /// The device copies of constant globals (distopt_constant), by their
  /// host addresses.
  std::map<int64_t, CUdeviceptr> constants;
  /// distopt_cuda_graph_stats's counts.
  DistoptCudaGraphStats graphStats{};
  /// cuBLAS's workspace (cublasSetWorkspace): set once, so that a product
  /// allocates nothing while the stream is captured.
  CUdeviceptr blasWorkspace = 0;
  /// distopt_cuda_stage's copy stream; the event recorded after the last
  /// staged copy, and the one recorded on the compute stream after the
  /// last copy out of a staging buffer (created on first use).
  CUstream copyStream = nullptr;
  CUevent staged = nullptr, consumed = nullptr;
  std::mutex mutex;
};

State &getState() {
  static State state;
  return state;
}

/// Keeps the first failure of an asynchronous path.
void record(const std::string &message) {
  State &state = getState();
  if (state.error.empty())
    state.error = message;
  state.lastError = message;
}

/// "<call> failed: <CUDA error name>: <its description>".
std::string describe(const char *call, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(call) + " failed: " + (name ? name : "CUDA error") +
         (text ? std::string(": ") + text : std::string());
}

/// True on success; records the failure otherwise.
bool check(const char *call, CUresult result) {
  if (result == CUDA_SUCCESS)
    return true;
  record(describe(call, result));
  return false;
}

bool checkBlas(const char *call, cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  record(std::string(call) + " failed: " + cublasGetStatusName(status) + ": " +
         cublasGetStatusString(status));
  return false;
}

/// The bytes of cuBLAS's workspace, which the cuBLASLt products use too
/// (one stream orders them).
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

/// Makes the process's device (device 0 unless chosen) current on the
/// calling thread, creating its context, stream and cuBLAS handle on first
/// use; false (with the failure recorded) when there is none.
bool ensureDevice(int ordinal = -1) {
  State &state = getState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.context) {
    if (ordinal >= 0 && ordinal != state.device) {
      record("distopt_cuda_set_device(" + std::to_string(ordinal) +
             "): the process already runs on device " +
             std::to_string(state.device));
      return false;
    }
    return check("cuCtxSetCurrent", cuCtxSetCurrent(state.context));
  }
  if (!check("cuInit", cuInit(0)))
    return false;
  int count = 0;
  if (!check("cuDeviceGetCount", cuDeviceGetCount(&count)))
    return false;
  int chosen = ordinal < 0 ? 0 : ordinal;
  if (chosen >= count) {
    record("no CUDA device " + std::to_string(chosen) + " (the machine has " +
           std::to_string(count) + ")");
    return false;
  }
  CUdevice device;
  if (!check("cuDeviceGet", cuDeviceGet(&device, chosen)) ||
      !check("cuDevicePrimaryCtxRetain",
             cuDevicePrimaryCtxRetain(&state.context, device)) ||
      !check("cuCtxSetCurrent", cuCtxSetCurrent(state.context)) ||
      !check("cuStreamCreate",
             cuStreamCreate(&state.stream, CU_STREAM_NON_BLOCKING)))
    return false;
  if (!checkBlas("cublasCreate", cublasCreate(&state.blas)) ||
      !checkBlas("cublasSetStream",
                 cublasSetStream(state.blas, state.stream)) ||
      // FP32 products in FP32 (no TF32): the CPU's results within rounding.
      !checkBlas("cublasSetMathMode",
                 cublasSetMathMode(state.blas, CUBLAS_DEFAULT_MATH)) ||
      !checkBlas("cublasLtCreate", cublasLtCreate(&state.blasLt)))
    return false;
  // cuBLAS's own workspace, allocated once (32 MiB, as PyTorch gives it on
  // Hopper): without one, a product may allocate, which a captured graph
  // cannot replay.
  if (!check("cuMemAlloc",
             cuMemAlloc(&state.blasWorkspace, kBlasWorkspaceBytes)) ||
      !checkBlas("cublasSetWorkspace",
                 cublasSetWorkspace(
                     state.blas, reinterpret_cast<void *>(state.blasWorkspace),
                     kBlasWorkspaceBytes)))
    return false;
  state.device = chosen;
  return true;
}

CUdeviceptr toDevice(const void *pointer) {
  return reinterpret_cast<CUdeviceptr>(pointer);
}
} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// distopt_cuda_* (CudaRuntime.h)
//===----------------------------------------------------------------------===//

int distopt_cuda_device_count(void) {
  int count = 0;
  if (!check("cuInit", cuInit(0)) ||
      !check("cuDeviceGetCount", cuDeviceGetCount(&count)))
    return 0;
  return count;
}

DistoptCudaProductStats distopt_cuda_product_stats(void) {
  return getState().productStats;
}

DistoptCudaWorkspaceStats distopt_cuda_workspace_stats(void) {
  return getState().workspaceStats;
}

int distopt_cuda_set_device(int ordinal) {
  return ensureDevice(ordinal) ? 0 : -1;
}

int distopt_cuda_device(void) { return getState().device; }

void *distopt_cuda_stream(void) {
  return ensureDevice() ? getState().stream : nullptr;
}

int distopt_cuda_synchronize(void) {
  State &state = getState();
  if (ensureDevice())
    check("cuStreamSynchronize", cuStreamSynchronize(state.stream));
  if (state.error.empty())
    return 0;
  state.lastError = state.error;
  state.error.clear();
  return -1;
}

void *distopt_cuda_alloc(size_t bytes) {
  CUdeviceptr pointer = 0;
  if (!ensureDevice() ||
      !check("cuMemAllocAsync",
             cuMemAllocAsync(&pointer, bytes ? bytes : 1, getState().stream)))
    return nullptr;
  return reinterpret_cast<void *>(pointer);
}

int distopt_cuda_free(void *pointer) {
  if (!pointer)
    return 0;
  return ensureDevice() &&
                 check("cuMemFreeAsync",
                       cuMemFreeAsync(toDevice(pointer), getState().stream))
             ? 0
             : -1;
}

int distopt_cuda_copy_to_device(void *device, const void *host, size_t bytes) {
  return ensureDevice() && check("cuMemcpyHtoDAsync",
                                 cuMemcpyHtoDAsync(toDevice(device), host,
                                                   bytes, getState().stream))
             ? 0
             : -1;
}

int distopt_cuda_copy_to_host(void *host, const void *device, size_t bytes) {
  if (!ensureDevice() ||
      !check("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync(host, toDevice(device),
                                                    bytes, getState().stream)))
    return -1;
  return distopt_cuda_synchronize();
}

int distopt_cuda_copy_on_device(void *to, const void *from, size_t bytes) {
  return ensureDevice() && check("cuMemcpyDtoDAsync",
                                 cuMemcpyDtoDAsync(toDevice(to), toDevice(from),
                                                   bytes, getState().stream))
             ? 0
             : -1;
}

void *distopt_cuda_host_alloc(size_t bytes) {
  void *pointer = nullptr;
  if (!ensureDevice() ||
      !check("cuMemHostAlloc", cuMemHostAlloc(&pointer, bytes ? bytes : 1, 0)))
    return nullptr;
  return pointer;
}

int distopt_cuda_host_free(void *pointer) {
  if (!pointer)
    return 0;
  return ensureDevice() && check("cuMemFreeHost", cuMemFreeHost(pointer)) ? 0
                                                                          : -1;
}

/// The copy stream and its events, created on first use; false (recorded)
/// when they cannot be.
static bool ensureCopyStream() {
  if (!ensureDevice())
    return false;
  State &state = getState();
  if (state.copyStream)
    return true;
  // (Timing off: the events only order the streams.)
  return check("cuStreamCreate",
               cuStreamCreate(&state.copyStream, CU_STREAM_NON_BLOCKING)) &&
         check("cuEventCreate",
               cuEventCreate(&state.staged, CU_EVENT_DISABLE_TIMING)) &&
         check("cuEventCreate",
               cuEventCreate(&state.consumed, CU_EVENT_DISABLE_TIMING)) &&
         // Recorded once, so that the first stage has something to wait on.
         check("cuEventRecord", cuEventRecord(state.consumed, state.stream));
}

int distopt_cuda_stage(void *device, const void *host, size_t bytes) {
  if (!ensureCopyStream())
    return -1;
  State &state = getState();
  return check("cuStreamWaitEvent",
               cuStreamWaitEvent(state.copyStream, state.consumed, 0)) &&
                 check("cuMemcpyHtoDAsync",
                       cuMemcpyHtoDAsync(toDevice(device), host, bytes,
                                         state.copyStream)) &&
                 check("cuEventRecord",
                       cuEventRecord(state.staged, state.copyStream))
             ? 0
             : -1;
}

int distopt_cuda_use_staged(void *to, const void *from, size_t bytes) {
  if (!ensureCopyStream())
    return -1;
  State &state = getState();
  return check("cuStreamWaitEvent",
               cuStreamWaitEvent(state.stream, state.staged, 0)) &&
                 check("cuMemcpyDtoDAsync",
                       cuMemcpyDtoDAsync(toDevice(to), toDevice(from), bytes,
                                         state.stream)) &&
                 check("cuEventRecord",
                       cuEventRecord(state.consumed, state.stream))
             ? 0
             : -1;
}

int distopt_cuda_staged_wait(void) {
  if (!ensureCopyStream())
    return -1;
  return check("cuEventSynchronize", cuEventSynchronize(getState().staged))
             ? 0
             : -1;
}

const char *distopt_cuda_last_error(void) {
  return getState().lastError.c_str();
}

int distopt_cuda_capture_begin(void) {
  if (!ensureDevice())
    return -1;
  State &state = getState();
  // (Thread-local: another thread's calls that cannot be captured do not
  // end this capture.)
  return check("cuStreamBeginCapture",
               cuStreamBeginCapture(state.stream,
                                    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
             ? 0
             : -1;
}

void *distopt_cuda_capture_end(void) {
  if (!ensureDevice())
    return nullptr;
  State &state = getState();
  CUgraph graph = nullptr;
  CUresult ended = cuStreamEndCapture(state.stream, &graph);
  // What failed during the capture belongs to it, not to the next wait.
  std::string failure = state.error;
  state.error.clear();
  auto refuse = [&](std::string reason) -> void * {
    if (graph)
      cuGraphDestroy(graph);
    state.lastError = std::move(reason);
    ++state.graphStats.refused;
    return nullptr;
  };
  if (!failure.empty())
    return refuse(failure);
  if (ended != CUDA_SUCCESS || !graph)
    return refuse(describe("cuStreamEndCapture", ended));
  size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS)
    return refuse("cuGraphGetNodes failed");
  std::vector<CUgraphNode> nodes(count);
  cuGraphGetNodes(graph, nodes.data(), &count);
  int64_t allocations = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(node, &type) == CUDA_SUCCESS &&
        type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
      ++allocations;
  }
  if (allocations)
    return refuse("the captured work allocates device memory (" +
                  std::to_string(allocations) + " allocations)");
  CUgraphExec exec = nullptr;
  CUresult instantiated = cuGraphInstantiate(&exec, graph, 0);
  if (instantiated != CUDA_SUCCESS)
    return refuse(describe("cuGraphInstantiate", instantiated));
  cuGraphDestroy(graph);
  ++state.graphStats.captures;
  state.graphStats.nodes = static_cast<int64_t>(count);
  return exec;
}

int distopt_cuda_graph_launch(void *graph) {
  if (!ensureDevice() ||
      !check("cuGraphLaunch",
             cuGraphLaunch(static_cast<CUgraphExec>(graph), getState().stream)))
    return -1;
  ++getState().graphStats.launches;
  return 0;
}

void distopt_cuda_graph_destroy(void *graph) {
  if (graph)
    check("cuGraphExecDestroy",
          cuGraphExecDestroy(static_cast<CUgraphExec>(graph)));
}

DistoptCudaGraphStats distopt_cuda_graph_stats(void) {
  return getState().graphStats;
}

//===----------------------------------------------------------------------===//
// mgpu*: what MLIR's GPU lowering calls
//===----------------------------------------------------------------------===//

CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  CUmodule module = nullptr;
  if (ensureDevice())
    check("cuModuleLoadData", cuModuleLoadData(&module, data));
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  if (module)
    check("cuModuleUnload", cuModuleUnload(module));
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  CUfunction function = nullptr;
  if (module)
    check("cuModuleGetFunction", cuModuleGetFunction(&function, module, name));
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemory, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  if (!function) {
    record("mgpuLaunchKernel: the kernel's module did not load (see the "
           "first error)");
    return;
  }
  if (ensureDevice())
    check("cuLaunchKernel",
          cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                         sharedMemory, stream, params, extra));
}

CUstream mgpuStreamCreate() {
  return static_cast<CUstream>(distopt_cuda_stream());
}

void mgpuStreamDestroy(CUstream stream) {
  if (stream && stream != getState().stream)
    check("cuStreamDestroy", cuStreamDestroy(stream));
}

void mgpuStreamSynchronize(CUstream stream) {
  check("cuStreamSynchronize", cuStreamSynchronize(stream));
}

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  check("cuStreamWaitEvent", cuStreamWaitEvent(stream, event, 0));
}

CUevent mgpuEventCreate() {
  CUevent event = nullptr;
  if (ensureDevice())
    check("cuEventCreate", cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

void mgpuEventDestroy(CUevent event) {
  check("cuEventDestroy", cuEventDestroy(event));
}

void mgpuEventSynchronize(CUevent event) {
  check("cuEventSynchronize", cuEventSynchronize(event));
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  check("cuEventRecord", cuEventRecord(event, stream));
}

void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool hostShared) {
  CUdeviceptr pointer = 0;
  if (!ensureDevice())
    return nullptr;
  if (hostShared)
    check("cuMemAllocManaged",
          cuMemAllocManaged(&pointer, bytes ? bytes : 1, CU_MEM_ATTACH_GLOBAL));
  else
    check("cuMemAllocAsync",
          cuMemAllocAsync(&pointer, bytes ? bytes : 1, stream));
  return reinterpret_cast<void *>(pointer);
}

void mgpuMemFree(void *pointer, CUstream stream) {
  if (pointer)
    check("cuMemFreeAsync", cuMemFreeAsync(toDevice(pointer), stream));
}

void mgpuMemcpy(void *to, void *from, size_t bytes, CUstream stream) {
  check("cuMemcpyAsync",
        cuMemcpyAsync(toDevice(to), toDevice(from), bytes, stream));
}

void mgpuMemset32(void *to, unsigned int value, size_t count, CUstream stream) {
  check("cuMemsetD32Async",
        cuMemsetD32Async(toDevice(to), value, count, stream));
}

void mgpuMemset16(void *to, unsigned short value, size_t count,
                  CUstream stream) {
  check("cuMemsetD16Async",
        cuMemsetD16Async(toDevice(to), value, count, stream));
}

void mgpuSetDefaultDevice(int32_t device) { ensureDevice(device); }

//===----------------------------------------------------------------------===//
// Library calls
//===----------------------------------------------------------------------===//

/// The workspace of the function `key` names, of at least `bytes` bytes
/// (dist-plan-workspace): device memory allocated on the stream by its
/// first call, answered again by every later one, so that its buffers sit
/// at the same addresses each call. A call asking for more frees the old
/// buffer on the stream (after the work enqueued on it) and allocates a
/// larger one. A failed allocation answers a null buffer, with the failure
/// kept for distopt_cuda_synchronize. The descriptor's allocated pointer
/// is null: a result in the workspace (a step's loss, valid until the next
/// call) is not the caller's to free.
void _mlir_ciface_distopt_cuda_workspace(StridedMemRefType<int8_t, 1> *result,
                                         int64_t key, int64_t bytes) {
  *result = {nullptr, nullptr, 0, {0}, {1}};
  if (!ensureDevice())
    return;
  State &state = getState();
  std::lock_guard<std::mutex> lock(state.mutex);
  ++state.workspaceStats.calls;
  auto [it, inserted] = state.workspaces.try_emplace(key, 0, 0);
  auto &[pointer, size] = it->second;
  if (inserted)
    ++state.workspaceStats.workspaces;
  if (size < bytes) {
    if (pointer)
      check("cuMemFreeAsync", cuMemFreeAsync(pointer, state.stream));
    state.workspaceStats.bytes -= size;
    pointer = 0;
    size = 0;
    if (!check("cuMemAllocAsync",
               cuMemAllocAsync(&pointer, bytes ? bytes : 1, state.stream)))
      return;
    size = bytes;
    state.workspaceStats.bytes += size;
    ++state.workspaceStats.allocations;
  }
  auto *data = reinterpret_cast<int8_t *>(pointer);
  *result = {nullptr, data, 0, {bytes}, {1}};
}

/// The device copy of the constant global at host address `host`, of
/// `bytes` bytes (dist-gpu-host): allocated and copied on the stream by
/// the first call, answered again by every later one (the global never
/// changes, and a captured graph then copies nothing). A failure answers
/// a null buffer, kept for distopt_cuda_synchronize. Not the caller's to
/// free (a null allocated pointer).
void _mlir_ciface_distopt_cuda_constant(StridedMemRefType<int8_t, 1> *result,
                                        int64_t host, int64_t bytes) {
  *result = {nullptr, nullptr, 0, {0}, {1}};
  if (!ensureDevice())
    return;
  State &state = getState();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto [it, inserted] = state.constants.try_emplace(host, 0);
  if (inserted) {
    CUdeviceptr copy = 0;
    if (!check("cuMemAllocAsync",
               cuMemAllocAsync(&copy, bytes ? bytes : 1, state.stream)) ||
        !check("cuMemcpyHtoDAsync",
               cuMemcpyHtoDAsync(copy, reinterpret_cast<const void *>(host),
                                 bytes, state.stream))) {
      if (copy)
        cuMemFreeAsync(copy, state.stream);
      state.constants.erase(it);
      return;
    }
    it->second = copy;
    ++state.workspaceStats.constants;
    state.workspaceStats.constantBytes += bytes;
  }
  auto *data = reinterpret_cast<int8_t *>(it->second);
  *result = {nullptr, data, 0, {bytes}, {1}};
}

/// libdistopt_cpu's distopt_matmul_f32 (CpuKernels.cpp) on device buffers:
/// C[b] = op(A[b]) x op(B[b]) as one strided batched cuBLAS product on the
/// stream. cuBLAS is column-major: the row-major C is the column-major
/// C^T = op(B)^T x op(A)^T, so B comes first.
void _mlir_ciface_distopt_cuda_matmul_f32(UnrankedMemRefType<float> *a,
                                          UnrankedMemRefType<float> *b,
                                          UnrankedMemRefType<float> *c,
                                          int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int32_t transA,
                                          int32_t transB, int32_t batchedA,
                                          int32_t batchedB) {
  if (!ensureDevice())
    return;
  distopt::Matrix<float> av = distopt::getMatrix(a, batchedA),
                         bv = distopt::getMatrix(b, batchedB),
                         cv = distopt::getMatrix(c, /*batched=*/true);
  const float one = 1.0f, zero = 0.0f;
  checkBlas("cublasSgemmStridedBatched",
            cublasSgemmStridedBatched(
                getState().blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, bv.data,
                bv.ld, bv.batchStride, av.data, av.ld, av.batchStride, &zero,
                cv.data, cv.ld, cv.batchStride, batch));
}

/// libdistopt_cpu's distopt_matmul_epilogue_f32 (CpuKernels.cpp) on
/// device buffers: D = op(A) x op(B) + bias (+ R), or with GELU, P = that
/// and D = GELU(P), as one cuBLASLt product with a BIAS or GELU_AUX_BIAS
/// epilogue (FP32 compute, no TF32), on the stream and cuBLAS's workspace.
/// Column-major as distopt_matmul_f32: D^T = op(B)^T x op(A)^T, whose rows
/// are D's columns, so the bias (one per column of D) is cuBLASLt's
/// per-row bias.
void _mlir_ciface_distopt_cuda_matmul_epilogue_f32(
    UnrankedMemRefType<float> *a, UnrankedMemRefType<float> *b,
    UnrankedMemRefType<float> *d, UnrankedMemRefType<float> *bias,
    UnrankedMemRefType<float> *residual, UnrankedMemRefType<float> *pre,
    int64_t m, int64_t n, int64_t k, int32_t transA, int32_t transB,
    int32_t flags) {
  if (!ensureDevice())
    return;
  State &state = getState();
  bool addResidual = flags & 1, gelu = flags & 2;
  distopt::Matrix<float> av = distopt::getMatrix(a, false),
                         bv = distopt::getMatrix(b, false),
                         dv = distopt::getMatrix(d, false),
                         rv = distopt::getMatrix(residual, false),
                         pv = distopt::getMatrix(pre, false);
  DynamicMemRefType<float> biasView(*bias);
  const float *biasData = biasView.data + biasView.offset;
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr,
                         layoutC = nullptr, layoutD = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  auto release = [&] {
    if (preference)
      cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {layoutA, layoutB, layoutC, layoutD})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (operation)
      cublasLtMatmulDescDestroy(operation);
  };
  cublasOperation_t opFirst = transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opSecond = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue =
      gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS;
  const void *biasPointer = biasData;
  void *auxPointer = pv.data;
  int64_t auxLd = pv.ld;
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value,
                 size_t bytes) {
    return checkBlas(
        "cublasLtMatmulDescSetAttribute",
        cublasLtMatmulDescSetAttribute(operation, attribute, value, bytes));
  };
  // The first operand is B as stored: n x k (k x n transposed), column-major
  // with B's row stride as its leading dimension; the second A: k x m.
  bool ok =
      checkBlas("cublasLtMatmulDescCreate",
                cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F,
                                         CUDA_R_32F)) &&
      set(CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof(opFirst)) &&
      set(CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof(opSecond)) &&
      set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) &&
      set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer,
          sizeof(biasPointer)) &&
      (!gelu ||
       (set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &auxPointer,
            sizeof(auxPointer)) &&
        set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof(auxLd)))) &&
      checkBlas("cublasLtMatrixLayoutCreate",
                cublasLtMatrixLayoutCreate(&layoutA, CUDA_R_32F, transB ? k : n,
                                           transB ? n : k, bv.ld)) &&
      checkBlas("cublasLtMatrixLayoutCreate",
                cublasLtMatrixLayoutCreate(&layoutB, CUDA_R_32F, transA ? m : k,
                                           transA ? k : m, av.ld)) &&
      checkBlas("cublasLtMatrixLayoutCreate",
                cublasLtMatrixLayoutCreate(&layoutC, CUDA_R_32F, n, m,
                                           addResidual ? rv.ld : dv.ld)) &&
      checkBlas(
          "cublasLtMatrixLayoutCreate",
          cublasLtMatrixLayoutCreate(&layoutD, CUDA_R_32F, n, m, dv.ld)) &&
      checkBlas("cublasLtMatmulPreferenceCreate",
                cublasLtMatmulPreferenceCreate(&preference));
  size_t workspaceBytes = kBlasWorkspaceBytes;
  ok = ok && checkBlas("cublasLtMatmulPreferenceSetAttribute",
                       cublasLtMatmulPreferenceSetAttribute(
                           preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                           &workspaceBytes, sizeof(workspaceBytes)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ok = ok && checkBlas("cublasLtMatmulAlgoGetHeuristic",
                       cublasLtMatmulAlgoGetHeuristic(
                           state.blasLt, operation, layoutA, layoutB, layoutC,
                           layoutD, preference, 1, &heuristic, &found));
  if (ok && found == 0) {
    record(
        "distopt_cuda_matmul_epilogue_f32: cuBLASLt has no algorithm for a " +
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
        " FP32 product with a " + (gelu ? "GELU_AUX_BIAS" : "BIAS") +
        " epilogue on this device");
    ok = false;
  }
  const float one = 1.0f, zero = 0.0f;
  ok = ok &&
       checkBlas("cublasLtMatmul",
                 cublasLtMatmul(state.blasLt, operation, &one, bv.data, layoutA,
                                av.data, layoutB, addResidual ? &one : &zero,
                                addResidual ? rv.data : dv.data, layoutC,
                                dv.data, layoutD, &heuristic.algo,
                                reinterpret_cast<void *>(state.blasWorkspace),
                                kBlasWorkspaceBytes, state.stream));
  release();
}

} // extern "C"

namespace {
/// The most device arrays of pointers kept (freed all at once past it).
constexpr size_t kMaxPointerArrays = 1024;

/// The device array of `pointers` for a grouped product. The first call
/// with a set of addresses copies it to the device; later calls with the
/// same addresses (every later step, as the step's allocations repeat)
/// reuse it, so a step's products copy nothing after its first call. The
/// host copy stays in the map while the device may read it.
///
/// While the stream is captured, a new set answers 0 with nothing done (the
/// caller runs the group's products one call each): its copy would be from
/// pageable memory and its allocation the graph's, neither of which a
/// capture allows (a step whose buffers move each call, as ZeRO-3's
/// gathered parameters do, would otherwise fail its capture, and with it
/// the collectives enqueued after it).
CUdeviceptr getPointerArray(std::vector<uintptr_t> pointers) {
  State &state = getState();
  if (auto it = state.pointerArrays.find(pointers);
      it != state.pointerArrays.end())
    return it->second;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!check("cuStreamIsCapturing",
             cuStreamIsCapturing(state.stream, &capture)) ||
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return 0;
  if (state.pointerArrays.size() >= kMaxPointerArrays) {
    // (The stream may still read them, and the copies their host words.)
    check("cuStreamSynchronize", cuStreamSynchronize(state.stream));
    for (auto &entry : state.pointerArrays)
      check("cuMemFreeAsync", cuMemFreeAsync(entry.second, state.stream));
    state.pointerArrays.clear();
  }
  CUdeviceptr device = 0;
  size_t bytes = pointers.size() * sizeof(uintptr_t);
  if (!check("cuMemAllocAsync", cuMemAllocAsync(&device, bytes, state.stream)))
    return 0;
  auto entry = state.pointerArrays.emplace(std::move(pointers), device).first;
  if (!check("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(device, entry->first.data(),
                                                    bytes, state.stream))) {
    // (Never reused uninitialised.)
    cuMemFreeAsync(device, state.stream);
    state.pointerArrays.erase(entry);
    return 0;
  }
  ++state.productStats.pointerCopies;
  return device;
}
} // namespace

namespace {
/// The products of a group's table (ProductGroup.h) of `T` elements
/// (cuBLAS type `type`; 16-bit ones accumulated in f32) as one grouped
/// cuBLAS product (cublasSgemmGroupedBatched_64,
/// cublasGemmGroupedBatchedEx_64): a group per row, a problem per batch,
/// column-major as distopt_matmul_f32 (B first). When cuBLAS refuses it (not
/// supported on this device), each row is one strided batched call (said once
/// on stderr, counted by distopt_cuda_product_stats).
template <typename T>
void multiplyGroup(const char *name, cudaDataType type,
                   StridedMemRefType<int64_t, 2> *table) {
  if (!ensureDevice())
    return;
  State &state = getState();
  if (table->sizes[1] != DISTOPT_PRODUCT_WORDS || table->strides[1] != 1) {
    record(std::string(name) + ": a table of " +
           std::to_string(table->sizes[1]) + " words per product, not " +
           std::to_string(DISTOPT_PRODUCT_WORDS));
    return;
  }
  int64_t groups = table->sizes[0];
  std::vector<cublasOperation_t> transA(groups), transB(groups);
  std::vector<int64_t> m(groups), n(groups), k(groups), lda(groups),
      ldb(groups), ldc(groups), sizes(groups);
  std::vector<float> ones(groups, 1.0f), zeros(groups, 0.0f);
  std::vector<uintptr_t> as, bs, cs;
  std::vector<distopt::Matrix<T>> views;
  for (int64_t i = 0; i < groups; ++i) {
    const int64_t *row = table->data + table->offset + i * table->strides[0];
    distopt::Matrix<T> av = distopt::getMatrix<T>(
                           row, 0, row[DISTOPT_PRODUCT_BATCHED_A]),
                       bv = distopt::getMatrix<T>(
                           row, 1, row[DISTOPT_PRODUCT_BATCHED_B]),
                       cv = distopt::getMatrix<T>(row, 2, true);
    // (cuBLAS's A is our B: C^T = op(B)^T x op(A)^T.)
    transA[i] = row[DISTOPT_PRODUCT_TRANS_B] ? CUBLAS_OP_T : CUBLAS_OP_N;
    transB[i] = row[DISTOPT_PRODUCT_TRANS_A] ? CUBLAS_OP_T : CUBLAS_OP_N;
    m[i] = row[DISTOPT_PRODUCT_N];
    n[i] = row[DISTOPT_PRODUCT_M];
    k[i] = row[DISTOPT_PRODUCT_K];
    lda[i] = bv.ld;
    ldb[i] = av.ld;
    ldc[i] = cv.ld;
    sizes[i] = row[DISTOPT_PRODUCT_BATCH];
    for (int64_t b = 0; b < sizes[i]; ++b) {
      as.push_back(reinterpret_cast<uintptr_t>(bv.data + b * bv.batchStride));
      bs.push_back(reinterpret_cast<uintptr_t>(av.data + b * av.batchStride));
      cs.push_back(reinterpret_cast<uintptr_t>(cv.data + b * cv.batchStride));
    }
    views.insert(views.end(), {av, bv, cv});
  }
  size_t problems = as.size();
  if (problems == 0)
    return;
  constexpr bool single = std::is_same_v<T, float>;
  const char *grouped =
      single ? "cublasSgemmGroupedBatched_64" : "cublasGemmGroupedBatchedEx_64";
  // (cuBLAS may take one type's grouped products and not another's.)
  std::string group =
      single ? grouped : std::string(grouped) + " (" + name + ")";
  if (!state.refusedGroups.count(group)) {
    std::vector<uintptr_t> pointers = as;
    pointers.insert(pointers.end(), bs.begin(), bs.end());
    pointers.insert(pointers.end(), cs.begin(), cs.end());
    CUdeviceptr device = getPointerArray(std::move(pointers));
    if (!device && !state.error.empty())
      return;
    // (No array: a new set of addresses in a capture, one call each.)
    if (device) {
      auto *array = reinterpret_cast<T **>(device);
      cublasStatus_t status;
      if constexpr (single)
        status = cublasSgemmGroupedBatched_64(
            state.blas, transA.data(), transB.data(), m.data(), n.data(),
            k.data(), ones.data(), array, lda.data(), array + problems,
            ldb.data(), zeros.data(), array + 2 * problems, ldc.data(), groups,
            sizes.data());
      else
        status = cublasGemmGroupedBatchedEx_64(
            state.blas, transA.data(), transB.data(), m.data(), n.data(),
            k.data(), ones.data(), reinterpret_cast<const void *const *>(array),
            type, lda.data(),
            reinterpret_cast<const void *const *>(array + problems), type,
            ldb.data(), zeros.data(),
            reinterpret_cast<void *const *>(array + 2 * problems), type,
            ldc.data(), groups, sizes.data(), CUBLAS_COMPUTE_32F);
      if (status == CUBLAS_STATUS_SUCCESS) {
        ++state.productStats.groupedCalls;
        return;
      }
      if (status != CUBLAS_STATUS_NOT_SUPPORTED &&
          status != CUBLAS_STATUS_ARCH_MISMATCH) {
        checkBlas(grouped, status);
        return;
      }
      state.refusedGroups.insert(group);
      std::fprintf(stderr,
                   "distopt: cuBLAS refuses grouped products on this device "
                   "(%s: %s); each product of such a group is its own "
                   "call\n",
                   group.c_str(), cublasGetStatusString(status));
    }
  }
  ++state.productStats.separateCalls;
  const float one = 1.0f, zero = 0.0f;
  for (int64_t i = 0; i < groups; ++i) {
    const distopt::Matrix<T> &av = views[3 * i], &bv = views[3 * i + 1],
                             &cv = views[3 * i + 2];
    cublasStatus_t status;
    if constexpr (single)
      status = cublasSgemmStridedBatched(
          state.blas, transA[i], transB[i], m[i], n[i], k[i], &one, bv.data,
          bv.ld, bv.batchStride, av.data, av.ld, av.batchStride, &zero, cv.data,
          cv.ld, cv.batchStride, sizes[i]);
    else
      status = cublasGemmStridedBatchedEx(
          state.blas, transA[i], transB[i], m[i], n[i], k[i], &one, bv.data,
          type, bv.ld, bv.batchStride, av.data, type, av.ld, av.batchStride,
          &zero, cv.data, type, cv.ld, cv.batchStride, sizes[i],
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (!checkBlas(single ? "cublasSgemmStridedBatched"
                          : "cublasGemmStridedBatchedEx",
                   status))
      return;
  }
}
} // namespace

extern "C" {

/// distopt_matmul_group_f32 on device buffers (multiplyGroup).
void _mlir_ciface_distopt_cuda_matmul_group_f32(
    StridedMemRefType<int64_t, 2> *table) {
  multiplyGroup<float>("distopt_cuda_matmul_group_f32", CUDA_R_32F, table);
}

/// distopt_matmul_group_bf16 on device buffers (their bits).
void _mlir_ciface_distopt_cuda_matmul_group_bf16(
    StridedMemRefType<int64_t, 2> *table) {
  multiplyGroup<uint16_t>("distopt_cuda_matmul_group_bf16", CUDA_R_16BF, table);
}

/// distopt_matmul_group_f16 on device buffers (their bits).
void _mlir_ciface_distopt_cuda_matmul_group_f16(
    StridedMemRefType<int64_t, 2> *table) {
  multiplyGroup<uint16_t>("distopt_cuda_matmul_group_f16", CUDA_R_16F, table);
}

} // extern "C"

namespace {
/// distopt_matmul_f32 for 16-bit buffers of cuBLAS type `type`: 16-bit A, B
/// and C, accumulated in f32 (CUBLAS_COMPUTE_32F, the tensor cores' bf16 /
/// f16 paths), each element of C rounded once.
void multiplyHalf(const char *name, cudaDataType type,
                  UnrankedMemRefType<uint16_t> *a,
                  UnrankedMemRefType<uint16_t> *b,
                  UnrankedMemRefType<uint16_t> *c, int64_t batch, int64_t m,
                  int64_t n, int64_t k, int32_t transA, int32_t transB,
                  int32_t batchedA, int32_t batchedB) {
  if (!ensureDevice())
    return;
  distopt::Matrix<uint16_t> av = distopt::getMatrix(a, batchedA),
                            bv = distopt::getMatrix(b, batchedB),
                            cv = distopt::getMatrix(c, /*batched=*/true);
  const float one = 1.0f, zero = 0.0f;
  checkBlas(name,
            cublasGemmStridedBatchedEx(
                getState().blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, bv.data,
                type, bv.ld, bv.batchStride, av.data, type, av.ld,
                av.batchStride, &zero, cv.data, type, cv.ld, cv.batchStride,
                batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
} // namespace

extern "C" {

/// distopt_matmul_f32 on bf16 device buffers (their bits).
void _mlir_ciface_distopt_cuda_matmul_bf16(UnrankedMemRefType<uint16_t> *a,
                                           UnrankedMemRefType<uint16_t> *b,
                                           UnrankedMemRefType<uint16_t> *c,
                                           int64_t batch, int64_t m, int64_t n,
                                           int64_t k, int32_t transA,
                                           int32_t transB, int32_t batchedA,
                                           int32_t batchedB) {
  multiplyHalf("cublasGemmStridedBatchedEx (bf16)", CUDA_R_16BF, a, b, c, batch,
               m, n, k, transA, transB, batchedA, batchedB);
}

/// distopt_matmul_f32 on f16 device buffers (their bits).
void _mlir_ciface_distopt_cuda_matmul_f16(UnrankedMemRefType<uint16_t> *a,
                                          UnrankedMemRefType<uint16_t> *b,
                                          UnrankedMemRefType<uint16_t> *c,
                                          int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int32_t transA,
                                          int32_t transB, int32_t batchedA,
                                          int32_t batchedB) {
  multiplyHalf("cublasGemmStridedBatchedEx (f16)", CUDA_R_16F, a, b, c, batch,
               m, n, k, transA, transB, batchedA, batchedB);
}

} // extern "C"
