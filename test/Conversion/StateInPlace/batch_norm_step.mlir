// RUN: dist-opt %S/../../Integration/Inputs/torch_cnn_step.mlir --dist-lower-cpu --mlir-print-ir-after=one-shot-bufferize -o %t.out 2>&1 | FileCheck %s
// RUN: dist-opt %S/../../Integration/Inputs/torch_cnn_step.mlir --dist-lower-cuda="format=isa report=true ops-per-function=40" -o %t.cuda 2>&1 | FileCheck %s --check-prefix=CUDA

// An exported CNN's batch-norm running statistics and batch counts (its
// arguments 10-15) come back in their arguments' buffers, as the
// parameters (0-9) do: before dist-state-in-place, each was a new buffer
// per step (ResNet-18: 60 allocations per step; on CUDA, no graph). Cut
// into parts, the CUDA step allocates nothing either: the filter
// gradients a part hands on through a reshape are its caller's buffers
// (dist-allocate-returned-shapes; before, 8 allocations per call).
// CHECK-LABEL: func.func @train_step
// CHECK: return %{{[a-z_0-9]+}}, %arg1, %arg2, %arg3, %{{[a-z_0-9]+}}, %arg5, %arg6, %arg7, %arg8, %{{[a-z_0-9]+}}, %arg10, %arg11, %arg12, %arg13, %arg14, %arg15,
// CUDA: remark: per call: {{[0-9]+}} kernel launches, {{.*}} 0 device allocations, 0 frees, 0 host-device copies, 0 host waits
