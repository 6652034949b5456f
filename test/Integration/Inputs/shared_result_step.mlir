// One value returned as two results (the new parameter and a metric):
// their descriptors share one allocation, which dist-run freed twice
// (glibc aborted with "double free") before it freed each buffer once.
func.func @train_step(%w: tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
                      %x: tensor<4xf32> {train.role = #train.role<input>, train.name = "x"},
                      %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<4xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4xf32> {train.role = #train.role<metric>, train.name = "w_copy"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %p = train.mul %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce %p {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<4xf32>) -> tensor<f32>
  %n = train.sgd %w, %x, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %n, %n, %l : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
