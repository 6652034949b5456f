// loss = sum(table[ids + 1]) (the table returned unchanged); an index
// outside [0, 4) aborts the step.
func.func @train_step(
    %table: tensor<4x3xf32> {train.role = #train.role<param>, train.name = "table"},
    %ids: tensor<2xi32> {train.role = #train.role<input>, train.name = "ids"})
    -> (tensor<4x3xf32> {train.role = #train.role<param>, train.name = "table"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %one = train.constant dense<1> : tensor<i32>
  %shifted = train.add %ids, %one : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  %rows = train.gather %table, %shifted : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  %loss = train.reduce %rows {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<2x3xf32>) -> tensor<f32>
  return %table, %loss : tensor<4x3xf32>, tensor<f32>
}
