// A step that looks token ids up in an embedding table (train.gather) and
// classifies them (cross-entropy over 5 classes); the parameters come back
// unchanged. dist_run_inputs.test checks the ranges of its ids and labels.
func.func @train_step(
    %table: tensor<10x2xf32> {train.role = #train.role<param>, train.name = "embed.weight"},
    %w: tensor<5x6xf32> {train.role = #train.role<param>, train.name = "head.weight"},
    %tokens: tensor<4x3xi32> {train.role = #train.role<input>, train.name = "tokens"},
    %y: tensor<4xi32> {train.role = #train.role<label>, train.name = "y"})
    -> (tensor<10x2xf32> {train.role = #train.role<param>, train.name = "embed.weight"},
        tensor<5x6xf32> {train.role = #train.role<param>, train.name = "head.weight"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %e = train.gather %table, %tokens : (tensor<10x2xf32>, tensor<4x3xi32>) -> tensor<4x3x2xf32>
  %h = train.reshape %e : (tensor<4x3x2xf32>) -> tensor<4x6xf32>
  %logits = train.matmul %h, %w {transpose_rhs} : (tensor<4x6xf32>, tensor<5x6xf32>) -> tensor<4x5xf32>
  %loss = train.cross_entropy %logits, %y : (tensor<4x5xf32>, tensor<4xi32>) -> tensor<f32>
  return %table, %w, %loss : tensor<10x2xf32>, tensor<5x6xf32>, tensor<f32>
}
