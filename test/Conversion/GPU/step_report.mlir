// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-gpu-step-report
// RUN: dist-opt %examples/mlp.mlir --dist-lower-cuda="format=isa report=true" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=MLP
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa report=true" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: dist-opt %examples/transformer_block.mlir --dist-lower-cuda="format=isa report=true ops-per-function=8" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: dist-opt %examples/transformer_block.mlir --dist-mirrored=replicas=2 -o %t.mirrored.mlir
// RUN: dist-opt %t.mirrored.mlir --dist-lower-cuda="format=isa report=true" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=MIRRORED
// RUN: dist-opt %examples/embedding_classifier.mlir --dist-lower-cuda="format=isa report=true" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=EMBED
// RUN: dist-opt %examples/mlp.mlir --train-derive-eval -o %t.eval.mlir
// RUN: dist-opt %t.eval.mlir --dist-lower-cuda="format=isa report=true" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=EVAL

// What one call enqueues: a part's work once per call, a loop's per trip,
// host copies of globals, a blocking wait; a private part gets no remark.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel { gpu.return }
  }
  memref.global "private" constant @table : memref<4xf32> = dense<1.0>
  func.func private @distopt_matmul_f32(memref<*xf32>)
  func.func private @part(%b: memref<*xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    call @distopt_matmul_f32(%b) : (memref<*xf32>) -> ()
    return
  }
  // expected-remark @below {{per call: 7 kernel launches, 4 library calls, 0 collectives (11 launches), 1 device allocations, 1 frees, 1 host-device copies, 1 host waits}}
  func.func @step(%b: memref<*xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %t = gpu.wait async
    %table = memref.get_global @table : memref<4xf32>
    %d, %t1 = gpu.alloc async [%t] () : memref<4xf32>
    %t2 = gpu.memcpy async [%t1] %d, %table : memref<4xf32>, memref<4xf32>
    call @part(%b) : (memref<*xf32>) -> ()
    scf.for %i = %c0 to %c3 step %c1 {
      func.call @part(%b) : (memref<*xf32>) -> ()
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    }
    %t3 = gpu.dealloc async [%t2] %d : memref<4xf32>
    gpu.wait [%t3]
    return
  }
}

// -----

// Workspaces: each function's once, however often it is called; its
// lookups per call, and not launches.
module attributes {gpu.container_module} {
  func.func private @distopt_workspace(i64, i64) -> memref<?xi8>
  func.func private @part() attributes {distopt.workspace = {buffer_bytes = 512 : i64, buffers = 2 : i64, bytes = 256 : i64}} {
    %key = arith.constant 2 : i64
    %bytes = arith.constant 256 : i64
    %ws = call @distopt_workspace(%key, %bytes) : (i64, i64) -> memref<?xi8>
    return
  }
  // expected-remark @below {{per call: 0 kernel launches, 0 library calls, 0 collectives (0 launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; 5 buffers in workspaces of 1280 bytes kept across calls (3 lookups)}}
  func.func @step() attributes {distopt.workspace = {buffer_bytes = 1024 : i64, buffers = 3 : i64, bytes = 1024 : i64}} {
    %key = arith.constant 1 : i64
    %bytes = arith.constant 1024 : i64
    %ws = call @distopt_workspace(%key, %bytes) : (i64, i64) -> memref<?xi8>
    call @part() : () -> ()
    call @part() : () -> ()
    return
  }
}

// -----

// A loop of unknown trip count is counted once, and the remark says so.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k() kernel { gpu.return }
  }
  // expected-remark @below {{per call: 1 kernel launches, 0 library calls, 0 collectives (1 launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits (1 loop(s) of unknown trip count counted once)}}
  func.func @step(%n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    }
    return
  }
}

// -----

func.func private @again() {
  call @loop() : () -> ()
  return
}
// expected-error @below {{'func.func' op calls itself, so a call's work is unbounded}}
func.func private @loop() {
  call @again() : () -> ()
  return
}
func.func @step() {
  call @loop() : () -> ()
  return
}

// The MLP (its forward products and the three of the backward as cuBLAS
// calls, the backward's two independent ones a grouped call; the rest in
// kernels, independent ops sharing a launch) and the transformer block
// within its budget of 40 launches (61 with a call per product and before
// a row group shared its level's launch, 132 with a kernel per op): no
// host copy or wait inside the step. Every intermediate is in the step's
// workspace (dist-plan-workspace: 15 and 100 allocations per call before),
// and so is the loss (a result the runner only reads); the state is
// updated in place, the block's 18 Adam step counts too: nothing is
// allocated per call, as a captured CUDA graph needs. The block
// reductions' scratch rows are in shared memory, not the workspace
// (dist-promote-block-scratch: 17 and 93 buffers before). Biases,
// residuals and GELU are in their products' calls (dist-matmul-epilogues:
// 12 and 70 buffers, 25 kernels in the block, before). One buffer more
// than 11 and 67: the scalar empty tensors CSE had merged each have their
// own (dist-rematerialize-fills), so independent scalar work does not
// wait for one another.
// MLP: remark: per call: 9 kernel launches, 4 library calls, 0 collectives (13 launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; 12 buffers in workspaces of {{[0-9]+}} bytes kept across calls (1 lookups)
// BLOCK: remark: per call: {{[0-9]+}} kernel launches, {{[0-9]+}} library calls, 0 collectives ({{[1-3]?[0-9]|40}} launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; 68 buffers in workspaces of {{[0-9]+}} bytes kept across calls (1 lookups)
// Cut into parts of 8 ops (dist-split-functions, as a large model is): the
// buffers one part hands to the next allocated by the step and passed in
// (bufferization's results-to-out-params), so the step's workspace holds
// them (105 device allocations and 104 frees per call before), and the
// parts share one workspace, the largest part's (28.4 MB of workspaces;
// 105 MB with one per part, 25.2 MB uncut).
// SPLIT: remark: per call: {{[0-9]+}} kernel launches, {{[0-9]+}} library calls, 0 collectives ({{[0-9]+}} launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; {{[0-9]+}} buffers in workspaces of {{[1-3][0-9][0-9][0-9][0-9][0-9][0-9][0-9]}} bytes kept across calls ({{[0-9]+}} lookups)
// With its derived evaluation function (which names the step in
// `train.eval_of`), the step still updates its state in place: no device
// allocation per call (8, a copy of each state array, before); the
// evaluation's loss and accuracy are in its workspace.
// EVAL: remark: per call: 9 kernel launches, 4 library calls, 0 collectives (13 launches), 0 device allocations, 0 frees
// EVAL: remark: per call: {{[0-9]+}} kernel launches, {{[0-9]+}} library calls, 0 collectives ({{[0-9]+}} launches), 0 device allocations, 0 frees
// The mirrored block (2 replicas): its 2 gradient buckets' all-reduces
// started where the backward produced them and waited for before the
// optimizer reads them (on the GPU: NCCL on the communication stream,
// overlapping the backward's kernels in between), no host wait, and no
// copy of the collectives' counts and mesh shape to the device (the host
// reads them: 4 allocations and 4 copies per call before).
// MIRRORED: remark: per call: {{[0-9]+}} kernel launches, {{[0-9]+}} library calls, 2 collectives ({{[0-9]+}} launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; {{[0-9]+}} buffers in workspaces of {{[0-9]+}} bytes kept across calls (1 lookups); 2 collectives started on the communication stream, 2 waits for them on the step's
// The embedding classifier reads a constant global in a kernel: its device
// copy, made once per process, not a copy and an allocation per call (1
// and 1 before).
// EMBED: remark: per call: 7 kernel launches, 2 library calls, 0 collectives (9 launches), 0 device allocations, 0 frees, 0 host-device copies, 0 host waits; {{[0-9]+}} buffers in workspaces of {{[0-9]+}} bytes kept across calls (1 lookups); 1 constants read from their device copies (copied once)
