// Column reductions (a reduction over loops before a parallel one) through
// dist-lower-cuda's mapped nests run on the CPU (dist-run --gpu-mapped): a
// block per tile of up to 32 columns, lanes each summing a strided part,
// their partial results halved in a scratch buffer. Checked against NumPy,
// and against the CPU lowering's sequential sums: a sum over 1000 rows of
// 40 columns (2 blocks, the second ragged), a maximum over the middle loop
// (2 x 100 x 5) and a sum of squares over 3 x 50 rows of 24 columns (a
// norm weight's gradient: the product is the combined value). With
// column-reductions off, the same nests are one thread per column.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=5
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/cpu.npz
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/column_reference.py %t/state.npz %t/data.npz %t/cpu.npz %t/mapped.npz | FileCheck %s
// CHECK: cpu: w, b, v and the loss equal NumPy
// CHECK: mapped: w, b, v and the loss equal NumPy
// The mapped IR does reduce by columns (the three reductions' scratch
// buffers, lanes halved after barriers).
// RUN: dist-opt %s --dist-lower-cpu=gpu-mapped --mlir-print-ir-after=dist-map-to-gpu --mlir-disable-threading -o %t/out.mlir 2> %t/mapped.mlir
// RUN: FileCheck %s --check-prefix=MAPPED < %t/mapped.mlir
// MAPPED: memref.alloc() {distopt.block_scratch} : memref<2x256xf32>
// MAPPED: memref.alloc() {distopt.block_scratch} : memref<1x160xf32>
// MAPPED: memref.alloc() {distopt.block_scratch} : memref<1x192xf32>
// MAPPED: gpu.barrier
func.func @train_step(
    %w: tensor<40xf32> {train.role = #train.role<param>, train.name = "w"},
    %b: tensor<2x5xf32> {train.role = #train.role<param>, train.name = "b"},
    %v: tensor<24xf32> {train.role = #train.role<param>, train.name = "v"},
    %x: tensor<1000x40xf32> {train.role = #train.role<input>, train.name = "x"},
    %y: tensor<2x100x5xf32> {train.role = #train.role<input>, train.name = "y"},
    %z: tensor<3x50x24xf32> {train.role = #train.role<input>, train.name = "z"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<40xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<2x5xf32> {train.role = #train.role<param>, train.name = "b"},
        tensor<24xf32> {train.role = #train.role<param>, train.name = "v"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %cs = train.reduce %x {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<1000x40xf32>) -> tensor<40xf32>
  %w_new = train.sgd %w, %cs, %lr : (tensor<40xf32>, tensor<40xf32>, tensor<f32>) -> tensor<40xf32>
  %mx = train.reduce %y {dims = array<i64: 1>, kind = #train.reduce_kind<max>} : (tensor<2x100x5xf32>) -> tensor<2x5xf32>
  %b_new = train.sgd %b, %mx, %lr : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %zz = train.mul %z, %z : (tensor<3x50x24xf32>, tensor<3x50x24xf32>) -> tensor<3x50x24xf32>
  %sq = train.reduce %zz {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<3x50x24xf32>) -> tensor<24xf32>
  %v_new = train.sgd %v, %sq, %lr : (tensor<24xf32>, tensor<24xf32>, tensor<f32>) -> tensor<24xf32>
  %loss = train.reduce %sq {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<24xf32>) -> tensor<f32>
  return %w_new, %b_new, %v_new, %loss : tensor<40xf32>, tensor<2x5xf32>, tensor<24xf32>, tensor<f32>
}
