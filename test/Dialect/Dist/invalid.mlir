// RUN: dist-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

// A mesh needs at least one axis.
// expected-error @+1 {{'dist.mesh' op needs at least one axis}}
dist.mesh @mesh {axes = [], shape = array<i64>}

// -----

// One axis name per dim of the shape.
// expected-error @+1 {{'dist.mesh' op has 1 axis name for a 2-D shape}}
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2, 2>}

// -----

// More axis names than dims (plural wording).
// expected-error @+1 {{'dist.mesh' op has 2 axis names for a 1-D shape}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2>}

// -----

// Axis names must be non-empty.
// expected-error @+1 {{'dist.mesh' op axis names must be non-empty}}
dist.mesh @mesh {axes = ["x", ""], shape = array<i64: 2, 2>}

// -----

// Axis names are unique.
// expected-error @+1 {{'dist.mesh' op axis 'x' is declared twice}}
dist.mesh @mesh {axes = ["x", "x"], shape = array<i64: 2, 2>}

// -----

// An axis of size 0.
// expected-error @+1 {{'dist.mesh' op axis 'y' has size 0; sizes must be positive}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 0>}

// -----

// A negative axis size.
// expected-error @+1 {{'dist.mesh' op axis 'x' has size -2; sizes must be positive}}
dist.mesh @mesh {axes = ["x"], shape = array<i64: -2>}

// -----

// The device count must fit in int64 (2^32 x 2^32 would wrap to 0).
// expected-error @+1 {{'dist.mesh' op the device count (the product of the axis sizes) exceeds 9223372036854775807}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 4294967296, 4294967296>}

// -----

// The overflow is caught however many axes it takes to reach it.
// expected-error @+1 {{'dist.mesh' op the device count (the product of the axis sizes) exceeds 9223372036854775807}}
dist.mesh @mesh {axes = ["x", "y", "z"], shape = array<i64: 2147483648, 2, 2147483648>}

// -----

// host_axes must name axes of the mesh.
// expected-error @+1 {{'dist.mesh' op host axis 'hosts' is not an axis of the mesh}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, host_axes = ["hosts"]}

// -----

// A host axis is listed once.
// expected-error @+1 {{'dist.mesh' op host axis 'x' is listed twice}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, host_axes = ["x", "x"]}

// -----

// One bandwidth per axis.
// expected-error @+1 {{'dist.mesh' op bandwidths has 1 entry for 2 axes}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, bandwidths = [25.0]}

// -----

// One latency per axis.
// expected-error @+1 {{'dist.mesh' op latencies has 3 entries for 2 axes}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, latencies = [1.0, 2.0, 3.0]}

// -----

// Two bandwidths for one axis (singular wording).
// expected-error @+1 {{'dist.mesh' op bandwidths has 2 entries for 1 axis}}
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>, bandwidths = [1.0, 2.0]}

// -----

// A zero bandwidth.
// expected-error @+1 {{'dist.mesh' op bandwidth of axis 'y' must be finite and positive, got '0'}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, bandwidths = [25.0, 0.0]}

// -----

// A negative latency.
// expected-error @+1 {{'dist.mesh' op latency of axis 'x' must be finite and positive, got '-1.5'}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, latencies = [-1.5, 1.0]}

// -----

// An infinite latency.
// expected-error @+1 {{'dist.mesh' op latency of axis 'y' must be finite and positive, got '+Inf'}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, latencies = [1.5, 0x7FF0000000000000 : f64]}

// -----

// A NaN bandwidth.
// expected-error @+1 {{'dist.mesh' op bandwidth of axis 'x' must be finite and positive, got 'NaN'}}
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>, bandwidths = [0x7FF8000000000000 : f64, 1.0]}

// -----

// The shape is required.
// expected-error @+1 {{'dist.mesh' op requires attribute 'shape'}}
dist.mesh @mesh {axes = ["x"]}

// -----

// Bandwidths are f64, not integers.
// expected-error @+1 {{'dist.mesh' op attribute 'bandwidths' failed to satisfy constraint: 64-bit float array attribute}}
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>, bandwidths = [1]}

// -----

//===----------------------------------------------------------------------===//
// dist.annotate
//===----------------------------------------------------------------------===//

// The sharding's mesh must exist.
func.func @annotate_unknown_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.annotate' op mesh @nope does not exist}}
  %a = dist.annotate %x {sharding = #dist.sharding<@nope, [[x]]>} : tensor<8xf32>
  return
}

// -----

// The sharding's mesh must be a dist.mesh, not another symbol.
func.func @annotate_not_a_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.annotate' op symbol @annotate_not_a_mesh is a 'func.func', not a 'dist.mesh'}}
  %a = dist.annotate %x {sharding = #dist.sharding<@annotate_not_a_mesh, [[x]]>} : tensor<8xf32>
  return
}

// -----

// The rank is checked by the op's own verifier, before the mesh is looked up.
func.func @annotate_rank_without_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.annotate' op sharding has 1 dim but the tensor 'tensor<8x16xf32>' has rank 2}}
  %a = dist.annotate %x {sharding = #dist.sharding<@nope, [[x]]>} : tensor<8x16xf32>
  return
}

// -----

// One list of axes per dim of the tensor.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func @annotate_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.annotate' op sharding has 1 dim but the tensor 'tensor<8x16xf32>' has rank 2}}
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[x]]>} : tensor<8x16xf32>
  return
}

// -----

// Split axes must be axes of the mesh.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func @annotate_unknown_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.annotate' op axis 'y' is not an axis of mesh @mesh}}
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[], [x, y]]>} : tensor<8x16xf32>
  return
}

// -----

// Partial axes must be axes of the mesh.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func @annotate_unknown_partial_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.annotate' op axis 'y' is not an axis of mesh @mesh}}
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[x], []], partial = [y]>} : tensor<8x16xf32>
  return
}

// -----

// A dim must divide by the product of its axes' sizes (2 x 4 = 8 here).
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
func.func @annotate_not_dividing(%x: tensor<8x12xf32>) {
  // expected-error @+1 {{'dist.annotate' op dim 1 of size 12 does not divide over ["x", "y"] (8 devices)}}
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[], [x, y]]>} : tensor<8x12xf32>
  return
}

// -----

// The result has the operand's type.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func @annotate_result_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.annotate' op requires the same type for all operands and results}}
  %a = "dist.annotate"(%x) {sharding = #dist.sharding<@mesh, [[x]]>} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Collectives: mesh and axes
//===----------------------------------------------------------------------===//

// The collective's mesh must exist.
func.func @collective_unknown_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op mesh @nope does not exist}}
  %r = dist.all_reduce %x on @nope axes = ["x"] : tensor<8xf32>
  return
}

// -----

// The collective's mesh must be a dist.mesh, not another symbol.
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op symbol @f is a 'func.func', not a 'dist.mesh'}}
  %r = dist.all_reduce %x on @f axes = ["x"] : tensor<8xf32>
  return
}

// -----

// The axes are checked by the op's own verifier, before the mesh is looked up.
func.func @collective_axis_twice_without_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op axis 'x' is listed twice}}
  %r = dist.all_reduce %x on @nope axes = ["x", "x"] : tensor<8xf32>
  return
}

// -----

// A collective needs a non-empty group.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @collective_no_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_gather' op needs at least one mesh axis}}
  %r = dist.all_gather %x on @mesh axes = [] gather_dim = 0 : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// Each axis of the group is listed once.
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
func.func @collective_axis_twice(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op axis 'x' is listed twice}}
  %r = dist.broadcast %x on @mesh axes = ["x", "y", "x"] root = 0 : tensor<8xf32>
  return
}

// -----

// The group's axes must be axes of the mesh.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @collective_unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op axis 'y' is not an axis of mesh @mesh}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x", "y"] scatter_dims = [0] : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.all_reduce
//===----------------------------------------------------------------------===//

// all_reduce needs at least one input.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_reduce_no_input() {
  // expected-error @+1 {{'dist.all_reduce' op needs at least one input}}
  "dist.all_reduce"() {mesh = @mesh, axes = ["x"]} : () -> ()
  return
}

// -----

// The input count is checked by the op's own verifier, without the mesh.
func.func @all_reduce_no_input_without_mesh() {
  // expected-error @+1 {{'dist.all_reduce' op needs at least one input}}
  "dist.all_reduce"() {mesh = @nope, axes = ["x"]} : () -> ()
  return
}

// -----

// all_reduce returns one result of the same type per input.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_reduce_result_types(%x: tensor<8xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'dist.all_reduce' op failed to verify that all of {inputs, results} have same type}}
  %r:2 = "dist.all_reduce"(%x, %y) {mesh = @mesh, axes = ["x"]} : (tensor<8xf32>, tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// The reduction is sum, max or min.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_reduce_bad_reduction(%x: tensor<8xf32>) {
  // expected-error @+2 {{expected ::mlir::dist::ReductionKind to be one of: sum, max, min}}
  // expected-error @+1 {{failed to parse Dist_ReductionKindAttr parameter 'value'}}
  %r = dist.all_reduce %x on @mesh axes = ["x"] reduction = <prod> : tensor<8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.reduce_scatter
//===----------------------------------------------------------------------===//

// scatter_dim past the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_dim_too_large(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op input #0 scatter_dim 2 is out of range for rank 2}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [2] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// The dim range is checked by the op's own verifier, without the mesh.
func.func @reduce_scatter_dim_without_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op input #0 scatter_dim 2 is out of range for rank 2}}
  %r = dist.reduce_scatter %x on @nope axes = ["x"] scatter_dims = [2] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// A negative scatter_dim.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_dim_negative(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op input #0 scatter_dim -1 is out of range for rank 2}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [-1] : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

// The result keeps the element type.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_element_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result type 'tensor<2x16xf16>' must have the rank and element type of 'tensor<8x16xf32>'}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [0] : tensor<8x16xf32> -> tensor<2x16xf16>
  return
}

// -----

// scatter_dim must divide over the group.
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 3>}
func.func @reduce_scatter_not_dividing(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op input #0 scatter_dim 0 of size 8 does not divide over 6 devices}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x", "y"] scatter_dims = [0] : tensor<8x16xf32> -> tensor<1x16xf32>
  return
}

// -----

// The result is the input with scatter_dim divided by the group size.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_result_shape(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result type 'tensor<8x4xf32>' must have shape 2x16}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [0] : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

// A dynamic scatter_dim stays dynamic in the result.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_dynamic_dim(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op result type 'tensor<2x4xf32>' must have shape ?x4}}
  %r = dist.reduce_scatter %x on @mesh axes = ["x"] scatter_dims = [0] : tensor<?x4xf32> -> tensor<2x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.all_gather
//===----------------------------------------------------------------------===//

// gather_dim past the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_gather_dim_out_of_range(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_gather' op gather_dim 5 is out of range for rank 2}}
  %r = dist.all_gather %x on @mesh axes = ["x"] gather_dim = 5 : tensor<8x16xf32> -> tensor<32x16xf32>
  return
}

// -----

// The result keeps the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_gather_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result type 'tensor<512xf32>' must have the rank and element type of 'tensor<8x16xf32>'}}
  %r = dist.all_gather %x on @mesh axes = ["x"] gather_dim = 0 : tensor<8x16xf32> -> tensor<512xf32>
  return
}

// -----

// The result is the input with gather_dim multiplied by the group size.
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
func.func @all_gather_result_shape(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result type 'tensor<8x64xf32>' must have shape 8x128}}
  %r = dist.all_gather %x on @mesh axes = ["x", "y"] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  return
}

// -----

// A dynamic gather_dim stays dynamic in the result.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_gather_dynamic_dim(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'dist.all_gather' op result type 'tensor<8x4xf32>' must have shape ?x4}}
  %r = dist.all_gather %x on @mesh axes = ["x"] gather_dim = 0 : tensor<?x4xf32> -> tensor<8x4xf32>
  return
}

// -----

// The gathered size must fit in int64 (2^62 x 4 would wrap).
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_gather_overflow(%x: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{'dist.all_gather' op gather_dim 0 of size 4611686018427387904 overflows when gathered from 4 devices}}
  %r = dist.all_gather %x on @mesh axes = ["x"] gather_dim = 0 : tensor<4611686018427387904xf32> -> tensor<4611686018427387904xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.all_to_all
//===----------------------------------------------------------------------===//

// split_dim past the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_split_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op split_dim 2 is out of range for rank 2}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 2 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// A negative concat_dim.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_concat_dim(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op concat_dim -3 is out of range for rank 2}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = -3 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// The result keeps the element type.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_element_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result type 'tensor<32x4xi32>' must have the rank and element type of 'tensor<8x16xf32>'}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x16xf32> -> tensor<32x4xi32>
  return
}

// -----

// split_dim and concat_dim are different dims.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_same_dims(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op split_dim and concat_dim must differ}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// split_dim != concat_dim is checked by the op's own verifier, without the mesh.
func.func @all_to_all_same_dims_without_mesh(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op split_dim and concat_dim must differ}}
  %r = dist.all_to_all %x on @nope axes = ["x"] split_dim = 0 concat_dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// split_dim must divide over the group.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_not_dividing(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op split_dim 1 of size 6 does not divide over 4 devices}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x6xf32> -> tensor<32x1xf32>
  return
}

// -----

// The result divides split_dim and multiplies concat_dim by the group size.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_result_shape(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result type 'tensor<2x64xf32>' must have shape 32x4}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x16xf32> -> tensor<2x64xf32>
  return
}

// -----

// A dynamic split_dim stays dynamic in the result (no divisibility check).
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_dynamic_split(%x: tensor<8x?xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result type 'tensor<32x2xf32>' must have shape 32x?}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<8x?xf32> -> tensor<32x2xf32>
  return
}

// -----

// A dynamic concat_dim stays dynamic in the result.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_dynamic_concat(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op result type 'tensor<8x4xf32>' must have shape ?x4}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<?x16xf32> -> tensor<8x4xf32>
  return
}

// -----

// The concatenated size must fit in int64.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @all_to_all_overflow(%x: tensor<4611686018427387904x16xf32>) {
  // expected-error @+1 {{'dist.all_to_all' op concat_dim 0 of size 4611686018427387904 overflows when gathered from 4 devices}}
  %r = dist.all_to_all %x on @mesh axes = ["x"] split_dim = 1 concat_dim = 0 : tensor<4611686018427387904x16xf32> -> tensor<4611686018427387904x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.broadcast
//===----------------------------------------------------------------------===//

// root indexes the group (2 x 4 = 8 devices: 0..7).
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
func.func @broadcast_root(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op root 8 is not in a group of 8 devices}}
  %r = dist.broadcast %x on @mesh axes = ["y", "x"] root = 8 : tensor<8xf32>
  return
}

// -----

// root indexes the group along its own axes only.
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 2, 4>}
func.func @broadcast_root_subgroup(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op root 2 is not in a group of 2 devices}}
  %r = dist.broadcast %x on @mesh axes = ["x"] root = 2 : tensor<8xf32>
  return
}

// -----

// A group of one device has only root 0 (singular wording).
dist.mesh @mesh {axes = ["x", "y"], shape = array<i64: 1, 4>}
func.func @broadcast_root_single_device(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op root 1 is not in a group of 1 device}}
  %r = dist.broadcast %x on @mesh axes = ["x"] root = 1 : tensor<8xf32>
  return
}

// -----

// broadcast returns its input's type.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 2>}
func.func @broadcast_result_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.broadcast' op failed to verify that all of {input, result} have same type}}
  %r = "dist.broadcast"(%x) {mesh = @mesh, axes = ["x"], root = 0 : i64} : (tensor<8xf32>) -> tensor<8xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dist.local_slice
//===----------------------------------------------------------------------===//

// dim past the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @local_slice_dim(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.local_slice' op dim 1 is out of range for rank 1}}
  %r = dist.local_slice %x on @mesh axes = ["x"] dim = 1 : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

// The result keeps the rank.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @local_slice_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dist.local_slice' op result type 'tensor<2x1xf32>' must have the rank and element type of 'tensor<8xf32>'}}
  %r = dist.local_slice %x on @mesh axes = ["x"] dim = 0 : tensor<8xf32> -> tensor<2x1xf32>
  return
}

// -----

// dim must divide over the group.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @local_slice_not_dividing(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'dist.local_slice' op dim 1 of size 6 does not divide over 4 devices}}
  %r = dist.local_slice %x on @mesh axes = ["x"] dim = 1 : tensor<8x6xf32> -> tensor<8x1xf32>
  return
}

// -----

// The result is the input with dim divided by the group size.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @local_slice_result_shape(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'dist.local_slice' op result type 'tensor<8x16xf32>' must have shape 2x16}}
  %r = dist.local_slice %x on @mesh axes = ["x"] dim = 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// A dynamic dim stays dynamic in the result.
dist.mesh @mesh {axes = ["x"], shape = array<i64: 4>}
func.func @local_slice_dynamic_dim(%x: tensor<4x?xf32>) {
  // expected-error @+1 {{'dist.local_slice' op result type 'tensor<1x?xf32>' must have shape 4x?}}
  %r = dist.local_slice %x on @mesh axes = ["x"] dim = 1 : tensor<4x?xf32> -> tensor<1x?xf32>
  return
}

// -----

// A negative root is not in the group.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @broadcast_negative_root(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.broadcast' op root -1 must be non-negative}}
  %r = dist.broadcast %a on @m axes = ["x"] root = -1 : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A negative root is rejected by the op's own verifier, without the mesh.
func.func @broadcast_negative_root_without_mesh(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.broadcast' op root -1 must be non-negative}}
  %r = dist.broadcast %a on @nope axes = ["x"] root = -1 : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A variadic reduce_scatter needs one scatter dim per input.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_dims_count(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op needs one result and one scatter dim per input, got 2 inputs, 2 results and 1 scatter dims}}
  %r:2 = dist.reduce_scatter %a, %b on @m axes = ["x"] scatter_dims = [0] : tensor<8xf32>, tensor<8xf32> -> tensor<2xf32>, tensor<2xf32>
  return
}

// -----

// Each input of a variadic reduce_scatter is checked on its own.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_second_input(%a: tensor<8xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter' op input #1 scatter_dim 0 of size 6 does not divide over 4 devices}}
  %r:2 = dist.reduce_scatter %a, %b on @m axes = ["x"] scatter_dims = [0, 0] : tensor<8xf32>, tensor<6xf32> -> tensor<2xf32>, tensor<2xf32>
  return
}

// -----

// The split dim must divide over the group.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @shard_offset_not_divisible() -> index {
  // expected-error @+1 {{'dist.shard_offset' op size 10 does not divide over 4 devices}}
  %o = dist.shard_offset on @m axes = ["x"] size = 10 : index
  return %o : index
}

// -----

// A negative size is rejected.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @shard_offset_negative() -> index {
  // expected-error @+1 {{'dist.shard_offset' op size -4 must be non-negative}}
  %o = dist.shard_offset on @m axes = ["x"] size = -4 : index
  return %o : index
}

// -----

// Its axes must exist on the mesh.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @shard_offset_unknown_axis() -> index {
  // expected-error @+1 {{'dist.shard_offset' op axis 'y' is not an axis of mesh @m}}
  %o = dist.shard_offset on @m axes = ["y"] size = 8 : index
  return %o : index
}

// -----

// A started all-reduce's future holds the input's type.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @all_reduce_start_future_type(%a: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_reduce_start' op future #0 must hold 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %f = dist.all_reduce_start %a on @m axes = ["x"] : tensor<8xf32> -> !dist.future<tensor<4xf32>>
  return
}

// -----

// A started reduce-scatter is checked like reduce_scatter.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @reduce_scatter_start_shape(%a: tensor<8xf32>) {
  // expected-error @+1 {{'dist.reduce_scatter_start' op result type 'tensor<4xf32>' must have shape 2}}
  %f = dist.reduce_scatter_start %a on @m axes = ["x"] scatter_dims = [0] : tensor<8xf32> -> !dist.future<tensor<4xf32>>
  return
}

// -----

// A started all-gather is checked like all_gather.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @all_gather_start_dim(%a: tensor<8xf32>) {
  // expected-error @+1 {{'dist.all_gather_start' op gather_dim 1 is out of range for rank 1}}
  %f = dist.all_gather_start %a on @m axes = ["x"] gather_dim = 1 : tensor<8xf32> -> !dist.future<tensor<32xf32>>
  return
}

// -----

// wait returns the futures' tensors.
dist.mesh @m {axes = ["x"], shape = array<i64: 4>}
func.func @wait_type(%a: tensor<8xf32>) {
  %f = dist.all_reduce_start %a on @m axes = ["x"] : tensor<8xf32> -> !dist.future<tensor<8xf32>>
  // expected-error @+2 {{'dist.wait' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'dist.wait' op failed to infer returned types}}
  %r = "dist.wait"(%f) : (!dist.future<tensor<8xf32>>) -> tensor<4xf32>
  return
}
