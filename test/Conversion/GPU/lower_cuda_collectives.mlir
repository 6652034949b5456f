// Every collective kind and the point-to-point transfers through the CUDA
// lowering: distrt calls on device buffers, enqueued by the nccl backend
// (lib/Runtime/NCCLBackend.cpp) on its communication stream; the module
// records the backend for the runner. The CUDA lowering starts every
// all-reduce, reduce-scatter and all-gather (dist-overlap-collectives) and
// waits for it before the first use of its result, so none is blocking;
// all-to-all and broadcast are. (format=isa: no ptxas needed.)
// RUN: dist-opt %S/../DistToRuntime/dist_to_runtime.mlir -split-input-file --dist-lower-cuda=format=isa -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: FileCheck %s --check-prefix=BLOCKING < %t.mlir
// RUN: not dist-opt %S/../DistToRuntime/placed_programs.mlir -split-input-file --dist-lower-cuda=format=isa 2>&1 | FileCheck %s --check-prefix=PLACED

// CHECK-DAG: distrt.backend = "nccl"
// CHECK-DAG: llvm.call @distrt_mlir_all_reduce_start_f32(
// CHECK-DAG: llvm.call @distrt_mlir_all_reduce_start_f64(
// CHECK-DAG: llvm.call @distrt_mlir_reduce_scatter_start_f32(
// CHECK-DAG: llvm.call @distrt_mlir_all_gather_start_bf16(
// CHECK-DAG: llvm.call @distrt_mlir_all_gather_start_f32(
// CHECK-DAG: llvm.call @distrt_mlir_all_to_all_i1(
// CHECK-DAG: llvm.call @distrt_mlir_broadcast_i8(
// CHECK-DAG: llvm.call @distrt_mlir_wait(
// CHECK-DAG: gpu.launch_func
// CHECK-NOT: llvm.call @malloc
// BLOCKING-NOT: llvm.call @distrt_mlir_all_reduce_f{{[0-9]+}}(
// BLOCKING-NOT: llvm.call @distrt_mlir_reduce_scatter_f{{[0-9]+}}(
// BLOCKING-NOT: llvm.call @distrt_mlir_all_gather_{{[bf]+[0-9]+}}(

// PLACED-DAG: distrt.backend = "nccl"
// PLACED-DAG: llvm.call @distrt_mlir_send_start_f32(
// PLACED-DAG: llvm.call @distrt_mlir_recv_start_f32(
// PLACED-DAG: llvm.call @distrt_mlir_wait(
// A parameter server's dist.serve needs a probe, which NCCL has not.
// PLACED-DAG: error: 'dist.serve' op waits for the first of several peers, which the nccl backend cannot (parameter servers need the mpi backend)
