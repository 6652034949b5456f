//===- FakeBlas.cpp - cuBLAS and cuBLASLt over the fake driver ------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// libcublas.so and libcublasLt.so for the fake driver (FakeDriver.cpp):
// the products libdistopt_cuda calls, checked and ordered but not
// computed. Each operand a product reads or writes, given its shape,
// leading dimension and batch stride, must lie inside one live device
// allocation when the product runs (so that a grouped product's pointer
// array is read after the copy that fills it); a handle without its own
// workspace may not be used in a capture (cuBLAS would allocate); each
// product is one kernel on the handle's stream.
//
// Built twice, as libcublas.so and as libcublasLt.so (FAKE_CUBLAS_LT).
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace fakecuda;

namespace {
/// One operand of a product: `rows` x `cols` column-major elements of
/// `elementBytes`, `ld` apart, `batch` of them `stride` elements apart.
struct Operand {
  const void *data;
  int64_t rows, cols, ld, stride, batch, elementBytes;
  const char *name;
};

/// True when every element `operand` touches is in device memory.
bool checkOperand(const std::string &call, const Operand &operand) {
  std::string what = call + " " + operand.name;
  if (operand.ld < std::max<int64_t>(operand.rows, 1)) {
    violate(what + ": leading dimension " + std::to_string(operand.ld) +
            " below its " + std::to_string(operand.rows) + " rows");
    return false;
  }
  if (!operand.rows || !operand.cols || !operand.batch)
    return true;
  int64_t last = (operand.batch - 1) * operand.stride +
                 (operand.cols - 1) * operand.ld + operand.rows;
  return checkDevice(operand.data, size_t(last * operand.elementBytes), what);
}

/// Op(X) of `rows` x `cols` stored as X: the stored shape.
Operand stored(const char *name, const void *data, bool transposed,
               int64_t rows, int64_t cols, int64_t ld, int64_t stride,
               int64_t batch, int64_t elementBytes) {
  return transposed
             ? Operand{data, cols, rows, ld, stride, batch, elementBytes, name}
             : Operand{data, rows, cols, ld, stride, batch, elementBytes, name};
}

int64_t getElementBytes(cudaDataType type) {
  switch (type) {
  case CUDA_R_16F:
  case CUDA_R_16BF:
    return 2;
  case CUDA_R_32F:
    return 4;
  case CUDA_R_64F:
    return 8;
  default:
    return 0;
  }
}

/// Destroys a handle `call` was given; a violation when it is not live.
template <typename T> cublasStatus_t destroy(T *handle, const char *call) {
  if (getHandles<T>().destroy(handle))
    return CUBLAS_STATUS_SUCCESS;
  violate(std::string(call) + " of a handle that is not live");
  return CUBLAS_STATUS_INVALID_VALUE;
}
} // namespace

#ifndef FAKE_CUBLAS_LT

struct cublasContext {
  CUstream stream = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

namespace {
/// Checks the handle and enqueues a product whose operands are checked
/// when it runs.
cublasStatus_t enqueueProduct(cublasHandle_t handle, const std::string &call,
                              std::function<std::vector<Operand>()> operands) {
  if (!handle) {
    violate(call + ": a null handle");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  if (isCapturing(handle->stream) && !handle->workspace) {
    violate(call + " in a capture with no cublasSetWorkspace: cuBLAS "
                   "would allocate");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  CUresult result =
      enqueue(handle->stream, Work::Product, call, [call, operands] {
        for (const Operand &operand : operands())
          checkOperand(call, operand);
      });
  return result == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                : CUBLAS_STATUS_EXECUTION_FAILED;
}

/// The three operands of C = op(A) op(B), column-major.
std::vector<Operand>
getOperands(cublasOperation_t transA, cublasOperation_t transB, int64_t m,
            int64_t n, int64_t k, const void *a, int64_t lda, int64_t strideA,
            const void *b, int64_t ldb, int64_t strideB, const void *c,
            int64_t ldc, int64_t strideC, int64_t batch, int64_t elementBytes) {
  return {stored("A", a, transA != CUBLAS_OP_N, m, k, lda, strideA, batch,
                 elementBytes),
          stored("B", b, transB != CUBLAS_OP_N, k, n, ldb, strideB, batch,
                 elementBytes),
          {c, m, n, ldc, strideC, batch, elementBytes, "C"}};
}
} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  *handle = getHandles<cublasContext>().create();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  return destroy(handle, "cublasDestroy");
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace,
                                  size_t bytes) {
  if (bytes && !checkDevice(workspace, bytes, "cublasSetWorkspace"))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspaceBytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  default:
    return "CUBLAS_STATUS_UNKNOWN";
  }
}

const char *cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "success"
                                         : "the fake cuBLAS refused the call";
}

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *, float *c, int ldc, long long strideC, int batch) {
  std::vector<Operand> operands =
      getOperands(transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c,
                  ldc, strideC, batch, 4);
  return enqueueProduct(handle, "cublasSgemmStridedBatched",
                        [operands] { return operands; });
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const void *, const void *a, cudaDataType typeA,
    int lda, long long strideA, const void *b, cudaDataType typeB, int ldb,
    long long strideB, const void *, void *c, cudaDataType typeC, int ldc,
    long long strideC, int batch, cublasComputeType_t, cublasGemmAlgo_t) {
  int64_t bytes = getElementBytes(typeA);
  if (!bytes || typeB != typeA || typeC != typeA) {
    violate("cublasGemmStridedBatchedEx: operand types the fake does not "
            "know or that differ");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  std::vector<Operand> operands =
      getOperands(transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, c,
                  ldc, strideC, batch, bytes);
  return enqueueProduct(handle, "cublasGemmStridedBatchedEx",
                        [operands] { return operands; });
}

namespace {
/// A grouped product (`call`) of `elementBytes` elements: its pointer
/// arrays checked now, each problem's operands when it runs.
cublasStatus_t enqueueGrouped(cublasHandle_t handle, const std::string &call,
                              const cublasOperation_t transA[],
                              const cublasOperation_t transB[],
                              const int64_t m[], const int64_t n[],
                              const int64_t k[], const void *const as[],
                              const int64_t lda[], const void *const bs[],
                              const int64_t ldb[], const void *const cs[],
                              const int64_t ldc[], int64_t groups,
                              const int64_t sizes[], int64_t elementBytes) {
  int64_t problems = 0;
  for (int64_t g = 0; g < groups; ++g)
    problems += sizes[g];
  // The pointer arrays are device memory, filled by a copy enqueued before.
  for (const void *array :
       {static_cast<const void *>(as), static_cast<const void *>(bs),
        static_cast<const void *>(cs)})
    if (!checkDevice(array, problems * sizeof(void *), call + " pointer array"))
      return CUBLAS_STATUS_INVALID_VALUE;
  std::vector<cublasOperation_t> ta(transA, transA + groups),
      tb(transB, transB + groups);
  std::vector<int64_t> ms(m, m + groups), ns(n, n + groups), ks(k, k + groups),
      la(lda, lda + groups), lb(ldb, ldb + groups), lc(ldc, ldc + groups),
      counts(sizes, sizes + groups);
  return enqueueProduct(handle, call, [=] {
    std::vector<Operand> operands;
    int64_t problem = 0;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < counts[g]; ++i, ++problem) {
        std::vector<Operand> one = getOperands(
            ta[g], tb[g], ms[g], ns[g], ks[g], as[problem], la[g], 0,
            bs[problem], lb[g], 0, cs[problem], lc[g], 0, 1, elementBytes);
        operands.insert(operands.end(), one.begin(), one.end());
      }
    return operands;
  });
}
} // namespace

cublasStatus_t cublasSgemmGroupedBatched_64(
    cublasHandle_t handle, const cublasOperation_t transA[],
    const cublasOperation_t transB[], const int64_t m[], const int64_t n[],
    const int64_t k[], const float[], const float *const as[],
    const int64_t lda[], const float *const bs[], const int64_t ldb[],
    const float[], float *const cs[], const int64_t ldc[], int64_t groups,
    const int64_t sizes[]) {
  return enqueueGrouped(handle, "cublasSgemmGroupedBatched_64", transA, transB,
                        m, n, k, reinterpret_cast<const void *const *>(as), lda,
                        reinterpret_cast<const void *const *>(bs), ldb,
                        reinterpret_cast<const void *const *>(cs), ldc, groups,
                        sizes, 4);
}

cublasStatus_t cublasGemmGroupedBatchedEx_64(
    cublasHandle_t handle, const cublasOperation_t transA[],
    const cublasOperation_t transB[], const int64_t m[], const int64_t n[],
    const int64_t k[], const void *, const void *const as[],
    cudaDataType_t typeA, const int64_t lda[], const void *const bs[],
    cudaDataType_t typeB, const int64_t ldb[], const void *, void *const cs[],
    cudaDataType_t typeC, const int64_t ldc[], int64_t groups,
    const int64_t sizes[], cublasComputeType_t compute) {
  int64_t bytes = getElementBytes(typeA);
  if (!bytes || typeB != typeA || typeC != typeA ||
      compute != CUBLAS_COMPUTE_32F) {
    violate("cublasGemmGroupedBatchedEx_64: operand types the fake does not "
            "know or that differ, or a compute type other than 32F");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return enqueueGrouped(handle, "cublasGemmGroupedBatchedEx_64", transA, transB,
                        m, n, k, as, lda, bs, ldb,
                        reinterpret_cast<const void *const *>(cs), ldc, groups,
                        sizes, bytes);
}

#else // FAKE_CUBLAS_LT

struct cublasLtContext {};

namespace {
struct MatmulDesc {
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  void *aux = nullptr;
  int64_t auxLd = 0;
};
struct Layout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
struct Preference {
  size_t workspaceBytes = 0;
};

template <typename T> T *get(void *handle) { return static_cast<T *>(handle); }
} // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = getHandles<cublasLtContext>().create();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return destroy(handle, "cublasLtDestroy");
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t, cudaDataType_t) {
  *desc =
      reinterpret_cast<cublasLtMatmulDesc_t>(getHandles<MatmulDesc>().create());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  return destroy(get<MatmulDesc>(desc), "cublasLtMatmulDescDestroy");
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                               cublasLtMatmulDescAttributes_t attribute,
                               const void *value, size_t bytes) {
  MatmulDesc &d = *get<MatmulDesc>(desc);
  auto read = [&](auto &field) {
    if (bytes != sizeof(field))
      return false;
    std::memcpy(&field, value, bytes);
    return true;
  };
  bool ok = true;
  switch (attribute) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    ok = read(d.transA);
    break;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    ok = read(d.transB);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    ok = read(d.epilogue);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    ok = read(d.bias);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    ok = read(d.aux);
    break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    ok = read(d.auxLd);
    break;
  default:
    break;
  }
  if (!ok) {
    violate("cublasLtMatmulDescSetAttribute: attribute " +
            std::to_string(int(attribute)) + " given " + std::to_string(bytes) +
            " bytes");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  Layout *created = getHandles<Layout>().create();
  *created = Layout{type, rows, cols, ld};
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(created);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return destroy(get<Layout>(layout), "cublasLtMatrixLayoutDestroy");
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  *preference = reinterpret_cast<cublasLtMatmulPreference_t>(
      getHandles<Preference>().create());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  return destroy(get<Preference>(preference),
                 "cublasLtMatmulPreferenceDestroy");
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t preference,
    cublasLtMatmulPreferenceAttributes_t attribute, const void *value,
    size_t bytes) {
  if (attribute == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
      bytes == sizeof(size_t))
    std::memcpy(&get<Preference>(preference)->workspaceBytes, value, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
    cublasLtMatmulPreference_t, int requested,
    cublasLtMatmulHeuristicResult_t *results, int *found) {
  *found = requested > 0 ? 1 : 0;
  if (*found) {
    std::memset(&results[0], 0, sizeof(results[0]));
    results[0].state = CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
               const void *alpha, const void *a, cublasLtMatrixLayout_t la,
               const void *b, cublasLtMatrixLayout_t lb, const void *beta,
               const void *c, cublasLtMatrixLayout_t lc, void *d,
               cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *,
               void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  const char *call = "cublasLtMatmul";
  if (!handle || !alpha || !beta) {
    violate("cublasLtMatmul: a null handle, alpha or beta");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const MatmulDesc &op = *get<MatmulDesc>(desc);
  const Layout &A = *get<Layout>(la), &B = *get<Layout>(lb),
               &C = *get<Layout>(lc), &D = *get<Layout>(ld);
  int64_t bytes = getElementBytes(D.type);
  // op(A) is m x k, op(B) k x n, C and D m x n.
  uint64_t m = op.transA == CUBLAS_OP_N ? A.rows : A.cols,
           k = op.transA == CUBLAS_OP_N ? A.cols : A.rows,
           kB = op.transB == CUBLAS_OP_N ? B.rows : B.cols,
           n = op.transB == CUBLAS_OP_N ? B.cols : B.rows;
  if (k != kB || C.rows != m || C.cols != n || D.rows != m || D.cols != n) {
    violate("cublasLtMatmul: layouts of mismatched shapes");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::vector<Operand> operands = {
      {a, int64_t(A.rows), int64_t(A.cols), A.ld, 0, 1, bytes, "A"},
      {b, int64_t(B.rows), int64_t(B.cols), B.ld, 0, 1, bytes, "B"},
      {c, int64_t(C.rows), int64_t(C.cols), C.ld, 0, 1, bytes, "C"},
      {d, int64_t(D.rows), int64_t(D.cols), D.ld, 0, 1, bytes, "D"}};
  bool bias = op.epilogue == CUBLASLT_EPILOGUE_BIAS ||
              op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
              op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (bias)
    operands.push_back(
        {op.bias, int64_t(m), 1, int64_t(m), 0, 1, bytes, "bias"});
  if (op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
      op.epilogue == CUBLASLT_EPILOGUE_GELU_AUX)
    operands.push_back(
        {op.aux, int64_t(m), int64_t(n), op.auxLd, 0, 1, bytes, "aux"});
  if (workspaceBytes)
    operands.push_back({workspace, int64_t(workspaceBytes), 1,
                        int64_t(workspaceBytes), 0, 1, 1, "workspace"});
  CUstream s = reinterpret_cast<CUstream>(stream);
  if (isCapturing(s) && !workspaceBytes)
    violate("cublasLtMatmul in a capture without a workspace");
  CUresult result = enqueue(s, Work::Product, call, [operands] {
    for (const Operand &operand : operands)
      checkOperand("cublasLtMatmul", operand);
  });
  return result == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                : CUBLAS_STATUS_EXECUTION_FAILED;
}

#endif // FAKE_CUBLAS_LT
