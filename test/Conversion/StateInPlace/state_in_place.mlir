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

// Not computed into the argument: the argument read after the producer
// (directly and through a reshape), read by the producer other than
// elementwise, a payload that reads the init. Those copied into their
// arguments at the end (a captured CUDA step must not allocate what it
// returns), but for `a`, a view of which the step returns too; left
// alone: a result of another name, one of a non-state role.
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @unsafe
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4x4xf32> {train.name = "b"
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<4x4xf32> {train.name = "c"
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
  // CHECK: %[[NB:.+]] = linalg.copy ins(%{{.*}} : tensor<4x4xf32>) outs(%[[B]] : tensor<4x4xf32>)
  // CHECK-NEXT: %[[NC:.+]] = linalg.copy ins(%{{.*}} : tensor<4x4xf32>) outs(%[[C]] : tensor<4x4xf32>)
  // CHECK-NEXT: return %{{[0-9]+}}, %[[NB]], %[[NC]], %{{[0-9]+}}, %{{[0-9]+}}, %collapsed :
  return %na, %nb, %nc, %nd, %nx, %flat : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>
}

// -----

// An update over its argument (a scatter_add into an embedding table)
// that a later op still reads the old table of (a gather): bufferization
// would write it into a new buffer each step, so it is copied back into
// the argument at the end. An update nothing reads the old state after,
// also through a reshape, is left as it is: it is written in place.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @read_after_update
// CHECK-SAME: (%[[EMB:[a-z0-9]+]]: tensor<10x4xf32> {train.name = "emb"
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<2x8xf32> {train.name = "w"
func.func @read_after_update(%emb: tensor<10x4xf32> {train.role = #train.role<param>, train.name = "emb"},
                             %w: tensor<2x8xf32> {train.role = #train.role<param>, train.name = "w"},
                             %rows: tensor<10x4xf32> {train.role = #train.role<input>, train.name = "rows"})
    -> (tensor<10x4xf32> {train.role = #train.role<param>, train.name = "emb"},
        tensor<2x8xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<10x4xf32> {train.role = #train.role<metric>, train.name = "old"}) {
  // CHECK: %[[UPD:.+]] = linalg.generic {{.*}} outs(%[[EMB]] : tensor<10x4xf32>)
  %upd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%rows : tensor<10x4xf32>) outs(%emb : tensor<10x4xf32>) {
  ^bb0(%r: f32, %o: f32):
    %y = arith.addf %r, %o : f32
    linalg.yield %y : f32
  } -> tensor<10x4xf32>
  %e = tensor.empty() : tensor<10x4xf32>
  // CHECK: %[[OLD:.+]] = linalg.generic {{.*}} ins(%[[EMB]] : tensor<10x4xf32>)
  %old = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%emb : tensor<10x4xf32>) outs(%e : tensor<10x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<10x4xf32>
  // CHECK: %[[WIDE:.+]] = tensor.expand_shape %[[W]]
  %wide = tensor.expand_shape %w [[0], [1, 2]] output_shape [2, 2, 4] : tensor<2x8xf32> into tensor<2x2x4xf32>
  // CHECK: %[[NW:.+]] = linalg.generic {{.*}} outs(%[[WIDE]] : tensor<2x2x4xf32>)
  %nw = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%wide : tensor<2x2x4xf32>) {
  ^bb0(%o: f32):
    %y = arith.addf %o, %o : f32
    linalg.yield %y : f32
  } -> tensor<2x2x4xf32>
  // CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[NW]]
  %flat = tensor.collapse_shape %nw [[0], [1, 2]] : tensor<2x2x4xf32> into tensor<2x8xf32>
  // CHECK-NEXT: %[[BACK:.+]] = linalg.copy ins(%[[UPD]] : tensor<10x4xf32>) outs(%[[EMB]] : tensor<10x4xf32>)
  // CHECK-NEXT: return %[[BACK]], %[[FLAT]], %[[OLD]] :
  return %upd, %flat, %old : tensor<10x4xf32>, tensor<2x8xf32>, tensor<10x4xf32>
}
