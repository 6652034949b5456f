// Two training steps in one module: dist-run needs --entry to pick one.
func.func @scale(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"}, %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"}) -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %y {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %n = train.sgd %w, %x, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %n, %l : tensor<4xf32>, tensor<f32>
}
func.func @square(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"}, %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"}) -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %y {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %n = train.sgd %w, %x, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %n, %l : tensor<4xf32>, tensor<f32>
}
