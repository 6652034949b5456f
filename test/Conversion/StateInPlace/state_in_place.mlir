// RUN: dist-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dist-state-in-place))" | FileCheck %s

// A batch norm's running mean (an opt_state result computed from its
// argument by a generic with an empty init) is computed into the
// argument; so is num_batches_tracked, which nothing reads.
#id = affine_map<(d0) -> (d0)>
#s = affine_map<() -> ()>
// CHECK-LABEL: func.func @running_stats
// CHECK-SAME: (%[[MEAN:[a-z0-9]+]]: tensor<64xf32> {{.*}}, %[[COUNT:[a-z0-9]+]]: tensor<i64>
func.func @running_stats(%mean: tensor<64xf32> {train.role = #train.role<opt_state>, train.name = "bn.running_mean"},
                         %count: tensor<i64> {train.role = #train.role<opt_state>, train.name = "bn.num_batches_tracked"},
                         %batch: tensor<64xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<64xf32> {train.role = #train.role<opt_state>, train.name = "bn.running_mean"},
        tensor<i64> {train.role = #train.role<opt_state>, train.name = "bn.num_batches_tracked"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %e = tensor.empty() : tensor<64xf32>
  // CHECK: linalg.generic {{.*}} ins(%[[MEAN]], %{{.*}} : tensor<64xf32>, tensor<64xf32>) outs(%[[MEAN]] : tensor<64xf32>)
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%mean, %batch : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%m: f32, %b: f32, %o: f32):
    %c = arith.constant 0.9 : f32
    %d = arith.constant 0.1 : f32
    %x = arith.mulf %m, %c : f32
    %y = arith.mulf %b, %d : f32
    %z = arith.addf %x, %y : f32
    linalg.yield %z : f32
  } -> tensor<64xf32>
  %e0 = tensor.empty() : tensor<i64>
  // CHECK: linalg.generic {{.*}} outs(%[[COUNT]] : tensor<i64>)
  %next = linalg.generic {indexing_maps = [#s], iterator_types = []} outs(%e0 : tensor<i64>) {
  ^bb0(%o: i64):
    %one = arith.constant 1 : i64
    linalg.yield %one : i64
  } -> tensor<i64>
  %loss = arith.constant dense<0.0> : tensor<f32>
  return %new, %next, %loss : tensor<64xf32>, tensor<i64>, tensor<f32>
}

// -----

// Left alone: the argument read after the producer (directly and through
// a reshape), read by the producer other than elementwise, a payload that
// reads the init, a result of another name, one of a non-state role.
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @unsafe
func.func @unsafe(%a: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "a"},
                  %b: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "b"},
                  %c: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "c"},
                  %d: tensor<4x4xf32> {train.role = #train.role<param>, train.name = "d"},
                  %x: tensor<4x4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4x4xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "c"},
        tensor<4x4xf32> {train.role = #train.role<param>, train.name = "other"},
        tensor<4x4xf32> {train.role = #train.role<metric>, train.name = "x"},
        tensor<16xf32> {train.role = #train.role<metric>, train.name = "m"}) {
  %e = tensor.empty() : tensor<4x4xf32>
  // CHECK-NOT: outs(%arg
  %na = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.addf %v, %v : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %nb = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %nc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.addf %v, %o : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %nd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %nx = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  // CHECK: return
  return %na, %nb, %nc, %nd, %nx, %flat : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>
}
