// RUN: dist-opt %s -split-input-file --dist-propagate-sharding -verify-diagnostics

// Two annotated operands split one pointwise factor over different axes.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @conflict_pointwise(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>},
                              %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x16xf32> {
  // expected-error @+1 {{'train.add' op conflicting shardings for factor 'i' (size 8): operand #0 is annotated [data], operand #1 is annotated [model]; annotate one of them again to reshard it}}
  %c = train.add %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// The two operands of a matmul split the contraction factor differently.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @conflict_contraction(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[], [data]]>},
                                %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x32xf32> {
  // expected-error @+1 {{'train.matmul' op conflicting shardings for factor 'k' (size 16): operand #0 is annotated [data], operand #1 is annotated [model]}}
  %c = train.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// -----

// A dist.annotate result and the value it annotates meet at one op.
dist.mesh @mesh {axes = ["data", "model"], shape = array<i64: 2, 4>}
func.func @conflict_annotate(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>}) -> tensor<8x16xf32> {
  %a = dist.annotate %x {sharding = #dist.sharding<@mesh, [[model], []]>} : tensor<8x16xf32>
  // expected-error @+1 {{'train.add' op conflicting shardings for factor 'i' (size 8): operand #0 is annotated [model], operand #1 is annotated [data]}}
  %c = train.add %a, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// One function uses shardings on two meshes.
dist.mesh @a {axes = ["data"], shape = array<i64: 4>}
dist.mesh @b {axes = ["data"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op uses mesh @b but the function already uses @a; one function runs on one mesh}}
func.func @two_meshes(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@a, [[data], []]>},
                      %y: tensor<8x16xf32> {dist.sharding = #dist.sharding<@b, [[data], []]>}) -> tensor<8x16xf32> {
  %c = train.add %x, %y : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// An annotation on a mesh that does not exist (rejected by the verifier
// before propagation runs).
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @unknown_mesh(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'dist.annotate' op mesh @nomesh does not exist}}
  %a = dist.annotate %x {sharding = #dist.sharding<@nomesh, [[data], []]>} : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}

// -----

// An annotation naming an axis the mesh does not have.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// expected-error @+1 {{'func.func' op argument #0: axis 'model' is not an axis of mesh @mesh}}
func.func @unknown_axis(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [[model], []]>}) -> tensor<8x16xf32> {
  %y = train.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
