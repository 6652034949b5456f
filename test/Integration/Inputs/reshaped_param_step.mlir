// A step that returns its parameter with another shape than it takes (a
// 2x2 reshape of a vector of 4): no runner can feed it back into the next
// step, and dist-run refuses it before running.
func.func @train_step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"}) -> (tensor<2x2xf32> {train.role = #train.role<param>, train.name = "w"}, tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %y {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %r = train.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  return %r, %l : tensor<2x2xf32>, tensor<f32>
}
