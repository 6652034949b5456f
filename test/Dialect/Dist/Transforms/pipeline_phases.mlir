// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=2" -split-input-file -verify-diagnostics
// RUN: dist-opt %s --dist-pipeline="stages=2 microbatches=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: dist-opt %s --dist-hybrid="pp=2 dp=2 microbatches=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=DP

// What the pipeline reads from the step's structure: where the loss's
// forward ops are, which sums are accumulations, which annotations count.

// Batch statistics: partitioning gathers the batch for the batch norm. With
// two microbatches that is an error at the op; with one the gather is an
// identity and the step runs.
// ONE-LABEL: func.func @bn_pipe0(
// ONE: train.batch_norm {{.*}} : (tensor<8x4xf32>
// ONE-LABEL: func.func @bn_pipe1(
// With two data-parallel replicas per stage (what the refusal of two
// microbatches suggests) the gather stays one over the data axis: it used
// to go with the microbatch axis, and the batch norm read half the batch
// into a result typed for all of it (invalid IR).
// DP-LABEL: func.func @bn_pipe0(
// DP: dist.all_gather %{{.*}} on @pipe axes = ["data"] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// DP: train.batch_norm {{.*}} : (tensor<8x4xf32>
func.func @bn(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %g: tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.weight"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.bias"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w {train.stage = 0} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  // expected-error @+1 {{this value is needed whole-batch in the middle of the step ('dist.all_gather' over the microbatches): it cannot be split into 2 microbatches; use microbatches=1}}
  %y, %mean, %var = train.batch_norm %h, %g, %b : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %z = train.matmul %y, %v {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %z {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<f32>
  %gv = train.matmul %y, %z {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gw = train.matmul %x, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %vn, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

// Centering over the batch: the mean is a sum over the whole batch that
// per-sample work reads. An error with two microbatches, the identity with
// one.
// ONE-LABEL: func.func @center_pipe0(
// ONE: train.sub
func.func @center(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w {train.stage = 0} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  // expected-error @+1 {{this value is summed over the whole batch and then used by per-sample work: it cannot be split into 2 microbatches; use microbatches=1}}
  %m = train.reduce %h {dims = array<i64: 0>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %c = train.sub %h, %m : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %z = train.matmul %c, %v {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %z {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<f32>
  %gv = train.matmul %c, %z {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gw = train.matmul %x, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %vn, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

// A loss computed after the accumulation (here the square of the mean): its
// forward ops are found through the update, and a stage annotation on a
// backward op is reported as ignored.
// ONE-LABEL: func.func @scaled_pipe1(
// ONE: unit #dist.unit<F, stage = 1, microbatch = 0>
// ONE: train.reduce
// ONE: unit #dist.unit<U, stage = 1, microbatch = 0>
// ONE: train.mul
// expected-remark @+1 {{dist-pipeline: 1f1b, 2 stages on 2 devices, 2 microbatches}}
func.func @scaled(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w {train.stage = 0} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %z = train.matmul %h, %v {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %z {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<f32>
  %l2 = train.mul %l, %l : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // expected-remark @+1 {{'train.stage' is ignored on this op: only forward ops take stages, the others follow them}}
  %gv = train.matmul %h, %z {transpose_lhs, train.stage = 0} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gw = train.matmul %x, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %vn, %l2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

// A penalty on a stage-1 parameter is forward work that does not read the
// batch: it runs on stage 1 with the forward ops of that parameter (it used
// to run on stage 0 and the programs deadlocked, each waiting for the
// other's forward).
// ONE-LABEL: func.func @penalty_pipe0(
// ONE: unit #dist.unit<F, stage = 0, microbatch = 0>
// ONE-NOT: train.reduce
// ONE: dist.send
// ONE-LABEL: func.func @penalty_pipe1(
// ONE: dist.recv from #dist.place<@pipe, pipe = 0>
// ONE: unit #dist.unit<F, stage = 1, microbatch = 0>
// ONE: train.mul %[[B:.*]], %[[B]] : (tensor<4xf32>, tensor<4xf32>)
// ONE: train.reduce
// ONE: unit #dist.unit<B, stage = 1, microbatch = 0>
// expected-remark @+1 {{dist-pipeline: 1f1b, 2 stages on 2 devices, 2 microbatches}}
func.func @penalty(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<8xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w {train.stage = 0} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %zm = train.matmul %h, %v {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %z = train.add %zm, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %ce = train.cross_entropy %z, %y : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  %sq = train.mul %b, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %sum = train.reduce %sq {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %l = train.add %ce, %sum : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %one = train.constant dense<1.0> : tensor<f32>
  %dz = train.cross_entropy_backward %one, %z, %y : (tensor<f32>, tensor<8x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %gv = train.matmul %h, %dz {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gb0 = train.reduce %dz {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<8x4xf32>) -> tensor<4xf32>
  %two = train.constant dense<2.0> : tensor<f32>
  %gpen = train.mul %b, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %gb = train.add %gb0, %gpen : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %dh = train.matmul %dz, %v {transpose_rhs} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %gw = train.matmul %x, %dh {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %bn = train.sgd %b, %gb, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %wn, %vn, %bn, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// A parameter no op reads and the step does not return still belongs to the
// step (a runner saves it): device 0's program takes it (it used to be in no
// program, and dist-run's final state lacked it).
// ONE-LABEL: func.func @unused_pipe0(
// ONE-SAME: train.name = "u"
// ONE-LABEL: func.func @unused_pipe1(
// ONE-NOT: train.name = "u"
// ONE: return
// expected-remark @+1 {{dist-pipeline: 1f1b, 2 stages on 2 devices, 2 microbatches}}
func.func @unused(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %u: tensor<3xf32> {train.role = #train.role<param>, train.name = "u"},
    %v: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w {train.stage = 0} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %z = train.matmul %h, %v {train.stage = 1} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %z {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<8x4xf32>) -> tensor<f32>
  %gv = train.matmul %h, %z {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %gw = train.matmul %x, %h {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %vn = train.sgd %v, %gv, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %wn, %vn, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
