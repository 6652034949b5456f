//===- DistBase.td - dist dialect, attributes ---------------*- tablegen -*-===//

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
