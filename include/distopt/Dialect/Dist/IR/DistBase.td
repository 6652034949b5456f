//===- DistBase.td - dist dialect, attributes ---------------*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_DIALECT_DIST_IR_DISTBASE
#define DISTOPT_DIALECT_DIST_IR_DISTBASE

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "Device meshes, shardings and collectives";
  let description = [{
    The `dist` dialect describes distributed programs: `dist.mesh` declares a
    logical N-D mesh of devices with named axes (and, optionally, which axes
    cross hosts and their link bandwidths for the cost model);
    `#dist.sharding` says how a tensor is laid out on a mesh (the axes each
    dim is split over, and the axes over which it is a pending partial sum);
    `dist.annotate` pins a sharding on a value; the collectives
    (`all_reduce`, `reduce_scatter`, `all_gather`, `all_to_all`,
    `broadcast`) and `local_slice` move data between the shards of an SPMD
    program, on local shapes.

    MPMD programs (pipelines, parameter servers) run different computation
    on different parts of a mesh: `#dist.place` names such a part,
    `dist.fragment` is computation placed there (with the schedule unit it
    computes, `#dist.unit`), and `dist.send` / `dist.recv` move tensors
    between places, matched by channel. One function per place (marked
    `dist.place`) is the program of those devices; the order of its
    fragments is its schedule. These ops live in `dist` rather than a
    sibling dialect because they share its meshes and compose with its
    collectives: a fragment of a pipeline stage is itself SPMD over the
    axes its place leaves free (`pp x dp`, `pp x tp`).

    Shardings are attached to function arguments and results as
    `dist.sharding` attributes and to values with `dist.annotate`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The argument / result attribute holding a `#dist.sharding`.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "dist.sharding";
    /// The shardings of an op's results (an array of `#dist.sharding`), as
    /// propagation records them.
    static constexpr ::llvm::StringLiteral kResultShardingsAttrName =
        "dist.shardings";
    /// Marks a function rewritten to local (per-device) shapes.
    static constexpr ::llvm::StringLiteral kPartitionedAttrName =
        "dist.partitioned";
    /// On a function: the place its program runs on (an MPMD program, one
    /// per part of the mesh); on a function argument: where the value
    /// lives. A `#dist.place`.
    static constexpr ::llvm::StringLiteral kPlaceAttrName = "dist.place";
    /// On an MPMD program: how the pipeline or parameter-server strategy
    /// made it (strategy, stages, microbatches, schedule), for reports.
    static constexpr ::llvm::StringLiteral kScheduleAttrName = "dist.schedule";
    /// On an argument or result of an MPMD program: the block of the global
    /// array it holds (a `#dist.block`).
    static constexpr ::llvm::StringLiteral kBlockAttrName = "dist.block";
    /// On an argument and a result of an MPMD program: a copy of a variable
    /// that another program holds (an asynchronous parameter-server
    /// worker's copy of the variables it reads). Runners initialise it from
    /// the state and feed it back from step to step, but the saved state
    /// is the holder's. A unit attribute.
    static constexpr ::llvm::StringLiteral kCacheAttrName = "dist.cache";
    /// On the module nested at the end of a module of placed programs: the
    /// single-device module they were placed from, kept so that a pass
    /// that rewrites the step (train-mixed-precision) can rewrite it and
    /// place it again. A dictionary: `pipeline`, the placing pass as a
    /// textual pipeline, and `fingerprint`, the hash of the enclosing
    /// module's text without this module when the pass wrote it.
    static constexpr ::llvm::StringLiteral kPlacementAttrName =
        "dist.placement";
  }];
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines values", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"max", 1>,
  I32EnumAttrCase<"min", 2>
]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReductionKindAttr : EnumAttr<Dist_Dialect, Dist_ReductionKind,
                                      "reduction"> {
  let summary = "reduction of a collective: sum, max or min";
  let assemblyFormat = "`<` $value `>`";
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor is split over the axes of a mesh";
  let description = [{
    `#dist.sharding<@mesh, [[data], [], [model]], partial = [pipe]>` gives,
    for each dim of a tensor, the mesh axes it is split over (major to minor;
    empty: not split), and the axes over which the value is a pending partial
    sum (each device holds one addend, as DTensor's `Partial`). All lists
    empty is replicated: `#dist.sharding<@mesh, [[], []]>`. Every axis
    appears at most once. The dims' sizes must divide by the product of their
    axes' sizes (checked where the sharding meets a tensor and a mesh).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::mlir::ArrayAttr", "axes of each dim">:$dims,
    "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// True when no dim is split and nothing is partial.
    bool isReplicated() const;
    /// True when the value is a pending partial sum.
    bool isPartial() const { return !getPartial().empty(); }
    /// Every axis the sharding uses, dims first then partial.
    ::llvm::SmallVector<::mlir::StringAttr> getUsedAxes() const;
  }];
}

//===----------------------------------------------------------------------===//
// MPMD: placement and schedule units
//===----------------------------------------------------------------------===//

def Dist_PlaceAttr : AttrDef<Dist_Dialect, "Place"> {
  let mnemonic = "place";
  let summary = "the part of a mesh that runs a computation or holds a value";
  let description = [{
    `#dist.place<@mesh, pipe = 1>` names the devices of `@mesh` whose
    coordinate along each listed axis is the given one: a sub-mesh over the
    remaining axes (here every device of stage 1 of the `pipe` axis; with
    a `[pipe, data]` mesh, the data-parallel group of that stage). With no
    coordinates, the whole mesh. Computation placed there runs SPMD over
    the sub-mesh; values placed there live on it. Axes are listed once and
    coordinates are non-negative (checked against the mesh where the
    attribute is used: the axes exist and the coordinates are in range).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::mlir::StringAttr", "fixed axes">:$axes,
    ArrayRefParameter<"int64_t", "their coordinates">:$coords);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The coordinate along `axis`, or nullopt when the axis is not fixed.
    std::optional<int64_t> getCoord(::llvm::StringRef axis) const;
    /// True when every device of `other` is one of this place's devices
    /// and the reverse (same mesh, same fixed coordinates).
    bool isSamePlace(PlaceAttr other) const { return *this == other; }
  }];
}

def Dist_UnitKind : I32EnumAttr<"UnitKind",
    "what a unit of a pipelined or parameter-server step computes", [
  I32EnumAttrCase<"forward", 0, "F">,
  I32EnumAttrCase<"backward", 1, "B">,
  I32EnumAttrCase<"weight", 2, "W">,
  I32EnumAttrCase<"update", 3, "U">
]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}

def Dist_ScheduleUnitAttr : AttrDef<Dist_Dialect, "ScheduleUnit"> {
  let mnemonic = "unit";
  let summary = "one unit of a schedule: (kind, stage, microbatch)";
  let description = [{
    `#dist.unit<F, stage = 1, microbatch = 3>` is the forward of pipeline
    stage 1 on microbatch 3. Kinds: `F` forward, `B` backward (the input
    gradient, and the weight gradients unless a `W` unit computes them), `W`
    weight gradients (zero-bubble schedules), `U` the once-per-step update
    (gradient accumulation done, optimizer applied; microbatch 0, which
    `dist.fragment` checks), or in a case of `dist.serve` the update of one
    request (microbatch: the worker whose request it applies). Stage and
    microbatch are non-negative.
  }];
  let parameters = (ins
    EnumParameter<Dist_UnitKind>:$kind,
    "int64_t":$stage,
    "int64_t":$microbatch);
  let assemblyFormat = [{
    `<` $kind `,` `stage` `=` $stage `,` `microbatch` `=` $microbatch `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_BlockAttr : AttrDef<Dist_Dialect, "Block"> {
  let mnemonic = "block";
  let summary = "the block of a global array an MPMD program holds";
  let description = [{
    `#dist.block<offsets = [4, 0], shape = [10, 8]>` on an argument or result
    of a placed program (a function with `dist.place`) says that the value
    is the block of a global array of shape `[10, 8]` starting at `[4, 0]`;
    its type gives the block's size. Blocks are what a `#dist.sharding`
    cannot express: uneven splits (a parameter server's row shards of an
    embedding table) and the slice of the batch one of several programs
    takes (a parameter-server worker's). Runners bind and gather the block
    (`dist-run`). Offsets are non-negative, as many as the global shape's
    dims, and the block lies inside the global array (checked against the
    value's type where the attribute is used).
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "the block's first index">:$offsets,
    ArrayRefParameter<"int64_t", "the global array's shape">:$shape);
  let assemblyFormat = [{
    `<` `offsets` `=` `[` $offsets `]` `,` `shape` `=` `[` $shape `]` `>`
  }];
  let genVerifyDecl = 1;
}

def Dist_FutureType : TypeDef<Dist_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "the pending result of an asynchronous collective";
  let description = [{
    `!dist.future<tensor<128x784xf32>>` is returned by the `*_start` form of
    a collective; `dist.wait` turns it into the tensor once the collective
    has completed. Between the two, the program computes while the
    communication proceeds.
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::RankedTensorType":$valueType), [{
      return $_get(valueType.getContext(), valueType);
    }]>
  ];
}

#endif // DISTOPT_DIALECT_DIST_IR_DISTBASE
