// RUN: dist-opt %s -split-input-file --dist-plan-workspace | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-plan-workspace="alignment=64" | FileCheck %s --check-prefix=A64
// RUN: not dist-opt %s --dist-plan-workspace="alignment=24" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: dist-plan-workspace: alignment=24 is not a positive power of two

// Three buffers: %a (4000 bytes) and %b (1024) live at once, %c (4000)
// only after %a is freed. The largest first: %a at 0, %c shares it (never
// live with %a), %b after %a's end rounded up to 256 (4096; 4032 at an
// alignment of 64). Every free goes; one lookup at the entry.
// CHECK-LABEL: func.func @lifetimes
// CHECK-SAME:    distopt.workspace = {buffer_bytes = 9024 : i64, buffers = 3 : i64, bytes = 5120 : i64, key = {{-?[0-9]+}} : i64, results = 0 : i64}
// CHECK-DAG:     %[[KEY:.*]] = arith.constant {{-?[0-9]+}} : i64
// CHECK-DAG:     %[[BYTES:.*]] = arith.constant 5120 : i64
// CHECK:         %[[WS:.*]] = call @distopt_workspace(%[[KEY]], %[[BYTES]]) : (i64, i64) -> memref<?xi8>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[A:.*]] = memref.view %[[WS]][%[[C0]]][] : memref<?xi8> to memref<1000xf32>
// CHECK:         %[[C4096:.*]] = arith.constant 4096 : index
// CHECK:         %[[B:.*]] = memref.view %[[WS]][%[[C4096]]][] : memref<?xi8> to memref<256xf32>
// CHECK:         call @use(%[[A]], %[[B]])
// CHECK:         %[[C0B:.*]] = arith.constant 0 : index
// CHECK:         %[[C:.*]] = memref.view %[[WS]][%[[C0B]]][] : memref<?xi8> to memref<1000xf32>
// CHECK:         call @use(%[[C]], %[[B]])
// CHECK-NOT:     memref.dealloc
// CHECK:         return
// CHECK:       func.func private @distopt_workspace(i64, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// A64-LABEL: func.func @lifetimes
// A64-SAME:    bytes = 5056 : i64
// A64:         arith.constant 4032 : index
func.func private @use(memref<1000xf32>, memref<256xf32>) attributes {distopt.sync_buffers}
func.func @lifetimes() {
  %a = memref.alloc() : memref<1000xf32>
  %b = memref.alloc() : memref<256xf32>
  call @use(%a, %b) : (memref<1000xf32>, memref<256xf32>) -> ()
  memref.dealloc %a : memref<1000xf32>
  %c = memref.alloc() : memref<1000xf32>
  call @use(%c, %b) : (memref<1000xf32>, memref<256xf32>) -> ()
  memref.dealloc %c : memref<1000xf32>
  memref.dealloc %b : memref<256xf32>
  return
}

// -----

// Buffers whose address leaves the plan's sight stay allocations: one
// returned (no recorded step says its caller only reads it), one the host stores into (a collective's address list), one
// handed to a call that may keep it (not `distopt.sync_buffers`), one of a
// dynamic size, one freed in another block. A buffer whose address is
// taken (a grouped product's table holds it) and one a kernel (a parallel
// loop) stores into are planned; so is one of a loop's body, live for its
// iteration.
// CHECK-LABEL: func.func @escapes
// CHECK-SAME:    distopt.workspace = {buffer_bytes = 128 : i64, buffers = 3 : i64, bytes = 256 : i64, key = {{-?[0-9]+}} : i64, results = 0 : i64}
// CHECK:         call @distopt_workspace
// CHECK:         %[[RET:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[HOST:.*]] = memref.alloc() : memref<2xi64>
// CHECK:         memref.store %{{.*}}, %[[HOST]]
// CHECK:         memref.dealloc %[[HOST]]
// CHECK:         %[[KEPT:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         call @start(%[[KEPT]])
// CHECK:         memref.dealloc %[[KEPT]]
// CHECK:         %[[DYN:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         memref.dealloc %[[DYN]]
// CHECK:         %[[OTHER:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         scf.if
// CHECK:           memref.dealloc %[[OTHER]]
// CHECK:         %[[PTR:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<8xf32>
// CHECK:         memref.extract_aligned_pointer_as_index %[[PTR]]
// CHECK:         %[[K:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<16xf32>
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %[[K]]
// CHECK:         scf.for
// CHECK:           %[[BODY:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<8xf32>
// CHECK:           call @sync(%[[BODY]])
// CHECK-NOT:       memref.dealloc
// CHECK:         return %[[RET]]
func.func private @start(memref<8xf32>)
func.func private @sync(memref<8xf32>) attributes {distopt.sync_buffers}
func.func private @sync16(memref<16xf32>) attributes {distopt.sync_buffers}
func.func @escapes(%n: index, %flag: i1) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : i64
  %ret = memref.alloc() : memref<4xf32>
  %host = memref.alloc() : memref<2xi64>
  memref.store %i0, %host[%c0] : memref<2xi64>
  memref.dealloc %host : memref<2xi64>
  %kept = memref.alloc() : memref<8xf32>
  call @start(%kept) : (memref<8xf32>) -> ()
  memref.dealloc %kept : memref<8xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %dyn : memref<?xf32>
  %other = memref.alloc() : memref<8xf32>
  scf.if %flag {
    memref.dealloc %other : memref<8xf32>
  }
  %ptr = memref.alloc() : memref<8xf32>
  %address = memref.extract_aligned_pointer_as_index %ptr : memref<8xf32> -> index
  memref.dealloc %ptr : memref<8xf32>
  %k = memref.alloc() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %zero, %k[%i] : memref<16xf32>
    scf.reduce
  }
  call @sync16(%k) : (memref<16xf32>) -> ()
  memref.dealloc %k : memref<16xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %body = memref.alloc() : memref<8xf32>
    func.call @sync(%body) : (memref<8xf32>) -> ()
    memref.dealloc %body : memref<8xf32>
  }
  return %ret : memref<4xf32>
}

// -----

// A part that returns (a view of) its argument: a buffer passed to it lives
// on in its result, so it stays an allocation; one passed to a part that
// returns nothing of it is planned.
// CHECK-LABEL: func.func private @identity
// CHECK-LABEL: func.func private @consume
// CHECK-LABEL: func.func @caller
// CHECK-SAME:    buffers = 1 : i64
// CHECK:         %[[KEPT:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         call @identity(%[[KEPT]])
// CHECK:         %[[V:.*]] = memref.view
// CHECK:         call @consume(%[[V]])
func.func private @identity(%x: memref<8xf32>) -> memref<8xf32> attributes {distopt.sync_buffers} {
  return %x : memref<8xf32>
}
func.func private @consume(%x: memref<8xf32>) attributes {distopt.sync_buffers} {
  return
}
func.func @caller() -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<8xf32>
  %r = call @identity(%a) : (memref<8xf32>) -> memref<8xf32>
  %v = memref.load %r[%c0] : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  call @consume(%b) : (memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  return %v : f32
}

// -----

// A recorded step: its loss and metric (results the runner only reads,
// never takes back as arguments) live in the workspace, valid until the
// next call, live to the return (the loss at 1024, after %t, with which
// it is live); its state result stays an allocation (the runner keeps it
// as the next call's argument). A function that is not the recorded entry
// keeps its results allocations.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    distopt.workspace = {buffer_bytes = 1032 : i64, buffers = 3 : i64, bytes = 1536 : i64, key = {{-?[0-9]+}} : i64, results = 2 : i64}
// CHECK:         %[[WS:.*]] = call @distopt_workspace
// CHECK:         %[[T:.*]] = memref.view %[[WS]][%{{.*}}][] : memref<?xi8> to memref<256xf32>
// CHECK:         %[[C1024:.*]] = arith.constant 1024 : index
// CHECK:         %[[LOSS:.*]] = memref.view %[[WS]][%[[C1024]]][] : memref<?xi8> to memref<f32>
// CHECK:         %[[METRIC:.*]] = memref.view %[[WS]]
// CHECK:         %[[STATE:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         call @fill(%[[T]], %[[LOSS]], %[[METRIC]], %[[STATE]])
// CHECK:         return %[[STATE]], %[[LOSS]], %[[METRIC]]
// CHECK-LABEL: func.func @twice
// CHECK-NOT:     distopt_workspace
// CHECK:         return
module attributes {train.step = {entry = "train_step",
    arguments = [{name = "w", role = "param", type = tensor<4xf32>}],
    results = [{name = "w", role = "param", type = tensor<4xf32>},
               {name = "loss", role = "loss", type = tensor<f32>},
               {name = "accuracy", role = "metric", type = tensor<f32>}]}} {
  func.func private @fill(memref<256xf32>, memref<f32>, memref<f32>, memref<4xf32>) attributes {distopt.sync_buffers}
  func.func @train_step(%w: memref<4xf32>) -> (memref<4xf32>, memref<f32>, memref<f32>) {
    %t = memref.alloc() : memref<256xf32>
    %loss = memref.alloc() : memref<f32>
    %metric = memref.alloc() : memref<f32>
    %state = memref.alloc() : memref<4xf32>
    call @fill(%t, %loss, %metric, %state) : (memref<256xf32>, memref<f32>, memref<f32>, memref<4xf32>) -> ()
    memref.dealloc %t : memref<256xf32>
    return %state, %loss, %metric : memref<4xf32>, memref<f32>, memref<f32>
  }
  func.func @twice(%w: memref<4xf32>) -> (memref<4xf32>, memref<f32>, memref<f32>) {
    %loss = memref.alloc() : memref<f32>
    %state = memref.alloc() : memref<4xf32>
    return %state, %loss, %loss : memref<4xf32>, memref<f32>, memref<f32>
  }
}

// -----

// The recorded step returns one buffer as its loss and as a state result
// (the runner would take it back): it stays an allocation.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT:     distopt_workspace
// CHECK:         %[[B:.*]] = memref.alloc() : memref<f32>
// CHECK:         return %[[B]], %[[B]]
module attributes {train.step = {entry = "train_step",
    arguments = [{name = "s", role = "opt_state", type = tensor<f32>}],
    results = [{name = "s", role = "opt_state", type = tensor<f32>},
               {name = "loss", role = "loss", type = tensor<f32>}]}} {
  func.func @train_step(%s: memref<f32>) -> (memref<f32>, memref<f32>) {
    %b = memref.alloc() : memref<f32>
    return %b, %b : memref<f32>, memref<f32>
  }
}

// -----

// Nothing to plan: no lookup, no declaration.
// CHECK-LABEL: func.func @nothing
// CHECK-NOT:     distopt_workspace
func.func @nothing(%x: memref<4xf32>) {
  return
}

// -----

// A step's parts (private, called only from the step, in its host control
// flow, calling no function with a body) share one workspace, as large as
// the largest part's (1024 bytes): each part's buffers are dead once it
// returns. The step keeps its own; a part called from two functions, one
// calling a function with a body (a part active inside another) and one
// called in a kernel (two at once) keep theirs.
// CHECK-LABEL: func.func private @step_part0
// CHECK-SAME:    distopt.workspace = {buffer_bytes = 256 : i64, buffers = 1 : i64, bytes = 1024 : i64, key = [[$PARTS:-?[0-9]+]] : i64, results = 0 : i64}
// CHECK:         %[[KEY0:.*]] = arith.constant [[$PARTS]] : i64
// CHECK:         %[[BYTES0:.*]] = arith.constant 1024 : i64
// CHECK:         call @distopt_workspace(%[[KEY0]], %[[BYTES0]])
// CHECK-LABEL: func.func private @step_part1
// CHECK-SAME:    distopt.workspace = {buffer_bytes = 1024 : i64, buffers = 1 : i64, bytes = 1024 : i64, key = [[$PARTS]] : i64, results = 0 : i64}
// CHECK-LABEL: func.func private @shared
// CHECK-SAME:    bytes = 256 : i64, key = [[SHARED:-?[0-9]+]] : i64
// CHECK-LABEL: func.func private @nests
// CHECK-SAME:    bytes = 256 : i64, key = [[NESTS:-?[0-9]+]] : i64
// CHECK-LABEL: func.func private @in_kernel
// CHECK-SAME:    bytes = 256 : i64, key = [[KERNEL:-?[0-9]+]] : i64
// CHECK-LABEL: func.func @step
// CHECK-SAME:    bytes = 512 : i64, key = [[STEP:-?[0-9]+]] : i64
// CHECK-NOT:     key = [[$PARTS]]
// CHECK-LABEL: func.func @other
// CHECK-NOT:     key = [[$PARTS]]
func.func private @keep64(memref<64xf32>) attributes {distopt.sync_buffers}
func.func private @keep256(memref<256xf32>) attributes {distopt.sync_buffers}
func.func private @step_part0(%out: memref<128xf32>) attributes {distopt.sync_buffers} {
  %a = memref.alloc() : memref<64xf32>
  call @keep64(%a) : (memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32>
  return
}
func.func private @step_part1(%in: memref<128xf32>) attributes {distopt.sync_buffers} {
  %a = memref.alloc() : memref<256xf32>
  call @keep256(%a) : (memref<256xf32>) -> ()
  memref.dealloc %a : memref<256xf32>
  return
}
func.func private @shared() {
  %a = memref.alloc() : memref<64xf32>
  call @keep64(%a) : (memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32>
  return
}
func.func private @nests() {
  %a = memref.alloc() : memref<64xf32>
  call @keep64(%a) : (memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32>
  call @shared() : () -> ()
  return
}
func.func private @in_kernel() {
  %a = memref.alloc() : memref<64xf32>
  call @keep64(%a) : (memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32>
  return
}
func.func @step() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = memref.alloc() : memref<128xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    func.call @step_part0(%b) : (memref<128xf32>) -> ()
    func.call @step_part1(%b) : (memref<128xf32>) -> ()
  }
  memref.dealloc %b : memref<128xf32>
  call @shared() : () -> ()
  call @nests() : () -> ()
  scf.parallel (%j) = (%c0) to (%c2) step (%c1) {
    func.call @in_kernel() : () -> ()
  }
  return
}
func.func @other() {
  call @shared() : () -> ()
  return
}
