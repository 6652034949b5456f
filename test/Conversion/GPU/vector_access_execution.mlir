// Vector accesses (dist-map-to-gpu{vector-access}: 4 consecutive points
// per thread, vector<4xf32> loads and stores where every buffer starts at
// a 16-byte multiple, element by element where not) through the mapped
// nests run on the CPU (dist-run --gpu-mapped). Columns 4..67 of an 8 x 68
// input (rows of 68: strides that keep the 16-byte grid, a start 16 bytes
// in) take the vector branch; columns 1..64 (a start 4 bytes in) the
// element-by-element one; a 10-wide row stays one point per thread.
// Checked against NumPy and against the CPU lowering.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=7
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/cpu.npz
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/vector_reference.py %t/state.npz %t/data.npz %t/cpu.npz %t/mapped.npz | FileCheck %s
// CHECK: cpu: w, u, r and the loss equal NumPy
// CHECK: mapped: w, u, r and the loss equal NumPy
// The mapped IR does use vectors on both views (offsets 4 and 1 checked in
// the kernel).
// RUN: dist-opt %s --dist-lower-cpu=gpu-mapped --mlir-print-ir-after=dist-map-to-gpu --mlir-disable-threading -o %t/out.mlir 2> %t/mapped.mlir
// RUN: FileCheck %s --check-prefix=MAPPED < %t/mapped.mlir
// MAPPED-DAG: vector.load %{{.*}} : memref<8x64xf32, strided<[68, 1], offset: 4>>, vector<4xf32>
// MAPPED-DAG: vector.load %{{.*}} : memref<8x64xf32, strided<[68, 1], offset: 1>>, vector<4xf32>
func.func @train_step(
    %w: tensor<8x64xf32> {train.role = #train.role<param>, train.name = "w"},
    %u: tensor<8x64xf32> {train.role = #train.role<param>, train.name = "u"},
    %r: tensor<6x10xf32> {train.role = #train.role<param>, train.name = "r"},
    %x: tensor<8x68xf32> {train.role = #train.role<input>, train.name = "x"},
    %z: tensor<6x10xf32> {train.role = #train.role<input>, train.name = "z"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<8x64xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<8x64xf32> {train.role = #train.role<param>, train.name = "u"},
        tensor<6x10xf32> {train.role = #train.role<param>, train.name = "r"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %a = train.slice %x {start = array<i64: 0, 4>, limit = array<i64: 8, 68>} : (tensor<8x68xf32>) -> tensor<8x64xf32>
  %b = train.slice %x {start = array<i64: 0, 1>, limit = array<i64: 8, 65>} : (tensor<8x68xf32>) -> tensor<8x64xf32>
  %aa = train.mul %a, %a : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %w_new = train.sgd %w, %aa, %lr : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  %bb = train.mul %b, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %u_new = train.sgd %u, %bb, %lr : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  %r_new = train.sgd %r, %z, %lr : (tensor<6x10xf32>, tensor<6x10xf32>, tensor<f32>) -> tensor<6x10xf32>
  %ab = train.mul %a, %b : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %loss = train.reduce %ab {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<8x64xf32>) -> tensor<f32>
  return %w_new, %u_new, %r_new, %loss : tensor<8x64xf32>, tensor<8x64xf32>, tensor<6x10xf32>, tensor<f32>
}
