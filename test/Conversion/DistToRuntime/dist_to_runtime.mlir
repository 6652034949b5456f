// RUN: dist-opt %s -split-input-file --dist-to-runtime | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-to-runtime=backend=mpi | FileCheck %s --check-prefix=BACKEND
// RUN: not dist-opt %s -split-input-file --dist-to-runtime=backend=gloo 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// A backend other than auto is recorded on the module for the runner.
// BACKEND: module attributes {distrt.backend = "mpi"}
// CHECK-NOT: distrt.backend
// UNKNOWN: error: dist-to-runtime: unknown backend 'gloo' (expected auto, mpi, local or nccl)

// An all-reduce copies its operand into a fresh buffer that the runtime
// reduces in place, and passes the bucket of buffers (their addresses and
// element counts) with the mesh shape and the group's axes as i64 buffers;
// the shardings and the mesh are gone afterwards.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[A:.*]]: tensor<8xf32>) -> tensor<8xf32>
func.func @all_reduce(%a: tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[]]>}) -> tensor<8xf32> attributes {dist.partitioned} {
  // CHECK-DAG: %[[SHAPE:.*]] = arith.constant dense<[2, 4]> : tensor<2xi64>
  // CHECK-DAG: %[[AXES:.*]] = arith.constant dense<1> : tensor<1xi64>
  // CHECK: %[[BUF:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: bufferization.materialize_in_destination %[[A]] in restrict writable %[[BUF]]
  // CHECK: %[[ADDRS:.*]] = memref.alloc() : memref<1xindex>
  // CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
  // CHECK: memref.store %[[P]], %[[ADDRS]][%{{.*}}] : memref<1xindex>
  // CHECK: %[[COUNTS:.*]] = arith.constant dense<8> : tensor<1xi64>
  // CHECK: call @distrt_mlir_all_reduce_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xindex>, memref<?xi64>, memref<?xi64>, memref<?xi64>, i32) -> ()
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[BUF]] restrict writable
  // CHECK: return %[[R]]
  %r = dist.all_reduce %a on @mesh axes = ["model"] : tensor<8xf32>
  return %r : tensor<8xf32>
}
// CHECK: func.func private @distrt_mlir_all_reduce_f32(memref<?xindex>, memref<?xi64>, memref<?xi64>, memref<?xi64>, i32) attributes {distopt.host_operands, distopt.sync_buffers, llvm.emit_c_interface}

// -----

// A bucket (variadic all-reduce) is one call: three buffers' addresses and
// their counts.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @bucket
func.func @bucket(%a: tensor<8xf32>, %b: tensor<2x3xf32>, %c: tensor<5xf32>) -> (tensor<8xf32>, tensor<2x3xf32>, tensor<5xf32>) {
  // CHECK: %[[ADDRS:.*]] = memref.alloc() : memref<3xindex>
  // CHECK-COUNT-3: memref.store %{{.*}}, %[[ADDRS]]
  // CHECK: arith.constant dense<[8, 6, 5]> : tensor<3xi64>
  // CHECK: call @distrt_mlir_all_reduce_f32(
  // CHECK-NOT: call @distrt_mlir_all_reduce_f32(
  // CHECK: return
  %r:3 = dist.all_reduce %a, %b, %c on @mesh axes = ["data"] : tensor<8xf32>, tensor<2x3xf32>, tensor<5xf32>
  return %r#0, %r#1, %r#2 : tensor<8xf32>, tensor<2x3xf32>, tensor<5xf32>
}

// -----

// A reduce-scatter along dim 1 packs the two column blocks as [2, 4, 3]
// blocks before the call.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @reduce_scatter_dim1
func.func @reduce_scatter_dim1(%a: tensor<4x6xf32>) -> tensor<4x3xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4x3xf32>
  // CHECK: %[[B0:.*]] = tensor.extract_slice %{{.*}}[0, 0] [4, 3] [1, 1]
  // CHECK: %[[P0:.*]] = tensor.insert_slice %[[B0]] into %[[E]][0, 0, 0] [1, 4, 3] [1, 1, 1]
  // CHECK: %[[B1:.*]] = tensor.extract_slice %{{.*}}[0, 3] [4, 3] [1, 1]
  // CHECK: tensor.insert_slice %[[B1]] into %[[P0]][1, 0, 0] [1, 4, 3] [1, 1, 1]
  // CHECK: call @distrt_mlir_reduce_scatter_f32
  %r = dist.reduce_scatter %a on @mesh axes = ["data"] scatter_dims = [1] : tensor<4x6xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// A local slice starts at the device's group index times the slice size.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @local_slice
func.func @local_slice(%a: tensor<8x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[RANK:.*]] = call @distrt_mlir_group_rank(%{{.*}}, %{{.*}}) : (memref<?xi64>, memref<?xi64>) -> i64
  // CHECK: %[[I:.*]] = arith.index_cast %[[RANK]] : i64 to index
  // CHECK: %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
  // CHECK: tensor.extract_slice %{{.*}}[%[[OFF]], 0] [2, 3] [1, 1] : tensor<8x3xf32> to tensor<2x3xf32>
  %r = dist.local_slice %a on @mesh axes = ["data"] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// An all-reduce start copies its operands into buffers and starts one
// nonblocking reduction per element type (a request handle); the first wait
// on a request completes it and only then are the buffers read. Work
// between them overlaps.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @all_reduce_start
func.func @all_reduce_start(%a: tensor<8xf32>, %b: tensor<4xf64>, %c: tensor<8xf32>, %d: tensor<3xf32>) -> (tensor<8xf32>, tensor<4xf64>, tensor<8xf32>, tensor<3xf32>) {
  // CHECK: %[[BA:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: %[[BB:.*]] = memref.alloc() : memref<4xf64>
  // CHECK: %[[BD:.*]] = memref.alloc() : memref<3xf32>
  // CHECK: arith.constant dense<[8, 3]> : tensor<2xi64>
  // CHECK: arith.constant dense<4> : tensor<1xi64>
  // CHECK: %[[RF32:.*]] = call @distrt_mlir_all_reduce_start_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xindex>, memref<?xi64>, memref<?xi64>, memref<?xi64>, i32) -> i64
  // CHECK: %[[RF64:.*]] = call @distrt_mlir_all_reduce_start_f64
  // CHECK: %[[M:.*]] = arith.mulf
  // CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[BA]]
  // CHECK: call @distrt_mlir_wait(%[[RF32]], %[[PA]]) : (i64, index) -> ()
  // CHECK: %[[TA:.*]] = bufferization.to_tensor %[[BA]] restrict writable
  // CHECK: call @distrt_mlir_wait(%[[RF64]], %{{.*}}) : (i64, index) -> ()
  // CHECK: %[[TB:.*]] = bufferization.to_tensor %[[BB]] restrict writable
  // The f32 request is complete already.
  // CHECK-NOT: call @distrt_mlir_wait
  // CHECK: %[[TD:.*]] = bufferization.to_tensor %[[BD]] restrict writable
  // CHECK: return %[[TA]], %[[TB]], %[[M]], %[[TD]]
  %f0, %f1, %f2 = dist.all_reduce_start %a, %b, %d on @mesh axes = ["data"] : tensor<8xf32>, tensor<4xf64>, tensor<3xf32> -> !dist.future<tensor<8xf32>>, !dist.future<tensor<4xf64>>, !dist.future<tensor<3xf32>>
  %m = arith.mulf %c, %c : tensor<8xf32>
  %r0, %r1 = dist.wait %f0, %f1 : !dist.future<tensor<8xf32>>, !dist.future<tensor<4xf64>>
  %r2 = dist.wait %f2 : !dist.future<tensor<3xf32>>
  return %r0, %r1, %m, %r2 : tensor<8xf32>, tensor<4xf64>, tensor<8xf32>, tensor<3xf32>
}
// CHECK: func.func private @distrt_mlir_all_reduce_start_f32(memref<?xindex>, memref<?xi64>, memref<?xi64>, memref<?xi64>, i32) -> i64 attributes {distopt.host_operands, llvm.emit_c_interface}
// CHECK: func.func private @distrt_mlir_wait(i64, index) attributes {distopt.host_operands, distopt.sync_buffers, llvm.emit_c_interface}

// -----

// Reduce-scatter and all-gather starts are nonblocking too: the send and
// receive buffers are allocated at the start, the wait completes the request
// (taking the send buffer's address, so that it stays allocated until then)
// and reads the receive buffer (laid out along the gather dim afterwards).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @scatter_gather_start
func.func @scatter_gather_start(%a: tensor<8xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  // CHECK: %[[RS_SEND:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: %[[RS_RECV:.*]] = memref.alloc() : memref<4xf32>
  // CHECK: %[[RS:.*]] = call @distrt_mlir_reduce_scatter_start_f32({{.*}}) : (memref<*xf32>, memref<*xf32>, memref<?xi64>, memref<?xi64>, i32) -> i64
  // CHECK: %[[AG_RECV:.*]] = memref.alloc() : memref<2x4xf32>
  // CHECK: %[[AG:.*]] = call @distrt_mlir_all_gather_start_f32({{.*}}) : (memref<*xf32>, memref<*xf32>, memref<?xi64>, memref<?xi64>) -> i64
  // CHECK: %[[KEEP:.*]] = memref.extract_aligned_pointer_as_index %[[RS_SEND]]
  // CHECK: call @distrt_mlir_wait(%[[RS]], %[[KEEP]])
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[RS_RECV]] restrict writable
  // CHECK: call @distrt_mlir_wait(%[[AG]], %{{.*}})
  // CHECK: %[[G:.*]] = bufferization.to_tensor %[[AG_RECV]] restrict writable : memref<2x4xf32> to tensor<2x4xf32>
  // CHECK: tensor.extract_slice %[[G]][0, 0] [1, 4] [1, 1]
  // CHECK: %[[S:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[4] [4] [1]
  // CHECK: return %[[R]], %[[S]]
  %f = dist.reduce_scatter_start %a on @mesh axes = ["data"] scatter_dims = [0] : tensor<8xf32> -> !dist.future<tensor<4xf32>>
  %g = dist.all_gather_start %b on @mesh axes = ["data"] gather_dim = 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
  %r, %s = dist.wait %f, %g : !dist.future<tensor<4xf32>>, !dist.future<tensor<8xf32>>
  return %r, %s : tensor<4xf32>, tensor<8xf32>
}

// -----

// Collectives that only move elements take i1 and i8 as bytes and f16 and
// bf16 as 16-bit words (a relu mask resharded by sequence parallelism,
// difftest seed 1071), each through its own entry point.
dist.mesh @mesh {axes = ["model"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @narrow_moves
func.func @narrow_moves(%mask: tensor<4x4xi1>, %h: tensor<4xbf16>, %b: tensor<4xi8>) -> (tensor<2x8xi1>, tensor<8xbf16>, tensor<4xi8>) {
  // CHECK: call @distrt_mlir_all_to_all_i1({{.*}}) : (memref<*xi1>, memref<*xi1>, memref<?xi64>, memref<?xi64>) -> ()
  %m = dist.all_to_all %mask on @mesh axes = ["model"] split_dim = 0 concat_dim = 1 : tensor<4x4xi1> -> tensor<2x8xi1>
  // CHECK: call @distrt_mlir_all_gather_bf16({{.*}}) : (memref<*xbf16>, memref<*xbf16>, memref<?xi64>, memref<?xi64>) -> ()
  %g = dist.all_gather %h on @mesh axes = ["model"] gather_dim = 0 : tensor<4xbf16> -> tensor<8xbf16>
  // CHECK: call @distrt_mlir_broadcast_i8({{.*}}) : (memref<*xi8>, memref<?xi64>, memref<?xi64>, i64) -> ()
  %c = dist.broadcast %b on @mesh axes = ["model"] root = 0 : tensor<4xi8>
  return %m, %g, %c : tensor<2x8xi1>, tensor<8xbf16>, tensor<4xi8>
}
