// RUN: dist-opt %s -split-input-file --train-to-linalg | FileCheck %s

// A broadcast add: the bias is read at the result's column index.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_bias
func.func @add_bias(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
  // CHECK: arith.addf
  // CHECK-NOT: train.
  %r = train.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// matmul with transpose_rhs: a contraction over d2 of a zero-filled
// accumulator, rhs read as (n, k).
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$RHS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>) -> tensor<4x5xf32> {
  // CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x5xf32>)
  // CHECK: linalg.generic {indexing_maps = [#[[$LHS]], #[[$RHS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}{{.*}}outs(%[[Z]] : tensor<4x5xf32>)
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %r = train.matmul %x, %w {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

// A batched matmul with a shared (unbatched) rhs.
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-LABEL: func.func @batched
func.func @batched(%x: tensor<2x4x3xf32>, %w: tensor<3x5xf32>) -> tensor<2x4x5xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$LHS]], #[[$RHS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
  %r = train.matmul %x, %w : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
  return %r : tensor<2x4x5xf32>
}

// -----

// A mean reduction sums from zero, then divides by the count (8).
// CHECK-LABEL: func.func @mean
func.func @mean(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  // CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-DAG: %[[N:.*]] = arith.constant 8.000000e+00 : f32
  // CHECK: linalg.fill ins(%[[ZERO]] : f32)
  // CHECK: iterator_types = ["reduction", "parallel"]
  // CHECK: arith.addf
  // CHECK: arith.divf %{{.*}}, %[[N]] : f32
  %r = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<mean>} : (tensor<8x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// cross_entropy: a row max from -inf, the row sum of exp(x - max), the
// label's logit read with tensor.extract, then the mean over rows.
// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<4x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: arith.constant 0xFF800000 : f32
  // CHECK: arith.maximumf
  // CHECK: math.exp
  // CHECK: arith.index_cast
  // CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<4x3xf32>
  // CHECK: math.log
  // CHECK: arith.divf
  %r = train.cross_entropy %logits, %labels : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// AdamW: the step count incremented apart (over itself: its init, in place
// after bufferization, as the other state), the bias corrections
// 1 - beta^t computed once (not per element), then one generic producing
// the parameter and both moments, written over them (its inits, which its
// body reads: in place after bufferization).
// CHECK-LABEL: func.func @adamw
// CHECK-SAME: (%[[P:[a-z0-9]+]]: tensor<8xf32>, %[[G:[a-z0-9]+]]: tensor<8xf32>, %[[M:[a-z0-9]+]]: tensor<8xf32>, %[[V:[a-z0-9]+]]: tensor<8xf32>, %[[T:[a-z0-9]+]]: tensor<f32>
func.func @adamw(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<f32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>) {
  // CHECK: %[[STEP:.*]] = linalg.generic {{.*}} iterator_types = []} outs(%[[T]] : tensor<f32>)
  // CHECK-NEXT: ^bb0(%[[OLD:.*]]: f32):
  // CHECK-NEXT: arith.addf %[[OLD]]
  // CHECK: %[[BC:.*]]:2 = linalg.generic {{.*}} iterator_types = []} ins(%[[STEP]] : tensor<f32>)
  // CHECK: math.powf
  // CHECK: math.powf
  // CHECK: %[[R:.*]]:3 = linalg.generic {{.*}} ins(%[[G]], %[[BC]]#0, %[[BC]]#1, %{{.*}} : tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) outs(%[[P]], %[[M]], %[[V]] : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK-NOT: math.powf
  // CHECK: math.sqrt
  // CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[STEP]]
  %np, %nm, %nv, %nt = train.adamw %p, %g, %m, %v, %t, %lr {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>)
  return %np, %nm, %nv, %nt : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>
}

// -----

// gelu (tanh approximation): one elementwise generic with math.tanh.
// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-DAG: %[[A:.*]] = arith.constant 4.471500e-02 : f32
  // CHECK-DAG: %[[C:.*]] = arith.constant 0.797884{{[0-9]*}} : f32
  // CHECK: linalg.generic
  // CHECK: arith.mulf %{{.*}}, %[[A]]
  // CHECK: arith.mulf %{{.*}}, %[[C]]
  // CHECK: math.tanh
  // CHECK-NOT: train.
  %r = train.gelu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// erf, log1p and expm1: one elementwise generic each with the math op
// (the CPU lowering calls libm for them).
// CHECK-LABEL: func.func @erf_log1p_expm1
func.func @erf_log1p_expm1(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  // CHECK: linalg.generic
  // CHECK: math.erf
  // CHECK: linalg.generic
  // CHECK: math.log1p
  // CHECK: linalg.generic
  // CHECK: math.expm1
  // CHECK-NOT: train.
  %e = train.erf %x : (tensor<4x8xf64>) -> tensor<4x8xf64>
  %l = train.log1p %e : (tensor<4x8xf64>) -> tensor<4x8xf64>
  %m = train.expm1 %l : (tensor<4x8xf64>) -> tensor<4x8xf64>
  return %m : tensor<4x8xf64>
}

// -----

// convert: f32 -> bf16 truncates, i32 -> f32 is a signed conversion.
// CHECK-LABEL: func.func @convert
func.func @convert(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  // CHECK: arith.truncf %{{.*}} : f32 to bf16
  // CHECK: arith.sitofp %{{.*}} : i32 to f32
  %h = train.convert %x : (tensor<4xf32>) -> tensor<4xbf16>
  %f = train.convert %i : (tensor<4xi32>) -> tensor<4xf32>
  return %h, %f : tensor<4xbf16>, tensor<4xf32>
}

// -----

// softmax along dim 0 (not the last): the max and the sum reduce d0 and are
// read back through (d0, d1) -> (d1).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["reduction", "parallel"]}
  // CHECK: arith.maximumf
  // CHECK: %[[SHIFT:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]]{{.*}} ins(%{{.*}}, %[[MAX]] : tensor<4x8xf32>, tensor<8xf32>)
  // CHECK: arith.subf
  // CHECK: %[[EXP:.*]] = linalg.generic
  // CHECK: math.exp
  // CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["reduction", "parallel"]}
  // CHECK: linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<4x8xf32>, tensor<8xf32>)
  // CHECK: arith.divf
  %r = train.softmax %x {dim = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// log_softmax: the shifted logits minus the log of the row sum.
// CHECK-LABEL: func.func @log_softmax
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: arith.maximumf
  // CHECK: %[[SHIFT:.*]] = linalg.generic
  // CHECK: math.exp
  // CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
  // CHECK: linalg.generic {{.*}} ins(%[[SHIFT]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>)
  // CHECK: math.log
  // CHECK: arith.subf
  %r = train.log_softmax %x {dim = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// softmax_backward: y * (g - sum(g * y)) with the sum over the last dim.
// CHECK-LABEL: func.func @softmax_backward
// CHECK-SAME: %[[G:[^:]*]]: tensor<4x8xf32>, %[[Y:[^:]*]]: tensor<4x8xf32>
func.func @softmax_backward(%g: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[GY:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[Y]] :
  // CHECK: arith.mulf
  // CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[GY]] :
  // CHECK: linalg.generic {{.*}} ins(%[[G]], %[[Y]], %[[S]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>)
  // CHECK: arith.subf
  // CHECK: arith.mulf
  %r = train.softmax_backward %g, %y {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// log_softmax_backward: g - exp(y) * sum(g).
// CHECK-LABEL: func.func @log_softmax_backward
func.func @log_softmax_backward(%g: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: iterator_types = ["parallel", "reduction"]
  // CHECK: math.exp
  // CHECK: arith.mulf
  // CHECK: arith.subf
  %r = train.log_softmax_backward %g, %y {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// layer_norm over the last two dims: mean and variance reduce (d1, d2),
// rstd = rsqrt(var + eps), weight and bias are read at (d1, d2), the row
// statistics at (d0).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[$PARAM:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2xf32>, tensor<2xf32>) {
  // CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
  // CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]
  // CHECK: %[[MEAN:.*]] = linalg.generic
  // CHECK: arith.divf
  // The variance reads x and the mean, not a materialized x - mean.
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]]], iterator_types = ["parallel", "reduction", "reduction"]} ins(%arg0, %[[MEAN]] :
  // CHECK: %[[C:.*]] = arith.subf
  // CHECK-NEXT: arith.mulf %[[C]], %[[C]]
  // CHECK: arith.addf %{{.*}}, %[[EPS]]
  // CHECK: math.rsqrt
  // CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]], #[[$PARAM]], #[[$PARAM]], #[[$ID]]]{{.*}} ins(%arg0, %[[MEAN]], %[[RSTD:[^,]*]], %arg1, %arg2 :
  // CHECK: return %[[Y]], %[[MEAN]], %[[RSTD]]
  %y, %mean, %rstd = train.layer_norm %x, %w, %b {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2xf32>, tensor<2xf32>)
  return %y, %mean, %rstd : tensor<2x4x8xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// layer_norm_backward: the input gradient from row means of gy and
// gy * xhat; the weight and bias gradients sum over the leading dims.
// CHECK-LABEL: func.func @layer_norm_backward
func.func @layer_norm_backward(%g: tensor<4x8xf32>, %x: tensor<4x8xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  // CHECK: iterator_types = ["parallel", "reduction"]
  // CHECK: iterator_types = ["parallel", "reduction"]
  // CHECK: %[[GI:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: %[[GW:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
  // CHECK: %[[GB:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
  // CHECK: return %[[GI]], %[[GW]], %[[GB]]
  %gi, %gw, %gb = train.layer_norm_backward %g, %x, %mean, %rstd, %w {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %gi, %gw, %gb : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// reshape: collapse to one dim, expand to the result (no copy).
// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<4x6xf32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[F:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  // CHECK: tensor.expand_shape %[[F]] {{\[\[}}0, 1, 2]] output_shape [2, 3, 4] : tensor<24xf32> into tensor<2x3x4xf32>
  %r = train.reshape %x : (tensor<4x6xf32>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// transpose: a copy whose input map permutes the loop dims.
// CHECK-DAG: #[[$PERM:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$PERM]], #{{.*}}]{{.*}} ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x4x3xf32>)
  // CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: linalg.yield %[[IN]]
  %r = train.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  return %r : tensor<2x4x3xf32>
}

// -----

// broadcast: operand dim 0 is result dim 1.
// CHECK-DAG: #[[$COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$COL]], #{{.*}}]
  %r = train.broadcast %x {dims = array<i64: 1>} : (tensor<8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// slice: tensor.extract_slice (strides included), then a copy.
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<4x8xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[1, 2] [2, 3] [1, 2] : tensor<4x8xf32> to tensor<2x3xf32>
  // CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<2x3xf32>)
  // CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: linalg.yield %[[IN]]
  %r = train.slice %x {start = array<i64: 1, 2>, limit = array<i64: 3, 8>, strides = array<i64: 1, 2>} : (tensor<4x8xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// concat: every element reads (clamped) from each operand and selects the
// one whose range holds it.
// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  // CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x8xf32>)
  // CHECK: tensor.extract %{{.*}} : tensor<2x3xf32>
  // CHECK: tensor.extract %{{.*}} : tensor<2x5xf32>
  // CHECK: arith.select
  %r = train.concat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// pad: the operand inserted at `low` into a tensor filled with the pad
// value (its producer can then write into the padded buffer).
// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<2x3xf32>) -> tensor<3x6xf32> {
  // CHECK-DAG: %[[V:.*]] = arith.constant 1.500000e+00 : f32
  // CHECK: %[[F:.*]] = linalg.fill ins(%[[V]] : f32) outs(%{{.*}} : tensor<3x6xf32>)
  // CHECK: %[[R:.*]] = tensor.insert_slice %{{.*}} into %[[F]][1, 2] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<3x6xf32>
  // CHECK: return %[[R]]
  %r = train.pad %x {low = array<i64: 1, 2>, high = array<i64: 0, 1>, value = 1.5 : f64} : (tensor<2x3xf32>) -> tensor<3x6xf32>
  return %r : tensor<3x6xf32>
}

// -----

// iota: the loop index along dim 1, as a float.
// CHECK-LABEL: func.func @iota
func.func @iota() -> tensor<2x4xf32> {
  // CHECK: linalg.generic
  // CHECK: %[[I:.*]] = linalg.index 1 : index
  // CHECK: %[[N:.*]] = arith.index_cast %[[I]] : index to i64
  // CHECK: arith.sitofp %[[N]] : i64 to f32
  %r = train.iota {dim = 1 : i64} : () -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// gather with row_offset: the row index minus the offset, read clamped,
// zero outside the table's rows.
// CHECK-DAG: #[[$IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gather
// CHECK-SAME: %[[T:[^:]*]]: tensor<10x4xf32>, %[[I:[^:]*]]: tensor<2x3xi32>, %[[OFF:[^:]*]]: index
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>, %off: index) -> tensor<2x3x4xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$IDX]], #{{.*}}]{{.*}} ins(%[[I]] : tensor<2x3xi32>)
  // CHECK: %[[ROW:.*]] = arith.subi %{{.*}}, %[[OFF]] : index
  // CHECK: tensor.extract %[[T]]
  // CHECK: arith.select
  %r = train.gather %table, %ids, %off : (tensor<10x4xf32>, tensor<2x3xi32>, index) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// scatter_add with row_offset: the table dims are parallel, the index dims a
// reduction into init; an update is added where its row (minus the offset)
// is the table row.
// CHECK-DAG: #[[$IDS:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$UPD:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: %[[INIT:[^:]*]]: tensor<10x4xf32>, %[[I:[^:]*]]: tensor<2x3xi64>, %[[U:[^:]*]]: tensor<2x3x4xf32>, %[[OFF:[^:]*]]: index
func.func @scatter_add(%init: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %upd: tensor<2x3x4xf32>, %off: index) -> tensor<10x4xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[$IDS]], #[[$UPD]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[I]], %[[U]] : tensor<2x3xi64>, tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<10x4xf32>)
  // CHECK: %[[ROW:.*]] = arith.subi %{{.*}}, %[[OFF]] : index
  // CHECK: %[[R:.*]] = linalg.index 0 : index
  // CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[ROW]], %[[R]] : index
  // CHECK: %[[SUM:.*]] = arith.addf
  // CHECK: arith.select %[[HIT]], %[[SUM]]
  %r = train.scatter_add %init, %ids, %upd, %off : (tensor<10x4xf32>, tensor<2x3xi64>, tensor<2x3x4xf32>, index) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}

// -----

// dropout of a shard: the global row-major index (offsets added, strides of
// global_shape) is Philox's counter; keep where the first word >= rate * 2^32,
// scaled by 1 / (1 - rate).
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %{{[^:]*}}: tensor<4x8xf32>, %{{[^:]*}}: tensor<i64>, %[[O0:[^:]*]]: index, %[[O1:[^:]*]]: index
func.func @dropout(%x: tensor<4x8xf32>, %seed: tensor<i64>, %o0: index, %o1: index) -> tensor<4x8xf32> {
  // CHECK-DAG: %[[HALF:.*]] = arith.constant 2147483648 : i64
  // CHECK-DAG: %[[M0:.*]] = arith.constant 3528531795 : i64
  // CHECK-DAG: %[[STRIDE:.*]] = arith.constant 8 : index
  // CHECK: linalg.generic
  // CHECK: %[[I0:.*]] = linalg.index 0 : index
  // CHECK: %[[I1:.*]] = linalg.index 1 : index
  // CHECK: %[[P0:.*]] = arith.addi %[[I0]], %[[O0]] : index
  // CHECK: %[[P1:.*]] = arith.addi %[[I1]], %[[O1]] : index
  // CHECK: %[[ROW:.*]] = arith.muli %[[P0]], %[[STRIDE]] : index
  // CHECK: arith.addi %[[ROW]], %[[P1]] : index
  // CHECK: arith.muli %{{.*}}, %[[M0]] : i64
  // CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %[[HALF]] : i64
  // CHECK: arith.select %[[KEEP]]
  %r = train.dropout %x, %seed, %o0, %o1 {rate = 5.000000e-01 : f64, global_shape = array<i64: 8, 8>} : (tensor<4x8xf32>, tensor<i64>, index, index) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// batch_norm: mean and variance reduce every dim but the channels (d1);
// the statistics, weight and bias are read at (d1); it returns the variance.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$CH:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x3x4xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$CH]]], iterator_types = ["reduction", "parallel", "reduction"]}
  // CHECK: %[[MEAN:.*]] = linalg.generic
  // CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$CH]], #[[$CH]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%arg0, %[[MEAN]] :
  // CHECK: %[[VAR:.*]] = linalg.generic
  // CHECK: math.rsqrt
  // CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$CH]], #[[$CH]], #[[$CH]], #[[$CH]], #[[$ID]]]{{.*}} ins(%arg0, %[[MEAN]],
  // CHECK: return %[[Y]], %[[MEAN]], %[[VAR]]
  %y, %mean, %var = train.batch_norm %x, %w, %b : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %mean, %var : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// batch_norm_backward in two passes over the activations: one generic sums
// grad and grad * (x - mean) per channel; per-channel coefficients from
// those sums, rstd and the weight; then the input gradient. grad_weight is
// the second sum times rstd, grad_bias the first sum.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$CH:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$VEC:.*]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @batch_norm_backward
func.func @batch_norm_backward(%g: tensor<4x3xf32>, %x: tensor<4x3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  // CHECK-DAG: %[[INV:.*]] = arith.constant 2.500000e-01 : f32
  // CHECK: %[[RSTD:.*]] = linalg.generic
  // CHECK: math.rsqrt
  // CHECK: %[[SUMS:.*]]:2 = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$CH]], #[[$CH]], #[[$CH]]], iterator_types = ["reduction", "parallel"]} ins(%arg0, %arg1, %arg2 :
  // CHECK-NEXT: ^bb0(%[[G:.*]]: f32, %[[X:.*]]: f32, %[[M:.*]]: f32, %[[S1:.*]]: f32, %[[S2:.*]]: f32):
  // CHECK-NEXT: %[[C:.*]] = arith.subf %[[X]], %[[M]]
  // CHECK-NEXT: %[[P:.*]] = arith.mulf %[[G]], %[[C]]
  // CHECK-NEXT: %[[A1:.*]] = arith.addf %[[S1]], %[[G]]
  // CHECK-NEXT: %[[A2:.*]] = arith.addf %[[S2]], %[[P]]
  // CHECK-NEXT: linalg.yield %[[A1]], %[[A2]]
  // CHECK: %[[COEF:.*]]:4 = linalg.generic {indexing_maps = [#[[$VEC]], #[[$VEC]], #[[$VEC]], #[[$VEC]], #[[$VEC]], #[[$VEC]], #[[$VEC]], #[[$VEC]]], iterator_types = ["parallel"]} ins(%[[RSTD]], %arg4, %[[SUMS]]#0, %[[SUMS]]#1 :
  // CHECK: %[[GI:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$CH]], #[[$CH]], #[[$CH]], #[[$CH]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1, %arg2, %[[COEF]]#0, %[[COEF]]#1, %[[COEF]]#2 :
  // CHECK: return %[[GI]], %[[COEF]]#3, %[[SUMS]]#0
  %gi, %gw, %gb = train.batch_norm_backward %g, %x, %mean, %var, %w : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %gi, %gw, %gb : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// conv2d (strided, dilated, padded) as one direct contraction over [n,
// groups, channels/groups, ...] views of the padded input and the filter
// (one group), read through the strided, dilated window: no patch matrix
// (dist-conv-to-kernels multiplies the windows in place).
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 + d7 * 2)>
// CHECK-DAG: #[[$FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<1x4x6x6xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x3x4xf32> {
  // CHECK: %[[P:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 0] [1, 4, 6, 6] [1, 1, 1, 1] : tensor<1x4x6x6xf32> into tensor<1x4x8x8xf32>
  // CHECK-DAG: %[[XG:.*]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 1, 4, 8, 8]
  // CHECK-DAG: %[[WG:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 6, 4, 3, 3]
  // CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$FILTER]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] : tensor<1x1x4x8x8xf32>, tensor<1x6x4x3x3xf32>) outs(%{{.*}} : tensor<1x1x6x3x4xf32>)
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x1x6x3x4xf32> into tensor<1x6x3x4xf32>
  // CHECK: return %[[C]]
  %y = train.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>} : (tensor<1x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x3x4xf32>
  return %y : tensor<1x6x3x4xf32>
}

// -----

// A strided 1x1 conv2d keeps im2col (one strided slice of the input) and
// one product per image: deep enough for sgemm, and faster than the
// direct contraction's kernel (see keepsPatches).
// CHECK-LABEL: func.func @conv2d_pointwise_strided
// CHECK-NOT: "reduction", "reduction", "reduction"
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<1x4x6x6xf32>) outs(%{{.*}} : tensor<1x4x1x1x3x3xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<1x4x9xf32>) outs(%{{.*}} : tensor<1x8x9xf32>)
func.func @conv2d_pointwise_strided(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<1x8x3x3xf32> {
  %y = train.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x3x3xf32>
  return %y : tensor<1x8x3x3xf32>
}

// -----

// Grouped convolutions (2 groups; depthwise layers have one channel per
// group) as one direct contraction each over [n, groups, channels/groups,
// ...] views, not one product per group (MobileNetV2's 960-group layers
// unrolled into 850k lines of linalg). The forward op reads the padded
// input through the strided, dilated window.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 + d7 * 2)>
// CHECK-DAG: #[[$FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv2d_grouped
func.func @conv2d_grouped(%x: tensor<1x4x6x6xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x3x4xf32> {
  // CHECK: %[[P:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 0] [1, 4, 6, 6] [1, 1, 1, 1] : tensor<1x4x6x6xf32> into tensor<1x4x8x8xf32>
  // CHECK-DAG: %[[XG:.*]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8]
  // CHECK-DAG: %[[WG:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
  // CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$FILTER]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] : tensor<1x2x2x8x8xf32>, tensor<2x3x2x3x3xf32>) outs(%{{.*}} : tensor<1x2x3x3x4xf32>)
  // CHECK: %[[R:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x3x4xf32> into tensor<1x6x3x4xf32>
  // CHECK: return %[[R]]
  %y = train.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x3x4xf32>
  return %y : tensor<1x6x3x4xf32>
}

// -----

// The grouped gradients: the filter gradient contracts the output gradient
// with the padded input's windows over (n, oh, ow); the input gradient goes
// by row phase (stride 2): even rows read the output gradient through the
// flipped filter's middle row, odd rows through its first and last, each a
// stride-1 contraction of the output gradient padded by 4 columns left (the
// dilated kernel's extent less one less the padding) and 2 right, 1 row
// below, inserted every other row: the input's gradient itself, no padded
// rows or columns computed.
// CHECK-DAG: #[[$EVEN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * -2 + 1, -d3 + 2)>
// CHECK-DAG: #[[$ODD:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * -2 + 2, -d3 + 2)>
// CHECK-DAG: #[[$SPREAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7 * 2)>
// CHECK-DAG: #[[$FLIPPED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
// CHECK-DAG: #[[$GRAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
// CHECK-DAG: #[[$WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d6 * 2 + d3, d7 + d4 * 2)>
// CHECK-LABEL: func.func @conv2d_grouped_backward
func.func @conv2d_grouped_backward(%x: tensor<1x4x6x6xf32>, %w: tensor<6x2x3x3xf32>, %g: tensor<1x6x3x4xf32>) -> (tensor<1x4x6x6xf32>, tensor<6x2x3x3xf32>) {
  // CHECK: %[[GP:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 4] [1, 6, 3, 4] [1, 1, 1, 1] : tensor<1x6x3x4xf32> into tensor<1x6x4x10xf32>
  // CHECK: %[[R:.*]] = tensor.empty() : tensor<1x4x6x6xf32>
  // CHECK: tensor.extract_slice %[[GP]][0, 0, 0, 0] [1, 6, 3, 10] [1, 1, 1, 1]
  // CHECK: linalg.generic {indexing_maps = [#[[$EVEN]], #{{.*}}]{{.*}} outs(%{{.*}} : tensor<6x2x1x3xf32>)
  // CHECK: %[[GE:.*]] = linalg.generic {indexing_maps = [#[[$SPREAD]], #[[$FLIPPED]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<1x2x2x3x6xf32>)
  // CHECK: %[[CE:.*]] = tensor.collapse_shape %[[GE]]
  // CHECK: %[[RE:.*]] = tensor.insert_slice %[[CE]] into %[[R]][0, 0, 0, 0] [1, 4, 3, 6] [1, 1, 2, 1]
  // CHECK: linalg.generic {indexing_maps = [#[[$ODD]], #{{.*}}]{{.*}} outs(%{{.*}} : tensor<6x2x2x3xf32>)
  // CHECK: %[[GO:.*]] = linalg.generic {indexing_maps = [#[[$SPREAD]], #[[$FLIPPED]], #{{.*}}]{{.*}} outs(%{{.*}} : tensor<1x2x2x3x6xf32>)
  // CHECK: %[[CO:.*]] = tensor.collapse_shape %[[GO]]
  // CHECK: %[[DX:.*]] = tensor.insert_slice %[[CO]] into %[[RE]][0, 0, 1, 0] [1, 4, 3, 6] [1, 1, 2, 1]
  // CHECK-NOT: tensor.extract_slice
  // CHECK: %[[GW:.*]] = linalg.generic {indexing_maps = [#[[$GRAD]], #[[$WINDOW]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<2x3x2x3x3xf32>)
  // CHECK: %[[DW:.*]] = tensor.collapse_shape %[[GW]] {{\[}}[0, 1], [2], [3], [4]] : tensor<2x3x2x3x3xf32> into tensor<6x2x3x3xf32>
  // CHECK: return %[[DX]], %[[DW]]
  %gi = train.conv2d_backward_input %g, %w {input_size = array<i64: 6, 6>, strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x6x3x4xf32>, tensor<6x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %gw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<1x6x3x4xf32>) -> tensor<6x2x3x3xf32>
  return %gi, %gw : tensor<1x4x6x6xf32>, tensor<6x2x3x3xf32>
}

// -----

// conv2d_backward_filter (strided, 3 channels: fewer than the direct
// contraction takes): per image the output gradient [f, oh*ow] times the
// patches transposed, then the sum over images, expanded to the filter's
// shape.
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$IMAGES:.*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK-LABEL: func.func @conv2d_backward_filter
func.func @conv2d_backward_filter(%x: tensor<1x3x5x5xf32>, %g: tensor<1x4x2x2xf32>) -> tensor<4x3x3x3xf32> {
  // CHECK: %[[G:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<1x4x2x2xf32> into tensor<1x4x4xf32>
  // CHECK: %[[PR:.*]] = tensor.collapse_shape %{{.*}} : tensor<1x3x3x3x2x2xf32> into tensor<1x27x4xf32>
  // CHECK: %[[MM:.*]] = linalg.generic {indexing_maps = [#[[$A]], #[[$BT]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[G]], %[[PR]] : tensor<1x4x4xf32>, tensor<1x27x4xf32>) outs(%{{.*}} : tensor<1x4x27xf32>)
  // CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$IMAGES]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[MM]] : tensor<1x4x27xf32>) outs(%{{.*}} : tensor<4x27xf32>)
  // CHECK: %[[R:.*]] = tensor.expand_shape %[[SUM]] {{\[}}[0], [1, 2, 3]] output_shape [4, 3, 3, 3]
  // CHECK: return %[[R]]
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>, tensor<1x4x2x2xf32>) -> tensor<4x3x3x3xf32>
  return %r : tensor<4x3x3x3xf32>
}

// -----

// conv2d_backward_filter (strided, 16 channels): one direct contraction of
// the output gradient with the image's strided windows, over [n, groups,
// ...] views (one group), collapsed to the filter's shape: no patch matrix.
// CHECK-DAG: #[[$GRAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
// CHECK-DAG: #[[$WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d6 * 2 + d3, d7 * 2 + d4)>
// CHECK-LABEL: func.func @conv2d_backward_filter_direct
func.func @conv2d_backward_filter_direct(%x: tensor<1x16x5x5xf32>, %g: tensor<1x4x2x2xf32>) -> tensor<4x16x3x3xf32> {
  // CHECK: %[[GW:.*]] = linalg.generic {indexing_maps = [#[[$GRAD]], #[[$WINDOW]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x1x4x2x2xf32>, tensor<1x1x16x5x5xf32>) outs(%{{.*}} : tensor<1x4x16x3x3xf32>)
  // CHECK: %[[R:.*]] = tensor.collapse_shape %[[GW]] {{\[}}[0, 1], [2], [3], [4]] : tensor<1x4x16x3x3xf32> into tensor<4x16x3x3xf32>
  // CHECK: return %[[R]]
  %r = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x16x5x5xf32>, tensor<1x4x2x2xf32>) -> tensor<4x16x3x3xf32>
  return %r : tensor<4x16x3x3xf32>
}

// -----

// conv2d_backward_input (strided 3x3): by phase of the input positions
// modulo the strides. The output gradient is padded by one on each side;
// each of the 2 x 2 phases is a stride-1 contraction of its window of the
// padded gradient with the phase's taps of the flipped filter (2 x 2, 2 x
// 1, 1 x 2, 1 x 1 taps), inserted with the strides into an empty result
// (every position has taps): no patch matrix, no col2im.
// CHECK-DAG: #[[$TAPS00:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * -2 + 2, d3 * -2 + 2)>
// CHECK-DAG: #[[$TAPS11:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * -2 + 1, d3 * -2 + 1)>
// CHECK-LABEL: func.func @conv2d_backward_input
func.func @conv2d_backward_input(%g: tensor<1x4x2x2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x5x5xf32> {
  // CHECK: %[[GP:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 1] [1, 4, 2, 2] [1, 1, 1, 1] : tensor<1x4x2x2xf32> into tensor<1x4x4x4xf32>
  // CHECK: %[[R:.*]] = tensor.empty() : tensor<1x3x5x5xf32>
  // CHECK: %[[T00:.*]] = linalg.generic {indexing_maps = [#[[$TAPS00]], {{.*}} ins(%{{.*}} : tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<4x3x2x2xf32>)
  // CHECK: %[[P00:.*]] = linalg.generic {{.*}}"reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x1x4x4x4xf32>, tensor<1x4x3x2x2xf32>) outs(%{{.*}} : tensor<1x1x3x3x3xf32>)
  // CHECK: %[[C00:.*]] = tensor.collapse_shape %[[P00]]
  // CHECK: %[[R00:.*]] = tensor.insert_slice %[[C00]] into %[[R]][0, 0, 0, 0] [1, 3, 3, 3] [1, 1, 2, 2]
  // CHECK: tensor.extract_slice %[[GP]][0, 0, 0, 1] [1, 4, 4, 2] [1, 1, 1, 1]
  // CHECK: %[[R01:.*]] = tensor.insert_slice %{{.*}} into %[[R00]][0, 0, 0, 1] [1, 3, 3, 2] [1, 1, 2, 2]
  // CHECK: tensor.extract_slice %[[GP]][0, 0, 1, 0] [1, 4, 2, 4] [1, 1, 1, 1]
  // CHECK: %[[R10:.*]] = tensor.insert_slice %{{.*}} into %[[R01]][0, 0, 1, 0] [1, 3, 2, 3] [1, 1, 2, 2]
  // CHECK: linalg.generic {indexing_maps = [#[[$TAPS11]], {{.*}} outs(%{{.*}} : tensor<4x3x1x1xf32>)
  // CHECK: %[[R11:.*]] = tensor.insert_slice %{{.*}} into %[[R10]][0, 0, 1, 1] [1, 3, 2, 2] [1, 1, 2, 2]
  // CHECK: return %[[R11]]
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 5, 5>, strides = array<i64: 2, 2>} : (tensor<1x4x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x5x5xf32>
  return %r : tensor<1x3x5x5xf32>
}

// -----

// conv2d_backward_input (strided 1x1): the patch gradient (filters
// transposed times each image's output gradient), then col2im: the one
// tap's [n, c, oh, ow] slice adds onto the strided slice of the input
// gradient it was read from.
// CHECK-DAG: #[[$AT:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d1)>
// CHECK-LABEL: func.func @conv2d_backward_input_pointwise
func.func @conv2d_backward_input_pointwise(%g: tensor<1x4x2x2xf32>, %w: tensor<4x3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  // CHECK: %[[MM:.*]] = linalg.generic {indexing_maps = [#[[$AT]], {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<1x4x4xf32>) outs(%{{.*}} : tensor<1x3x4xf32>)
  // CHECK: %[[ACC:.*]] = linalg.fill {{.*}} -> tensor<1x3x4x4xf32>
  // CHECK: %[[WIN:.*]] = tensor.extract_slice %[[ACC]][0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 2, 2]
  // CHECK: %[[ADD:.*]] = linalg.generic {{.*}} outs(%[[WIN]] : tensor<1x3x2x2xf32>)
  // CHECK: arith.addf
  // CHECK: tensor.insert_slice %[[ADD]] into %[[ACC]][0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 2, 2]
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 4, 4>, strides = array<i64: 2, 2>} : (tensor<1x4x2x2xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x4x4xf32>
  return %r : tensor<1x3x4x4xf32>
}

// -----

// Stride-1 convolutions (any groups) are the direct contractions
// dist-conv-to-kernels matches: the window is a row of the padded image.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[$FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[$FLIPPED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
// CHECK-DAG: #[[$GRAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
// CHECK-DAG: #[[$WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
// CHECK-LABEL: func.func @conv2d_stride_one
func.func @conv2d_stride_one(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<2x4x5x5xf32>) -> (tensor<2x4x5x5xf32>, tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>) {
  // CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$FILTER]], #{{.*}}], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x3x7x7xf32>, tensor<1x4x3x3x3xf32>) outs(%{{.*}} : tensor<2x1x4x5x5xf32>)
  // The input gradient: the output gradient padded by 2 - 1 on each side.
  // CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 1, 1] [2, 4, 5, 5] [1, 1, 1, 1] : tensor<2x4x5x5xf32> into tensor<2x4x7x7xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$FLIPPED]], #{{.*}}], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x4x7x7xf32>, tensor<1x4x3x3x3xf32>) outs(%{{.*}} : tensor<2x1x3x5x5xf32>)
  // CHECK: linalg.generic {indexing_maps = [#[[$GRAD]], #[[$WINDOW]], #{{.*}}], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x4x5x5xf32>, tensor<2x1x3x7x7xf32>) outs(%{{.*}} : tensor<1x4x3x3x3xf32>)
  // CHECK-NOT: tensor.extract_slice
  %y = train.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x5xf32>
  %gx = train.conv2d_backward_input %g, %w {input_size = array<i64: 5, 5>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x5x5xf32>
  %gw = train.conv2d_backward_filter %x, %g {kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<4x3x3x3xf32>
  return %y, %gx, %gw : tensor<2x4x5x5xf32>, tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>
}

// -----

// An input gradient whose padding (3 rows above) exceeds the window's
// extent less one: the contraction computes the padded input's gradient
// (7 x 5) and its interior is the result.
// CHECK-LABEL: func.func @conv2d_backward_input_wide_padding
func.func @conv2d_backward_input_wide_padding(%g: tensor<1x4x5x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 2, 2] [1, 4, 5, 3] [1, 1, 1, 1] : tensor<1x4x5x3xf32> into tensor<1x4x9x7xf32>
  // CHECK: %[[GI:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x3x7x5xf32>)
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[GI]]
  // CHECK: %[[R:.*]] = tensor.extract_slice %[[C]][0, 0, 3, 1] [1, 3, 3, 3] [1, 1, 1, 1]
  // CHECK: return %[[R]]
  %r = train.conv2d_backward_input %g, %w {input_size = array<i64: 3, 3>, padding = array<i64: 3, 1, 1, 1>} : (tensor<1x4x5x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %r : tensor<1x3x3x3xf32>
}

// -----

// max_pool2d: a max reduction from -inf over the window, whose loops get
// their bounds from an empty [kh, kw] tensor.
// CHECK-DAG: #[[$WALK:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG: #[[$WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-LABEL: func.func @max_pool2d
func.func @max_pool2d(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  // CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
  // CHECK: %[[W:.*]] = tensor.empty() : tensor<2x2xf32>
  // CHECK: linalg.fill ins(%[[NEG]] : f32)
  // CHECK: linalg.generic {indexing_maps = [#[[$WALK]], #[[$WIN]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[W]] :
  // CHECK: arith.maximumf
  %r = train.max_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  return %r : tensor<1x2x3x3xf32>
}

// -----

// avg_pool2d without count_include_pad: the window sum, then a division by
// the in-bounds part of each window.
// CHECK-LABEL: func.func @avg_pool2d
func.func @avg_pool2d(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  // CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
  // CHECK: arith.addf
  // CHECK: linalg.generic
  // CHECK: arith.maxsi
  // CHECK: arith.minsi
  // CHECK: arith.sitofp
  // CHECK: arith.divf
  %r = train.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  return %r : tensor<1x2x3x3xf32>
}

// -----

// max_pool2d_backward: an argmax reduction (value and window offset, the
// first maximum kept), then one parallel generic per phase of the input
// positions modulo the stride (2 x 2 here, one window offset each: 0, 1, 2,
// 3, in i8), written into the phase's strided slice of the input gradient.
// CHECK-LABEL: func.func @max_pool2d_backward
func.func @max_pool2d_backward(%g: tensor<1x2x3x3xf32>, %x: tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32> {
  // CHECK: %[[ARG:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi8>)
  // CHECK: arith.cmpf ogt
  // CHECK: %[[D:.*]] = tensor.empty() : tensor<1x2x6x6xf32>
  // CHECK: %[[O0:.*]] = tensor.extract_slice %[[D]][0, 0, 0, 0] [1, 2, 3, 3] [1, 1, 2, 2]
  // CHECK: %[[P0:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %[[ARG]]#1 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi8>) outs(%[[O0]] : tensor<1x2x3x3xf32>)
  // CHECK-NEXT: ^bb0(%[[G:.*]]: f32, %[[I:.*]]: i8,
  // CHECK-NEXT: %[[HIT:.*]] = arith.cmpi eq, %[[I]], %c0_i8
  // CHECK-NEXT: arith.select %[[HIT]], %[[G]], %cst
  // CHECK: %[[S0:.*]] = tensor.insert_slice %[[P0]] into %[[D]][0, 0, 0, 0] [1, 2, 3, 3] [1, 1, 2, 2]
  // CHECK: arith.cmpi eq, %{{.*}}, %c1_i8
  // CHECK: %[[S1:.*]] = tensor.insert_slice %{{.*}} into %[[S0]][0, 0, 0, 1] [1, 2, 3, 3] [1, 1, 2, 2]
  // CHECK: arith.cmpi eq, %{{.*}}, %c2_i8
  // CHECK: %[[S2:.*]] = tensor.insert_slice %{{.*}} into %[[S1]][0, 0, 1, 0] [1, 2, 3, 3] [1, 1, 2, 2]
  // CHECK: arith.cmpi eq, %{{.*}}, %c3_i8
  // CHECK: %[[S3:.*]] = tensor.insert_slice %{{.*}} into %[[S2]][0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2]
  // CHECK: return %[[S3]]
  %r = train.max_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %r : tensor<1x2x6x6xf32>
}

// -----

// avg_pool2d_backward: per phase of the input positions, grad / count of
// the one window that reaches them (no gathers, no guards).
// CHECK-LABEL: func.func @avg_pool2d_backward
func.func @avg_pool2d_backward(%g: tensor<1x2x3x3xf32>, %x: tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32> {
  // CHECK: %[[N:.*]] = arith.constant 4.000000e+00 : f32
  // CHECK-NOT: tensor.extract %
  // CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<1x2x3x3xf32>) outs(%{{.*}} : tensor<1x2x3x3xf32>)
  // CHECK-NEXT: ^bb0(%[[G:.*]]: f32,
  // CHECK-NEXT: %[[Q:.*]] = arith.divf %[[G]], %[[N]]
  // CHECK-NEXT: linalg.yield %[[Q]]
  // CHECK: tensor.insert_slice
  // CHECK-SAME: [1, 1, 2, 2]
  %r = train.avg_pool2d_backward %g, %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %r : tensor<1x2x6x6xf32>
}

// -----

// SGD with momentum: one generic written over the parameter and its
// momentum buffer (its inits, read by the body); a bf16 parameter updated
// with an f32 learning rate too. Without momentum, over the parameter
// alone.
// CHECK-LABEL: func.func @sgd_in_place
// CHECK-SAME: (%[[P:[a-z0-9]+]]: tensor<4x8xf32>, %[[G:[a-z0-9]+]]: tensor<4x8xf32>, %[[LR:[a-z0-9]+]]: tensor<f32>, %[[B:[a-z0-9]+]]: tensor<4x8xf32>, %[[Q:[a-z0-9]+]]: tensor<8xbf16>, %[[H:[a-z0-9]+]]: tensor<8xbf16>)
func.func @sgd_in_place(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %lr: tensor<f32>, %b: tensor<4x8xf32>, %q: tensor<8xbf16>, %h: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xbf16>) {
  // CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} ins(%[[G]], %[[LR]] : tensor<4x8xf32>, tensor<f32>) outs(%[[P]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK-NEXT: ^bb0(%[[GI:.*]]: f32, %[[LRI:.*]]: f32, %[[PO:.*]]: f32, %[[BO:.*]]: f32):
  // CHECK: arith.mulf %[[BO]], %{{.*}}
  // CHECK: %[[NEXT:.*]] = arith.subf %[[PO]],
  %np, %nb = train.sgd %p, %g, %lr, %b {momentum = 9.000000e-01 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[LR]] : tensor<8xbf16>, tensor<f32>) outs(%[[Q]] : tensor<8xbf16>)
  %nq = train.sgd %q, %h, %lr : (tensor<8xbf16>, tensor<8xbf16>, tensor<f32>) -> tensor<8xbf16>
  // CHECK: return %[[R]]#0, %[[R]]#1, %[[S]]
  return %np, %nb, %nq : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xbf16>
}
