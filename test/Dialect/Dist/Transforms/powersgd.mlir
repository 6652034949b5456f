// RUN: dist-opt %s -split-input-file --dist-powersgd=rank=2 | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-powersgd=rank=1 | FileCheck %s --check-prefix=RANK1

// A 16x32 weight gradient is all-reduced as PowerSGD's factors (P: 16x2,
// Q: 32x2); the bias and the small 4x4 matrix stay in the all-reduce with
// the loss. Q and the error become opt_state arguments and results.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[Q:arg[0-9]+]]: tensor<32x2xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[\], \[\]\]}}>, train.init = "normal", train.name = "w.powersgd.q", train.role = #train.role<opt_state>}
// CHECK-SAME: %[[E:arg[0-9]+]]: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[data\], \[\]\]}}>, train.init = 0.000000e+00 : f64, train.name = "w.powersgd.error", train.role = #train.role<opt_state>}
// CHECK-SAME: -> (
// CHECK-SAME: tensor<32x2xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[\], \[\]\]}}>, train.name = "w.powersgd.q", train.role = #train.role<opt_state>}
// CHECK-SAME: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[data\], \[\]\]}}>, train.name = "w.powersgd.error", train.role = #train.role<opt_state>})
// CHECK: %[[M:.*]] = train.add %{{.*}}, %[[E]] : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[P:.*]] = train.matmul %[[M]], %[[Q]] : (tensor<16x32xf32>, tensor<32x2xf32>) -> tensor<16x2xf32>
// CHECK: %[[PR:.*]] = dist.all_reduce %[[P]] on @mesh axes = ["data"] : tensor<16x2xf32>
// Modified Gram-Schmidt over the two columns.
// CHECK: %[[C0:.*]] = train.slice %[[PR]] {limit = array<i64: 16, 1>, start = array<i64: 0, 0>}
// CHECK: %[[C1:.*]] = train.slice %[[PR]] {limit = array<i64: 16, 2>, start = array<i64: 0, 1>}
// CHECK: %[[SQ:.*]] = train.mul %[[C0]], %[[C0]]
// CHECK: %[[SS:.*]] = train.reduce %[[SQ]] {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>}
// CHECK: %[[NORM:.*]] = train.sqrt %[[SS]]
// CHECK: %[[D:.*]] = train.add %[[NORM]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[U0:.*]] = train.div %[[C0]], %[[D]]
// CHECK: %[[DOT:.*]] = train.mul %[[U0]], %[[C1]]
// CHECK: %[[DS:.*]] = train.reduce %[[DOT]]
// CHECK: %[[PROJ:.*]] = train.mul %[[U0]], %[[DS]]
// CHECK: %[[R1:.*]] = train.sub %[[C1]], %[[PROJ]]
// CHECK: %[[U1:.*]] = train.div %[[R1]], %{{.*}}
// CHECK: %[[PO:.*]] = train.concat %[[U0]], %[[U1]] {dim = 1 : i64} : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x2xf32>
// CHECK: %[[QN:.*]] = train.matmul %[[M]], %[[PO]] {transpose_lhs} : (tensor<16x32xf32>, tensor<16x2xf32>) -> tensor<32x2xf32>
// CHECK: %[[QR:.*]] = dist.all_reduce %[[QN]] on @mesh axes = ["data"] : tensor<32x2xf32>
// CHECK: %[[G:.*]] = train.matmul %[[PO]], %[[QR]] {transpose_rhs} : (tensor<16x2xf32>, tensor<32x2xf32>) -> tensor<16x32xf32>
// CHECK: %[[HALF:.*]] = train.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[SHARE:.*]] = train.mul %[[G]], %[[HALF]]
// CHECK: %[[EN:.*]] = train.sub %[[M]], %[[SHARE]]
// CHECK: %[[R:.*]]:3 = dist.all_reduce %{{.*}}, %{{.*}}, %{{.*}} on @mesh axes = ["data"] : tensor<f32>, tensor<16xf32>, tensor<4x4xf32>
// CHECK: train.sgd %{{.*}}, %[[G]], %{{.*}} :
// CHECK: train.sgd %{{.*}}, %[[R]]#1, %{{.*}} :
// CHECK: train.sgd %{{.*}}, %[[R]]#2, %{{.*}} :
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[R]]#0, %[[QR]], %[[EN]]
// RANK1-LABEL: func.func @train_step
// RANK1-SAME: tensor<32x1xf32> {{.*}}train.name = "w.powersgd.q"
// RANK1-NOT: train.concat
// RANK1: dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<16x1xf32>
// RANK1: dist.all_reduce %{{.*}} on @mesh axes = ["data"] : tensor<32x1xf32>
func.func @train_step(
    %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "w"},
    %b: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[]]>, train.role = #train.role<param>, train.name = "b"},
    %s: tensor<4x4xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "s"},
    %gw: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>, train.role = #train.role<input>, train.name = "gw"},
    %gb: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[data]]>, train.role = #train.role<input>, train.name = "gb"},
    %gs: tensor<4x4xf32> {dist.sharding = #dist.sharding<@mesh, [[data], []]>, train.role = #train.role<input>, train.name = "gs"},
    %loss: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.role = #train.role<hyper>, train.name = "l"},
    %lr: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "w"},
        tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [[]]>, train.role = #train.role<param>, train.name = "b"},
        tensor<4x4xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "s"},
        tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.role = #train.role<loss>, train.name = "loss"})
    attributes {dist.partitioned} {
  %r:4 = dist.all_reduce %loss, %gw, %gb, %gs on @mesh axes = ["data"] : tensor<f32>, tensor<16x32xf32>, tensor<16xf32>, tensor<4x4xf32>
  %nw = train.sgd %w, %r#1, %lr : (tensor<16x32xf32>, tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32>
  %nb = train.sgd %b, %r#2, %lr : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %ns = train.sgd %s, %r#3, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %nw, %nb, %ns, %r#0 : tensor<16x32xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

// A 4-D convolution gradient is viewed as 8 x (4*3*3) and reshaped back.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
// CHECK-LABEL: func.func @conv
// CHECK-SAME: tensor<8x4x3x3xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[data\], \[\], \[\], \[\]\]}}>, train.init = 0.000000e+00 : f64, train.name = "k.powersgd.error"
// CHECK: train.reshape %{{.*}} : (tensor<8x4x3x3xf32>) -> tensor<8x36xf32>
// CHECK: %[[G:.*]] = train.reshape %{{.*}} : (tensor<8x36xf32>) -> tensor<8x4x3x3xf32>
// CHECK: train.constant dense<2.500000e-01> : tensor<f32>
// CHECK: train.sgd %{{.*}}, %[[G]], %{{.*}} :
// CHECK-NOT: dist.all_reduce %{{.*}} : tensor<8x4x3x3xf32>
func.func @conv(
    %k: tensor<8x4x3x3xf32> {dist.sharding = #dist.sharding<@mesh, [[], [], [], []]>, train.role = #train.role<param>, train.name = "k"},
    %gk: tensor<8x4x3x3xf32> {dist.sharding = #dist.sharding<@mesh, [[data], [], [], []]>, train.role = #train.role<input>, train.name = "gk"},
    %lr: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x4x3x3xf32> {dist.sharding = #dist.sharding<@mesh, [[], [], [], []]>, train.role = #train.role<param>, train.name = "k"})
    attributes {dist.partitioned} {
  %r = dist.all_reduce %gk on @mesh axes = ["data"] : tensor<8x4x3x3xf32>
  %nk = train.sgd %k, %r, %lr : (tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<f32>) -> tensor<8x4x3x3xf32>
  return %nk : tensor<8x4x3x3xf32>
}

// -----

// A mixed step's bf16 gradient is compressed in float32 and rounded back
// for the widening convert before the update.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: tensor<16x32xf32> {{.*}}train.name = "w.powersgd.error"
// CHECK: %[[WIDE:.*]] = train.convert %{{.*}} : (tensor<16x32xbf16>) -> tensor<16x32xf32>
// CHECK: train.add %[[WIDE]], %{{.*}} : (tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[G:.*]] = train.matmul {{.*}} -> tensor<16x32xf32>
// CHECK: %[[NARROW:.*]] = train.convert %[[G]] : (tensor<16x32xf32>) -> tensor<16x32xbf16>
// CHECK: train.convert %[[NARROW]] : (tensor<16x32xbf16>) -> tensor<16x32xf32>
func.func @mixed(
    %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "w"},
    %gw: tensor<16x32xbf16> {dist.sharding = #dist.sharding<@mesh, [[data], []]>, train.role = #train.role<input>, train.name = "gw"},
    %lr: tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [[], []]>, train.role = #train.role<param>, train.name = "w"})
    attributes {dist.partitioned} {
  %r = dist.all_reduce %gw on @mesh axes = ["data"] : tensor<16x32xbf16>
  %g = train.convert %r : (tensor<16x32xbf16>) -> tensor<16x32xf32>
  %nw = train.sgd %w, %g, %lr : (tensor<16x32xf32>, tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32>
  return %nw : tensor<16x32xf32>
}
