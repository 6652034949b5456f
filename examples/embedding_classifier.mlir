// A bag-of-words classifier with a large embedding table, the model
// parameter servers are for (tf.distribute's ParameterServerStrategy):
//   e      = emb.weight[ids]                  ids [32, 4] from a vocabulary of 4096
//   logits = reshape(e, [32, 64]) @ fc.weight^T + fc.bias      (5 classes)
//   loss   = cross_entropy(logits, y)
// followed by its backward pass (d emb.weight is a scatter-add of the
// looked-up rows) and SGD with momentum 0.9. A step reads 128 of the
// table's 4096 rows: under --dist-parameter-server the rows are looked up
// on the servers that hold them and only those rows' gradients travel.
//
// Run: dist-opt --dist-parameter-server="ps=2 workers=2" examples/embedding_classifier.mlir
func.func @train_step(
    %emb: tensor<4096x16xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
    %w: tensor<5x64xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
    %b: tensor<5xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
    %m_emb: tensor<4096x16xf32> {train.role = #train.role<opt_state>, train.name = "emb.weight.momentum_buffer"},
    %m_w: tensor<5x64xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
    %m_b: tensor<5xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
    %ids: tensor<32x4xi32> {train.role = #train.role<input>, train.name = "ids"},
    %y: tensor<32xi32> {train.role = #train.role<label>, train.name = "y"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4096x16xf32> {train.role = #train.role<param>, train.name = "emb.weight"},
        tensor<5x64xf32> {train.role = #train.role<param>, train.name = "fc.weight"},
        tensor<5xf32> {train.role = #train.role<param>, train.name = "fc.bias"},
        tensor<4096x16xf32> {train.role = #train.role<opt_state>, train.name = "emb.weight.momentum_buffer"},
        tensor<5x64xf32> {train.role = #train.role<opt_state>, train.name = "fc.weight.momentum_buffer"},
        tensor<5xf32> {train.role = #train.role<opt_state>, train.name = "fc.bias.momentum_buffer"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // Forward.
  %e = train.gather %emb, %ids : (tensor<4096x16xf32>, tensor<32x4xi32>) -> tensor<32x4x16xf32>
  %x = train.reshape %e : (tensor<32x4x16xf32>) -> tensor<32x64xf32>
  %xw = train.matmul %x, %w {transpose_rhs} : (tensor<32x64xf32>, tensor<5x64xf32>) -> tensor<32x5xf32>
  %logits = train.add %xw, %b : (tensor<32x5xf32>, tensor<5xf32>) -> tensor<32x5xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<32x5xf32>, tensor<32xi32>) -> tensor<f32>

  // Backward.
  %one = train.constant dense<1.000000e+00> : tensor<f32>
  %dlogits = train.cross_entropy_backward %one, %logits, %y : (tensor<f32>, tensor<32x5xf32>, tensor<32xi32>) -> tensor<32x5xf32>
  %dw = train.matmul %dlogits, %x {transpose_lhs} : (tensor<32x5xf32>, tensor<32x64xf32>) -> tensor<5x64xf32>
  %db = train.reduce %dlogits {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<32x5xf32>) -> tensor<5xf32>
  %dx = train.matmul %dlogits, %w : (tensor<32x5xf32>, tensor<5x64xf32>) -> tensor<32x64xf32>
  %de = train.reshape %dx : (tensor<32x64xf32>) -> tensor<32x4x16xf32>
  %zeros = train.constant dense<0.000000e+00> : tensor<4096x16xf32>
  %demb = train.scatter_add %zeros, %ids, %de : (tensor<4096x16xf32>, tensor<32x4xi32>, tensor<32x4x16xf32>) -> tensor<4096x16xf32>

  // SGD with momentum 0.9.
  %emb_n, %m_emb_n = train.sgd %emb, %demb, %lr, %m_emb {momentum = 9.000000e-01 : f64} : (tensor<4096x16xf32>, tensor<4096x16xf32>, tensor<f32>, tensor<4096x16xf32>) -> (tensor<4096x16xf32>, tensor<4096x16xf32>)
  %w_n, %m_w_n = train.sgd %w, %dw, %lr, %m_w {momentum = 9.000000e-01 : f64} : (tensor<5x64xf32>, tensor<5x64xf32>, tensor<f32>, tensor<5x64xf32>) -> (tensor<5x64xf32>, tensor<5x64xf32>)
  %b_n, %m_b_n = train.sgd %b, %db, %lr, %m_b {momentum = 9.000000e-01 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)

  return %emb_n, %w_n, %b_n, %m_emb_n, %m_w_n, %m_b_n, %loss
      : tensor<4096x16xf32>, tensor<5x64xf32>, tensor<5xf32>,
        tensor<4096x16xf32>, tensor<5x64xf32>, tensor<5xf32>, tensor<f32>
}
