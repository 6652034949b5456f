// RUN: dist-opt %s -split-input-file --dist-buffer-deallocation | FileCheck %s

// A temporary dies right after its last reader; the result is the caller's.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         linalg.exp ins(%{{.*}} : memref<4xf32>) outs(%[[A]]
// CHECK:         %[[B:.*]] = memref.alloc()
// CHECK:         linalg.exp ins(%[[A]] : memref<4xf32>) outs(%[[B]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK:         %[[C:.*]] = memref.alloc()
// CHECK:         linalg.exp ins(%[[B]] : memref<4xf32>) outs(%[[C]]
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    return %[[C]]
func.func @chain(%x: memref<4xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %c = memref.alloc() : memref<4xf32>
  linalg.exp ins(%b : memref<4xf32>) outs(%c : memref<4xf32>)
  return %c : memref<4xf32>
}

// -----

// A view's readers keep its buffer alive; a buffer nobody reads dies at once.
// CHECK-LABEL: func.func @views
// CHECK:         %[[A:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK-NEXT:    %[[DEAD:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    memref.dealloc %[[DEAD]]
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape %[[A]]
// CHECK:         %[[SUB:.*]] = memref.subview %[[FLAT]][2] [4] [1]
// CHECK:         %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         linalg.exp ins(%[[SUB]] : {{.*}}) outs(%[[B]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    return %[[B]]
func.func @views(%x: memref<2x4xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<2x4xf32>
  %dead = memref.alloc() : memref<8xf32>
  linalg.exp ins(%x : memref<2x4xf32>) outs(%a : memref<2x4xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  %sub = memref.subview %flat[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %b = memref.alloc() : memref<4xf32>
  linalg.exp ins(%sub : memref<4xf32, strided<[1], offset: 2>>) outs(%b : memref<4xf32>)
  return %b : memref<4xf32>
}

// -----

// What the caller must not free twice or at all is returned as a copy: an
// argument, a global, a buffer returned a second time.
memref.global "private" constant @table : memref<4xf32> = dense<1.0>
// CHECK-LABEL: func.func @returns
// CHECK:         %[[G:.*]] = memref.get_global @table
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK-DAG:     %[[X:.*]] = bufferization.clone %arg0
// CHECK-DAG:     %[[GC:.*]] = bufferization.clone %[[G]]
// CHECK-DAG:     %[[AC:.*]] = bufferization.clone %[[A]]
// CHECK-NOT:     memref.dealloc
// CHECK:         return %[[X]], %[[GC]], %[[A]], %[[AC]]
func.func @returns(%x: memref<4xf32>)
    -> (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %g = memref.get_global @table : memref<4xf32>
  %a = memref.alloc() : memref<4xf32>
  linalg.exp ins(%g : memref<4xf32>) outs(%a : memref<4xf32>)
  return %x, %g, %a, %a : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// -----

// A buffer whose address escapes (a nonblocking start, an address taken)
// lives to the end; a callee marked distopt.sync_buffers only borrows it.
func.func private @start(memref<*xf32>) -> i64
func.func private @wait(i64, index)
func.func private @gemm(memref<*xf32>) attributes {distopt.sync_buffers}
// CHECK-LABEL: func.func @escapes
// CHECK:         %[[S:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[G:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         call @gemm
// CHECK-NEXT:    memref.dealloc %[[G]]
// CHECK:         call @start
// CHECK:         memref.extract_aligned_pointer_as_index %[[T]]
// CHECK:         call @wait
// CHECK-NEXT:    memref.dealloc %[[S]]
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK-NEXT:    return
func.func @escapes(%x: memref<4xf32>) {
  %s = memref.alloc() : memref<4xf32>
  %t = memref.alloc() : memref<4xf32>
  %g = memref.alloc() : memref<4xf32>
  %gc = memref.cast %g : memref<4xf32> to memref<*xf32>
  call @gemm(%gc) : (memref<*xf32>) -> ()
  %sc = memref.cast %s : memref<4xf32> to memref<*xf32>
  %r = call @start(%sc) : (memref<*xf32>) -> i64
  %p = memref.extract_aligned_pointer_as_index %t : memref<4xf32> -> index
  call @wait(%r, %p) : (i64, index) -> ()
  return
}

// -----

// A use inside a loop keeps the buffer alive until the loop ends; a call's
// buffer result is the caller's to free.
func.func private @make() -> memref<4xf32>
// CHECK-LABEL: func.func @nested
// CHECK:         %[[M:.*]] = call @make()
// CHECK:         scf.for
// CHECK:           memref.load %[[M]]
// CHECK:         }
// CHECK-NEXT:    memref.dealloc %[[M]]
// CHECK-NEXT:    return
func.func @nested(%out: memref<4xf32>) {
  %m = call @make() : () -> memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %m[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
  }
  return
}

// -----

// A loop carrying buffers is left to upstream's ownership-based
// deallocation (bufferization.dealloc, lowered by a later pass).
// CHECK-LABEL: func.func @carried
// CHECK:         scf.for
// CHECK:           bufferization.dealloc
// CHECK-NOT:     memref.dealloc
func.func @carried(%n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %init) -> memref<4xf32> {
    %next = memref.alloc() : memref<4xf32>
    linalg.exp ins(%b : memref<4xf32>) outs(%next : memref<4xf32>)
    scf.yield %next : memref<4xf32>
  }
  return %r : memref<4xf32>
}

// -----

// The recorded training step (train.step's entry) returns its state's own
// buffers, updated in place (dist-run neither frees nor copies such a
// result), each once: a second return of one is a clone. Another function
// returning an argument returns a clone of it.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[P:.*]]: memref<4xf32>, %[[M:.*]]: memref<4xf32>)
// CHECK:         %[[TWICE:.*]] = bufferization.clone %[[P]]
// CHECK-NEXT:    return %[[P]], %[[M]], %[[TWICE]], %{{.*}} :
// CHECK-LABEL: func.func @helper
// CHECK:         %[[C:.*]] = bufferization.clone %arg0
// CHECK-NEXT:    return %[[C]]
module attributes {train.step = {entry = "train_step", arguments = [], results = []}} {
  func.func @train_step(%p: memref<4xf32>, %m: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>) {
    linalg.exp ins(%m : memref<4xf32>) outs(%m : memref<4xf32>)
    linalg.exp ins(%p : memref<4xf32>) outs(%p : memref<4xf32>)
    %loss = memref.alloc() : memref<f32>
    return %p, %m, %p, %loss : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>
  }
  func.func @helper(%x: memref<4xf32>) -> memref<4xf32> {
    return %x : memref<4xf32>
  }
}

// -----

// A reference to the step that is not a call (the derived evaluation
// function's `train.eval_of`) leaves it the runner's: its state comes back
// in place, not copied.
// CHECK-LABEL: func.func @referenced_step
// CHECK-NOT:     bufferization.clone
// CHECK:         return %arg0
module attributes {train.step = {entry = "referenced_step", arguments = [], results = []}} {
  func.func @referenced_step(%p: memref<4xf32>) -> memref<4xf32> {
    linalg.exp ins(%p : memref<4xf32>) outs(%p : memref<4xf32>)
    return %p : memref<4xf32>
  }
  func.func @eval(%p: memref<4xf32>) attributes {train.eval_of = @referenced_step} {
    return
  }
}

// -----

// A recorded step that a function of the module calls returns clones: the
// caller frees every result as its own.
// CHECK-LABEL: func.func @called_step
// CHECK:         %[[C:.*]] = bufferization.clone %arg0
// CHECK-NEXT:    return %[[C]]
module attributes {train.step = {entry = "called_step", arguments = [], results = []}} {
  func.func @called_step(%p: memref<4xf32>) -> memref<4xf32> {
    linalg.exp ins(%p : memref<4xf32>) outs(%p : memref<4xf32>)
    return %p : memref<4xf32>
  }
  func.func @main(%p: memref<4xf32>) {
    %r = call @called_step(%p) : (memref<4xf32>) -> memref<4xf32>
    return
  }
}
