// RUN: dist-opt %s -split-input-file --train-mixed-precision | FileCheck %s --check-prefix=BF16
// RUN: dist-opt %s -split-input-file --train-mixed-precision="compute=f16 loss-scale=dynamic growth-interval=7" | FileCheck %s --check-prefix=DYN
// RUN: dist-opt %s -split-input-file --train-mixed-precision="loss-scale=static init-scale=1024" | FileCheck %s --check-prefix=STATIC

// A linear classifier with a relu: products and elementwise work in 16
// bits, the loss and its backward in float32, the update on float32 master
// weights.
// BF16-LABEL: func.func @step(
// BF16-SAME: %[[W:[^:]*]]: tensor<4x8xf32> {train.name = "fc.weight"
// BF16-SAME: %[[B:[^:]*]]: tensor<4xf32> {train.name = "fc.bias"
// BF16-SAME: %[[X:[^:]*]]: tensor<16x8xf32>
// BF16-SAME: attributes {train.mixed_precision = "compute=bf16 loss-scale=none"}
// Each argument is converted once, at the top, in the order first needed.
// BF16: %[[X16:.*]] = train.convert %[[X]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// BF16-NEXT: %[[W16:.*]] = train.convert %[[W]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// BF16-NEXT: %[[B16:.*]] = train.convert %[[B]] : (tensor<4xf32>) -> tensor<4xbf16>
// BF16-NEXT: %[[XW:.*]] = train.matmul %[[X16]], %[[W16]] {transpose_rhs} : (tensor<16x8xbf16>, tensor<4x8xbf16>) -> tensor<16x4xbf16>
// BF16-NEXT: %[[Z:.*]] = train.add %[[XW]], %[[B16]] : (tensor<16x4xbf16>, tensor<4xbf16>) -> tensor<16x4xbf16>
// BF16-NEXT: %[[H:.*]] = train.relu %[[Z]] : (tensor<16x4xbf16>) -> tensor<16x4xbf16>
// BF16-NEXT: %[[H32:.*]] = train.convert %[[H]] : (tensor<16x4xbf16>) -> tensor<16x4xf32>
// BF16-NEXT: %[[LOSS:.*]] = train.cross_entropy %[[H32]], %{{.*}} : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
// BF16: %[[DH:.*]] = train.cross_entropy_backward %{{.*}}, %[[H32]], %{{.*}} : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
// The relu's mask compares in 16 bits; its backward follows the float32
// gradient of the loss.
// BF16: train.compare %[[Z]], %{{.*}} {direction = #train.compare_direction<gt>} : (tensor<16x4xbf16>, tensor<bf16>) -> tensor<16x4xi1>
// BF16: train.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<16x4xi1>, tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xf32>
// BF16: %[[DW:.*]] = train.matmul %{{.*}}, %[[X16]] {transpose_lhs} : (tensor<16x4xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
// BF16-NEXT: %[[DW32:.*]] = train.convert %[[DW]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// The bias gradient is a reduction: float32.
// BF16: %[[DB:.*]] = train.reduce %{{.*}} {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<16x4xf32>) -> tensor<4xf32>
// BF16: train.sgd %[[W]], %[[DW32]], %{{.*}}, %{{.*}} {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>)
// BF16: train.sgd %[[B]], %[[DB]], %{{.*}}, %{{.*}} {momentum = 9.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>)
// BF16: return {{.*}} : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>

// Dynamic scaling: the scale and its tracker are optimizer state.
// DYN-LABEL: func.func @step(
// DYN-SAME: %[[W:[^:]*]]: tensor<4x8xf32> {train.name = "fc.weight"
// DYN-SAME: %[[MW:[^:]*]]: tensor<4x8xf32> {train.name = "fc.weight.momentum_buffer"
// DYN-SAME: %[[SCALE:[^:]*]]: tensor<f32> {train.init = 6.553600e+04 : f64, train.name = "loss_scale", train.role = #train.role<opt_state>}
// DYN-SAME: %[[TRACKER:[^:]*]]: tensor<f32> {train.name = "loss_scale.growth_tracker", train.role = #train.role<opt_state>})
// DYN-SAME: tensor<f32> {train.name = "loss_scale", train.role = #train.role<opt_state>}, tensor<f32> {train.name = "loss_scale.growth_tracker", train.role = #train.role<opt_state>})
// DYN-SAME: attributes {train.mixed_precision = "compute=f16 loss-scale=dynamic init-scale=65536 growth-factor=2 backoff-factor=0.5 growth-interval=7"}
// DYN: train.matmul {{.*}} -> tensor<16x4xf16>
// The seed is scaled; the forward's use of the same constant is not.
// DYN: %[[SEED:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// DYN-NEXT: %[[SCALED:.*]] = train.mul %[[SEED]], %[[SCALE]]
// DYN-NEXT: %[[ONE:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// DYN-NEXT: %[[INV:.*]] = train.div %[[ONE]], %[[SCALE]]
// DYN: train.mul %{{.*}}, %[[SEED]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// DYN: train.cross_entropy_backward %[[SCALED]],
// DYN: %[[DW:.*]] = train.convert %{{.*}} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// Each gradient is unscaled where it is made, and checked there.
// DYN-NEXT: %[[UNSCALED:.*]] = train.mul %[[DW]], %[[INV]]
// DYN-NEXT: %[[ZEROS:.*]] = train.mul %[[UNSCALED]], %[[ZERO:.*]] :
// DYN-NEXT: %[[SUM:.*]] = train.reduce %[[ZEROS]] {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>}
// DYN: %[[NEWW:.*]], %[[NEWMW:.*]] = train.sgd %[[W]], %[[UNSCALED]],
// DYN: %[[TOTAL:.*]] = train.add %[[SUM]], %{{.*}}
// DYN: %[[FINITE:.*]] = train.compare %[[TOTAL]], %[[TOTAL]] {direction = #train.compare_direction<eq>}
// DYN: %[[KEEPW:.*]] = train.select %[[FINITE]], %[[NEWW]], %[[W]]
// DYN: %[[KEEPMW:.*]] = train.select %[[FINITE]], %[[NEWMW]], %[[MW]]
// DYN: %[[COUNT:.*]] = train.add %[[TRACKER]], %{{.*}}
// DYN: %[[INTERVAL:.*]] = train.constant dense<7.000000e+00> : tensor<f32>
// DYN-NEXT: %[[GROW:.*]] = train.compare %[[COUNT]], %[[INTERVAL]] {direction = #train.compare_direction<eq>}
// DYN: %[[GROWN:.*]] = train.mul %[[SCALE]], %{{.*}}
// DYN: %[[GROWNOK:.*]] = train.compare %[[GROWN]], %{{.*}} {direction = #train.compare_direction<le>}
// DYN: %[[CLEAN:.*]] = train.select %[[GROW]], %{{.*}}, %[[SCALE]]
// DYN: %[[BACKED:.*]] = train.mul %[[SCALE]], %{{.*}}
// DYN-NEXT: %[[NEWSCALE:.*]] = train.select %[[FINITE]], %[[CLEAN]], %[[BACKED]]
// DYN: %[[NEWTRACKER:.*]] = train.select %[[FINITE]], %{{.*}}, %{{.*}}
// DYN: return %[[KEEPW]], {{.*}}, %[[NEWSCALE]], %[[NEWTRACKER]] :

// Static scaling: a constant scale, no state, no skipped steps.
// STATIC-LABEL: func.func @step(
// STATIC-SAME: attributes {train.mixed_precision = "compute=bf16 loss-scale=static init-scale=1024"}
// STATIC: %[[SCALE:.*]] = train.constant dense<1.024000e+03> : tensor<f32>
// STATIC: %[[INV:.*]] = train.constant dense<9.765625E-4> : tensor<f32>
// STATIC: train.mul %{{.*}}, %[[INV]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// STATIC-NOT: train.select %{{.*}} : (tensor<i1>
// STATIC: return
func.func @step(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
    %mw: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
    %mb: tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
        tensor<4xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %xw = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %z = train.add %xw, %b : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
  %h = train.relu %z : (tensor<16x4xf32>) -> tensor<16x4xf32>
  %ce = train.cross_entropy %h, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  // A constant 1.0 shared by the forward (the loss times one) and the
  // backward's seed.
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %loss = train.mul %ce, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zero = train.constant dense<0.000000e+00> : tensor<f32>
  %dh = train.cross_entropy_backward %one, %h, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %active = train.compare %z, %zero {direction = #train.compare_direction<gt>} : (tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xi1>
  %dz = train.select %active, %dh, %zero : (tensor<16x4xi1>, tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xf32>
  %dw = train.matmul %dz, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %db = train.reduce %dz {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<16x4xf32>) -> tensor<4xf32>
  %w2, %mw2 = train.sgd %w, %dw, %lr, %mw {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %b2, %mb2 = train.sgd %b, %db, %lr, %mb {momentum = 9.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %w2, %b2, %mw2, %mb2, %loss : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// A marked seed is used as it is (any value), and a step without loss
// scaling keeps it.
// BF16-LABEL: func.func @marked(
// BF16: train.matmul {{.*}} -> tensor<2x2xbf16>
// BF16-NOT: train.mul
// DYN-LABEL: func.func @marked(
// DYN: %[[SEED:.*]] = train.constant {train.loss_seed} dense<2.000000e+00> : tensor<f32>
// DYN-NEXT: train.mul %[[SEED]], %{{.*}} : (tensor<f32>, tensor<f32>)
func.func @marked(
    %w: tensor<2x2xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<2x2xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2x2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %loss = train.reduce %y {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<2x2xf32>) -> tensor<f32>
  %seed = train.constant {train.loss_seed} dense<2.000000e+00> : tensor<f32>
  %dy = train.broadcast %seed {dims = array<i64>} : (tensor<f32>) -> tensor<2x2xf32>
  %dw = train.matmul %x, %dy {transpose_lhs} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %w2 = train.sgd %w, %dw, %lr : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  return %w2, %loss : tensor<2x2xf32>, tensor<f32>
}

// -----

// One constant 1.0 is both the seed (d loss / d prediction times one) and
// the 1 of tanh's derivative 1 - t^2, and both uses need it in 16 bits: the
// seed is found on the float32 step, so only its use on the way to the
// gradients is scaled (the 16-bit conversion of the constant was once
// shared by both and made every gradient look nonlinear in it).
// BF16-LABEL: func.func @shared_one(
// STATIC-LABEL: func.func @shared_one(
// DYN-LABEL: func.func @shared_one(
// DYN: %[[ONE:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// DYN-NEXT: %[[ONE16:.*]] = train.convert %[[ONE]] : (tensor<f32>) -> tensor<f16>
// DYN-NEXT: %[[SCALED:.*]] = train.mul %[[ONE]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// DYN: %[[SCALED16:.*]] = train.convert %[[SCALED]] : (tensor<f32>) -> tensor<f16>
// DYN: train.mul %{{.*}}, %[[SCALED16]] : (tensor<4x2xf16>, tensor<f16>) -> tensor<4x2xf16>
// DYN: train.sub %[[ONE16]], %{{.*}} : (tensor<f16>, tensor<4x3xf16>) -> tensor<4x3xf16>
func.func @shared_one(
    %w: tensor<2x3xf32> {train.role = #train.role<param>, train.name = "w"},
    %v: tensor<3x2xf32> {train.role = #train.role<param>, train.name = "v"},
    %x: tensor<4x2xf32> {train.role = #train.role<input>, train.name = "x"},
    %target: tensor<4x2xf32> {train.role = #train.role<label>, train.name = "target"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2x3xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<3x2xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %t = train.tanh %h : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = train.matmul %t, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %diff = train.sub %p, %target : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %sq = train.mul %diff, %diff : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %sum = train.reduce %sq {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<4x2xf32>) -> tensor<f32>
  %mean = train.constant dense<1.250000e-01> : tensor<f32>
  %loss = train.mul %sum, %mean : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %two_mean = train.constant dense<2.500000e-01> : tensor<f32>
  %ds = train.mul %diff, %two_mean : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dp = train.mul %ds, %one : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %dv = train.matmul %t, %dp {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %dt = train.matmul %dp, %v {transpose_rhs} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %t2 = train.mul %t, %t : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %tg = train.sub %one, %t2 : (tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %dh = train.mul %dt, %tg : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %dw = train.matmul %x, %dh {transpose_lhs} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %w2 = train.sgd %w, %dw, %lr : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %v2 = train.sgd %v, %dv, %lr : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  return %w2, %v2, %loss : tensor<2x3xf32>, tensor<3x2xf32>, tensor<f32>
}

// -----

// An optimizer written as elementwise ops (how Keras and optax steps
// export): the ops that read the gradient other than linearly are the
// update, on float32 master weights; with loss scaling the gradient they
// read is unscaled and checked.
// BF16-LABEL: func.func @elementwise_update(
// BF16: %[[DW:.*]] = train.matmul {{.*}} -> tensor<4x8xbf16>
// BF16-NEXT: %[[DW32:.*]] = train.convert %[[DW]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// BF16: %[[M9:.*]] = train.mul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// BF16-NEXT: %[[M2:.*]] = train.add %[[M9]], %[[DW32]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// BF16-NEXT: %[[STEP:.*]] = train.mul %{{.*}}, %[[M2]] : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// BF16-NEXT: %[[W2:.*]] = train.sub %{{.*}}, %[[STEP]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// STATIC-LABEL: func.func @elementwise_update(
// DYN-LABEL: func.func @elementwise_update(
// DYN: %[[DW32:.*]] = train.convert %{{.*}} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// DYN-NEXT: %[[UNSCALED:.*]] = train.mul %[[DW32]], %{{.*}}
// DYN: train.add %{{.*}}, %[[UNSCALED]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// DYN: train.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// DYN: train.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @elementwise_update(
    %w: tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
    %m: tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum"},
    %x: tensor<16x8xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<16xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x8xf32> {train.role = #train.role<opt_state>, train.name = "w.momentum"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %logits = train.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<16x4xf32>, tensor<16xi32>) -> tensor<f32>
  %seed = train.constant {train.loss_seed} dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %seed, %logits, %y : (tensor<f32>, tensor<16x4xf32>, tensor<16xi32>) -> tensor<16x4xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<16x4xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %beta = train.constant dense<9.000000e-01> : tensor<f32>
  %m9 = train.mul %m, %beta : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = train.add %m9, %dw : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %step = train.mul %lr, %m2 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %w2 = train.sub %w, %step : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %w2, %m2, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
