// RUN: dist-opt %s -split-input-file --train-verify | FileCheck %s

// A minimal well-formed step: one param updated, one loss, a metric.
// CHECK-LABEL: func.func @minimal_step
// CHECK-SAME: train.name = "w", train.role = #train.role<param>
// CHECK-SAME: train.name = "loss", train.role = #train.role<loss>
func.func @minimal_step(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
    %g: tensor<4xf32> {train.role = #train.role<input>, train.name = "g"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"},
        tensor<4xf32> {train.role = #train.role<metric>, train.name = "grad"}) {
  %w2 = train.sgd %w, %g, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = train.reduce %g {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %w2, %s, %g : tensor<4xf32>, tensor<f32>, tensor<4xf32>
}

// -----

// Functions without any train.role are not training steps and are skipped.
// CHECK-LABEL: func.func @helper
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A frozen param (never updated) and optimizer state of integer type are
// fine.
// CHECK-LABEL: func.func @frozen_param
func.func @frozen_param(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "frozen"},
    %step: tensor<i64> {train.role = #train.role<opt_state>, train.name = "step"})
    -> (tensor<i64> {train.role = #train.role<opt_state>, train.name = "step"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.reduce %w {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %step, %s : tensor<i64>, tensor<f32>
}

// -----

// A program placed on one pipeline stage returns no loss: only the last
// stage's program does (dist-verify checks the programs together).
// CHECK-LABEL: func.func @stage0
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @stage0(
    %w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"})
    attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return %w : tensor<4xf32>
}
