// Lowerings whose statistics or indices have no dims (their maps have no
// results): layer_norm and its backward over every dim (axis 0: scalar mean
// and rstd; once a null affine map and a segfault), a gather with a scalar
// index, and softmax / log-softmax of a vector (rows without dims). Run by
// dist-run and checked against NumPy.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=5
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/out.npz
// RUN: %python %S/Inputs/degenerate_maps_reference.py %t/state.npz %t/data.npz %t/out.npz
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/degenerate_maps_reference.py %t/state.npz %t/data.npz %t/mapped.npz
func.func @train_step(
    %g: tensor<4x6xf32> {train.role = #train.role<param>, train.name = "g"},
    %emb: tensor<5x6xf32> {train.role = #train.role<param>, train.name = "emb"},
    %x: tensor<4x6xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4x6xf32> {train.role = #train.role<param>, train.name = "g"},
        tensor<5x6xf32> {train.role = #train.role<param>, train.name = "emb"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %zero = train.constant dense<0.0> : tensor<4x6xf32>
  // h = layer_norm(x, g, 0) over all 24 elements; logits = h[1, :] + emb[3].
  %h, %mean, %rstd = train.layer_norm %x, %g, %zero {axis = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<f32>, tensor<f32>)
  %row = train.slice %h {start = array<i64: 1, 0>, limit = array<i64: 2, 6>} : (tensor<4x6xf32>) -> tensor<1x6xf32>
  %r = train.reshape %row : (tensor<1x6xf32>) -> tensor<6xf32>
  %three = train.constant dense<3> : tensor<i32>
  %e = train.gather %emb, %three : (tensor<5x6xf32>, tensor<i32>) -> tensor<6xf32>
  %logits = train.add %r, %e : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  // loss = -log_softmax(logits)[2]; d loss / d logits = softmax(logits) - e2.
  %ls = train.log_softmax %logits {dim = 0 : i64} : (tensor<6xf32>) -> tensor<6xf32>
  %ls2 = train.slice %ls {start = array<i64: 2>, limit = array<i64: 3>} : (tensor<6xf32>) -> tensor<1xf32>
  %nll = train.neg %ls2 : (tensor<1xf32>) -> tensor<1xf32>
  %loss = train.reduce %nll {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<1xf32>) -> tensor<f32>
  %p = train.softmax %logits {dim = 0 : i64} : (tensor<6xf32>) -> tensor<6xf32>
  %e2 = train.constant dense<[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]> : tensor<6xf32>
  %dlogits = train.sub %p, %e2 : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  // Backward through the layer norm: dh is d loss / d logits in row 1.
  %drow = train.reshape %dlogits : (tensor<6xf32>) -> tensor<1x6xf32>
  %dh = train.pad %drow {low = array<i64: 1, 0>, high = array<i64: 2, 0>, value = 0.0 : f64} : (tensor<1x6xf32>) -> tensor<4x6xf32>
  %dx, %dg, %db = train.layer_norm_backward %dh, %x, %mean, %rstd, %g {axis = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>, tensor<f32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>)
  %g_new = train.sgd %g, %dg, %lr : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  // emb <- emb - lr * dx[0:1] scattered into row 3 (scalar index again).
  %dx0 = train.slice %dx {start = array<i64: 0, 0>, limit = array<i64: 1, 6>} : (tensor<4x6xf32>) -> tensor<1x6xf32>
  %dx0v = train.reshape %dx0 : (tensor<1x6xf32>) -> tensor<6xf32>
  %zemb = train.constant dense<0.0> : tensor<5x6xf32>
  %demb = train.scatter_add %zemb, %three, %dx0v : (tensor<5x6xf32>, tensor<i32>, tensor<6xf32>) -> tensor<5x6xf32>
  %emb_new = train.sgd %emb, %demb, %lr : (tensor<5x6xf32>, tensor<5x6xf32>, tensor<f32>) -> tensor<5x6xf32>
  return %g_new, %emb_new, %loss : tensor<4x6xf32>, tensor<5x6xf32>, tensor<f32>
}
