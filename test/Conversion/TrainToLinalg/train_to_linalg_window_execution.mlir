// Pooling and convolution lowerings run by dist-run and checked against a
// NumPy loop nest: a strided, dilated, grouped and asymmetrically padded
// conv2d with both backward ops, max and avg pooling (padding,
// count_include_pad = false) with theirs. Each result lands in a "sink"
// parameter p <- p - lr * result, so the whole tensor is compared.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=5
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/out.npz
// RUN: %python %S/Inputs/window_reference.py %t/state.npz %t/data.npz %t/out.npz
// Through dist-lower-cuda's GPU-mapped loop nests on the CPU
// (convolutions and pooling as kernels of flat grids).
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --steps=1 --out=%t/mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/window_reference.py %t/state.npz %t/data.npz %t/mapped.npz
// Its two groups are small (3 filters over 2 channels): one direct
// contraction per conv op. With two large groups (8 filters over 4 channels
// x 9 taps each) the filter gradient is a product (sgemm) per group (4
// channels per group: too few for its direct contraction), the conv2d a
// call of distopt_conv2d_f32 with strides (2, 1), and the input gradient
// one call per row phase (2, stride-1 contractions of the padded output
// gradient with the phase's taps of the flipped filter): the same step
// with those shapes.
// RUN: sed -e 's/2x4x6x6/2x8x6x6/g' -e 's/6x2x3x3/16x4x3x3/g' -e 's/2x6x3x4/2x16x3x4/g' -e 's/2x4x3x3/2x8x3x3/g' %s > %t/products.mlir
// RUN: dist-run %t/products.mlir --init-state=%t/products_state.npz --init-data=%t/products_data.npz --seed=5
// RUN: dist-run %t/products.mlir --state=%t/products_state.npz --data=%t/products_data.npz --steps=1 --out=%t/products_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/products_state.npz %t/products_data.npz %t/products_out.npz
// RUN: dist-run %t/products.mlir --state=%t/products_state.npz --data=%t/products_data.npz --steps=1 --out=%t/products_mapped.npz --gpu-mapped
// RUN: %python %S/Inputs/window_reference.py %t/products_state.npz %t/products_data.npz %t/products_mapped.npz
// RUN: dist-opt %s --dist-lower-cpu | FileCheck %s --check-prefix=DIRECT
// RUN: dist-opt %t/products.mlir --dist-lower-cpu | grep -c "llvm.call @distopt_matmul_f32(" | FileCheck %s --check-prefix=PRODUCTS
// RUN: dist-opt %t/products.mlir --dist-lower-cpu | grep -c "llvm.call @distopt_conv2d_f32(" | FileCheck %s --check-prefix=STRIDED
// With 16 channels per group (and strides 2, 3) the filter gradient is a
// direct contraction too (distopt_conv2d_f32 reads the image split into
// column phases), and the input gradient has 2 x 3 phases: 8 calls, no
// products.
// RUN: sed -e 's/2x4x6x6/2x32x6x6/g' -e 's/6x2x3x3/16x16x3x3/g' -e 's/2x6x3x4/2x16x3x2/g' -e 's/2x4x3x3/2x32x3x3/g' -e 's/strides = array<i64: 2, 1>/strides = array<i64: 2, 3>/g' %s > %t/direct.mlir
// RUN: dist-run %t/direct.mlir --init-state=%t/direct_state.npz --init-data=%t/direct_data.npz --seed=5
// RUN: OMP_NUM_THREADS=2 dist-run %t/direct.mlir --state=%t/direct_state.npz --data=%t/direct_data.npz --steps=1 --out=%t/direct_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/direct_state.npz %t/direct_data.npz %t/direct_out.npz 2,3
// RUN: dist-opt %t/direct.mlir --dist-lower-cpu | grep -c "llvm.call @distopt_conv2d_f32(" | FileCheck %s --check-prefix=EIGHT
// RUN: dist-opt %t/direct.mlir --dist-lower-cpu | not grep "llvm.call @distopt_matmul_f32("
// Paddings at least the dilated window's extent (3 at the top, 5 on the
// right): the phases compute the padded input's gradient, whose interior
// is the result.
// RUN: sed -e 's/padding = array<i64: 1, 1, 0, 2>/padding = array<i64: 3, 1, 0, 5>/g' -e 's/2x16x3x2/2x16x4x3/g' %t/direct.mlir > %t/wide.mlir
// RUN: dist-run %t/wide.mlir --init-state=%t/wide_state.npz --init-data=%t/wide_data.npz --seed=5
// RUN: OMP_NUM_THREADS=2 dist-run %t/wide.mlir --state=%t/wide_state.npz --data=%t/wide_data.npz --steps=1 --out=%t/wide_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/wide_state.npz %t/wide_data.npz %t/wide_out.npz 2,3 3,2,2,2,1,1,1,0 3,1,0,5
// With stride 1 every conv op is one direct contraction: the small groups'
// run as loops, the large ones through distopt_conv2d_f32 (batch-reduce
// products over the padded image's rows; the input gradient computes the
// interior only).
// RUN: sed -e 's/strides = array<i64: 2, 1>/strides = array<i64: 1, 1>/g' -e 's/2x6x3x4/2x6x6x4/g' %s > %t/stride1.mlir
// RUN: dist-run %t/stride1.mlir --init-state=%t/stride1_state.npz --init-data=%t/stride1_data.npz --seed=5
// RUN: dist-run %t/stride1.mlir --state=%t/stride1_state.npz --data=%t/stride1_data.npz --steps=1 --out=%t/stride1_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/stride1_state.npz %t/stride1_data.npz %t/stride1_out.npz 1,1
// RUN: sed -e 's/strides = array<i64: 2, 1>/strides = array<i64: 1, 1>/g' -e 's/2x16x3x4/2x16x6x4/g' %t/products.mlir > %t/kernels.mlir
// RUN: dist-run %t/kernels.mlir --init-state=%t/kernels_state.npz --init-data=%t/kernels_data.npz --seed=5
// RUN: dist-run %t/kernels.mlir --state=%t/kernels_state.npz --data=%t/kernels_data.npz --steps=1 --out=%t/kernels_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/kernels_state.npz %t/kernels_data.npz %t/kernels_out.npz 1,1
// RUN: OMP_NUM_THREADS=2 dist-run %t/kernels.mlir --state=%t/kernels_state.npz --data=%t/kernels_data.npz --steps=1 --out=%t/kernels_out2.npz
// RUN: %python %S/Inputs/window_reference.py %t/kernels_state.npz %t/kernels_data.npz %t/kernels_out2.npz 1,1
// RUN: dist-opt %t/stride1.mlir --dist-lower-cpu | FileCheck %s --check-prefix=DIRECT
// RUN: dist-opt %t/kernels.mlir --dist-lower-cpu | grep -c "llvm.call @distopt_conv2d_f32(" | FileCheck %s --check-prefix=KERNELS
// The pooling backward ops gather by phase of the input positions modulo
// the stride: ResNet's 3 x 3 stride-2 window with padding 1 (phases of one
// and two offsets), a stride above the kernel (positions no window reaches
// stay zero), stride 1 (one phase, every offset).
// RUN: sed -e 's/kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>/kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>/g' %s > %t/pool3.mlir
// RUN: dist-run %t/pool3.mlir --init-state=%t/pool3_state.npz --init-data=%t/pool3_data.npz --seed=5
// RUN: dist-run %t/pool3.mlir --state=%t/pool3_state.npz --data=%t/pool3_data.npz --steps=1 --out=%t/pool3_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/pool3_state.npz %t/pool3_data.npz %t/pool3_out.npz 2,1 3,3,2,2,1,1,1,1
// RUN: sed -e 's/kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>/kernel_size = array<i64: 2, 1>, strides = array<i64: 3, 2>, padding = array<i64: 0, 0, 0, 0>/g' -e 's/2x4x3x3/2x4x2x3/g' %s > %t/gaps.mlir
// RUN: dist-run %t/gaps.mlir --init-state=%t/gaps_state.npz --init-data=%t/gaps_data.npz --seed=5
// RUN: dist-run %t/gaps.mlir --state=%t/gaps_state.npz --data=%t/gaps_data.npz --steps=1 --out=%t/gaps_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/gaps_state.npz %t/gaps_data.npz %t/gaps_out.npz 2,1 2,1,3,2,0,0,0,0
// RUN: sed -e 's/kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>/kernel_size = array<i64: 3, 2>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 0, 1>/g' -e 's/2x4x3x3/2x4x6x6/g' %s > %t/pool1.mlir
// RUN: dist-run %t/pool1.mlir --init-state=%t/pool1_state.npz --init-data=%t/pool1_data.npz --seed=5
// RUN: OMP_NUM_THREADS=2 dist-run %t/pool1.mlir --state=%t/pool1_state.npz --data=%t/pool1_data.npz --steps=1 --out=%t/pool1_out.npz
// RUN: %python %S/Inputs/window_reference.py %t/pool1_state.npz %t/pool1_data.npz %t/pool1_out.npz 2,1 3,2,1,1,1,1,0,1
// DIRECT-NOT: llvm.call @distopt_matmul_f32(
// DIRECT-NOT: llvm.call @distopt_conv2d_f32(
// PRODUCTS: 2
// STRIDED: 3
// EIGHT: 8
// KERNELS: 3
func.func @train_step(
    %s_conv: tensor<2x6x3x4xf32> {train.role = #train.role<param>, train.name = "conv"},
    %s_dx: tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "conv_dx"},
    %s_dw: tensor<6x2x3x3xf32> {train.role = #train.role<param>, train.name = "conv_dw"},
    %s_max: tensor<2x4x3x3xf32> {train.role = #train.role<param>, train.name = "max"},
    %s_max_dx: tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "max_dx"},
    %s_avg: tensor<2x4x3x3xf32> {train.role = #train.role<param>, train.name = "avg"},
    %s_avg_dx: tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "avg_dx"},
    %x: tensor<2x4x6x6xf32> {train.role = #train.role<input>, train.name = "x"},
    %w: tensor<6x2x3x3xf32> {train.role = #train.role<input>, train.name = "w"},
    %lr: tensor<f32> {train.role = #train.role<hyper>, train.name = "lr"})
    -> (tensor<2x6x3x4xf32> {train.role = #train.role<param>, train.name = "conv"},
        tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "conv_dx"},
        tensor<6x2x3x3xf32> {train.role = #train.role<param>, train.name = "conv_dw"},
        tensor<2x4x3x3xf32> {train.role = #train.role<param>, train.name = "max"},
        tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "max_dx"},
        tensor<2x4x3x3xf32> {train.role = #train.role<param>, train.name = "avg"},
        tensor<2x4x6x6xf32> {train.role = #train.role<param>, train.name = "avg_dx"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x6x6xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x3x4xf32>
  %dx = train.conv2d_backward_input %y, %w {input_size = array<i64: 6, 6>, strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x6x3x4xf32>, tensor<6x2x3x3xf32>) -> tensor<2x4x6x6xf32>
  %dw = train.conv2d_backward_filter %x, %y {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x6x6xf32>, tensor<2x6x3x4xf32>) -> tensor<6x2x3x3xf32>
  %mx = train.max_pool2d %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %mdx = train.max_pool2d_backward %mx, %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %av = train.avg_pool2d %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>, count_include_pad = false} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %adx = train.avg_pool2d_backward %av, %x {kernel_size = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 0>, count_include_pad = false} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %n1 = train.sgd %s_conv, %y, %lr : (tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32>, tensor<f32>) -> tensor<2x6x3x4xf32>
  %n2 = train.sgd %s_dx, %dx, %lr : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %n3 = train.sgd %s_dw, %dw, %lr : (tensor<6x2x3x3xf32>, tensor<6x2x3x3xf32>, tensor<f32>) -> tensor<6x2x3x3xf32>
  %n4 = train.sgd %s_max, %mx, %lr : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
  %n5 = train.sgd %s_max_dx, %mdx, %lr : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %n6 = train.sgd %s_avg, %av, %lr : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
  %n7 = train.sgd %s_avg_dx, %adx, %lr : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %loss = train.reduce %y {dims = array<i64: 0, 1, 2, 3>, kind = #train.reduce_kind<sum>} : (tensor<2x6x3x4xf32>) -> tensor<f32>
  return %n1, %n2, %n3, %n4, %n5, %n6, %n7, %loss : tensor<2x6x3x4xf32>, tensor<2x4x6x6xf32>, tensor<6x2x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>, tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>, tensor<f32>
}
