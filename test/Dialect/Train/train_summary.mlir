// RUN: dist-opt %examples/mlp.mlir --train-summary -o %t.out | FileCheck %s
// RUN: dist-opt %examples/mlp.mlir --train-summary=output=%t.txt -o %t.out
// RUN: FileCheck %s < %t.txt

// The MLP has 784*128 + 128 + 128*10 + 10 = 101770 parameters; the FLOPs are
// the sum of the ops' costs: 2 * 2*64*128*784 (first-layer matmuls)
// + 3 * 2*64*128*10 (second-layer matmuls) + 5 * 64*128 (add, relu, compare,
// select, bias-gradient reduce) + 2 * 64*10 (add, reduce) + 11 * 64*10
// (cross-entropy forward 6 and backward 5) + 5 * 101770 (sgd).
// CHECK:      training step @train_step
// CHECK-NEXT:   arguments
// CHECK-NEXT:     param         4 tensors         101770 elements         407080 bytes
// CHECK-NEXT:     opt_state     4 tensors         101770 elements         407080 bytes
// CHECK-NEXT:     input         1 tensors          50176 elements         200704 bytes
// CHECK-NEXT:     label         1 tensors             64 elements            256 bytes
// CHECK-NEXT:     hyper         1 tensors              1 elements              4 bytes
// CHECK-NEXT:   results
// CHECK-NEXT:     param         4 tensors         101770 elements         407080 bytes
// CHECK-NEXT:     opt_state     4 tensors         101770 elements         407080 bytes
// CHECK-NEXT:     loss          1 tensors              1 elements              4 bytes
// CHECK-NEXT:   ops 20
// CHECK:          train.matmul                          5
// CHECK:          train.sgd                             4
// CHECK-NEXT:   flops 26739762
