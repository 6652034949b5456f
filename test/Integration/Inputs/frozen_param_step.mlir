// A step that returns a parameter unchanged (a frozen layer): the
// deallocation keeps a clone of the argument, which the CPU pipeline lowers.
func.func @train_step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, %f: tensor<4xf32> {train.role = #train.role<param>, train.name = "frozen"}, %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"}, %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"}) -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"}, tensor<4xf32> {train.role = #train.role<param>, train.name = "frozen"}, tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %y {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %n = train.sgd %w, %x, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %n, %f, %l : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
