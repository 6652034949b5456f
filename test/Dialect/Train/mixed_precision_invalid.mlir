// RUN: dist-opt %s -split-input-file --train-mixed-precision="compute=f16 loss-scale=dynamic" -verify-diagnostics
// RUN: not dist-opt %s --train-mixed-precision="compute=fp8" 2>&1 | FileCheck %s --check-prefix=COMPUTE
// RUN: not dist-opt %s --train-mixed-precision="loss-scale=auto" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not dist-opt %s --train-mixed-precision="init-scale=0" 2>&1 | FileCheck %s --check-prefix=INIT
// RUN: not dist-opt %s --train-mixed-precision="growth-factor=1" 2>&1 | FileCheck %s --check-prefix=GROWTH
// RUN: not dist-opt %s --train-mixed-precision="backoff-factor=1.5" 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not dist-opt %s --train-mixed-precision="growth-interval=0" 2>&1 | FileCheck %s --check-prefix=INTERVAL
// COMPUTE: error: train-mixed-precision: compute must be bf16 or f16, got 'fp8'
// SCALE: error: train-mixed-precision: loss-scale must be none, static or dynamic, got 'auto'
// INIT: error: train-mixed-precision: init-scale must be a positive finite float32, got 0
// GROWTH: error: train-mixed-precision: growth-factor must be greater than 1, got 1
// BACKOFF: error: train-mixed-precision: backoff-factor must be in (0, 1), got 1.5
// INTERVAL: error: train-mixed-precision: growth-interval must be in [1, 2^24] (a float32 counter), got 0

// A step the pass already rewrote.
// expected-error @+1 {{train-mixed-precision: 'mixed' already computes in mixed precision ("compute=bf16 loss-scale=none")}}
func.func @mixed(%w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {train.mixed_precision = "compute=bf16 loss-scale=none"} {
  return %w : tensor<2xf32>
}

// -----

// Collectives in a step that is not partitioned.
dist.mesh @mesh {axes = ["data"], shape = array<i64: 2>}
func.func @distributed(%w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"}) {
  // expected-error @+1 {{train-mixed-precision: 'distributed' has 'dist.all_reduce' but is not a partitioned step (no 'dist.partitioned'): it cannot tell the values' layout}}
  %r = dist.all_reduce %w on @mesh axes = ["data"] : tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// A collective a later pass split (dist-overlap-collectives).
dist.mesh @mesh2 {axes = ["data"], shape = array<i64: 2>}
func.func @overlapped(%w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w", dist.sharding = #dist.sharding<@mesh2, [[]]>})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"}) attributes {dist.partitioned} {
  // expected-error @+1 {{train-mixed-precision rewrites a single-device step or one a strategy partitioned (sums and movements of its values); 'overlapped' has 'dist.all_reduce_start' from a later pass: run train-mixed-precision before it}}
  %t = dist.all_reduce_start %w on @mesh2 axes = ["data"] : tensor<2xf32> -> !dist.future<tensor<2xf32>>
  %r = dist.wait %t : !dist.future<tensor<2xf32>>
  return %r : tensor<2xf32>
}

// -----

// A placed program without the module it was placed from (written by
// hand): nothing to place again.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{train-mixed-precision: 'placed' is a placed program but its module keeps no 'dist.placement' module to place again (programs written by hand or by an older dist-opt): run train-mixed-precision before the strategy that placed them}}
func.func @placed(%w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"}) attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return %w : tensor<2xf32>
}

// -----

// Placed programs that differ from what the placing pass wrote (its
// fingerprint): a later pass changed them.
dist.mesh @pipe2 {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{train-mixed-precision: the placed programs or their source changed after 'builtin.module(dist-pipeline{stages=2})' wrote them: run train-mixed-precision before the passes that ran after it}}
func.func @changed(%w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"}) attributes {dist.place = #dist.place<@pipe2, pipe = 0>} {
  return %w : tensor<2xf32>
}
module @source attributes {dist.placement = {pipeline = "builtin.module(dist-pipeline{stages=2})", fingerprint = "0000000000000000"}} {
}

// -----

// Two constants 1.0 of which every gradient is a linear image: the loss is
// the sum of two products, each seeded by its own constant.
// expected-error @+1 {{cannot tell the backward pass's seed (d loss / d loss) for loss scaling: 2 constant 1.0 of type 'tensor<f32>' has every gradient as a linear image; mark the seed with 'train.loss_seed'}}
func.func @ambiguous(
    %w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<2xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %p = train.mul %w, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %loss = train.reduce %p {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf32>) -> tensor<f32>
  // expected-note @+1 {{candidate seed}}
  %a = train.constant dense<1.000000e+00> : tensor<f32>
  // expected-note @+1 {{candidate seed}}
  %b = train.constant dense<1.000000e+00> : tensor<f32>
  %ab = train.mul %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g = train.mul %x, %ab : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %w2 = train.sgd %w, %g, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %w2, %loss : tensor<2xf32>, tensor<f32>
}

// -----

// No seed: the gradient is an input.
// expected-error @+1 {{cannot tell the backward pass's seed (d loss / d loss) for loss scaling: no constant 1.0 of type 'tensor<f32>' has every gradient as a linear image}}
func.func @no_seed(
    %w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
    %g: tensor<2xf32> {train.role = #train.role<input>, train.name = "g"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %loss = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf32>) -> tensor<f32>
  %w2 = train.sgd %w, %g, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %w2, %loss : tensor<2xf32>, tensor<f32>
}

// -----

// The scale's name is taken.
// expected-error @+1 {{train-mixed-precision: the step already has an argument 'loss_scale'; loss scaling names its state so}}
func.func @taken(
    %w: tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
    %s: tensor<f32> {train.role = #train.role<hyper>, train.name = "loss_scale"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %loss = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf32>) -> tensor<f32>
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %g = train.broadcast %one {dims = array<i64>} : (tensor<f32>) -> tensor<2xf32>
  %w2 = train.sgd %w, %g, %lr : (tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %w2, %loss : tensor<2xf32>, tensor<f32>
}

// -----

// A float64 loss cannot be scaled by the float32 scale.
func.func @wide(
    %w: tensor<2xf64> {train.role = #train.role<param>, train.name = "w"},
    %lr: tensor<f64> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2xf64> {train.role = #train.role<param>, train.name = "w"},
        tensor<f64> {train.role = #train.role<loss>, train.name = "loss"}) {
  // expected-error @+1 {{train-mixed-precision: loss scaling needs a float32 scalar loss; this one is 'tensor<f64>'}}
  %loss = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<2xf64>) -> tensor<f64>
  %one = train.constant dense<1.000000e+00> : tensor<f64>
  %g = train.broadcast %one {dims = array<i64>} : (tensor<f64>) -> tensor<2xf64>
  %w2 = train.sgd %w, %g, %lr : (tensor<2xf64>, tensor<2xf64>, tensor<f64>) -> tensor<2xf64>
  return %w2, %loss : tensor<2xf64>, tensor<f64>
}
