//===- BufferDeallocation.cpp - frees after the last use, in linear time --===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Straight-line functions (a training step, an evaluation function) get a
// `memref.dealloc` right after the last use of each buffer they allocate;
// other functions go through upstream's ownership-based deallocation.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"

#include "mlir/Dialect/Bufferization/IR/BufferDeallocationOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTBUFFERDEALLOCATIONPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// The buffer `value` is a view of, or null when `op` does not alias its
/// result with an operand.
static Value getAliasSource(Operation *op) {
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return view.getViewSource();
  if (auto cast = dyn_cast<memref::CastOp>(op))
    return cast.getSource();
  return {};
}

/// True when `op` creates a buffer its caller must free.
static bool allocates(Operation *op, Value result) {
  if (isa<memref::AllocaOp>(op))
    return false;
  if (isa<func::CallOp>(op))
    return true; // The ABI: a returned buffer belongs to the caller.
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects &&
         effects.getEffectOnValue<MemoryEffects::Allocate>(result).has_value();
}

/// True when `call` may keep using its buffer arguments after it returns.
static bool mayRetain(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  return !callee || !callee->hasAttr("distopt.sync_buffers");
}

namespace {
/// The root buffer of every buffer value of one function: an allocation
/// (owned, to free), or something else (an argument, a global, a stack
/// buffer) that this function must not free.
struct Roots {
  DenseMap<Value, Value> root;
  SetVector<Value> owned;
};

/// Plans the frees of a straight-line function; fails (changing nothing)
/// when the function is not one.
class StraightLinePlan {
public:
  /// `returnsArguments`: the function may return its arguments' own
  /// buffers (a training step's state, updated in place), each once; its
  /// caller (dist-run) neither frees nor copies such a result.
  StraightLinePlan(func::FuncOp func, bool returnsArguments)
      : func(func), returnsArguments(returnsArguments) {}

  LogicalResult analyze();
  void apply();

private:
  func::FuncOp func;
  bool returnsArguments;
  Roots roots;
  /// Position of each op of the body.
  DenseMap<Operation *, unsigned> position;
  /// (owned root, the op after which it is freed; null: before the
  /// terminator).
  SmallVector<std::pair<Value, Operation *>> frees;
  /// Return operands to clone (not owned, or a root returned twice; an
  /// argument itself, once, when `returnsArguments`).
  SmallVector<unsigned> clones;
};
} // namespace

LogicalResult StraightLinePlan::analyze() {
  Region &body = func.getBody();
  if (!body.hasOneBlock())
    return failure();
  Block &block = body.front();
  for (BlockArgument argument : block.getArguments())
    if (isa<BaseMemRefType>(argument.getType()))
      roots.root[argument] = argument;
  // Nested ops may read and write buffers but never define one.
  WalkResult nested = block.walk([&](Operation *op) {
    if (op->getBlock() == &block)
      return WalkResult::advance();
    for (Value result : op->getResults())
      if (isa<BaseMemRefType>(result.getType()))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &inner : region)
        for (BlockArgument argument : inner.getArguments())
          if (isa<BaseMemRefType>(argument.getType()))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return failure();

  unsigned index = 0;
  for (Operation &op : block) {
    position[&op] = index++;
    if (isa<memref::DeallocOp, memref::ReallocOp, bufferization::DeallocOp,
            bufferization::ToTensorOp>(op))
      return failure();
    // A buffer stored as a value.
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && isa<BaseMemRefType>(store.getValueToStore().getType()))
      return failure();
    for (Value result : op.getResults()) {
      if (!isa<BaseMemRefType>(result.getType()))
        continue;
      if (op.getNumRegions() != 0)
        return failure();
      if (Value source = getAliasSource(&op)) {
        // A copy: inserting may grow the map under a reference into it.
        Value root = roots.root.lookup(source);
        if (!root)
          return failure();
        roots.root[result] = root;
        continue;
      }
      roots.root[result] = result;
      if (allocates(&op, result))
        roots.owned.insert(result);
      else if (!isa<memref::AllocaOp, memref::GetGlobalOp,
                    bufferization::ToBufferOp>(op))
        return failure(); // A buffer of unknown origin.
    }
  }

  // Each owned root: returned, freed before the terminator (its address
  // escapes), or freed after its last use.
  Operation *terminator = block.getTerminator();
  if (!isa<func::ReturnOp>(terminator))
    return failure();
  DenseSet<Value> returned;
  for (OpOperand &operand : terminator->getOpOperands()) {
    if (!isa<BaseMemRefType>(operand.get().getType()))
      continue;
    Value root = roots.root.lookup(operand.get());
    if (!root)
      return failure();
    bool mayReturn =
        roots.owned.contains(root) ||
        (returnsArguments && operand.get() == root && isa<BlockArgument>(root));
    if (!mayReturn || !returned.insert(root).second)
      clones.push_back(operand.getOperandNumber());
  }
  for (Value root : roots.owned) {
    if (returned.contains(root))
      continue;
    Operation *last = root.getDefiningOp();
    bool escapes = false;
    SmallVector<Value> worklist = {root};
    while (!worklist.empty() && !escapes) {
      Value value = worklist.pop_back_val();
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        Operation *top = block.findAncestorOpInBlock(*user);
        if (isa<memref::ExtractAlignedPointerAsIndexOp,
                UnrealizedConversionCastOp>(user)) {
          escapes = true;
          break;
        }
        if (auto call = dyn_cast<func::CallOp>(user); call && mayRetain(call)) {
          escapes = true;
          break;
        }
        if (top == user && getAliasSource(user) == value)
          worklist.push_back(user->getResult(0));
        if (position.lookup(top) > position.lookup(last))
          last = top;
      }
    }
    frees.push_back({root, escapes ? nullptr : last});
  }
  return success();
}

void StraightLinePlan::apply() {
  Operation *terminator = func.getBody().front().getTerminator();
  OpBuilder builder(terminator);
  for (unsigned index : clones) {
    Value value = terminator->getOperand(index);
    terminator->setOperand(
        index, bufferization::CloneOp::create(builder, value.getLoc(), value));
  }
  for (auto [root, last] : frees) {
    if (last)
      builder.setInsertionPointAfter(last);
    else
      builder.setInsertionPoint(terminator);
    memref::DeallocOp::create(builder, root.getLoc(), root);
  }
}

namespace {
struct DistBufferDeallocationPass
    : public mlir::train::impl::DistBufferDeallocationPassBase<
          DistBufferDeallocationPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> others;
    // The step's functions that nothing in the module calls (a caller here,
    // such as a test's main, would free each result as its own).
    // (Only calls count: a reference in an attribute, as the derived
    // evaluation function's `train.eval_of = @train_step`, calls nothing;
    // counted, it made the step return a copy of its whole state, each
    // step.)
    SmallVector<StringRef> entries = train::getStepEntries(getOperation());
    llvm::StringSet<> called;
    getOperation().walk([&](CallOpInterface call) {
      if (auto callee =
              dyn_cast_if_present<SymbolRefAttr>(call.getCallableForCallee()))
        called.insert(callee.getLeafReference());
    });
    auto returnsArguments = [&](func::FuncOp func) {
      return llvm::is_contained(entries, func.getSymName()) &&
             !called.contains(func.getSymName());
    };
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      StraightLinePlan plan(func, returnsArguments(func));
      if (succeeded(plan.analyze()))
        plan.apply();
      else
        others.push_back(func);
    }
    if (others.empty())
      return;
    // Upstream's deallocation, as `buffer-deallocation-pipeline` runs it
    // (the lowering of its dealloc ops follows this pass).
    OpPassManager upstream(func::FuncOp::getOperationName());
    upstream.addPass(memref::createExpandReallocPass());
    upstream.addPass(createCanonicalizerPass());
    upstream.addPass(
        bufferization::createOwnershipBasedBufferDeallocationPass());
    upstream.addPass(createCanonicalizerPass());
    upstream.addPass(
        bufferization::createBufferDeallocationSimplificationPass());
    for (func::FuncOp func : others)
      if (failed(runPipeline(upstream, func)))
        return signalPassFailure();
  }
};
} // namespace
