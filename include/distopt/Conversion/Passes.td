//===- Passes.td - conversions out of the train and dist dialects -*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_CONVERSION_PASSES
#define DISTOPT_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def TrainToLinalgPass : Pass<"train-to-linalg", "ModuleOp"> {
  let summary = "Lower train ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites train ops into `linalg.generic` ops on tensors (with `arith`,
    `math` and `tensor` in their bodies), ready for one-shot bufferization:

    - elementwise ops with NumPy broadcasting: one `linalg.generic` whose
      indexing maps read a size-1 (or missing) dim at index 0;
    - `matmul` (batch dims, transposes): a contraction `linalg.generic`
      over a zero-filled accumulator;
    - `reduce` (sum, mean, max, min; keepdims): a reduction `linalg.generic`
      from the combiner's identity, divided by the count for `mean`;
    - `cross_entropy` and its backward op: a numerically stable log-softmax
      (row max, sum of exponentials) and the label's logit read with
      `tensor.extract`;
    - `softmax`, `log_softmax` (any `dim`) and their backward ops: row
      reductions read back through maps that drop the reduced dim;
    - `layer_norm`, `batch_norm` and their backward ops: means over the
      normalized dims (the trailing ones; every one but the channels),
      `rsqrt(var + eps)` and sums of the weight and bias gradients;
    - `gelu` (tanh approximation) and `convert`: elementwise bodies;
    - `reshape`: `tensor.collapse_shape` to one dim and
      `tensor.expand_shape` (no copy); `transpose`, `broadcast`, `slice`:
      copies whose indexing maps permute, broadcast or stride;
    - `concat`, `pad`, `iota`, `gather` (with `row_offset`: rows outside
      the table read zeros; without, an index outside the table aborts the
      program through `cf.assert`, naming the op and its location): a
      `linalg.generic` computing each element from its index, with guarded
      `tensor.extract` reads;
    - `scatter_add`: a reduction over the index positions into a copy of
      `init`, each table row adding the updates whose index hits it (rows
      outside the table, with `row_offset`, are dropped; without, they are
      an error at run time as for `gather`);
    - `dropout`: Philox4x32-10 of the element's global row-major index
      (`offsets`, `global_shape`) in an elementwise `linalg.generic`;
    - `max_pool2d`, `avg_pool2d`, `conv2d`: the input padded first, then a
      reduction `linalg.generic` whose input map walks the window (`oh *
      stride + kh * dilation`, grouped channels by `floordiv`); their
      backward ops gather, each input position summing the output positions
      whose window reaches it (the first maximum for max pooling, found by
      an argmax reduction);
    - `sgd`, `adam`, `adamw`: one elementwise `linalg.generic` per update,
      all results at once;
    - `constant`: `arith.constant`.

    Every train op is covered; an op without a pattern (one added to the
    dialect later) makes the pass fail with an error at the op (nothing is
    left half converted silently).

    ```mlir
    // Before:
    %z = train.add %xw, %b : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    // After:
    %e = tensor.empty() : tensor<64x128xf32>
    %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%xw, %b : tensor<64x128xf32>, tensor<128xf32>) outs(%e : tensor<64x128xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<64x128xf32>
    ```
  }];
  let options = [
    Option<"convProducts", "conv-products", "bool", /*default=*/"false",
           "Lower every convolution of few, large groups (and its backward "
           "ops) as im2col, one matrix product per group and col2im, "
           "whatever its strides (dist-lower-cuda: the products are cuBLAS "
           "calls); otherwise stride-1 convolutions are direct contractions "
           "for dist-conv-to-kernels">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::math::MathDialect"];
}

def DistToRuntimePass : Pass<"dist-to-runtime", "ModuleOp"> {
  let summary = "Lower dist collectives to calls of the distrt runtime";
  let description = [{
    Rewrites the collectives of a partitioned program (on tensors, before
    bufferization) into calls of `libdistrt` (`include/distopt/Runtime/
    distrt.h`, its memref entry points in `lib/Runtime/MLIRInterface.cpp`):
    each operand is copied into a fresh contiguous buffer
    (`bufferization.materialize_in_destination`, a read of the tensor that
    bufferization orders) that the runtime reduces or fills, and read back
    with `bufferization.to_tensor`. The mesh
    shape and the group axes are passed as i64 constants; the runtime
    splits the world communicator by mesh coordinates once per group.

    - `all_reduce`: in place, one call per bucket: the variadic op's
      buffers (per element type) are passed as their addresses (a
      `memref<?xindex>`) and element counts, and the runtime reduces them
      as one packed collective;
    - `reduce_scatter`: the blocks of the scatter dim are packed into
      `[group, slice...]` (contiguous blocks for the runtime), one call per
      tensor;
    - `all_gather`: gathered into `[group, local...]`, then laid out along
      the gather dim;
    - `all_to_all`: the blocks of the split dim packed as `[group,
      block...]`, exchanged, and laid out along the concat dim;
    - `broadcast`: in place, from the group member `root`;
    - `local_slice` and `shard_offset`: the device's index in the group
      (asked to the runtime) times the slice size;
    - `all_reduce_start`, `reduce_scatter_start`, `all_gather_start`: the
      runtime's nonblocking forms (MPI_Iallreduce, MPI_Ireduce_scatter_block,
      MPI_Iallgather) on buffers prepared as for the synchronous op, one i64
      request handle per all-reduce bucket (per element type) and per
      reduce-scatter or all-gather tensor; the first `dist.wait` on a
      request completes it and the waits read their buffers only then, so
      the ops in between overlap the communication;
    - in placed programs (pipelines, parameter servers): `send` and `recv`
      as the runtime's nonblocking point-to-point transfers (a receive
      posted before the fragment that precedes it, a send completed before
      the program returns), fragments between calls that mark their unit
      for `dist-run --trace`, and `serve` as an `scf.for` of
      `count` iterations: `distrt_mlir_probe_any` names the peer whose
      request arrived first and an `scf.index_switch` runs its case.

    Fragments with the same body (a pipeline stage's forward or backward
    for each microbatch, up to the start of the static slices that pick
    the microbatch) become one private function each fragment calls, with
    the slices' starts as `index` arguments; the first microbatch's
    fragment, which starts running sums (gradients, the loss) that the
    others add to, calls the others' function with zeros as the sums. A
    program is then O(stages) code, not O(stages x microbatches), and
    compiles in about the time of the single-device step. A fragment like
    no other, or any fragment with `outline-fragments=false`, is inlined
    in place.

    Every future must be consumed by a `dist.wait` in the block of its start
    op (the runtime writes the buffers until then); otherwise the start op
    is an error.

    The pass also records the step's interface (`dist-record-step`) before
    it removes the shardings and meshes.

    Afterwards the program is plain SPMD code: the pass removes the
    `dist.sharding` and `dist.partitioned` attributes (a runner reads them
    before lowering) and the meshes.

    Element types: f32, f64, i32, i64.

    `backend` names the runtime backend the program is built for: `mpi`,
    `local` (one process), or `auto` (the default: mpi under an MPI
    launcher, else local). A choice other than `auto` is recorded as the
    module attribute `distrt.backend`, which `dist-run` honours (and checks
    against its own `--backend`).

    ```mlir
    // Before:
    %r = dist.all_reduce %g on @mesh axes = ["data"] : tensor<10xf32>
    // After (sketch):
    %buf = memref.alloc() : memref<10xf32>
    bufferization.materialize_in_destination %g in restrict writable %buf
    // %addresses: memref<?xindex> holding %buf's address, %counts: [10]
    call @distrt_mlir_all_reduce_f32(%addresses, %counts, %mesh_shape, %axes, %c0_i32) : ...
    %r = bufferization.to_tensor %buf restrict : memref<10xf32> to tensor<10xf32>
    ```
  }];
  let options = [
    Option<"backend", "backend", "std::string", /*default=*/"\"auto\"",
           "The runtime backend the program starts: auto (mpi under an MPI "
           "launcher, else local), mpi, local or nccl (device buffers, "
           "dist-lower-cuda)">,
    Option<"outlineFragments", "outline-fragments", "bool", /*default=*/"true",
           "Lower fragments with the same body as calls of one function "
           "(false: inline every fragment in place)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def DistMatmulToBlasPass : Pass<"dist-matmul-to-blas", "ModuleOp"> {
  let summary = "Run f32, bf16 and f16 contractions on buffers through "
                "library products (OpenBLAS's sgemm, oneDNN's bf16 gemm)";
  let description = [{
    Runs after one-shot bufferization. Replaces every f32, bf16 or f16
    `linalg.generic` (one element type throughout)
    on buffers that is a matrix product (one m, n and k dim, optional
    leading batch dims, a multiply-add body: what `train-to-linalg` makes
    of `train.matmul`, transposed operands and a weight shared by every
    batch included) whose output was zero-filled just before (nothing else
    touching the output's allocation in between) by a call of
    `distopt_matmul_f32` in `libdistopt_cpu` (OpenBLAS's sgemm per batch,
    beta 0) on the same buffers, and erases the fill. Every operand must be
    a static, contiguous row-major buffer (any offset). Other generics are
    left to the loops.

    bf16 and f16 products call `distopt_matmul_bf16` / `distopt_matmul_f16`
    (same arguments): they accumulate in f32 and round each element of the
    result to the 16-bit type once (the generic's own loops would round
    after every addition). bf16 runs on oneDNN's `dnnl_gemm_bf16bf16f32`
    where the CPU multiplies bf16 (cpuid `avx512_bf16` / `amx_bf16`); f16,
    and bf16 elsewhere, as sgemm of the operands widened to f32 (exact).
    Under `dist-lower-cuda` the same calls are cuBLAS's `cublasGemmEx`
    products (16-bit inputs and output, `CUBLAS_COMPUTE_32F`).

    Working on buffers is what makes the rewrite safe: the call reads and
    writes exactly the buffers the generic did, so no earlier tensor-level
    rewrite (CSE, canonicalization) can make it read a buffer that
    bufferization reused in place.

    ```mlir
    // Before: the bufferized train.matmul %x, %w {transpose_rhs}
    linalg.fill ins(%zero : f32) outs(%c : memref<64x128xf32>)
    linalg.generic {...} ins(%x, %w : memref<64x784xf32>, memref<128x784xf32>)
                         outs(%c : memref<64x128xf32>) {...}
    // After (batch 1, m 64, n 128, k 784, B transposed):
    call @distopt_matmul_f32(%xv, %wv, %cv, %c1, %c64, %c128, %c784, %c0_i32, %c1_i32, %c1_i32, %c1_i32) : ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistMatmulEpiloguesPass : Pass<"dist-matmul-epilogues", "ModuleOp"> {
  let summary = "Fold a product's bias, residual and GELU into its library "
                "call (cuBLASLt epilogues)";
  let description = [{
    Runs on buffers after `dist-matmul-to-blas` (in `dist-lower-cuda` and
    `dist-lower-cpu{gpu-mapped}`). A linear layer is a product call
    followed by a generic that adds the bias to each row (and, after an
    attention or feed-forward block, the residual), which GELU may follow:
    two or three passes over the product's memory and a launch each on a
    GPU. This pass replaces a `distopt_matmul_f32` call of one f32 product
    (batch 1, a multiple of 8 columns) and those generics by one
    `distopt_matmul_epilogue_f32(A, B, D, bias, R, P, m, n, k, transA,
    transB, flags)` call, when

    - the product's buffer is a local allocation the addition alone reads
      (or writes: the bias added in place), and the next op that uses it;
    - the addition is a generic of parallel loops whose body sums its
      inputs with `arith.addf` alone: the product (identity map), a bias
      read along the last dim only, and at most one residual (identity
      map, not the output's memory), into a dense output of the product's
      type;
    - nothing but allocations, frees of other buffers and ops without
      memory effects lies between the call and the addition (the product
      moves down to it).

    When the next user of the sum is a generic computing GELU's tanh
    approximation of it (checked by evaluating its body across the curve)
    into another buffer, that goes too: the call writes the sum, which the
    backward reads, as P and GELU(P) as D (`flags` 2; 1: a residual). The
    product's buffer then goes when nothing else uses it. libdistopt_cuda
    runs the call as one cuBLASLt product with a `BIAS` or
    `GELU_AUX_BIAS` epilogue (and beta = 1 over the residual), which
    PyTorch also uses for its linear layers; libdistopt_cpu as OpenBLAS's
    sgemm and one loop, the check of `--gpu-mapped`. Exact (erf) GELU has
    no cuBLASLt epilogue and stays a kernel. The function's declaration
    says which operands it writes, `distopt.written_operands = [2, 5]`
    (D and P), so that `dist-map-to-gpu` orders it after the bias's and
    the residual's writers only, as a reader.

    ```mlir
    // Before:
    call @distopt_matmul_f32(%x, %w, %h, %c1, %c1024, %c1024, %c256, %c0_i32, %c1_i32, %c0_i32, %c0_i32)
    linalg.generic ... ins(%h_, %bias : memref<8x128x1024xf32>, memref<1024xf32>) outs(%pre : ...) { addf }
    linalg.generic ... ins(%pre : ...) outs(%act : ...) { tanh GELU }
    // After:
    call @distopt_matmul_epilogue_f32(%x, %w, %act_, %bias_, %act_, %pre_, %c1024, %c1024, %c256, %c0_i32, %c1_i32, %c2_i32)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistConvToKernelsPass : Pass<"dist-conv-to-kernels", "ModuleOp"> {
  let summary = "Run f32 convolutions on buffers through libdistopt_cpu's "
                "batch-reduce kernels";
  let description = [{
    Runs after one-shot bufferization, like `dist-matmul-to-blas`. Replaces
    each f32 `linalg.generic` on static buffers that is one of the direct
    convolution contractions `train-to-linalg` builds (eight loops: the
    output's five dims, then three reduced ones, a multiply-add body) and
    whose output was zero-filled just before by a call of
    `distopt_conv2d_f32` in `libdistopt_cpu` on the same buffers, and
    erases the fill:

    - kind 0, `train.conv2d`: out[n, g, f, y, x] += image[n, g, c, y*sh +
      kh*dh, x*sw + kw*dw] * filter[g, f, c, kh, kw];
    - kind 1, `train.conv2d_backward_input` (a conv2d of the padded output
      gradient with the flipped filter; for a strided convolution, one per
      phase of the input positions modulo the strides, with the phase's
      taps, written into the strided positions): the same with filter[g,
      c, f, kh, kw] and strides 1;
    - kind 2, `train.conv2d_backward_filter`: out[g, f, c, kh, kw] +=
      grad[n, g, f, y, x] * image[n, g, c, y*sh + kh*dh, x*sw + kw*dw].

    The image's rows must be contiguous (an output's need not be: the
    channels-last products write it back through transposes). The kernel computes each output row as one batch-reduce
    product over the window taps (no im2col patch matrix), with LIBXSMM's
    generated kernels (OpenBLAS's sgemm where LIBXSMM has no JIT for the
    CPU), split over the step's OpenMP team: for kinds 0 and 1 with 64
    channels or more on both sides, and for strided kind 0, channels last
    (the image transposed to [n, g, h, w, c], a strided window's pixels
    `sw` apart, the filter packed per block of 64 output channels by the
    thread that multiplies it); with fewer, pixels first, reading the rows
    of the padded image in place. A strided kind 2 reads a copy of the
    image split into `sw` column phases. Other generics are left to the
    loops.

    ```mlir
    // Before: the bufferized train.conv2d of a [8, 64, 32, 32] image,
    // padding 1, as [n, g, c, h, w] views
    linalg.fill ins(%zero : f32) outs(%y : memref<8x1x64x32x32xf32>)
    linalg.generic {...} ins(%xpad, %w : memref<8x1x64x34x34xf32>,
                                         memref<1x64x64x3x3xf32>)
                         outs(%y : memref<8x1x64x32x32xf32>) {...}
    // After (kind 0, dilations 1 and 1, strides 1 and 1):
    call @distopt_conv2d_f32(%xv, %wv, %yv, %c0_i32, %c1, %c1, %c1, %c1)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistFuseElementwisePass : Pass<"dist-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg generics, keeping BLAS contractions";
  let description = [{
    Upstream's elementwise fusion on tensors (producer into consumer when
    the producer has one use, reshapes folded by expansion, linalg
    canonicalization and constant folding), except that nothing is fused
    into or through an f32 contraction that `dist-matmul-to-blas` can run
    through sgemm: a transpose or activation fused into a matrix product
    would turn a BLAS call into scalar loops; and each such contraction
    gets a zero fill of its own (CSE merges equal fills, and a shared fill
    bufferizes to one filled buffer copied into each product's, which
    hides the fill from `dist-matmul-to-blas`). A producer is fused only
    into a consumer that reads each of its elements once (a permutation
    map): through a broadcast or a window it would be recomputed for every
    read (a padding fused into a convolution's patches ran its guarded
    gathers once per tap: 48 -> 30 ms for a 3x3 conv layer's step). Chains
    of elementwise
    generics (optimizer updates, activations and their gradients) become
    one loop each: one pass over memory and no temporaries.
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def DistApproximateMathPass : Pass<"dist-approximate-math"> {
  let summary = "Replace f32 transcendental functions by polynomial "
                "approximations";
  let description = [{
    Rewrites the `math` ops named by `functions` (by default `tanh`, `exp`
    and `log`) on f32 scalars and vectors into upstream MLIR's polynomial
    approximations: plain arithmetic that LLVM vectorizes, where a call of
    libm's `tanhf` or `expf` keeps a loop scalar and costs a call per
    element (libm's `tanhf` was a quarter of the transformer block's step).
    Other element types are left alone. The accuracy is measured against
    float64 in `test/Conversion/ApproximateMath` (execution).
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The math ops to approximate (by name without `math.`): "
               "any of upstream's approximations (acos, asin, atan, atan2, "
               "cbrt, cos, erf, erfc, exp, expm1, log, log1p, log2, sin, "
               "tanh); another name is an error",
               "llvm::cl::list_init<std::string>("
               "{\"tanh\", \"exp\", \"log\"})">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def DistRecordStepPass : Pass<"dist-record-step", "ModuleOp"> {
  let summary = "Record the training step's interface as `train.step`";
  let description = [{
    Writes the module attribute `train.step`: the entry function's name and,
    for each argument and result, its type, `train.role`, `train.name` and,
    when the step is partitioned, its `dist.sharding`, with the mesh's shape
    and axes. Lowering removes all of these (`dist-to-runtime` drops the
    shardings and meshes, the LLVM lowering the argument attributes);
    `dist-run` reads the record to split global arrays per rank and to feed
    a step given at any stage. Also marks the entry `llvm.emit_c_interface`
    (runners call it with memref descriptors). `dist-to-runtime` (the first
    step of `dist-lower-cpu`) records the only training step of a module
    before it lowers; run this pass with `entry` first to pick one of
    several. A module that has a record keeps it; modules without a
    (unique) training step are left alone.

    ```mlir
    module attributes {train.step = {entry = "train_step",
        mesh_shape = array<i64: 2>, mesh_axes = ["data"],
        arguments = [{train.name = "fc1.weight", train.role = #train.role<param>,
                      type = tensor<128x784xf32>,
                      dist.sharding = #dist.sharding<@mesh, [[], []]>}, ...],
        results = [...]}} { ... }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"",
           "The step function (default: the only function whose arguments "
           "or results carry train.role)">,
    Option<"dropFunctionAttributes", "drop-function-attributes", "bool",
           /*default=*/"false",
           "Then remove train.role and train.name from the recorded entry's "
           "arguments and results (dist-lower-cpu does, before the LLVM "
           "lowering would copy them onto the C interface, where upstream "
           "tools cannot parse them)">,
  ];
}

def DistStridedCopiesToLoopsPass : Pass<"dist-strided-copies-to-loops"> {
  let summary = "Turn memref copies of strided buffers into loop nests";
  let description = [{
    Rewrites every ranked `memref.copy` whose source or target is not a
    static contiguous buffer into a `linalg.copy`, which
    `convert-linalg-to-loops` turns into a loop nest that LLVM vectorizes.
    The LLVM lowering of such a copy is otherwise a call of MLIR's runtime
    `memrefCopy`, which moves one element at a time through the
    descriptors (a grouped convolution's channel blocks, sequence
    parallelism's packed blocks). Contiguous copies stay one `memcpy`.

    ```mlir
    // Before:
    memref.copy %block, %slice : memref<8x16x32x32xf32> to memref<8x16x32x32xf32, strided<[65536, 1024, 32, 1], offset: 16384>>
    // After:
    linalg.copy ins(%block : memref<8x16x32x32xf32>) outs(%slice : memref<8x16x32x32xf32, strided<[65536, 1024, 32, 1], offset: 16384>>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def DistStateInPlacePass : Pass<"dist-state-in-place", "::mlir::func::FuncOp"> {
  let summary = "Compute state results into their arguments' buffers";
  let description = [{
    A step returns each piece of its state (a `param` or `opt_state`
    result) replacing the argument of the same name. Optimizer updates are
    built over their state (their inits are the state tensors), so
    one-shot bufferization writes them in place; state computed by any
    other op -- a batch norm's running mean and variance and its
    `num_batches_tracked`, a step counter a model keeps itself -- has a
    `tensor.empty` init and gets a new buffer each step, which the runner
    then adopts (ResNet-18: 60 allocations per step, and its CUDA step
    cannot replay from a graph, since a captured step must allocate
    nothing).

    This pass makes such a result's producer -- a destination-style op in
    the function's body whose init for that result is a `tensor.empty`
    its payload does not read -- compute into the argument instead, when
    the argument and the result carry the same attributes (name, role and
    split), the argument is not read after the producer (directly or
    through a slice, reshape or cast of it), and the producer reads the
    argument, if at all, only elementwise (a `linalg.generic` of parallel
    loops reading it through the init's indexing map). Bufferization then
    writes the new state over the old, as it does an optimizer's update.
    `dist-lower-cpu` and `dist-lower-cuda` run it after
    `dist-fuse-elementwise`.

    A state result that cannot be computed into its argument -- one whose
    producer reads the argument other than elementwise, or an update over
    the argument (a `scatter_add` into an embedding table) that a later op
    still reads the old argument of (a `gather`), which bufferization would
    write into a copy -- is copied into the argument instead: a
    `linalg.copy` into it just before the return, returned in its place
    (one copy of that state per step rather than a new buffer returned
    each step; a CUDA step that returns new buffers cannot replay from a
    graph). Not when the step also returns a view of the argument, which
    the copy would overwrite. A result bufferization already writes over
    its argument (an optimizer's update, through reshapes or
    `insert_slice`s, with nothing reading the old state after it) is left
    as it is.

    ```mlir
    // Before:
    %e = tensor.empty() : tensor<64xf32>
    %new = linalg.generic {...} ins(%running_mean, %mean : ...) outs(%e : tensor<64xf32>)
    return %new   // {train.name = "bn1.running_mean", train.role = #train.role<opt_state>}
    // After:
    %new = linalg.generic {...} ins(%running_mean, %mean : ...) outs(%running_mean : tensor<64xf32>)
    ```
  }];
}

def DistRematerializeFillsPass : Pass<"dist-rematerialize-fills"> {
  let summary = "Give every destination of a shared fill (or scalar empty tensor) its own";
  let description = [{
    CSE merges identical `linalg.fill`s of `tensor.empty`s (the zero-padded
    images and gradients of a step's convolutions, the zeroed accumulators
    of its reductions) into one value with many destination uses. One-shot
    bufferization then keeps that value in one buffer and gives each
    destination a copy of it (ResNet-18: twenty 7 MB copies of one zero
    buffer per step, read and written, where a fill only writes), and
    `eliminate-empty-tensors` cannot make a padded slice's producer write
    into a buffer filled after it.

    This pass clones the fill (and its empty tensor) for each use as a
    destination-style init, a `tensor.insert_slice`'s destination among
    them. The clone for an insert_slice whose source an op of the same
    block produces goes before that producer (when the fill's operands
    dominate it), so the producer can write straight into the padded
    buffer; any other clone goes right before its user. Read-only uses keep
    the original fill.

    Then the padded value's readers after the padding read it as a
    `tensor.extract_slice` of the padded tensor: while the value was also
    read directly (through a reshape in particular), one-shot
    bufferization's analysis counted the padding's insert_slice as a write
    conflicting with those reads and computed the value out of place, then
    copied it in. `dist-lower-cpu` runs this pass before
    `dist-split-functions`, which passes such slices between parts as the
    padded tensor.

    A scalar (rank-0) `tensor.empty` that CSE merged -- the init of every
    Adam update's bias corrections, of a loss's zeroed accumulator -- gets
    a clone for each destination use too: bufferized as one buffer, which
    each of those ops wrote in turn, it made independent updates wait for
    one another (the transformer block under `--dist-mirrored`, whose
    updates follow the last bucket's all-reduce: 45 kernels per step, one
    or two per update, where the single-device step's updates are one
    launch). Larger empty tensors stay shared: their one buffer saves
    memory.

    ```mlir
    // Before:
    %zero = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x64x58x58xf32>) -> tensor<8x64x58x58xf32>
    %g = linalg.generic ... outs(%e2 : tensor<8x64x56x56xf32>)
    %p = tensor.insert_slice %g into %zero[0, 0, 1, 1] [8, 64, 56, 56] [1, 1, 1, 1] : ...
    %q = tensor.insert_slice %h into %zero[0, 0, 1, 1] [8, 64, 56, 56] [1, 1, 1, 1] : ...
    // After: each insert_slice pads into its own fill, made before %g
    // (and before %h's producer).
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def DistBufferDeallocationPass
    : Pass<"dist-buffer-deallocation", "ModuleOp"> {
  let summary = "Free each buffer of a straight-line function after its "
                "last use, in linear time";
  let description = [{
    Inserts the `memref.dealloc` ops a bufferized program needs, keeping
    the function boundary ABI of upstream's
    `ownership-based-buffer-deallocation`: arguments are never freed, every
    returned buffer is owned by the caller (a returned argument, global or
    buffer returned twice is returned as a `bufferization.clone`). One
    exception: the functions `train.step` records as the training step
    (its entry, or each program's), when nothing in the module calls them
    (dist-run calls them from outside), return an argument itself, once, where
    they return it unchanged or updated in place: the optimizer's state,
    which `train-to-linalg` writes over (dist-run recognizes its own buffer
    and neither frees nor copies it; a clone would cost a copy of the whole
    state per step, and feeding it back another).

    A function is handled here when its body is one block and no op nested
    in a region defines a buffer (every training step and evaluation
    function): each allocation (`memref.alloc`, `bufferization.clone`, a
    call's buffer result, any op with an `Allocate` effect) is followed
    through its views (`ViewLikeOpInterface`, `memref.cast`) to its uses;
    it is freed right after the last op of the block that uses it, or
    before the terminator when its address escapes (an
    `extract_aligned_pointer_as_index`, or a call whose callee is not
    marked `distopt.sync_buffers`: nonblocking collectives keep writing
    until their wait). Every decision is made from one numbering of the
    block, so the pass is linear in the function's size, and buffers die as
    early as they can (upstream frees at the end of the block, after
    alias queries between every freed and every returned buffer: 11 s of a
    48-layer GPT's lowering).

    Any other function (several blocks, loops carrying buffers, a
    `memref.realloc`, an op of unknown aliasing) goes through upstream's
    ownership-based deallocation and its simplification, as before; run
    `bufferization-lower-deallocations` after this pass.

    ```mlir
    // Before:
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    return %b : memref<4xf32>
    // After:
    %a = memref.alloc() : memref<4xf32>
    linalg.exp ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
    %b = memref.alloc() : memref<4xf32>
    linalg.exp ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    memref.dealloc %a : memref<4xf32>
    return %b : memref<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def DistSplitFunctionsPass : Pass<"dist-split-functions", "ModuleOp"> {
  let summary = "Cut large functions into a sequence of calls of private "
                "parts";
  let description = [{
    Walks the body of each single-block function in order and cuts it after
    every `ops-per-function` ops (nested ops included) where only tensors
    and scalars are live across the cut: never a buffer, nor a nonblocking
    collective's request (a collective and its wait stay in one part), nor
    a tensor that only serves as later ops' destination (a product stays
    with the zero fill of its output, one sgemm call for
    `dist-matmul-to-blas`). Each
    part becomes a private function `@<name>_part<k>` taking what it reads
    from before it and returning what later ops read; constants and empty
    tensors of static shape (and what is computed from them alone, such as
    their fills) are recreated in each part rather than passed. A static
    `tensor.extract_slice` (a padded value's interior) is not passed
    either: a part reading it takes the sliced tensor and slices it again,
    right after computing that tensor when it does (bufferization gives a
    function's arguments and results the identity layout, so a strided
    slice crossing the boundary was copied into a buffer of its own:
    ResNet-18's ReLU outputs kept for the backward pass, ~7 ms per step).
    The function keeps its signature and attributes and becomes a sequence
    of calls.

    Parts are marked `passthrough = ["noinline"]` (LLVM would otherwise inline each one back
    into its only caller) and `distopt.sync_buffers` (buffers passed to a
    part may be freed when it returns). `dist-lower-cpu` runs this pass
    before bufferization: one-shot bufferization's analysis and LLVM's code
    generation grow faster than linearly with a function's size, and a
    48-layer GPT step is one function of some 50,000 ops.

    ```mlir
    // Before (ops-per-function=2):
    func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
      %a = linalg.exp ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
      %b = linalg.exp ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) -> tensor<4xf32>
      return %b : tensor<4xf32>
    }
    // After:
    func.func private @step_part0(%x: tensor<4xf32>) -> tensor<4xf32>
        attributes {distopt.sync_buffers, passthrough = ["noinline"]} {
      %a = linalg.exp ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
      return %a : tensor<4xf32>
    }
    ...
    func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = call @step_part0(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %1 = call @step_part1(%0) : (tensor<4xf32>) -> tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"opsPerFunction", "ops-per-function", "unsigned",
           /*default=*/"::mlir::train::kDefaultOpsPerFunction",
           "Ops (nested ops included) after which a part may end; 0 keeps "
           "every function whole">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def DistNameTrainOpsPass : Pass<"dist-name-train-ops", "ModuleOp"> {
  let summary = "Name each train and dist op's location after the op";
  let description = [{
    Wraps the location of every `train` and `dist` op in a `NameLoc`
    carrying the op's name (`"train.matmul"(loc)`, `"dist.all_reduce"(loc)`)
    unless it has a name already, so that the ops its lowering creates,
    which take its location, still say where they came from.
    `dist-profile-ops` reads these names; `dist-lower-cpu{profile=true}`
    runs this pass first.
  }];
}

def DistProfileOpsPass : Pass<"dist-profile-ops", "ModuleOp"> {
  let summary = "Bracket each op that works on buffers with profile calls";
  let description = [{
    For `dist-run --profile`, on a bufferized module: every op at the top
    level of a function body that does the work of a step (a `linalg` op, a
    loop, a call of an external function such as a BLAS or runtime call, a
    `memref.copy`) gets a call of `distrt_profile_begin(site)` before it and
    of `distrt_profile_end(site)` after it, where `site` is the op's index
    in the module attribute `distopt.profile`:

    ```mlir
    module attributes {distopt.profile = [
        {bytes = 49152 : i64, family = "train.matmul", flops = 2097152 : i64,
         loops = array<i64: 64, 128, 128>},
        ...]}
    ```

    (`loops`: a linalg op's loop ranges, which `dist-run --profile` prints
    for its slowest sites.)

    `family` is the name of the train op the op was lowered from (the
    innermost `NameLoc` of its location, see `dist-name-train-ops`; else
    the callee or the op's own name); `flops` counts the arithmetic ops of
    a `linalg` op's body times its iterations (a fused loop counts all its
    producers' work; a matrix product 2 x M x N x K) and `bytes` the sizes
    of its buffer operands, each read or written once: the minimum traffic
    of the op, for a roofline. Loops, calls and linalg ops with a dynamic
    loop range count 0 FLOPs (a call's bytes are 0 too: its operands are
    views the pass does not size). Runs before
    `dist-matmul-to-blas`, whose calls replace the products inside the
    brackets.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def DistParallelLoopsPass : Pass<"dist-parallel-loops"> {
  let summary = "Lower linalg ops on buffers to loops, the outermost one "
                "parallel when the op is large enough";
  let description = [{
    Replaces `convert-linalg-to-loops` in `dist-lower-cpu`: every `linalg`
    op on buffers becomes a loop nest (`linalg::linalgOpToLoops`, the
    iteration order of its iterators), and, when the op has a static
    iteration space of at least `min-iterations` points and its outermost
    iterator is parallel with at least two iterations, that outermost loop
    becomes an `scf.parallel`, which `convert-scf-to-openmp` then runs on
    the OpenMP team (the threads the BLAS kernels of `libdistopt_cpu` split
    their products over). Only the outermost loop: the inner ones stay
    `scf.for`, which LLVM vectorizes (a collapsed parallel nest would hide
    the innermost loop behind index arithmetic). An op whose outermost
    iterator is a reduction first gets its first parallel loop moved
    outermost (`linalg::interchangeGenericOp`; a batch norm's statistics
    over [n, c, h, w] loop over c first, each channel's sum in the same
    order), unless that loop is the innermost one (a column sum, whose
    inner loop over the columns is the one LLVM vectorizes): such an op,
    and an op inside another parallel loop, stays serial.

    When the innermost loop walks a reduction dim (a row sum, a full sum,
    a batch norm's statistics), its output elements are carried in
    registers: `convert-linalg-to-loops` loads and stores them on every
    iteration, a chain LLVM can neither promote (it cannot prove the
    buffers apart) nor vectorize. Each is loaded once before the loop,
    carried through its `iter_args` and stored once after, and the
    floating-point op that combines it is marked `fastmath<reassoc>` so
    that LLVM vectorizes the loop into partial sums (the order every BLAS
    and compiler sums in; bench/conv_time.py's two full sums: 1.3 -> 0.6
    ms; the transformer block's layer norm 0.47 -> 0.25 ms, softmax's
    backward 0.34 -> 0.11).

    ```mlir
    // Before (a 1024 x 256 elementwise add, 262144 iterations):
    linalg.generic {iterator_types = ["parallel", "parallel"], ...}
        ins(%a, %b : memref<1024x256xf32>, memref<1024x256xf32>)
        outs(%c : memref<1024x256xf32>) { ... }
    // After:
    scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
      scf.for %j = %c0 to %c256 step %c1 {
        ...
      }
    }
    ```
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t",
           /*default=*/"::mlir::train::kDefaultParallelMinIterations",
           "Iterations (the product of the static loop ranges) from which "
           "an op's outermost parallel loop runs on the team; 0: none does "
           "(plain convert-linalg-to-loops)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistMapToGPUPass : Pass<"dist-map-to-gpu"> {
  let summary = "Map linalg ops on buffers to flat grids of GPU blocks and "
                "threads (mapped scf.parallel nests)";
  let description = [{
    Every `linalg` op on buffers (named ops generalized first, and every
    `memref.copy` as a `linalg.copy`) becomes two nested `scf.parallel`
    loops mapped to `block_x` and `thread_x`
    (`#gpu.loop_dim_map`): the op's parallel iteration space, flattened
    row-major, is split into blocks of `block-size` threads, one point per
    thread; the thread recovers its point's indices with
    `affine.delinearize_index` and skips when past the end. An op with
    reduction iterators sums (in the loop order) over its reduction dims
    in an `scf.for` nest per thread, its output elements carried in
    registers (loaded once unless the body ignores them, stored once).
    Any rank and any layout (strided views) map alike, so a nest has one
    launch dimension, never more than the hardware's three.

    The same mapped IR lowers both ways: `dist-lower-cuda` turns each nest
    into a kernel (`convert-parallel-loops-to-gpu`, outlining, NVVM), and
    `dist-lower-cpu{gpu-mapped}` runs it as loops on the CPU, which is how
    the tiling and index arithmetic of every op family is checked against
    NumPy without a GPU.

    ```mlir
    // Before (an elementwise add of 1000 elements):
    linalg.generic {iterator_types = ["parallel"], ...}
        ins(%a, %b : memref<1000xf32>, memref<1000xf32>) outs(%c : memref<1000xf32>)
    // After (block-size 256):
    scf.parallel (%bx) = (%c0) to (%c4) step (%c1) {
      scf.parallel (%tx) = (%c0) to (%c256) step (%c1) {
        %i = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%bx, %tx)
        %in = arith.cmpi ult, %i, %c1000 : index
        scf.if %in { ... memref.store %sum, %c[%i] ... }
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```

    Independent ops map to one launch (`horizontal`, as apex's
    `multi_tensor_apply`): a run of ops in a block, none of which reads or
    writes a buffer another writes, with only pure ops, allocations and
    frees between them, becomes one nest whose grid is the members' grids
    one after the other; a block branches, uniformly, on the member its
    index falls in (`scf.if %bx < first block of the next member`). All
    of a step's optimizer updates are one kernel; so are the independent
    gradient reductions of the backward. A free of a buffer the run uses
    moves after its nest. Buffers are told apart by their allocation: an
    allocation is distinct from every other buffer, the arguments of a
    public function are distinct (the step's contract), and those of a
    private part are when every call of it passes distinct buffers (known
    when the pass runs on the module; on a function alone, a part's
    arguments may alias). A launch stops growing at `max-argument-bytes`
    of kernel arguments.

    ```mlir
    // Two independent updates of 1000 and 300 points: one grid of 4 + 2
    // blocks of 256 threads.
    scf.parallel (%bx) = (%c0) to (%c6) step (%c1) {
      scf.parallel (%tx) = (%c0) to (%c256) step (%c1) {
        %first = arith.cmpi ult, %bx, %c4 : index
        scf.if %first { ... the first op at point bx * 256 + tx ... }
        else { ... the second at point (bx - 4) * 256 + tx ... }
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```

    With `row-reductions`, a reduction over a row's last loops (a layer
    norm's statistics, a softmax's maximum and sum, a cross-entropy's) runs
    a block per row with the ops on the same rows around it, `gpu.barrier`
    between its stages; such a row group is one member of its level's
    launch like any op: its blocks first, its threads past its own count
    skipping its work but reaching every barrier, which stays at the top
    of the thread loop (the other members run before the first).

    With `column-reductions`, a reduction over loops before a parallel one
    (a bias's gradient `sum over b of dy[b, j]`, a layer norm's weight
    gradient), one point per thread, would sum each column alone, the grid
    a few blocks; it runs in two stages in each block instead: a block per
    tile of up to 32 neighbouring output elements (a warp's loads
    coalesced), `block-size / 32` lanes (a power of two) per element, each
    combining a strided part of its element's reduction, then the lanes'
    partial results halved in a scratch buffer and the first lane's total
    combined into the output. Like a row group it is one member of its
    level's launch. Reductions of fewer than 32 points per element stay one
    point per thread.

    ```mlir
    // A bias gradient of 256 columns over 1024 rows (block-size 256): 8
    // blocks of 32 columns x 8 lanes, 3 halvings.
    scf.parallel (%bx) = (%c0) to (%c8) step (%c1) {
      scf.parallel (%tx) = (%c0) to (%c256) step (%c1) {
        %j = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1 mod 32)>(%bx, %tx)
        %lane = affine.apply affine_map<(d0, d1) -> (d1 floordiv 32)>(%bx, %tx)
        %part = scf.for %r = %lane to %c1024 step %c8 iter_args(%acc = %zero) ...
        memref.store %part, %scratch[%bx, %tx] : memref<8x256xf32>
        gpu.barrier
        ... // halvings: lanes below 4, 2, 1 add the lane 4, 2, 1 above
        ... // lane 0: %db[%j] += %scratch[%bx, %tx]
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```

    An elementwise op every buffer of which it reads or writes at its last
    loop's index holds that loop as its last, contiguous dimension (a
    static layout; a buffer not indexed by that loop, a row's scale, is
    read once per thread) runs several consecutive points per thread
    (`vector-access`): as many as fill 16 bytes with the widest of those
    buffers' elements (4 for float32, 8 for bf16, 4 for bf16 widened to
    float32), halved until the count divides the last loop's range and the
    buffers' other strides (a row of 10 float32: 2). When each of those
    buffers starts at a multiple of its vector's bytes (the aligned pointer
    plus the view's static offset, checked in the kernel: a uniform
    branch), it loads and stores them as vectors (`vector<4xf32>`: one
    `ld.global.v4.f32` per buffer), element by element when not.

    ```mlir
    %first = affine.apply affine_map<(d0) -> (d0 * 4)>(%point)
    %ij:2 = affine.delinearize_index %first into (64, 256) : index, index
    scf.if %aligned {
      %x = vector.load %in[%ij#0, %ij#1] {alignment = 16 : i64} : memref<64x256xf32>, vector<4xf32>
      ...  // vector.extract per point, the body 4 times, vector.from_elements
      vector.store %y, %out[%ij#0, %ij#1] {alignment = 16 : i64} : memref<64x256xf32>, vector<4xf32>
    } else {
      ...  // the 4 points' memref.load / memref.store
    }
    ```

    A scalar op (no loops, 0-d buffers and scalars only, a few pure ops
    that do not read its outputs: an optimizer's step count plus one, its
    bias corrections `1 - beta^t`) is recomputed by every later op that
    reads what it wrote (`inline-scalars`), when nothing between them
    writes its inputs or its outputs: its consumers then depend only on
    its inputs, so the update no longer waits a launch for two scalar
    kernels; the scalar op itself stays only when something else reads
    its output (the new step count, a result of the step), and nothing
    depending on it, waits for the last level with the update.

    A pointwise op followed by a pointwise op on the same space that
    reads one of its outputs element for element (`fuse-pointwise`: a
    bias add, then the GELU of the sum, which the backward reads too; only
    allocations and pure ops between them) becomes one op that computes
    and stores both: the consumer takes the value the producer just
    yielded, so a launch less and one read of the intermediate less. The
    consumer may read nothing else the producer writes, nor write
    anything the producer touches.

    Independent products of a level of one element type (`group-products`:
    a layer's q, k and v; a backward's input and weight gradients) are one
    library call, `distopt_matmul_group_f32` (`_bf16`, `_f16` for a mixed
    precision step's 16-bit products), of a table the host writes
    (`distopt/Runtime/ProductGroup.h`: a row per product, its scalars and
    each operand's address, sizes and strides): one grouped cuBLAS product
    on the device (`cublasSgemmGroupedBatched_64`;
    `cublasGemmGroupedBatchedEx_64` with f32 accumulation for 16-bit
    ones), the products one after another on the CPU.

    ```mlir
    %table = memref.alloc() : memref<3x23xi64>
    memref.store %batch, %table[%c0, %c0] : memref<3x23xi64>
    ...  // each product's scalars, and its A, B and C
    %rows = memref.cast %table : memref<3x23xi64> to memref<?x23xi64>
    call @distopt_matmul_group_f32(%rows) : (memref<?x23xi64>) -> ()
    memref.dealloc %table : memref<3x23xi64>
    ```

    An op with a dynamic iteration space fails the pass with an error at
    the op (nothing is left unmapped silently).
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t",
           /*default=*/"::mlir::train::kDefaultBlockSize",
           "Threads per block (1 to 1024)">,
    Option<"horizontal", "horizontal", "bool", /*default=*/"true",
           "Map each run of independent ops (no buffer one writes is read "
           "or written by another; only pure ops, allocations and frees "
           "between them) as one launch, each op a range of its blocks: "
           "all of a step's optimizer updates, for one, in one kernel">,
    Option<"rowReductions", "row-reductions", "bool", /*default=*/"true",
           "With horizontal: a reduction over a row's last loops runs a "
           "block per row, its threads combining strided parts and then "
           "halving them in a scratch buffer, with the ops around it on "
           "the same rows (a layer norm, a softmax and their gradients) in "
           "the same launch, gpu.barrier between them; the group shares its "
           "level's launch with the level's other ops">,
    Option<"vectorAccess", "vector-access", "bool", /*default=*/"true",
           "An elementwise op, every buffer at its last loop's index "
           "holding that loop as its last, contiguous dimension: each "
           "thread runs the consecutive points that fill 16 bytes of the "
           "widest such buffer's elements (4 f32, 8 bf16; fewer when they "
           "do not divide the row), loading and storing those buffers' "
           "elements as one vector each when their addresses are "
           "multiples of the vector's size (checked in the kernel), "
           "element by element "
           "otherwise">,
    Option<"columnReductions", "column-reductions", "bool",
           /*default=*/"true",
           "With horizontal: a reduction over loops before a parallel one "
           "(a bias's or a norm weight's gradient, summed over the rows) "
           "of at least 32 points per output element runs a block per tile "
           "of up to 32 neighbouring output elements, a power of two of "
           "threads each combining a strided part, their partial results "
           "then halved in a scratch buffer; it shares its level's launch "
           "with the level's other ops">,
    Option<"maxArgumentBytes", "max-argument-bytes", "int64_t",
           /*default=*/"::mlir::train::kMaxKernelArgumentBytes",
           "The kernel argument bytes a horizontally fused launch may take "
           "(a memref of rank r takes 3 + 2r words; 32764: the limit of "
           "CUDA 12.1 and later drivers on Volta and later GPUs, which every "
           "target of the CUDA 13 toolkit is; 4096 for older drivers)">,
    Option<"inlineScalars", "inline-scalars", "bool", /*default=*/"true",
           "Recompute a scalar op (no loops, 0-d operands, a few pure ops) "
           "in every later op that reads its output, when nothing between "
           "them writes its operands; erase it when nothing else reads its "
           "outputs">,
    Option<"fusePointwise", "fuse-pointwise", "bool", /*default=*/"true",
           "Fuse a pointwise op (all loops parallel, outputs written one "
           "element per point) with the next op when that one, pointwise on "
           "the same space, reads one of its outputs at the point that "
           "wrote it: one op computing and storing both (a bias add and "
           "the activation of the sum the backward reads too)">,
    Option<"groupProducts", "group-products", "bool", /*default=*/"true",
           "With horizontal: the products of one element type "
           "(distopt_matmul_f32, _bf16 or _f16 calls) of a level, two or "
           "more, are one distopt_matmul_group_<type> call of a host table "
           "(one grouped cuBLAS product on the device)">,
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def DistAllocateReturnedShapesPass
    : Pass<"dist-allocate-returned-shapes", "::mlir::func::FuncOp"> {
  let summary = "Allocate a buffer a function returns reshaped in the "
                "returned shape";
  let description = [{
    A part of a split step (`dist-split-functions`) may hand the next part
    a buffer of its own through a reshape: a convolution's filter gradient
    is computed as a `[f, c*kh*kw]` product and returned as the
    `[f, c, kh, kw]` filter. Bufferization's results-to-out-params, which
    `dist-lower-cuda` and `dist-lower-cpu{gpu-mapped}` run so that the
    caller allocates (and the workspace plan places) what a part hands on,
    replaces only a returned allocation by the caller's buffer; a returned
    view it copies into that buffer, and the allocation under the view was
    then never freed (ResNet-18's CUDA step: 9 allocations per call,
    19 MB a step, and no CUDA graph).

    This pass gives such a buffer -- a static, identity-layout
    `memref.alloc` of the returning block, not freed, returned through one
    `memref.expand_shape` or `memref.collapse_shape` -- the returned shape
    itself: the allocation is made in that shape, and its other users see
    it through the inverse reshape, which has the old type. The function
    then returns the allocation, which results-to-out-params hoists.

    ```mlir
    // Before:
    %a = memref.alloc() : memref<512x4608xf32>
    ... writes %a ...
    %f = memref.expand_shape %a [[0], [1, 2, 3]] output_shape [512, 512, 3, 3] : memref<512x4608xf32> into memref<512x512x3x3xf32>
    return %f : memref<512x512x3x3xf32>
    // After:
    %b = memref.alloc() : memref<512x512x3x3xf32>
    %a = memref.collapse_shape %b [[0], [1, 2, 3]] : memref<512x512x3x3xf32> into memref<512x4608xf32>
    ... writes %a ...
    return %b : memref<512x512x3x3xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def DistPlanWorkspacePass : Pass<"dist-plan-workspace", "ModuleOp"> {
  let summary = "Hoist a GPU step's local buffers out of its calls: views of "
                "one workspace per function, planned from their lifetimes";
  let description = [{
    Runs on the mapped buffers of a GPU step (after `dist-map-to-gpu`, in
    `dist-lower-cuda` and `dist-lower-cpu{gpu-mapped}`). Every buffer a
    function allocates and frees in one block, statically shaped, of the
    default memory space, and whose address stays inside the function
    (the host never loads or stores it itself, it is not returned,
    yielded, taken as a pointer or handed to a call that may keep it)
    becomes a `memref.view` of the function's workspace, and its
    `memref.dealloc` goes. The workspace comes from one runtime call at
    the function's entry, `distopt_workspace(key, bytes) -> memref<?xi8>`
    (the key a hash of the function's name): libdistopt_cuda allocates
    device memory on the first call and answers the same buffer after
    that (a larger one if a later call asks for more), libdistopt_cpu host
    memory. So a step's intermediates are allocated once, not per call,
    and sit at the same addresses each call: what a captured CUDA graph
    needs.

    The results the runner only reads go there too: a buffer the step
    function of the module's `train.step` (its entry, each program's, the
    evaluation function) returns only as its `loss` or `metric` results,
    and does not free, is live to the return and valid until the next
    call. The workspace's descriptor has a null allocated pointer, so such
    a result is not the caller's to free (`dist-compile`'s header says
    so). State results stay allocations where the step returns them (it
    updates its state in place): the runner keeps them as the next call's
    arguments.

    Offsets are planned from lifetimes in program order (the positions of
    the allocation and the free in the function's pre-order walk; a buffer
    of a loop's body is live for its iteration only): each buffer, the
    largest first, goes at the lowest `alignment`-aligned offset where it
    overlaps no buffer live at the same time. One stream (or the CPU's
    program order) runs the step, so memory freed earlier in the program
    is free on the device too.

    A step's parts (`dist-split-functions`) share one workspace: a private
    function called only from one function, in its host control flow (no
    two of them running at once), and calling no function with a body
    (none active inside another) has its buffers dead once it returns --
    what it hands to the next part is its caller's, passed in
    (`dist-lower-cuda` and `dist-lower-cpu{gpu-mapped}` run
    bufferization's results-to-out-params first)
    -- so all such functions of one caller look up one workspace (the key
    a hash of the caller's name and `/parts`), as large as the largest
    one's plan. A split step's memory is then its own intermediates and
    one part's, not the sum of every part's.

    The function is marked `distopt.workspace = {bytes, buffers,
    buffer_bytes, key, results}`: the workspace's size, the buffers it
    holds, their total size (the memory separate allocations would have
    had live at once is at most that), the workspace's key (the step
    report counts a shared workspace once) and how many of them are
    returned.

    ```mlir
    // Before:
    %a = memref.alloc() : memref<256xf32>
    ...
    memref.dealloc %a : memref<256xf32>
    // After:
    %key = arith.constant ... : i64
    %bytes = arith.constant 1024 : i64
    %ws = call @distopt_workspace(%key, %bytes) : (i64, i64) -> memref<?xi8>
    %c0 = arith.constant 0 : index
    %a = memref.view %ws[%c0][] : memref<?xi8> to memref<256xf32>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "Each buffer's offset in the workspace is a multiple of this "
           "many bytes (a power of two; 256: cudaMalloc's alignment, which "
           "vectorized 16-byte accesses need at least)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistGPUHostPass : Pass<"dist-gpu-host", "ModuleOp"> {
  let summary = "Put a CUDA step's host code on one stream: device buffers, "
                "asynchronous launches, no host synchronisation";
  let description = [{
    Runs after kernel outlining on the host functions of a CUDA step
    (every `linalg` op already a `gpu.launch_func`):

    - `memref.alloc` becomes `gpu.alloc async` (device memory, stream
      ordered) and `memref.dealloc` `gpu.dealloc async`, except buffers the
      host itself reads or writes (`memref.load` / `memref.store` outside
      kernels: the address lists of collectives), which stay host memory;
    - a `memref.get_global` of a `constant` global is its device copy,
      `distopt_constant(host address, bytes) -> memref<?xi8>` viewed as
      its type: libdistopt_cuda copies it on the first call and answers
      the same buffer after that (no copy or allocation per call, which a
      captured CUDA graph could not replay); a mutable global read by
      kernels is copied to a device buffer (`gpu.memcpy async`) freed
      before the function returns; a global only calls of functions
      marked `distopt.host_operands` read as a ranked operand (a
      collective's counts, mesh shape, axes: the distrt declarations
      `dist-to-runtime` makes carry the mark, and the runtime reads them
      on the host) stays host memory;
    - every `gpu.launch_func`, `gpu.alloc`, `gpu.dealloc` and `gpu.memcpy`
      is chained on one asynchronous token, started by a `gpu.wait async`
      at the function's entry: `mgpuStreamCreate`, which the project's
      runtime (libdistopt_cuda) answers with the process's one stream.
      Library calls (cuBLAS products) enqueue on that same stream and
      distrt's NCCL collectives fork from it and join it back, so the step
      is ordered without any host wait; the runner synchronizes where it
      reads a result.

    - every library call `distopt_<f>` (products, the workspace, the
      constants) becomes libdistopt_cuda's `distopt_cuda_<f>`, so that
      libdistopt_cpu's `distopt_<f>` (the same functions on host buffers,
      which the runner also loads) can never take a CUDA step's calls; a
      call libdistopt_cuda does not define fails to link, naming it.

    A host op that would touch device memory (a `memref.load` or
    `memref.store` of a device buffer, a `linalg` op or `memref.copy` left
    unmapped) fails the pass with an error at the op.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistGPUStepReportPass : Pass<"dist-gpu-step-report", "ModuleOp"> {
  let summary = "Report what one call of a CUDA step enqueues: launches, "
                "allocations, host copies and waits";
  let description = [{
    Runs on a CUDA step's host code after `dist-gpu-host` and emits, at
    each public function, a remark with what one call of it enqueues on
    the device:

    - kernel launches (`gpu.launch_func`), library calls (`distopt_*`:
      cuBLAS products) and collectives (distrt's `distrt_mlir_*`
      collectives and transfers), and their sum, the step's launches;
    - stream-ordered device allocations (`gpu.alloc`) and frees;
    - copies between host and device memory (`gpu.memcpy` of a global or
      host buffer);
    - host waits (a blocking `gpu.wait`);
    - the collectives started (`distrt_mlir_*_start_*`, from
      `dist-overlap-collectives`, which the CUDA lowering runs first: the
      nccl backend enqueues them on its communication stream) and their
      `distrt_mlir_wait`s, each the step's stream waiting for the
      communication stream's work so far, not the host;
    - the workspaces that hold the buffers `dist-plan-workspace` hoisted
      out of the calls (their buffers and bytes, each function's once, and
      the `distopt_workspace` lookups, which allocate nothing after a
      function's first call and are not launches).

    Calls of the module's own functions (the parts `dist-split-functions`
    cut) are followed and `scf.for` loops of constant trip count
    multiplied (a pipeline's microbatches); a loop of unknown trip count
    is counted once and the remark says so. `dist-lower-cuda{report}`
    runs it; the launch and allocation budgets of the CUDA lowering are
    tested through it.

    ```
    remark: per call: 23 kernel launches, 14 library calls, 0 collectives
    (37 launches), 0 device allocations, 0 frees, 0 host-device copies,
    0 host waits; 67 buffers in workspaces of 25216512 bytes kept across
    calls (1 lookups)
    ```

    A function that calls itself fails the pass with an error at it.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DistSplitBarriersPass : Pass<"dist-split-barriers"> {
  let summary = "Run a thread loop's stages between gpu.barrier ops as "
                "sibling loops (GPU-mapped nests on the CPU)";
  let description = [{
    `dist-map-to-gpu` separates the stages of a row group (a reduction by a
    block and the ops on its rows) with `gpu.barrier` at the top of the
    thread loop's body. A GPU runs every thread of the block to the
    barrier before any goes on; run as CPU loops, the threads of a block
    are the iterations of one loop, so `dist-lower-cpu{gpu-mapped}` splits
    the thread loop at each barrier into loops over the same range, one
    after the other. Stages share values through memory; a pure op a
    stage uses from an earlier one (index arithmetic) is recomputed in it.

    ```mlir
    scf.parallel (%tx) = ... { A; gpu.barrier; B }   // thread_x
    // becomes
    scf.parallel (%tx) = ... { A }                   // thread_x
    scf.parallel (%tx) = ... { B }                   // thread_x
    ```

    A barrier under an `scf.if` of the thread loop (a launch member's
    guard) splits the if into one per stage on the same condition, the
    barriers between them; the stages of its then and else regions pair
    up in order.

    A warp reduction (`gpu.subgroup_reduce`, from a row group's block
    reduction) combines the values of the other lanes of its cluster (32
    without a cluster size). Each becomes a store of the lane's value to an
    exchange buffer (a row of the block's threads per block, allocated
    around the block loop), a barrier, and loads of the cluster's slots
    combined pairwise, neighbours first: the order in which the butterfly
    of `dist-lower-warp-reductions` combines them on the GPU.

    A barrier in any other region (a loop), a value with effects used
    across a barrier, an `scf.if` with results holding a barrier, a warp
    reduction of vectors or of strided lanes, or either op
    outside a thread loop fails the pass with an error at the op.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def DistPromoteBlockScratchPass : Pass<"dist-promote-block-scratch"> {
  let summary = "Move a block reduction's scratch rows into the shared "
                "memory of its gpu.launch";
  let description = [{
    Runs in `dist-lower-cuda` once the mapped loop nests are `gpu.launch`
    ops (after `convert-parallel-loops-to-gpu`, before
    `dist-plan-workspace`). `dist-map-to-gpu` reduces a row group's rows
    (softmax, log-softmax, layer norm, cross-entropy and their backward
    ops) and a column reduction's tiles with all the threads of a block:
    each thread's partial result goes to a scratch buffer with one row per
    block, marked `distopt.block_scratch`, and is halved there between
    `gpu.barrier`s. Built as loops that also run on the CPU
    (`dist-lower-cpu{gpu-mapped}`), that buffer is an allocation: device
    memory, a global round trip per step of the tree.

    Each block only touches its own row of the buffer (the first index of
    every access is the block's row), so the row becomes the block's
    shared memory: a workgroup attribution of the launch
    (`#gpu.address_space<workgroup>`, lowered by `convert-gpu-to-nvvm`),
    every load and store drops its first index, and the allocation and its
    free go. A marked buffer used outside one launch, or by anything but
    loads and stores, stays in device memory, and so does one that would
    take a launch's shared memory past `max-shared-bytes`: each with a
    remark at its allocation saying why.

    ```mlir
    %s = memref.alloc() {distopt.block_scratch} : memref<64x128xf32>
    gpu.launch blocks(%bx, ...) ... threads(%tx, ...) ... {
      memref.store %v, %s[%row, %tx] : memref<64x128xf32>
      gpu.barrier
      ...
    }
    memref.dealloc %s : memref<64x128xf32>
    // becomes
    gpu.launch blocks(%bx, ...) ... threads(%tx, ...) ...
        workgroup(%w : memref<128xf32, #gpu.address_space<workgroup>>) {
      memref.store %v, %w[%tx] : memref<128xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      ...
    }
    ```
  }];
  let options = [
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t",
           /*default=*/"49152",
           "The most bytes of shared memory one launch gets (49152: the "
           "static shared memory a block may have on every NVIDIA GPU "
           "without opting in)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DistLowerWarpReductionsPass : Pass<"dist-lower-warp-reductions",
                                       "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower gpu.subgroup_reduce to butterfly warp shuffles "
                "(32-lane NVIDIA warps)";
  let description = [{
    Runs in `dist-lower-cuda` on the outlined kernels, before
    `convert-gpu-to-nvvm` (which lowers `gpu.shuffle` to `shfl.sync` but
    has no lowering of a float `gpu.subgroup_reduce`). `dist-map-to-gpu`
    reduces a row group's rows (softmax, log-softmax, layer norm,
    cross-entropy and their backward ops) with whole warps through
    `gpu.subgroup_reduce`: each warp's partial results, then, after one
    barrier, the warps' results. Upstream's patterns
    (`populateGpuLowerSubgroupReduceToShufflePatterns`, after breaking
    vectors down to 32 bits) rewrite each into `gpu.shuffle xor` at lane
    offsets 1, 2, 4, ... up to its cluster, combining the lane's value
    with its partner's at each: 5 shuffles for a warp, no shared memory
    and no barrier, where halving in shared memory took a barrier per
    step. 16-bit values travel in the low half of a 32-bit shuffle.

    ```mlir
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    // becomes
    %x1, %ok1 = gpu.shuffle xor %v, %c1, %c32 : f32
    %s1 = arith.addf %v, %x1 : f32
    ... // offsets 2, 4, 8, 16
    ```

    On the CPU (`dist-lower-cpu{gpu-mapped}`), `dist-split-barriers`
    gives the same combination order through memory instead.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def DistMergeKernelModulesPass : Pass<"dist-merge-kernel-modules",
                                      "ModuleOp"> {
  let summary = "Move a step's outlined kernels into a few gpu.modules, "
                "each compiled once";
  let description = [{
    Runs in `dist-lower-cuda` right after `gpu-kernel-outlining`, which
    puts every kernel in a `gpu.module` of its own. `gpu-module-to-binary`
    compiles each module on its own (an LLVM module linked with libdevice,
    NVPTX code generation, a `ptxas` process), so a step of hundreds of
    kernels spent much of its compile time on per-module work (a 12-layer
    GPT's 395 kernels: 48.3 s to lower, 37.4 s merged). Every kernel of modules with the same
    attributes (targets, offloading handler) moves into the first of them,
    renamed where the name is taken there (outlining names each module's
    kernel after its function), with the references inside its module;
    the other modules go, and every `gpu.launch_func` names the kernel
    where it now is.

    With `modules=N` the kernels end in N modules rather than one: runs of
    consecutive kernels of about equal op counts (the order outlining left
    them in), each merged into its first module. `dist-gpu-module-to-binary`
    compiles the modules in parallel, so N trades a little per-module work
    (a libdevice link and a `ptxas` start each) for the cores it can use;
    `dist-lower-cuda` merges into `kernel-modules=16`.

    ```mlir
    gpu.module @step_kernel { gpu.func @step_kernel(...) kernel { ... } }
    gpu.module @step_kernel_0 { gpu.func @step_kernel_0(...) kernel { ... } }
    gpu.launch_func @step_kernel_0::@step_kernel_0 ...
    // becomes
    gpu.module @step_kernel {
      gpu.func @step_kernel(...) kernel { ... }
      gpu.func @step_kernel_0(...) kernel { ... }
    }
    gpu.launch_func @step_kernel::@step_kernel_0 ...
    ```
  }];
  let options = [
    Option<"modules", "modules", "unsigned", /*default=*/"1",
           "How many modules the kernels of modules compiled alike end in "
           "(at least 1): contiguous runs of kernels, balanced by op count, "
           "that dist-gpu-module-to-binary compiles in parallel">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DistGPUModuleToBinaryPass : Pass<"dist-gpu-module-to-binary",
                                     "ModuleOp"> {
  let summary = "Compile every gpu.module into a gpu.binary, the modules in "
                "parallel";
  let description = [{
    What upstream `gpu-module-to-binary` does (each `gpu.module`, for each
    of its targets, serialized by the target: for NVVM the module is
    translated to LLVM IR, linked with libdevice, compiled by the NVPTX
    back end and assembled by `ptxas`; then replaced by a `gpu.binary` of
    the same name holding the objects), with the modules compiled on the
    context's threads at once rather than one after the other. The
    binaries are the same and stay in the modules' order; with threading
    disabled (`--mlir-disable-threading`) the modules compile one at a
    time.

    Serializing a module touches that module only (it is isolated from
    above), so the modules compile independently; the objects are created
    and the modules replaced afterwards, in order. `dist-lower-cuda` runs
    it after `dist-merge-kernel-modules{modules=N}` has put the step's
    kernels in N modules of about equal size.

    A module without targets, or one a target fails to serialize, is an
    error at that module.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"fatbin\"",
           "What each binary holds: fatbin (ptxas's cubin and the PTX), bin "
           "(a cubin), isa (PTX text, no ptxas) or offload (LLVM IR)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit whose ptxas and libdevice the NVVM target uses "
           "(empty: the target's default search)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // DISTOPT_CONVERSION_PASSES
