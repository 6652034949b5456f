// The cost report counts the bytes each gradient compression moves per
// step, for the MLP example (784 -> 128 -> 10, 101770 parameters) on 2
// replicas (a ring all-reduce of 2 moves its payload once):
//   f32: 4 * 101770 + 4 (the loss) = 407084
//   bf16 / f16: 2 * 101770 + 4 = 203544
//   PowerSGD rank r: 4 * r * ((128 + 784) + (10 + 128)) for P and Q of the
//   two weights, plus the biases and the loss whole, 4 * (128 + 10 + 1) =
//   556: r = 1 4756, r = 4 17356
//   ZeRO-2: the gradients' reduce-scatter moves half its payload, 203540
//   in f32, 101770 in bf16 (the parameters' all-gathers stay f32).
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=2" --dist-cost-report=format=json -o %t.mlir | FileCheck %s --check-prefix=F32
// F32: "comm_bytes_per_rank": 407084
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=2 grad-dtype=bf16" --dist-cost-report=format=json -o %t.mlir | FileCheck %s --check-prefix=BF16
// BF16: "comm_bytes_per_rank": 203544
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=2 grad-dtype=f16" --dist-cost-report=format=json -o %t.mlir | FileCheck %s --check-prefix=BF16
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=2 compression=powersgd powersgd-rank=1" --dist-cost-report=format=json -o %t.mlir | FileCheck %s --check-prefix=PSGD1
// PSGD1: "comm_bytes_per_rank": 4756
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored="replicas=2 compression=powersgd powersgd-rank=4" --dist-cost-report=format=json -o %t.mlir | FileCheck %s --check-prefix=PSGD4
// PSGD4: "comm_bytes_per_rank": 17356
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=2 replicas=2" --dist-cost-report -o %t.mlir | FileCheck %s --check-prefix=ZERO-F32
// ZERO-F32: reduce_scatter [data] 2 4 407080 203540.0
// RUN: dist-opt %examples/mlp.mlir --dist-zero="stage=2 replicas=2 grad-dtype=bf16" --dist-cost-report -o %t.mlir | FileCheck %s --check-prefix=ZERO-BF16
// ZERO-BF16: reduce_scatter [data] 2 4 203540 101770.0
