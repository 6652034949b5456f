// RUN: dist-opt %s -split-input-file --dist-to-runtime -verify-diagnostics

// A future that leaves its block (here: passed to a call) has no runtime
// value: an error at the start op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func private @keep(!dist.future<tensor<4xf32>>)
func.func @escaping_future(%a: tensor<4xf32>) {
  // expected-error @+1 {{'dist.all_reduce_start' op dist-to-runtime needs every future consumed by a dist.wait in the same block; one is used by func.call}}
  %f = dist.all_reduce_start %a on @mesh axes = ["data"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
  func.call @keep(%f) : (!dist.future<tensor<4xf32>>) -> ()
  return
}

// -----

// A wait in another block than its start: an error at the start op.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @wait_elsewhere(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_gather_start' op dist-to-runtime needs every future consumed by a dist.wait in the same block; one is used by dist.wait}}
  %f = dist.all_gather_start %a on @mesh axes = ["data"] gather_dim = 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
  %r = scf.if %c -> tensor<8xf32> {
    %w = dist.wait %f : !dist.future<tensor<8xf32>>
    scf.yield %w : tensor<8xf32>
  } else {
    %z = tensor.empty() : tensor<8xf32>
    scf.yield %z : tensor<8xf32>
  }
  %s = tensor.extract_slice %r[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Element types the runtime does not add are errors at the reduction (it
// moves them: all-gathers, all-to-alls and broadcasts).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @f8_sum(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'dist.all_reduce' op dist-to-runtime does not reduce 'f8E4M3FN' elements yet (f16, bf16, f32, f64, i32, i64)}}
  %r = dist.all_reduce %a on @mesh axes = ["data"] : tensor<4xf8E4M3FN>
  return %r : tensor<4xf8E4M3FN>
}

// -----

dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @i1(%a: tensor<4xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'dist.reduce_scatter' op dist-to-runtime does not reduce 'i1' elements yet (f16, bf16, f32, f64, i32, i64)}}
  %r = dist.reduce_scatter %a on @mesh axes = ["data"] scatter_dims = [0] : tensor<4xi1> -> tensor<2xi1>
  return %r : tensor<2xi1>
}

// -----

dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @f8(%a: tensor<4xf8E4M3FN>) -> tensor<8xf8E4M3FN> {
  // expected-error @+1 {{'dist.all_gather' op dist-to-runtime does not move 'f8E4M3FN' elements yet (i1, i8, f16, bf16, f32, f64, i32, i64)}}
  %r = dist.all_gather %a on @mesh axes = ["data"] gather_dim = 0 : tensor<4xf8E4M3FN> -> tensor<8xf8E4M3FN>
  return %r : tensor<8xf8E4M3FN>
}

// -----

// A started collective writes its buffers until a wait completes it: every
// future must be waited.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @never_waited(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce_start' op dist-to-runtime needs every future consumed by a dist.wait; result #1 is never waited}}
  %f:2 = dist.all_reduce_start %a, %b on @mesh axes = ["data"] : tensor<4xf32>, tensor<4xf32> -> !dist.future<tensor<4xf32>>, !dist.future<tensor<4xf32>>
  %r = dist.wait %f#0 : !dist.future<tensor<4xf32>>
  return %r : tensor<4xf32>
}

// -----

// An annotated step that was never partitioned is not lowered as if it ran
// on one device (dist-lower-cpu once lowered it silently, or said the mesh
// did not exist).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// expected-error @+1 {{function 'annotated' carries shardings but is not partitioned: run --dist-propagate-sharding --dist-partition (or a strategy's pipeline) before lowering it}}
func.func @annotated(%x: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [[data]]>}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// expected-error @+1 {{function 'annotate_op' carries shardings but is not partitioned}}
func.func @annotate_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dist.annotate %x {sharding = #dist.sharding<@mesh, [[data]]>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A program on the whole mesh cannot name one device of a stage: the peer
// fixes an axis the program's place leaves free.
dist.mesh @grid {axes = ["pipe", "data"], shape = array<i64: 2, 2>}
func.func @whole(%a: tensor<4xf32>) attributes {dist.place = #dist.place<@grid>} {
  // expected-error @+1 {{'dist.send' op dist-to-runtime cannot address #dist.place<@grid, pipe = 1> from #dist.place<@grid>: axis 'pipe' is fixed only in the peer}}
  dist.send %a to #dist.place<@grid, pipe = 1> channel = 0 : tensor<4xf32>
  return
}

// -----

// Two programs on one device.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @first() attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return
}
// expected-error @+1 {{runs on device 0, which program 'first' runs too}}
func.func @second() attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return
}

// -----

// A transfer in a function that is not a placed program has no peer to
// address: an error (it used to be left in the program).
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @unplaced(%a: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op dist-to-runtime lowers point-to-point transfers only at the top level of a placed program (a function with 'dist.place')}}
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<4xf32>
  return
}
