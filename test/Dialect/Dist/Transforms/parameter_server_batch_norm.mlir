// RUN: dist-opt %s --dist-parameter-server="ps=1 workers=1" | FileCheck %s
// RUN: not dist-opt %s --dist-parameter-server="ps=1 workers=2" 2>&1 | FileCheck %s --check-prefix=TWO

// A batch norm normalizes with the statistics of the whole batch. One
// worker sees the whole batch: its gradients (and the batch norm's, which
// no sum over the batch makes) are pushed to the server, which applies
// them (this used to be refused: "this optimizer's gradient is not that
// sum"). Two workers would each see half of it: refused at the batch norm.
// CHECK-LABEL: func.func @train_step_ps0(
// CHECK-COUNT-3: dist.send
// CHECK-COUNT-4: dist.recv from #dist.place<@cluster, task = 1>
// CHECK: train.sgd
// CHECK: train.sgd %{{.*}} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>)
// CHECK: train.sgd %{{.*}} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>)
// CHECK-LABEL: func.func @train_step_worker0(
// CHECK: train.batch_norm {{.*}} : (tensor<8x4xf32>
// CHECK: dist.send {{.*}} channel = 6 : tensor<f32>
// CHECK: train.batch_norm_backward
// CHECK: dist.send {{.*}} channel = 3 : tensor<4x4xf32>
// CHECK: dist.send {{.*}} channel = 4 : tensor<4xf32>
// CHECK: dist.send {{.*}} channel = 5 : tensor<4xf32>
// TWO: error: this value is needed whole-batch in the middle of the step ('dist.all_gather' over the workers): it cannot be split into 2 workers; use workers=1
func.func @train_step(
    %w: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
    %g: tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.weight"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.bias"},
    %x: tensor<8x4xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.weight"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "bn.bias"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %h = train.matmul %x, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %y, %mean, %var = train.batch_norm %h, %g, %b : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %sq = train.mul %y, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %l = train.reduce %sq {dims = array<i64: 0, 1>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<f32>
  %scale = train.constant dense<6.250000e-02> : tensor<f32>
  %dy = train.mul %y, %scale : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %dh, %dg, %db = train.batch_norm_backward %dy, %h, %mean, %var, %g : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %gw = train.matmul %x, %dh {transpose_lhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %wn = train.sgd %w, %gw, %lr : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %gn = train.sgd %g, %dg, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %bn = train.sgd %b, %db, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %wn, %gn, %bn, %l : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
