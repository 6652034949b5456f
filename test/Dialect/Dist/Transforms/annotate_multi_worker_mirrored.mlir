// RUN: dist-opt %s -split-input-file --dist-annotate-multi-worker-mirrored="hosts=2 devices=4" | FileCheck %s

// A training step on 2 hosts x 4 devices: a 2-D mesh whose "hosts" axis
// crosses hosts; the batch is split over both axes, everything else is
// replicated.
// CHECK: dist.mesh @mesh {axes = ["hosts", "devices"], host_axes = ["hosts"], shape = array<i64: 2, 4>}
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w"
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>, train.name = "w.momentum_buffer"
// CHECK-SAME: %{{.*}}: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}hosts, devices], []]>, train.name = "x"
// CHECK-SAME: %{{.*}}: tensor<16xi32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}hosts, devices]]>, train.name = "y"
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
// CHECK: dist.mesh @mesh {axes = ["hosts", "devices"], host_axes = ["hosts"], shape = array<i64: 2, 4>}
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @existing_mesh
// CHECK-SAME: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}hosts, devices], []]>
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>, host_axes = ["hosts"]}
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
