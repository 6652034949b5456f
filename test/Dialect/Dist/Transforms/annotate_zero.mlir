// RUN: dist-opt %s -split-input-file --dist-annotate-zero="stage=1 replicas=4" -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,STAGE12
// RUN: dist-opt %s -split-input-file --dist-annotate-zero="stage=2 replicas=4" -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,STAGE12
// RUN: dist-opt %s -split-input-file --dist-annotate-zero="stage=3 replicas=4" -verify-diagnostics | FileCheck %s --check-prefixes=CHECK,STAGE3

// ZeRO on a two-layer step: "v" (8x8) is sharded along dim 0, "w" (6x8)
// along dim 1 (its first dim that divides by 4), "b" (6) stays replicated.
// Stages 1 and 2 shard the momentum buffers and reduce-scatter the gradient
// (one all-reduce's bytes with the all-gather of the update); stage 3 also
// shards the params at the
// boundary and gathers them whole before every forward and backward use.
// CHECK: dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @step
// STAGE12-SAME: (%[[V:[^:]+]]: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// STAGE12-SAME: %[[W:[^:]+]]: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// STAGE3-SAME: (%[[V:[^:]+]]: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// STAGE3-SAME: %[[W:[^:]+]]: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// CHECK-SAME: %[[B:[^:]+]]: tensor<6xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>
// CHECK-SAME: %[[MV:[^:]+]]: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-SAME: %[[MW:[^:]+]]: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// CHECK-SAME: %[[MB:[^:]+]]: tensor<6xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>
// CHECK-SAME: %[[X:[^:]+]]: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// STAGE12-SAME: -> (tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// STAGE12-SAME: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// STAGE3-SAME: -> (tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// STAGE3-SAME: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// CHECK-SAME: tensor<6xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>
// CHECK-SAME: tensor<8x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-SAME: tensor<6x8xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>
// STAGE3: %[[V0:.*]] = dist.annotate %[[V]] {sharding = #dist.sharding<@mesh, [{{\[}}], []]>} : tensor<8x8xf32>
// STAGE3: train.matmul %[[X]], %[[V0]] {transpose_rhs}
// STAGE3: %[[W0:.*]] = dist.annotate %[[W]] {sharding = #dist.sharding<@mesh, [{{\[}}], []]>} : tensor<6x8xf32>
// STAGE3: train.matmul %{{.*}}, %[[W0]] {transpose_rhs}
// CHECK: %[[DW:.*]] = train.matmul {{.*}} {transpose_lhs} : (tensor<16x6xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
// Every reader of a gradient sees its shard: annotated where it is made.
// CHECK-NEXT: %[[GW:.*]] = dist.annotate %[[DW]] {sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>} : tensor<6x8xf32>
// STAGE3: %[[W1:.*]] = dist.annotate %[[W]] {sharding = #dist.sharding<@mesh, [{{\[}}], []]>} : tensor<6x8xf32>
// STAGE3: train.matmul %{{.*}}, %[[W1]] : (tensor<16x6xf32>, tensor<6x8xf32>) -> tensor<16x8xf32>
// STAGE12: train.matmul %{{.*}}, %[[W]] : (tensor<16x6xf32>, tensor<6x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[DV:.*]] = train.matmul {{.*}} {transpose_lhs} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: %[[GV:.*]] = dist.annotate %[[DV]] {sharding = #dist.sharding<@mesh, [{{\[}}data], []]>} : tensor<8x8xf32>
// CHECK: %[[PV:.*]] = dist.annotate %[[V]] {sharding = #dist.sharding<@mesh, [{{\[}}data], []]>} : tensor<8x8xf32>
// CHECK: train.sgd %[[PV]], %[[GV]], %{{.*}}, %[[MV]]
// CHECK: %[[PW:.*]] = dist.annotate %[[W]] {sharding = #dist.sharding<@mesh, [{{\[}}], [data]]>} : tensor<6x8xf32>
// CHECK: train.sgd %[[PW]], %[[GW]], %{{.*}}, %[[MW]]
// CHECK-NOT: dist.annotate
// CHECK: train.sgd %[[B]], %{{.*}}, %{{.*}}, %[[MB]]
// CHECK-NOT: dist.annotate
// CHECK: return
func.func @step(%v: tensor<8x8xf32> {train.role = #train.role<param>, train.name = "v"},
                %w: tensor<6x8xf32> {train.role = #train.role<param>, train.name = "w"},
                // expected-remark @+1 {{argument #2 'b' (param) of type 'tensor<6xf32>' stays replicated: no dim divides over 4 replicas}}
                %b: tensor<6xf32> {train.role = #train.role<param>, train.name = "b"},
                %mv: tensor<8x8xf32> {train.role = #train.role<opt_state>, train.name = "v.momentum_buffer"},
                %mw: tensor<6x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
                %mb: tensor<6xf32> {train.role = #train.role<opt_state>, train.name = "b.momentum_buffer"},
                %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
                %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x8xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<6x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<6xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<8x8xf32> {train.role = #train.role<opt_state>, train.name = "v.momentum_buffer"},
        tensor<6x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum_buffer"},
        tensor<6xf32> {train.role = #train.role<opt_state>, train.name = "b.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %v {transpose_rhs} : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %hw = train.matmul %h, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<6x8xf32>) -> tensor<16x6xf32>
  %logits = train.add %hw, %b : (tensor<16x6xf32>, tensor<6xf32>) -> tensor<16x6xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x6xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x6xf32>, tensor<16xi32>) -> tensor<16x6xf32>
  %dw = train.matmul %dlogits, %h {transpose_lhs} : (tensor<16x6xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %db = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<16x6xf32>) -> tensor<6xf32>
  %dh = train.matmul %dlogits, %w : (tensor<16x6xf32>, tensor<6x8xf32>) -> tensor<16x8xf32>
  %dv = train.matmul %dh, %x {transpose_lhs} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %vn, %mvn = train.sgd %v, %dv, %lr, %mv {momentum = 9.000000e-01 : f64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
  %wn, %mwn = train.sgd %w, %dw, %lr, %mw {momentum = 9.000000e-01 : f64} : (tensor<6x8xf32>, tensor<6x8xf32>, tensor<f32>, tensor<6x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>)
  %bn, %mbn = train.sgd %b, %db, %lr, %mb {momentum = 9.000000e-01 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  return %vn, %wn, %bn, %mvn, %mwn, %mbn, %loss : tensor<8x8xf32>, tensor<6x8xf32>, tensor<6xf32>, tensor<8x8xf32>, tensor<6x8xf32>, tensor<6xf32>, tensor<f32>
}

// -----

// Adam: only the state of the parameter's type is sharded (not the scalar
// step count); a parameter returned unchanged has no update op and stays
// replicated.
// CHECK-LABEL: func.func @adam_step
// STAGE12-SAME: (%[[P:[^:]+]]: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}], []]>
// STAGE3-SAME: (%[[P:[^:]+]]: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-SAME: %[[F:[^:]+]]: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>
// CHECK-SAME: %[[EA:[^:]+]]: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-SAME: %[[EAS:[^:]+]]: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>
// CHECK-SAME: %[[ST:[^:]+]]: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>
// CHECK-SAME: tensor<4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}]]>, train.name = "frozen"
// CHECK-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>, train.name = "p.exp_avg"
// CHECK-SAME: tensor<8x4xf32> {dist.sharding = #dist.sharding<@mesh, [{{\[}}data], []]>, train.name = "p.exp_avg_sq"
// CHECK-SAME: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.name = "p.step"
// CHECK-NOT: dist.annotate %[[F]]
// CHECK: %[[PP:.*]] = dist.annotate %[[P]] {sharding = #dist.sharding<@mesh, [{{\[}}data], []]>} : tensor<8x4xf32>
// CHECK: train.adamw %[[PP]], %{{.*}}, %[[EA]], %[[EAS]], %[[ST]], %{{.*}}
// CHECK: return %{{.*}}, %[[F]],
func.func @adam_step(%p: tensor<8x4xf32> {train.role = #train.role<param>, train.name = "p"},
                     %f: tensor<4xf32> {train.role = #train.role<param>, train.name = "frozen"},
                     %ea: tensor<8x4xf32> {train.role = #train.role<opt_state>, train.name = "p.exp_avg"},
                     %eas: tensor<8x4xf32> {train.role = #train.role<opt_state>, train.name = "p.exp_avg_sq"},
                     %st: tensor<f32> {train.role = #train.role<opt_state>, train.name = "p.step"},
                     %x: tensor<16x4xf32> {train.role = #train.role<input>, train.name = "x"},
                     %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
                     %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x4xf32> {train.role = #train.role<param>, train.name = "p"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "frozen"},
        tensor<8x4xf32> {train.role = #train.role<opt_state>, train.name = "p.exp_avg"},
        tensor<8x4xf32> {train.role = #train.role<opt_state>, train.name = "p.exp_avg_sq"},
        tensor<f32> {train.role = #train.role<opt_state>, train.name = "p.step"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xf = train.add %x, %f : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
  %logits = train.matmul %xf, %p {transpose_rhs} : (tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x8xf32>, tensor<16xi32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dl = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<16x8xf32>, tensor<16xi32>) -> tensor<16x8xf32>
  %dp = train.matmul %dl, %xf {transpose_lhs} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %pn, %ean, %easn, %stn = train.adamw %p, %dp, %ea, %eas, %st, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>)
  return %pn, %f, %ean, %easn, %stn, %loss : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>
}
