// RUN: dist-opt %s -split-input-file --dist-partition -verify-diagnostics

// A value cannot be made a pending sum that it is not.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @to_partial(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], []], partial = [data]>}) {
  %y = train.relu %x {dist.shardings = [#dist.sharding<@mesh, [[data], []]>]} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-error @+1 {{'func.return' op cannot reshard an operand from #dist.sharding<@mesh, [[data], []]> to #dist.sharding<@mesh, [[], []], partial = [data]>: cannot make a value partial over axis}}
  return %y : tensor<8x16xf32>
}

// -----

// Control flow inside a sharded function is not supported yet.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @region(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}, %c: i1) -> tensor<8x16xf32> {
  // expected-error @+1 {{'scf.if' op ops with regions cannot be partitioned yet}}
  %y = scf.if %c -> tensor<8x16xf32> {
    scf.yield %x : tensor<8x16xf32>
  } else {
    %r = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
    scf.yield %r : tensor<8x16xf32>
  }
  return %y : tensor<8x16xf32>
}

// -----

// An argument split over an axis the mesh does not have (rejected by the
// verifier before partitioning).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: axis 'model' is not an axis of mesh @mesh}}
func.func @unknown_axis(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x16xf32> {
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A result sharded on a mesh that does not exist.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op result #0: mesh @nomesh does not exist}}
func.func @unknown_mesh(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@nomesh, [[], []]>}) {
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An argument whose split does not divide (rejected by the verifier).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: dim 0 of size 6 does not divide over ["data"] (4 devices)}}
func.func @non_divisible_argument(%x: tensor<6x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<6x16xf32> {
  %y = train.relu %x : (tensor<6x16xf32>) -> tensor<6x16xf32>
  return %y : tensor<6x16xf32>
}

// -----

// An argument split over axes its dim does not divide by: the verifier reports
// it at the argument (an error on the function printed the whole function).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @argument_does_not_divide(
    // expected-error @+1 {{'func.func' op argument #0: dim 0 of size 6 does not divide over ["data"] (4 devices)}}
    %x: tensor<6x2xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<6x2xf32> {
  return %x : tensor<6x2xf32>
}
