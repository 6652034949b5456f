// RUN: dist-opt %s --dist-cost-report=format=json -o %t.out | FileCheck %s
// RUN: dist-opt %s --dist-cost-report -o %t.out | FileCheck %s --check-prefix=TEXT

// With link figures on the mesh, each collective gets a time estimate: bus
// bytes over the slowest axis's bandwidth plus one latency (the largest of
// its axes) per ring step, 2(n-1) for an all-reduce, n-1 for the others.
//   all_reduce over hosts (n = 2, 25 GB/s, 10 us): 4000 B / 25e9 + 2 * 10 us = 20.16 us
//   reduce_scatter over devices (n = 4, 300 GB/s, 2 us): 3000 B / 300e9 + 3 * 2 us = 6.01 us
//   all_reduce over both (n = 8, 25 GB/s, 10 us): 7000 B / 25e9 + 14 * 10 us = 140.28 us
dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>, host_axes = ["hosts"], bandwidths = [25.0, 300.0], latencies = [10.0, 2.0]}
func.func @step(%a: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<250xf32>, tensor<1000xf32>) {
  %r = dist.all_reduce %a on @mesh axes = ["hosts"] : tensor<1000xf32>
  %s = dist.reduce_scatter %a on @mesh axes = ["devices"] scatter_dims = [0] : tensor<1000xf32> -> tensor<250xf32>
  %t = dist.all_reduce %a on @mesh axes = ["hosts", "devices"] : tensor<1000xf32>
  return %r, %s, %t : tensor<1000xf32>, tensor<250xf32>, tensor<1000xf32>
}
// CHECK: "bus_bytes": 4000,
// CHECK: "seconds": {{2\.01(6|59999)[0-9]*e-05}}
// CHECK: "bus_bytes": 3000,
// CHECK: "seconds": {{(6\.01|6\.00999)[0-9]*e-06}}
// CHECK: "bus_bytes": 7000,
// CHECK: "seconds": {{0\.0001402(8|79999)[0-9]*}}
// CHECK: "comm_seconds_per_rank": {{0\.0001664(5|49999)[0-9]*}}
// TEXT: comm time (us, estimated) 166.4
// TEXT: all_reduce [hosts] 2 1 4000 4000.0 20.16
// TEXT: reduce_scatter [devices] 4 1 4000 3000.0 6.01
// TEXT: all_reduce [hosts, devices] 8 1 4000 7000.0 140.28
