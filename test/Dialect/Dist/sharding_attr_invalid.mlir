// RUN: dist-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// #dist.sharding on its own
//===----------------------------------------------------------------------===//

// An empty axis name.
func.func private @empty_axis_name(
    // expected-error @+1 {{mesh axes must be non-empty names, got ""}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[""]]>})

// -----

// An axis splits at most one dim.
func.func private @axis_on_two_dims(
    // expected-error @+1 {{mesh axis 'x' is used twice in one sharding}}
    tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [[x], [y, x]]>})

// -----

// An axis is not listed twice for one dim.
func.func private @axis_twice_in_dim(
    // expected-error @+1 {{mesh axis 'x' is used twice in one sharding}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x, "x"]]>})

// -----

// A split axis cannot also be partial.
func.func private @axis_split_and_partial(
    // expected-error @+1 {{mesh axis 'x' is used twice in one sharding}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x]], partial = [x]>})

// -----

// An axis is not partial twice.
func.func private @partial_axis_twice(
    // expected-error @+1 {{mesh axis 'y' is used twice in one sharding}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x]], partial = [y, y]>})

// -----

// The optional part is spelled `partial = [...]`.
func.func private @bad_partial_keyword(
    // expected-error @+1 {{expected 'partial'}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x]], pending = [y]>})

// -----

// The mesh is a flat symbol reference.
func.func private @nested_mesh_ref(
    // expected-error @+1 {{invalid kind of attribute specified}}
    tensor<8xf32> {dist.sharding = #dist.sharding<@outer::@mesh, [[x]]>})

// -----

//===----------------------------------------------------------------------===//
// dist.sharding on function arguments and results
//===----------------------------------------------------------------------===//

// Only dist.sharding is known on arguments.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: unknown attribute 'dist.shard'}}
func.func private @unknown_arg_attr(tensor<8xf32> {dist.shard = #dist.sharding<@mesh, [[x]]>})

// -----

// Only dist.sharding is known on results.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op result #0: unknown attribute 'dist.partitioned'}}
func.func private @unknown_result_attr() -> (tensor<8xf32> {dist.partitioned})

// -----

// dist.sharding holds a #dist.sharding.
// expected-error @+1 {{'func.func' op argument #1: 'dist.sharding' must be a #dist.sharding, got 1 : i64}}
func.func private @arg_not_a_sharding(tensor<8xf32>, tensor<8xf32> {dist.sharding = 1})

// -----

// The mesh of an argument sharding must exist.
// expected-error @+1 {{'func.func' op argument #0: mesh @nope does not exist}}
func.func private @arg_unknown_mesh(tensor<8xf32> {dist.sharding = #dist.sharding<@nope, [[x]]>})

// -----

// The mesh of a result sharding must exist.
// expected-error @+1 {{'func.func' op result #1: mesh @nope does not exist}}
func.func private @result_unknown_mesh() -> (tensor<8xf32>, tensor<8xf32> {dist.sharding = #dist.sharding<@nope, [[]]>})

// -----

// The mesh of an argument sharding must be a dist.mesh, not another symbol.
func.func private @other_symbol()
// expected-error @+1 {{'func.func' op argument #0: symbol @other_symbol is a 'func.func', not a 'dist.mesh'}}
func.func private @arg_not_a_mesh(tensor<8xf32> {dist.sharding = #dist.sharding<@other_symbol, [[x]]>})

// -----

// One dim of sharding for a rank-2 argument (singular wording).
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: sharding has 1 dim but the tensor 'tensor<8x8xf32>' has rank 2}}
func.func private @arg_rank_one_dim(tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [[x]]>})

// -----

// Only ranked tensors are sharded.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: a sharding needs a ranked tensor, got 'i32'}}
func.func private @arg_not_a_tensor(i32 {dist.sharding = #dist.sharding<@mesh, []>})

// -----

// An unranked tensor cannot be sharded.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op result #0: a sharding needs a ranked tensor, got 'tensor<*xf32>'}}
func.func private @result_unranked() -> (tensor<*xf32> {dist.sharding = #dist.sharding<@mesh, [[x]]>})

// -----

// One list of axes per dim of the argument.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: sharding has 2 dims but the tensor 'tensor<8xf32>' has rank 1}}
func.func private @arg_rank(tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x], []]>})

// -----

// Split axes must be axes of the mesh.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op result #0: axis 'y' is not an axis of mesh @mesh}}
func.func private @result_unknown_axis() -> (tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[y]]>})

// -----

// Partial axes must be axes of the mesh.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: axis 'z' is not an axis of mesh @mesh}}
func.func private @arg_unknown_partial_axis(tensor<8xf32> {dist.sharding = #dist.sharding<@mesh, [[x]], partial = [z]>})

// -----

// A dim must divide by the product of its axes' sizes.
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
// expected-error @+1 {{'func.func' op result #0: dim 0 of size 6 does not divide over ["y"] (4 devices)}}
func.func private @result_not_dividing() -> (tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [[y], [x]]>})

// -----

// A function body does not change the checks on its arguments.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: dim 0 of size 2 does not divide over ["x"] (4 devices)}}
func.func @arg_not_dividing_with_body(%a: tensor<2xf32> {dist.sharding = #dist.sharding<@mesh, [[x]]>}) {
  return
}

// -----

// dist.partitioned skips the shape checks, not the mesh lookup.
// expected-error @+1 {{'func.func' op argument #0: mesh @nope does not exist}}
func.func private @partitioned_unknown_mesh(tensor<2xf32> {dist.sharding = #dist.sharding<@nope, [[x]]>})
    attributes {dist.partitioned}

// -----

//===----------------------------------------------------------------------===//
// dist.* attributes on operations
//===----------------------------------------------------------------------===//

// dist.partitioned is a unit attribute.
// expected-error @+1 {{'func.func' op 'dist.partitioned' must be a unit attribute on a function}}
func.func private @partitioned_not_unit() attributes {dist.partitioned = true}

// -----

// dist.partitioned only marks functions.
func.func @partitioned_on_op(%x: tensor<8xf32>) {
  // expected-error @+1 {{'train.add' op 'dist.partitioned' must be a unit attribute on a function}}
  %y = train.add %x, %x {dist.partitioned} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// dist.sharding belongs on arguments and results, not on ops.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @sharding_on_op(%x: tensor<8xf32>) {
  // expected-error @+1 {{'train.add' op unknown attribute 'dist.sharding'}}
  %y = train.add %x, %x {dist.sharding = #dist.sharding<@mesh, [[x]]>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Unknown dist.* attributes on ops are rejected.
// expected-error @+1 {{'func.func' op unknown attribute 'dist.stage'}}
func.func private @unknown_op_attr() attributes {dist.stage = 0 : i64}

// -----

// dist.shardings holds one sharding per result: too few.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @shardings_count(%x: tensor<8x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) {
  // expected-error @+1 {{'train.layer_norm' op 'dist.shardings' must hold one #dist.sharding per result (3)}}
  %y, %mean, %rstd = train.layer_norm %x, %g, %b {axis = 1 : i64, dist.shardings = [#dist.sharding<@mesh, [[x], []]>]} : (tensor<8x512xf32>, tensor<512xf32>, tensor<512xf32>) -> (tensor<8x512xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// dist.shardings holds one sharding per result: an op without results.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @shardings_no_result() {
  // expected-error @+1 {{'func.return' op 'dist.shardings' must hold one #dist.sharding per result (0)}}
  return {dist.shardings = [#dist.sharding<@mesh, []>]}
}

// -----

// dist.shardings is an array, even for one result.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @shardings_not_array(%x: tensor<8xf32>) {
  // expected-error @+1 {{'train.add' op 'dist.shardings' must hold one #dist.sharding per result (1)}}
  %y = train.add %x, %x {dist.shardings = #dist.sharding<@mesh, [[x]]>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// dist.shardings holds #dist.sharding attributes only.
func.func @shardings_not_shardings(%x: tensor<8xf32>) {
  // expected-error @+1 {{'train.add' op 'dist.shardings' must hold one #dist.sharding per result (1)}}
  %y = train.add %x, %x {dist.shardings = ["x"]} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// The shardings propagation records are checked against the mesh.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @recorded_unknown_axis(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'train.add' op 'dist.shardings' #0: axis 'z' is not an axis of mesh @m}}
  %t = train.add %a, %a {dist.shardings = [#dist.sharding<@m, [[z]]>]} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %t : tensor<8xf32>
}

// -----

// A recorded sharding must divide the (global) result.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @recorded_not_divisible(%a: tensor<6x16xf32>) -> tensor<6x16xf32> {
  // expected-error @+1 {{'train.relu' op 'dist.shardings' #0: dim 0 of size 6 does not divide over ["x"] (4 devices)}}
  %r = train.relu %a {dist.shardings = [#dist.sharding<@m, [[x], []]>]} : (tensor<6x16xf32>) -> tensor<6x16xf32>
  return %r : tensor<6x16xf32>
}

// -----

// A recorded sharding must name a dist.mesh, not another symbol.
func.func @recorded_not_a_mesh(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'train.relu' op 'dist.shardings' #0: symbol @recorded_not_a_mesh is a 'func.func', not a 'dist.mesh'}}
  %r = train.relu %a {dist.shardings = [#dist.sharding<@recorded_not_a_mesh, [[]]>]} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A partitioned function skips only the divisibility check.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: axis 'z' is not an axis of mesh @m}}
func.func @partitioned_unknown_axis(%a: tensor<2xf32> {dist.sharding = #dist.sharding<@m, [[z]]>}) -> tensor<2xf32> attributes {dist.partitioned} {
  return %a : tensor<2xf32>
}

// -----

// A body whose signature names no arguments: the diagnostic is at the
// function (its entry block has no argument to point at), not a crash
// (test/Fuzz/regressions/dist-block-unnamed-argument.mlir).
// expected-error @+1 {{'func.func' op argument #0: 'dist.block' belongs on a placed program}}
func.func @unnamed_argument(tensor<2x4xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 4]>}) {
  return
}

// -----

dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: axis 'z' is not an axis of mesh @m}}
func.func @unnamed_sharded_argument(tensor<8xf32> {dist.sharding = #dist.sharding<@m, [[z]]>}) {
  return
}
