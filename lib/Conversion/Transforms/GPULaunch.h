//===- GPULaunch.h - launches of mapped loop nests --------------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What dist-map-to-gpu builds its launches from (GPULaunch.cpp): an op's
// points, one per thread, row groups, a block per row, and column
// reductions, a block per tile of columns; all as members of one launch.
// The scheduler that decides what shares a launch is MapToGPU.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CONVERSION_TRANSFORMS_GPULAUNCH_H
#define DISTOPT_LIB_CONVERSION_TRANSFORMS_GPULAUNCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <functional>
#include <optional>

namespace mlir::train {

/// A generic on buffers with a static iteration space, and its number of
/// parallel points (threads).
struct Mappable {
  linalg::GenericOp op;
  int64_t points;
  /// The consecutive points each thread runs: more than 1 when it loads
  /// and stores their elements as one vector each (getVectorWidth).
  int64_t width = 1;
};

/// The bytes of a GPU's widest load or store per thread (4 x f32, 8 x
/// bf16).
inline constexpr int64_t kVectorBytes = 16;

/// The consecutive points of `op` (mappable) one thread runs with vector
/// accesses: when `op` is elementwise and every buffer it touches at its
/// last loop's index holds it as its last, contiguous dimension (a static
/// layout, elements of 1 to 8 bytes), every output among them, the most
/// elements of the widest of those buffers that fit kVectorBytes, halved
/// until the width divides the last loop's range and those buffers' other
/// strides (a float32 op 4, a bf16 one 8, a bf16 one writing float32 4);
/// 1 otherwise. Such an op's thread loads each of those buffers' points
/// as one vector and stores each output's as one, when every such
/// buffer's address is a multiple of its vector's size (checked in the
/// kernel; element by element when not).
int64_t getVectorWidth(linalg::GenericOp op);

/// One member of a launch: `blocks` blocks of the grid, of whose threads it
/// uses the first `threads`; its code in segments, which the launch
/// separates by barriers (a reduction's stages; one op's point is one).
struct LaunchMember {
  /// Code the launch runs for the member at a block `row` of its own (its
  /// first block 0) and thread `tx`.
  using Piece = std::function<void(OpBuilder &, Value row, Value tx)>;

  int64_t blocks = 0;
  int64_t threads = 0;
  SmallVector<SmallVector<Piece>> segments;
};

/// How a generic works on rows of `rows` (its first loops, all parallel):
/// elementwise (every other loop parallel) or a reduction (every other loop
/// a reduction, each output combined by one arith op).
enum class StageKind { elementwise, reduction };

/// `op` as a Mappable; an error when it cannot be mapped.
FailureOr<Mappable> getMappable(linalg::GenericOp op);

/// Emits, at `builder`, one launch of `members` (each a range of the
/// grid's blocks, in order) with `threads` threads per block: the members'
/// first segments, then a `gpu.barrier` at the top of the thread loop and
/// the second segments of the members that have one, and so on. A block
/// branches, uniformly, on the member its index falls in (as apex's
/// multi_tensor_apply); a member using fewer threads than the block has
/// skips the others, which still reach every barrier.
scf::ParallelOp emitLaunch(OpBuilder &builder, Location loc,
                           ArrayRef<LaunchMember> members, int64_t threads,
                           Value zero, Value one);

/// `mapped` as a launch member of `threads` threads per block, `width`
/// consecutive points per thread, its bounds built at `builder` (before
/// the grid).
LaunchMember getPointMember(OpBuilder &builder, const Mappable &mapped,
                            int64_t threads, Value zero, Value one);

/// The threads per block of a launch of point members: `blockSize`, or as
/// many as the largest member has points.
int64_t getPointThreads(ArrayRef<Mappable> group, int64_t blockSize);

/// Rewrites `group` (independent generics, in order, the last one where
/// the nest goes) into one mapped nest: `blockSize` threads per block (or
/// fewer, as many as the largest member has points), each member a range
/// of the grid's blocks, one point per thread.
scf::ParallelOp mapGroup(ArrayRef<Mappable> group, int64_t blockSize);

/// `op`'s kind on rows of `rows`, or none when it does not work on them.
std::optional<StageKind> getStageKind(linalg::GenericOp op,
                                      ArrayRef<int64_t> rows);

/// The rows a reduction works on: its leading parallel loops, when every
/// later loop is a reduction.
std::optional<SmallVector<int64_t>> getReductionRows(linalg::GenericOp op);

/// True when every buffer some stage of `stages` writes is touched, by every
/// stage, only at its own row: through the same view, every row loop at the
/// same position of its indices. Then a block that runs every stage for one
/// row depends on no other block.
bool isRowLocal(ArrayRef<linalg::GenericOp> stages, unsigned m);

/// The threads of a row group's launch member: a power of two, at most
/// `blockSize`, no more than its widest stage has points per row.
int64_t getRowThreads(ArrayRef<linalg::GenericOp> stages,
                      ArrayRef<int64_t> rows, int64_t blockSize);

/// The threads of a warp: a block reduction of at least as many threads
/// combines each warp's parts with shuffles (gpu.subgroup_reduce).
inline constexpr int64_t kWarpSize = 32;

/// `stages` (generics on rows of `rows`, in order, row local, at least one
/// a reduction) as a launch member: a block per row, `threads` threads (a
/// power of two, getRowThreads) splitting each stage's points after the
/// row; a reduction stage's threads each combine a strided part, then,
/// with whole warps and combiners shuffles take, each warp its parts by
/// gpu.subgroup_reduce and, after a barrier, every warp the warps' results
/// from a scratch slot each (one barrier per reduction, none for a single
/// warp); otherwise the threads halve their parts in a scratch buffer to
/// one (a segment per halving). Thread 0 combines the total into the
/// output. Builds
/// its bounds and scratch buffers at `builder` (before the grid) and
/// returns those buffers in `scratches` (the caller frees them after it).
LaunchMember getRowGroupMember(OpBuilder &builder,
                               ArrayRef<linalg::GenericOp> stages,
                               ArrayRef<int64_t> rows, int64_t threads,
                               Value zero, SmallVectorImpl<Value> &scratches);

/// Whether `op` reduces columns: a reduction loop before one of its
/// parallel loops (a bias's gradient, `sum over rows b of dy[b, j]`), each
/// output combined by one arith op and indexed by parallel loops only, at
/// least `kMinColumnReduction` points combined into each output element.
/// One point per thread would sum a column alone, the grid a few blocks.
bool isColumnReduction(linalg::GenericOp op);

/// The fewest points combined into each element for isColumnReduction.
inline constexpr int64_t kMinColumnReduction = 32;

/// The threads of a column reduction's launch member (getColumnMember).
int64_t getColumnThreads(const Mappable &mapped, int64_t blockSize);

/// A column reduction (isColumnReduction) as a launch member, in two
/// stages in each block: a block per tile of up to 32 neighbouring output
/// elements (a warp's coalesced loads), a power of two of lanes per
/// element (at most `blockSize` threads in all); each thread combines a
/// strided part of its element's reduction from the neutral element, the
/// lanes' partial results are halved in a scratch buffer, and the first
/// lane combines its element's total into the output. Builds its bounds
/// and scratch buffer at `builder` (before the grid) and returns that
/// buffer in `scratches` (the caller frees it after the launch).
LaunchMember getColumnMember(OpBuilder &builder, const Mappable &mapped,
                             int64_t blockSize, Value zero,
                             SmallVectorImpl<Value> &scratches);

} // namespace mlir::train

#endif // DISTOPT_LIB_CONVERSION_TRANSFORMS_GPULAUNCH_H
