// Row reductions through dist-lower-cuda's mapped nests run on the CPU
// (dist-run --gpu-mapped): a block per row, each warp's partial results
// combined by gpu.subgroup_reduce (on the CPU, dist-split-barriers's
// exchange in the GPU's butterfly order), the warps' results after one
// barrier. Checked against NumPy, and against the CPU lowering's
// sequential sums: sums over 6 rows of 1000 (256 threads: 8 warps, a
// cluster of 8 lanes for the second level), maxima of 40 rows of 32 (one
// warp: no barrier), minima of 3 rows of 100 (128 threads: 4 warps, in a
// launch of 256 threads it shares with an update of 5000 points: the
// warps past 128 skip it), a softmax over rows of 300 (a maximum and a sum
// between its stages) and a float64 row sum over 100 (halved in shared memory,
// wider than a shuffle).
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=7
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/cpu.npz
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/row_reference.py %t/state.npz %t/data.npz %t/cpu.npz %t/mapped.npz | FileCheck %s
// CHECK: cpu: a, b, c, u, s, d and the loss equal NumPy
// CHECK: mapped: a, b, c, u, s, d and the loss equal NumPy
// The mapped IR reduces by warps: 8, 4 and 4 warps' slots (the sum, the
// minimum, the softmax's two reductions), none for the one-warp maximum,
// a 128-thread tree for the float64 sum (and for the loss's
// sum of 6, fewer threads than a warp).
// RUN: dist-opt %s --dist-lower-cpu=gpu-mapped --mlir-print-ir-after=dist-map-to-gpu --mlir-disable-threading -o %t/out.mlir 2> %t/mapped.mlir
// RUN: FileCheck %s --check-prefix=MAPPED < %t/mapped.mlir
// MAPPED-DAG: memref.alloc() {distopt.block_scratch} : memref<6x8xf32>
// MAPPED-DAG: memref.alloc() {distopt.block_scratch} : memref<3x4xf32>
// MAPPED-DAG: memref.alloc() {distopt.block_scratch} : memref<16x8xf32>
// MAPPED-DAG: memref.alloc() {distopt.block_scratch} : memref<2x128xf64>
// MAPPED-DAG: memref.alloc() {distopt.block_scratch} : memref<1x8xf32>
// MAPPED-DAG: gpu.subgroup_reduce{{ +}}add %{{.*}} cluster(size = 8) : (f32) -> f32
// MAPPED-DAG: gpu.subgroup_reduce{{ +}}maximumf %{{.*}} : (f32) -> f32
// MAPPED-DAG: gpu.subgroup_reduce{{ +}}minimumf %{{.*}} cluster(size = 4) : (f32) -> f32
// MAPPED-NOT: memref<40x{{[0-9]+}}xf32>
func.func @train_step(
    %a: tensor<6xf32> {train.role = #train.role<param>, train.name = "a"},
    %b: tensor<40xf32> {train.role = #train.role<param>, train.name = "b"},
    %c: tensor<3xf32> {train.role = #train.role<param>, train.name = "c"},
    %u: tensor<5000xf32> {train.role = #train.role<param>, train.name = "u"},
    %s: tensor<16x300xf32> {train.role = #train.role<param>, train.name = "s"},
    %d: tensor<2xf64> {train.role = #train.role<param>, train.name = "d"},
    %x: tensor<6x1000xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<40x32xf32> {train.role = #train.role<input>, train.name = "y"},
    %z: tensor<3x100xf32> {train.role = #train.role<input>, train.name = "z"},
    %g: tensor<5000xf32> {train.role = #train.role<input>, train.name = "g"},
    %t: tensor<16x300xf32> {train.role = #train.role<input>, train.name = "t"},
    %e: tensor<2x100xf64> {train.role = #train.role<input>, train.name = "e"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"},
    %lr64: tensor<f64> {train.role = #train.role<hyper>, train.name = "lr64"})
    -> (tensor<6xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<40xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<3xf32> {train.role = #train.role<param>, train.name = "c"},
        tensor<5000xf32> {train.role = #train.role<param>, train.name = "u"},
        tensor<16x300xf32> {train.role = #train.role<param>, train.name = "s"},
        tensor<2xf64> {train.role = #train.role<param>, train.name = "d"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %rs = train.reduce %x {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<6x1000xf32>) -> tensor<6xf32>
  %a_new = train.sgd %a, %rs, %lr : (tensor<6xf32>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %rm = train.reduce %y {dims = array<i64: 1>, kind = #train.reduce_kind<max>} : (tensor<40x32xf32>) -> tensor<40xf32>
  %b_new = train.sgd %b, %rm, %lr : (tensor<40xf32>, tensor<40xf32>, tensor<f32>) -> tensor<40xf32>
  %rn = train.reduce %z {dims = array<i64: 1>, kind = #train.reduce_kind<min>} : (tensor<3x100xf32>) -> tensor<3xf32>
  %c_new = train.sgd %c, %rn, %lr : (tensor<3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %u_new = train.sgd %u, %g, %lr : (tensor<5000xf32>, tensor<5000xf32>, tensor<f32>) -> tensor<5000xf32>
  %p = train.softmax %t {dim = 1 : i64} : (tensor<16x300xf32>) -> tensor<16x300xf32>
  %s_new = train.sgd %s, %p, %lr : (tensor<16x300xf32>, tensor<16x300xf32>, tensor<f32>) -> tensor<16x300xf32>
  %re = train.reduce %e {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<2x100xf64>) -> tensor<2xf64>
  %d_new = train.sgd %d, %re, %lr64 : (tensor<2xf64>, tensor<2xf64>, tensor<f64>) -> tensor<2xf64>
  %loss = train.reduce %rs {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<6xf32>) -> tensor<f32>
  return %a_new, %b_new, %c_new, %u_new, %s_new, %d_new, %loss : tensor<6xf32>, tensor<40xf32>, tensor<3xf32>, tensor<5000xf32>, tensor<16x300xf32>, tensor<2xf64>, tensor<f32>
}
