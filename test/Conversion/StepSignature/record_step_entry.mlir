// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-record-step=entry=b | FileCheck %s

// `entry` picks one of several steps.
// CHECK-LABEL: module attributes {train.step = {arguments = [{role = "param", type = tensor<2xf32>}], entry = "b", results = [{type = tensor<2xf32>}]}}
func.func @a(%w: tensor<4xf32> {train.role = #train.role<param>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
func.func @b(%w: tensor<2xf32> {train.role = #train.role<param>}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}

// -----

// expected-error @+1 {{no function 'b' to record as the training step}}
module {
  func.func @a(%w: tensor<4xf32> {train.role = #train.role<param>}) -> tensor<4xf32> {
    return %w : tensor<4xf32>
  }
}
