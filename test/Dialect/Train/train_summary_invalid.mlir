// RUN: not dist-opt %s --train-summary=output=%t.missing/dir/summary.txt 2>&1 | FileCheck %s

// An output file that cannot be created is a clear error.
// CHECK: error: cannot open summary output '{{.*}}missing/dir/summary.txt'
func.func @step(%x: tensor<f32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  return %x : tensor<f32>
}
