//===- DistOps.td - dist dialect ops ------------------------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_IR_DISTOPS
#define DISTOPT_DIALECT_DIST_IR_DISTOPS

include "distopt/Dialect/Dist/IR/DistBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Mesh and annotations
//===----------------------------------------------------------------------===//

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "a logical N-D mesh of devices with named axes";
  let description = [{
    Declares a mesh of `product(shape)` devices, numbered row-major, with one
    named axis per dim. The optional topology feeds the cost model:
    `host_axes` lists the axes that cross hosts (the others stay within a
    host), and `bandwidths` (GB/s) and `latencies` (microseconds) give one
    link figure per axis. Axis sizes are positive and their product (the
    device count) fits in 64 bits; axis and host axis names are unique; link
    figures are finite and positive.

    ```mlir
    dist.mesh @mesh {axes = ["hosts", "devices"], shape = array<i64: 2, 4>,
                     host_axes = ["hosts"], bandwidths = [25.0, 300.0]}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$shape,
                       OptionalAttr<StrArrayAttr>:$host_axes,
                       OptionalAttr<F64ArrayAttr>:$bandwidths,
                       OptionalAttr<F64ArrayAttr>:$latencies);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getRank() { return getShape().size(); }
    /// The index of axis `name`, or nullopt.
    std::optional<int64_t> getAxisIndex(::llvm::StringRef name);
    /// The number of devices along `name` (the axis must exist).
    int64_t getAxisSize(::llvm::StringRef name);
    /// The product of the sizes of `axes` (which must exist).
    int64_t getGroupSize(::mlir::ArrayAttr axes);
    int64_t getNumDevices();
  }];
}

def Dist_AnnotateOp : Dist_Op<"annotate", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pin a sharding on a value";
  let description = [{
    Returns its operand, which must have `sharding`. Sharding propagation
    treats the annotation as a user decision (it wins over inferred
    shardings); partitioning replaces the op by the resharding it needs.

    ```mlir
    %w = dist.annotate %w0 {sharding = #dist.sharding<@mesh, [[], [model]]>}
        : tensor<512x2048xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_ShardOffsetOp : Dist_Op<"shard_offset", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "where this device's shard of a split dim starts";
  let description = [{
    For a dim of global size `size` split over `axes` of `mesh`, returns the
    global index of this device's first element: its linear index in the
    group times `size / group_size` (`size` must divide). Partitioning gives
    it to ops whose result depends on global positions (dropout masks,
    vocabulary-sharded embedding lookups).

    ```mlir
    %off = dist.shard_offset on @mesh axes = ["model"] size = 50304 : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$size);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    `on` $mesh `axes` `=` $axes `size` `=` $size attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (SPMD, on local shapes)
//===----------------------------------------------------------------------===//

// Every collective runs over the group of devices that differ only in the
// coordinates of `axes` on `mesh`; the group size is the product of those
// axes' sizes. `verify()` checks what the op says on its own (axes listed
// once, dims in range, result rank and element type); `verifySymbolUses`
// what needs the mesh (the axes exist, divisibility, the result shape).
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
          DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  dag commonArgs = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let hasVerifier = 1;
  code commonDecls = [{
    /// The number of devices taking part: the product of the axes' sizes.
    /// Only valid once the op verified.
    int64_t getGroupSize();
  }];
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [Pure, AllTypesMatch<["inputs", "results"]>]> {
  let summary = "reduce every input over the group, result everywhere";
  let description = [{
    Combines each input across the devices of the group with `reduction`
    and gives every device the result. Variadic, so that one gradient bucket
    is one op (the runtime packs the tensors into one buffer).

    ```mlir
    %g0, %g1 = dist.all_reduce %a, %b on @mesh axes = ["data"] reduction = <sum>
        : tensor<512x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = !con((ins Variadic<AnyRankedTensor>:$inputs,
                            DefaultValuedAttr<Dist_ReductionKindAttr,
                              "::mlir::dist::ReductionKind::sum">:$reduction),
                       commonArgs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes (`reduction` `=` $reduction^)?
    attr-dict `:` type($inputs)
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter", [Pure]> {
  let summary = "reduce over the group and keep one slice of each input";
  let description = [{
    Sums (or `reduction`s) each input across the group and gives device `i`
    of the group the `i`-th of `group_size` equal slices of it along its
    entry of `scatter_dims`, which must divide. Variadic, so that one
    gradient bucket of ZeRO is one op. A dynamic scatter dim stays dynamic in
    the result (its divisibility is checked at run time).

    ```mlir
    %s0, %s1 = dist.reduce_scatter %a, %b on @mesh axes = ["data"]
        scatter_dims = [0, 1] : tensor<512x128xf32>, tensor<8x64xf32>
        -> tensor<128x128xf32>, tensor<8x16xf32>
    ```
  }];
  let arguments = !con((ins Variadic<AnyRankedTensor>:$inputs,
                            DenseI64ArrayAttr:$scatter_dims,
                            DefaultValuedAttr<Dist_ReductionKindAttr,
                              "::mlir::dist::ReductionKind::sum">:$reduction),
                       commonArgs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes `scatter_dims` `=` $scatter_dims
    (`reduction` `=` $reduction^)? attr-dict `:` type($inputs) `->`
    type($results)
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather", [Pure]> {
  let summary = "concatenate every device's input along `gather_dim`";
  let description = [{
    Gives every device the concatenation, in group order, of all inputs
    along `gather_dim` (the result dim is `group_size` times the input's,
    or dynamic when the input's is).
  }];
  let arguments = !con((ins AnyRankedTensor:$input, I64Attr:$gather_dim),
                       commonArgs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `gather_dim` `=` $gather_dim
    attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all", [Pure]> {
  let summary = "move the sharding from one dim to another";
  let description = [{
    Splits the input into `group_size` slices along `split_dim`, sends slice
    `j` to device `j` of the group and concatenates what it receives along
    `concat_dim`: a tensor sharded along `concat_dim` becomes sharded along
    `split_dim`. The two dims differ; a dynamic one stays dynamic in the
    result.
  }];
  let arguments = !con((ins AnyRankedTensor:$input, I64Attr:$split_dim,
                            I64Attr:$concat_dim), commonArgs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "copy the input of one device of the group to all";
  let description = [{
    Every device of the group receives the input of the device whose linear
    index in the group is `root`.
  }];
  let arguments = !con((ins AnyRankedTensor:$input, I64Attr:$root),
                       commonArgs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `root` `=` $root attr-dict
    `:` type($input)
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_LocalSliceOp : Dist_CollectiveOp<"local_slice", [Pure]> {
  let summary = "keep this device's slice of a replicated tensor";
  let description = [{
    The replicated -> sharded resharding, without communication: device `i`
    of the group keeps the `i`-th of `group_size` equal slices along `dim`
    (a dynamic `dim` stays dynamic).
  }];
  let arguments = !con((ins AnyRankedTensor:$input, I64Attr:$dim),
                       commonArgs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = commonDecls;
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

// The start form of a collective: the same operands and attributes, one
// `!dist.future` per result of the synchronous form.
def Dist_FutureOf : Type<CPred<"::llvm::isa<::mlir::dist::FutureType>($_self)">,
                         "a future", "::mlir::dist::FutureType">;

def Dist_AllReduceStartOp : Dist_CollectiveOp<"all_reduce_start"> {
  let summary = "start an all_reduce; its results come from `dist.wait`";
  let description = [{
    The asynchronous form of `dist.all_reduce`: starts the reduction and
    returns one future per input, so that computation can overlap the
    communication until a `dist.wait`.

    ```mlir
    %f0, %f1 = dist.all_reduce_start %a, %b on @mesh axes = ["data"]
        : tensor<512x128xf32>, tensor<128xf32>
        -> !dist.future<tensor<512x128xf32>>, !dist.future<tensor<128xf32>>
    ```
  }];
  let arguments = !con((ins Variadic<AnyRankedTensor>:$inputs,
                            DefaultValuedAttr<Dist_ReductionKindAttr,
                              "::mlir::dist::ReductionKind::sum">:$reduction),
                       commonArgs);
  let results = (outs Variadic<Dist_FutureOf>:$futures);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes (`reduction` `=` $reduction^)?
    attr-dict `:` type($inputs) `->` qualified(type($futures))
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_ReduceScatterStartOp : Dist_CollectiveOp<"reduce_scatter_start"> {
  let summary = "start a reduce_scatter; its results come from `dist.wait`";
  let description = [{
    The asynchronous form of `dist.reduce_scatter` (same operands and
    checks): one future per input, holding its slice.
  }];
  let arguments = !con((ins Variadic<AnyRankedTensor>:$inputs,
                            DenseI64ArrayAttr:$scatter_dims,
                            DefaultValuedAttr<Dist_ReductionKindAttr,
                              "::mlir::dist::ReductionKind::sum">:$reduction),
                       commonArgs);
  let results = (outs Variadic<Dist_FutureOf>:$futures);
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes `scatter_dims` `=` $scatter_dims
    (`reduction` `=` $reduction^)? attr-dict `:` type($inputs) `->`
    qualified(type($futures))
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_AllGatherStartOp : Dist_CollectiveOp<"all_gather_start"> {
  let summary = "start an all_gather; its result comes from `dist.wait`";
  let description = [{
    The asynchronous form of `dist.all_gather` (same operands and checks),
    for instance to prefetch a ZeRO-3 parameter before its use.
  }];
  let arguments = !con((ins AnyRankedTensor:$input, I64Attr:$gather_dim),
                       commonArgs);
  let results = (outs Dist_FutureOf:$future);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `gather_dim` `=` $gather_dim
    attr-dict `:` type($input) `->` qualified(type($future))
  }];
  let extraClassDeclaration = commonDecls;
}

def Dist_WaitOp : Dist_Op<"wait", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "wait for asynchronous collectives and take their results";
  let description = [{
    Blocks until the collectives that produced `futures` have completed and
    returns their tensors, in order.

    ```mlir
    %a, %b = dist.wait %f0, %f1
        : !dist.future<tensor<512x128xf32>>, !dist.future<tensor<128xf32>>
    ```
  }];
  let arguments = (ins Variadic<Dist_FutureOf>:$futures);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$futures attr-dict `:` qualified(type($futures))";
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// MPMD: placed computation and point-to-point transfers
//===----------------------------------------------------------------------===//

def Dist_FragmentOp : Dist_Op<"fragment", [IsolatedFromAbove,
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "computation placed on a part of a mesh";
  let description = [{
    Runs its body on the devices of `place` (SPMD over the axes the place
    leaves free) with `inputs` as the body's arguments, and returns what the
    body yields. It is isolated from above: everything it reads is an input,
    so that a fragment can be scheduled, outlined or moved between ranks as
    one unit (Shardy MPMD's `mpmd.fragment` plays the same role).

    `unit` says what the fragment computes in a pipelined or
    parameter-server step (`#dist.unit<F, stage = 1, microbatch = 0>`);
    `origin` names what it was made from (pipeline stages, the user's
    `train.stage` annotations, parameter names), for diagnostics and
    timelines. In a program placed on a part of a mesh (a function with
    `dist.place`), every fragment has the program's place, and the order of
    the fragments is the program's schedule.

    ```mlir
    %h, %pre = dist.fragment on #dist.place<@pipe, pipe = 0>
        unit #dist.unit<F, stage = 0, microbatch = 1> (%x, %w)
        : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8x8xf32>):
      %p = train.matmul %xa, %wa : ...
      %r = train.relu %p : tensor<4x8xf32>
      dist.yield %r, %p : tensor<4x8xf32>, tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, Dist_PlaceAttr:$place,
                       OptionalAttr<Dist_ScheduleUnitAttr>:$unit,
                       OptionalAttr<StrArrayAttr>:$origin);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `on` qualified($place) (`unit` qualified($unit)^)? (`origin` $origin^)?
    ` ` `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes,
                   "::mlir::ValueRange":$inputs, "PlaceAttr":$place,
                   "ScheduleUnitAttr":$unit)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Dist_YieldOp : Dist_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["FragmentOp", "ServeOp"]>]> {
  let summary = "the results of a fragment or of a case of dist.serve";
  let description = [{
    Ends a `dist.fragment` or a case of `dist.serve`; its operands become the
    fragment's results (the values the next case starts from), in order and
    with the same types.
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let hasVerifier = 1;
}

def Dist_SendOp : Dist_Op<"send", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "send a tensor to the same device of another place";
  let description = [{
    Sends `input` to the device of `to` that has this device's coordinates
    on the axes `to` leaves free (in a `[pipe, data]` mesh, stage 0's data
    rank 1 sends to stage 1's data rank 1). The send does not block: the
    runtime buffers it (or keeps the tensor alive) until it completes, so a
    program only ever waits in `dist.recv`. Exactly one `dist.recv` in the
    program placed at `to` has the same `channel`, this program's place as
    its `from`, and the same type (`dist-verify` checks the match and that
    the programs cannot deadlock).

    ```mlir
    dist.send %h to #dist.place<@pipe, pipe = 1> channel = 3 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_PlaceAttr:$to,
                       I64Attr:$channel);
  let assemblyFormat = [{
    $input `to` qualified($to) `channel` `=` $channel attr-dict `:`
    type($input)
  }];
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receive a tensor sent from another place";
  let description = [{
    Blocks until the `dist.send` of `channel` from the matching device of
    `from` has arrived, and returns its tensor (of the send's type).

    ```mlir
    %h = dist.recv from #dist.place<@pipe, pipe = 0> channel = 3 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Dist_PlaceAttr:$from, I64Attr:$channel);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` qualified($from) `channel` `=` $channel attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Dist_ServeOp : Dist_Op<"serve", [RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "serve several peers in the order their requests arrive";
  let description = [{
    Runs `count` cases, one per request, in the order the requests arrive:
    it waits until the message of channel `channels[k]` from `peers[k]` has
    arrived for some `k` (looking at the peers round robin, from the one
    after the peer served last), then runs case `k`. Each case starts from
    the values the previous case yielded (the first from `inits`) and yields
    the values the next one starts from; the op's results are the values
    after the last case.

    Case `k` talks to `peers[k]` only: it receives the probed message (and
    may receive more from that peer), computes in fragments and may send
    replies back. This is how the servers of an asynchronous
    parameter-server step (`dist-parameter-server` with `mode=async`) apply
    each worker's gradients as they arrive: the order of the cases is not
    known before the program runs, so the step is not deterministic.
    `dist-verify` checks every case's transfers and simulates the programs
    with the requests served in the order they become possible.

    ```mlir
    %w = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>]
        channels [0, 1] count 2 (%w0) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%cur: tensor<4xf32>):
      %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
      %new = dist.fragment on #dist.place<@cluster, task = 0> (%cur, %g) ... 
      dist.send %new to #dist.place<@cluster, task = 1> channel = 2 : tensor<4xf32>
      dist.yield %new : tensor<4xf32>
    }, {
      ...
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inits,
                       TypedArrayAttrBase<Dist_PlaceAttr, "places">:$peers,
                       DenseI64ArrayAttr:$channels, I64Attr:$count);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region VariadicRegion<SizedRegion<1>>:$cases);
  let assemblyFormat = [{
    `from` $peers `channels` $channels `count` $count ` ` `(` $inits `)`
    attr-dict `:` functional-type($inits, $results) $cases
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

#endif // DISTOPT_DIALECT_DIST_IR_DISTOPS
