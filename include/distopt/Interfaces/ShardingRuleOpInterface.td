//===- ShardingRuleOpInterface.td - factor rules for sharding -*- tablegen -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE
#define DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE

include "mlir/IR/OpBase.td"

def ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::dist";
  let description = [{
    An op that states how its operands' and results' dimensions relate as an
    einsum-like rule over *factors* (model: Shardy's `OpShardingRule`).

    Every dimension of every operand and result maps to a list of factors
    (major to minor; several for a compound dimension such as a reshape's
    merged dims, none for a broadcast size-1 dimension). Each factor has a
    size and a kind:

    - `pass`: sharding the factor shards all tensors that map it, no
      communication;
    - `reduction`: results that do not map the factor become partial sums over
      the mesh axes it is sharded on (matmul's contracting dim, the batch dim
      of a loss or of a weight gradient);
    - `need_replication`: the factor cannot be sharded (softmax's dim, a
      convolution's spatial dims);
    - `permutation`: the factor can be sharded but the op moves data along it
      (a reverse or a cyclic shift), so sharding it needs communication.

    A rule may also list *mean factors*: the op divides by their size (a
    mean, a mean's gradient), so a shard's result is scaled by `1 / k` when
    such a factor is split over `k` devices; and *positional factors*: the
    op's result depends on the global index along them (dropout's mask, an
    embedding's row ids), so partitioning gives the op the offset where its
    shard starts along each of them through `setShardOffsets`. A rule whose
    reductions combine by max or min (`combiner=max|min`: a max reduction)
    yields no pending partial sum: the partitioner combines the devices'
    results right after the op with one all-reduce of that kind.

    Rules print as `([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k}`
    (plus `mean={...}`, `positional={...}`, `linear`, `combiner=...`).
    Sharding propagation and SPMD partitioning read only this rule, so they
    never depend on op names. The `train-test-sharding-rule` pass writes the
    rule of every op as a `train.sharding_rule` attribute for lit tests.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/[{Returns the factor rule of this op for its current types.}],
      /*retTy=*/"::mlir::dist::ShardingRule",
      /*methodName=*/"getShardingRule",
      /*args=*/(ins)>,
    InterfaceMethod<
      /*desc=*/[{
        Tells the op, now running on one shard, where its shard starts
        along each positional factor of its rule (`offsets`, index values,
        in the rule's order) and the factors' global sizes. Only called for
        ops whose rule has positional factors.
      }],
      /*retTy=*/"void",
      /*methodName=*/"setShardOffsets",
      /*args=*/(ins "::mlir::ValueRange":$offsets,
                    "::llvm::ArrayRef<int64_t>":$globalSizes),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        llvm_unreachable("an op with positional factors must implement "
                         "setShardOffsets");
      }]>,
    InterfaceMethod<
      /*desc=*/[{
        Called by partitioning once the op's operands and results have
        their local types: an op whose attributes spell the global size of
        a dim its rule passes (a slice's untouched dims, whose limit is the
        dim's size) rewrites them for the local sizes. The default changes
        nothing.
      }],
      /*retTy=*/"void",
      /*methodName=*/"adaptToLocalShapes",
      /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return; }]>,
    InterfaceMethod<
      /*desc=*/[{
        True when the op, whose rule needs dim `dim` of operand `operand`
        whole, can be rewritten (`decompose`) into ops whose rules let that
        dim be split: a cross-entropy over split classes becomes reductions
        over them. The default is false.
      }],
      /*retTy=*/"bool",
      /*methodName=*/"isDecomposableOver",
      /*args=*/(ins "unsigned":$operand, "int64_t":$dim),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return false; }]>,
    InterfaceMethod<
      /*desc=*/[{
        Rewrites the op (and the ops that share its decomposition, such as
        its gradient) into the ops it is made of; `isDecomposableOver` says
        when that lets a dim be split. The default changes nothing.
      }],
      /*retTy=*/"void",
      /*methodName=*/"decompose",
      /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return; }]>,
  ];
}

#endif // DISTOPT_INTERFACES_SHARDINGRULEOPINTERFACE
