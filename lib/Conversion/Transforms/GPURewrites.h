//===- GPURewrites.h - dist-map-to-gpu's buffers and rewrites ---*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What dist-map-to-gpu knows of buffers (which may alias, what an op reads
// and writes) and the rewrites it makes before and while scheduling
// (GPURewrites.cpp): scalar producers recomputed by their readers,
// pointwise chains fused, a level's products grouped. The scheduler is
// MapToGPU.cpp; the launches GPULaunch.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_CONVERSION_TRANSFORMS_GPUREWRITES_H
#define DISTOPT_LIB_CONVERSION_TRANSFORMS_GPUREWRITES_H

#include "../MatmulToBlas/LibraryCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::train {

/// Which root buffers may be the same memory, as classes: buffers of two
/// classes are distinct, except the unknown class (null), which may be any
/// buffer. An allocation is its own class; a global is its name's; an
/// argument of a public function is its own (the step's contract: the
/// runner and dist-compile's callers pass distinct buffers), as is one of
/// a private function (a part dist-split-functions cut) when every call of
/// it, in the module the pass runs on, passes buffers of distinct known
/// classes. Anything else (a loop's carried buffer, a call's result) is
/// unknown.
class BufferAliasing {
public:
  explicit BufferAliasing(Operation *root) {
    if (auto module = dyn_cast<ModuleOp>(root)) {
      this->module = module;
      module.walk([&](func::CallOp call) {
        calls[call.getCalleeAttr().getAttr()].push_back(call);
      });
    }
  }

  /// The class of the buffer `value` is (a view of).
  const void *getClass(Value value) {
    Value root = train::getRootBuffer(value);
    if (root.getDefiningOp<memref::AllocOp>() ||
        root.getDefiningOp<memref::AllocaOp>())
      return root.getAsOpaquePointer();
    if (auto global = root.getDefiningOp<memref::GetGlobalOp>())
      return global.getNameAttr().getAttr().getAsOpaquePointer();
    if (auto arg = dyn_cast<BlockArgument>(root))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
          func && arg.getOwner()->isEntryBlock() && hasDistinctArguments(func))
        return root.getAsOpaquePointer();
    return nullptr;
  }

private:
  bool hasDistinctArguments(func::FuncOp func) {
    if (func.isPublic())
      return true;
    if (!module)
      return false;
    auto [it, inserted] = distinct.try_emplace(func, false);
    if (!inserted)
      return it->second; // (false while being decided: recursion)
    bool result = true;
    for (func::CallOp call : calls.lookup(func.getSymNameAttr())) {
      DenseSet<const void *> seen;
      for (Value operand : call.getOperands()) {
        if (!isa<MemRefType>(operand.getType()))
          continue;
        const void *known = getClass(operand);
        result &= known && seen.insert(known).second;
      }
    }
    return distinct[func] = result;
  }

  ModuleOp module;
  DenseMap<Attribute, SmallVector<func::CallOp>> calls;
  DenseMap<Operation *, bool> distinct;
};

/// What an op of a block reads and writes, as buffer classes (an output
/// as both; a buffer a generic's body captures, a gather's table, as
/// both), and the kernel-argument bytes of a generic's values.
struct Footprint {
  SetVector<const void *> reads, writes;
  SetVector<Value> values;

  void addBuffer(Value buffer, BufferAliasing &aliasing, bool written) {
    const void *key = aliasing.getClass(buffer);
    reads.insert(key);
    if (written)
      writes.insert(key);
  }

  void add(linalg::GenericOp op, BufferAliasing &aliasing) {
    for (OpOperand *input : op.getDpsInputOperands())
      if (isa<MemRefType>(input->get().getType()))
        addBuffer(input->get(), aliasing, /*written=*/false);
    for (OpOperand &init : op.getDpsInitsMutable())
      addBuffer(init.get(), aliasing, /*written=*/true);
    values.insert(op->operand_begin(), op->operand_end());
    op.getRegion().walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (op.getRegion().isAncestor(operand.getParentRegion()))
          continue;
        values.insert(operand);
        if (isa<MemRefType>(operand.getType()))
          addBuffer(operand, aliasing, /*written=*/true);
      }
    });
  }

  /// A product's library call (distopt_matmul_*(A, B, C, ...)): C = A x B
  /// reads A and B and writes C only, so the products of one input (a
  /// layer's q, k and v, a backward's two gradients) are independent. A
  /// callee that says which operands it writes (`distopt.written_operands`:
  /// a product with its epilogue writes D and P, not its bias) writes
  /// those only.
  void add(func::CallOp call, BufferAliasing &aliasing) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    auto written =
        callee
            ? callee->getAttrOfType<DenseI64ArrayAttr>(kWrittenOperandsAttrName)
            : nullptr;
    for (auto [index, operand] : llvm::enumerate(call.getOperands())) {
      if (!isa<BaseMemRefType>(operand.getType()))
        continue;
      bool writes = written ? llvm::is_contained(written.asArrayRef(), index)
                            : index >= 2;
      addBuffer(operand, aliasing, writes);
    }
  }

  /// Kernel argument bytes: a memref descriptor of rank r is 3 + 2r words.
  static int64_t getArgumentBytes(Value value) {
    auto memref = dyn_cast<MemRefType>(value.getType());
    return 8 * (memref ? 3 + 2 * memref.getRank() : 1);
  }
};

/// True for a product's library call (distopt_matmul_*: cuBLAS on the
/// device, reading and writing only its buffer operands), which the
/// scheduler may move; not a grouped call (distopt_matmul_group_f32), whose
/// buffers only its table names.
bool isLibraryCall(Operation &op);

/// Recomputes the inlinable scalar ops of `block` (no loops, 0-d buffers,
/// a few pure ops: a step count plus one, a bias correction) in the later
/// generics that read their outputs, up to the first op that writes their
/// inputs or outputs (or may); erases a producer whose outputs nothing else
/// reads. The producer's buffers must be of known, distinct classes.
void inlineScalars(Block &block, BufferAliasing &aliasing);

/// Fuses each pointwise generic of `block` with the next generic when that
/// one, pointwise on the same space, reads one of its outputs at the point
/// that wrote it: one op computing and storing both.
void fusePointwise(Block &block, BufferAliasing &aliasing);

/// The product calls among `calls`, by element type (distopt_matmul_f32,
/// _bf16, _f16), whose buffer operands are casts of ranked views (as
/// dist-matmul-to-blas builds them).
SmallVector<SmallVector<func::CallOp>>
getGroupableProducts(ArrayRef<Operation *> calls);

/// Replaces `products` (independent distopt_matmul_<type> calls of one
/// type) by one distopt_matmul_group_<type> call at `builder`, of a table
/// the host writes (distopt/Runtime/ProductGroup.h) and frees after it;
/// erases them.
void groupProducts(OpBuilder &builder, MutableArrayRef<func::CallOp> products);

} // namespace mlir::train

#endif // DISTOPT_LIB_CONVERSION_TRANSFORMS_GPUREWRITES_H
