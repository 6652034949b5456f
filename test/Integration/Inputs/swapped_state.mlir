// A step that returns its state arrays swapped (a' = b, b' = a: both
// results are the arguments' own buffers) and one that returns one new
// buffer as two state arrays (a' = b' = a + x). state_feedback.test.
func.func @swap(
    %a: tensor<4xf32> {train.role = #train.role<param>, train.name = "a"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %l = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %b, %a, %l : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

func.func @tied(
    %a: tensor<4xf32> {train.role = #train.role<param>, train.name = "a"},
    %b: tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
    %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<4xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %s = train.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %b {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  return %s, %s, %l : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
