// The lowerings without a fixed-shape example, run by dist-run and checked
// against NumPy: dropout (Philox4x32-10 mask), gather and scatter_add (with
// repeated indices), slice, transpose, concat, pad, broadcast, iota,
// convert, log_softmax and batch_norm (+ backward). Mirrored over 2 ranks, dropout's mask (drawn from
// global indices through `offsets`) and everything else equal one device.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=3
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/single.npz
// RUN: %python %S/Inputs/execution_reference.py %t/state.npz %t/data.npz %t/single.npz
// The same step through dist-lower-cuda's GPU-mapped loop nests, run on
// the CPU (dist-run --gpu-mapped): the kernels' index arithmetic.
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/execution_reference.py %t/state.npz %t/data.npz %t/mapped.npz
func.func @train_step(
    %w: tensor<8x10xf32> {train.role = #train.role<param>, train.name = "w"},
    %emb: tensor<10x4xf32> {train.role = #train.role<param>, train.name = "emb"},
    %x: tensor<8x10xf32> {train.role = #train.role<input>, train.name = "x"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x10xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<10x4xf32> {train.role = #train.role<param>, train.name = "emb"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // w <- w - lr * dropout(x): the update shows the mask.
  %seed = train.constant dense<1234567890123> : tensor<i64>
  %g = train.dropout %x, %seed {rate = 2.500000e-01 : f64} : (tensor<8x10xf32>, tensor<i64>) -> tensor<8x10xf32>
  %w_new = train.sgd %w, %g, %lr : (tensor<8x10xf32>, tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
  // emb <- scatter_add(emb, ids, x[1:6:1, 2:10:2]).
  %ids = train.constant dense<[3, 0, 3, 9, 7]> : tensor<5xi32>
  %upd = train.slice %x {start = array<i64: 1, 2>, limit = array<i64: 6, 10>, strides = array<i64: 1, 2>} : (tensor<8x10xf32>) -> tensor<5x4xf32>
  %emb_new = train.scatter_add %emb, %ids, %upd : (tensor<10x4xf32>, tensor<5xi32>, tensor<5x4xf32>) -> tensor<10x4xf32>
  // loss = sum(log_softmax(pad(concat(gather(emb, ids), transpose(x[0:4, 0:5])), dim 1)) * iota) + sum(broadcast(convert(ids))).
  %rows = train.gather %emb, %ids : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<5x4xf32>
  %xs = train.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 5>} : (tensor<8x10xf32>) -> tensor<4x5xf32>
  %xt = train.transpose %xs {permutation = array<i64: 1, 0>} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %cat = train.concat %rows, %xt {dim = 1 : i64} : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x8xf32>
  %padded = train.pad %cat {low = array<i64: 1, 0>, high = array<i64: 0, 2>, value = 5.000000e-01 : f64} : (tensor<5x8xf32>) -> tensor<6x10xf32>
  %ls = train.log_softmax %padded {dim = 1 : i64} : (tensor<6x10xf32>) -> tensor<6x10xf32>
  %io = train.iota {dim = 0 : i64} : () -> tensor<6x10xf32>
  %weighted = train.mul %ls, %io : (tensor<6x10xf32>, tensor<6x10xf32>) -> tensor<6x10xf32>
  %s1 = train.reduce %weighted {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<6x10xf32>) -> tensor<f32>
  %idf = train.convert %ids : (tensor<5xi32>) -> tensor<5xf32>
  %idb = train.broadcast %idf {dims = array<i64: 1>} : (tensor<5xf32>) -> tensor<3x5xf32>
  %s2 = train.reduce %idb {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<3x5xf32>) -> tensor<f32>
  %s12 = train.add %s1, %s2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // + sum(y * x) + sum(x * dx) + sum(dgamma * gamma) + sum(dbeta) of a batch
  // norm of x over its 8 rows, with x as the output gradient.
  %gamma = train.constant dense<[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]> : tensor<10xf32>
  %beta = train.constant dense<0.25> : tensor<10xf32>
  %y, %mean, %var = train.batch_norm %x, %gamma, %beta : (tensor<8x10xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<8x10xf32>, tensor<10xf32>, tensor<10xf32>)
  %dx, %dgamma, %dbeta = train.batch_norm_backward %x, %x, %mean, %var, %gamma : (tensor<8x10xf32>, tensor<8x10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<10xf32>) -> (tensor<8x10xf32>, tensor<10xf32>, tensor<10xf32>)
  %yx = train.mul %y, %x : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  %xdx = train.mul %x, %dx : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  %prod = train.add %yx, %xdx : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  %s3 = train.reduce %prod {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<8x10xf32>) -> tensor<f32>
  %dg = train.mul %dgamma, %gamma : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %dgb = train.add %dg, %dbeta : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %s4 = train.reduce %dgb {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<10xf32>) -> tensor<f32>
  %s34 = train.add %s3, %s4 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %loss = train.add %s12, %s34 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %w_new, %emb_new, %loss : tensor<8x10xf32>, tensor<10x4xf32>, tensor<f32>
}
