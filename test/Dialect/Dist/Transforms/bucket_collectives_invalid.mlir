// RUN: not dist-opt %s --dist-bucket-collectives=bucket-mb=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not dist-opt %s --dist-bucket-collectives=first-bucket-mb=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Bucket capacities must be positive.
// ZERO: error: dist-bucket-collectives needs positive bucket-mb and first-bucket-mb, got 0.000000e+00 and 1.000000e+00
// NEGATIVE: error: dist-bucket-collectives needs positive bucket-mb and first-bucket-mb, got 2.500000e+01 and -1.000000e+00
dist.mesh @mesh {axes = ["data"], shape = array<i64: 4>}
func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
  %r = dist.all_reduce %x on @mesh axes = ["data"] : tensor<16xf32>
  return %r : tensor<16xf32>
}
