// A step with a bf16 parameter, which dist-run cannot read or write.
func.func @train_step(%w: tensor<4xbf16> {train.role = #train.role<param>, train.name = "w"}) -> (tensor<4xbf16> {train.role = #train.role<param>, train.name = "w"}) {
  return %w : tensor<4xbf16>
}
