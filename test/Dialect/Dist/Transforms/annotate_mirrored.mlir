// RUN: dist-opt %s -split-input-file --dist-annotate-mirrored=replicas=4 -verify-diagnostics | FileCheck %s

// A training step: a 1-D mesh "data" of 4 devices is declared; input and
// label are split along the batch, param, optimizer state, hyper-parameter
// and every result are replicated; the body is unchanged.
// CHECK: dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w"
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w.momentum_buffer"
// CHECK-SAME: %{{.*}}: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>, train.name = "x"
// CHECK-SAME: %{{.*}}: tensor<16xi32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>, train.name = "y"
// CHECK-SAME: %{{.*}}: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.name = "lr"
// CHECK-SAME: -> (tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w"
// CHECK-SAME: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w.momentum_buffer"
// CHECK-SAME: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.name = "loss"
// CHECK-NOT: dist.
// CHECK: return
func.func @step(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// A mesh "@mesh" of the strategy's shape is reused, not declared again.
// CHECK: dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @existing_mesh
// CHECK-SAME: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @existing_mesh(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// Every training step of the module is annotated on the one mesh.
// CHECK: dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @first
// CHECK-SAME: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-LABEL: func.func @second
// CHECK-SAME: tensor<32x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
func.func @first(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
func.func @second(%w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
                %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %x: tensor<32x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<32xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<32x8xf32>, tensor<4x8xf32>) -> tensor<32x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<32x4xf32>, tensor<32xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<32x4xf32>, tensor<32xi32>) -> tensor<32x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<32x4xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
  %wn, %mn = train.sgd %w, %dw, %lr, %m {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %wn, %mn, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// A function without train.role attributes is not a training step.
// CHECK-LABEL: func.func @not_a_step
// CHECK-NOT: dist.sharding
// CHECK: return
func.func @not_a_step(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %y = train.relu %x : (tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// -----

// An input without a batch dim (a positional table [3, 8] beside a batch of
// 16: the batch is the labels' leading dim) stays whole on every replica,
// with a remark; it is neither refused nor split and gathered back.
// CHECK-LABEL: func.func @positional_table
// CHECK-SAME: %{{.*}}: tensor<16x3x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], [], []]>, train.name = "x"
// CHECK-SAME: %{{.*}}: tensor<3x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "pos"
// CHECK-SAME: %{{.*}}: tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "mask"
// CHECK-SAME: %{{.*}}: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data]]>, train.name = "t"
func.func @positional_table(
    %x: tensor<16x3x8xf32> {train.role = #train.role<input>, train.name = "x"},
    // expected-remark @+1 {{argument #1 'pos' (input) has no batch dim ('tensor<3x8xf32>', the batch is 16): it stays whole on every replica}}
    %pos: tensor<3x8xf32> {train.role = #train.role<input>, train.name = "pos"},
    // expected-remark @+1 {{argument #2 'mask' (input) has no batch dim ('tensor<2x8xf32>', the batch is 16): it stays whole on every replica}}
    %mask: tensor<2x8xf32> {train.role = #train.role<input>, train.name = "mask"},
    %t: tensor<16xf32> {train.role = #train.role<label>, train.name = "t"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.add %x, %pos : (tensor<16x3x8xf32>, tensor<3x8xf32>) -> tensor<16x3x8xf32>
  %l = train.reduce %h {dims = array<i64: 0, 1, 2>, kind = #train.reduce_kind<sum>} : (tensor<16x3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
