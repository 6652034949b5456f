//===- PlanWorkspace.cpp - a function's local buffers in one workspace ----===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A GPU step allocates and frees a hundred intermediate buffers per call:
// stream-ordered allocations the device's allocator serves, but which a
// captured CUDA graph cannot hold, and whose addresses change from call to
// call. This pass hoists them out of the call: each static buffer that is
// allocated and freed in one block becomes a view of a workspace the
// runtime keeps for the function across calls (`distopt_workspace`), at an
// offset planned from the buffers' lifetimes in program order, so that
// buffers that are never live at once share memory (greedy by size, as
// TensorFlow Lite's arena planner).
//
//===----------------------------------------------------------------------===//

#include "../MatmulToBlas/LibraryCalls.h"
#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/xxhash.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTPLANWORKSPACEPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// The runtime function that answers a function's workspace: libdistopt_cpu
/// and libdistopt_cuda (host or device memory) implement it.
static constexpr StringLiteral kWorkspaceFunction = "distopt_workspace";

namespace {
/// A buffer the plan places: its allocation, its free, its lifetime (the
/// positions of both in the function's pre-order) and its place.
struct PlannedBuffer {
  memref::AllocOp alloc;
  /// Its free, or the return that hands it to the caller (a result the
  /// caller only reads, valid until the next call).
  memref::DeallocOp dealloc;
  func::ReturnOp returned;
  int64_t begin = 0, end = 0, bytes = 0, offset = 0;

  bool overlapsInTime(const PlannedBuffer &other) const {
    return begin <= other.end && other.begin <= end;
  }
};

/// A function's placed buffers and the workspace size they need.
struct FunctionPlan {
  func::FuncOp func;
  SmallVector<PlannedBuffer> buffers;
  int64_t size = 0;
};
} // namespace

/// True when `func` may return (a view of) one of its arguments: a buffer
/// passed to it then lives on in its caller under another name.
static bool mayReturnArgument(func::FuncOp func) {
  if (func.isDeclaration())
    return llvm::any_of(func.getResultTypes(), llvm::IsaPred<BaseMemRefType>);
  bool returns = false;
  func.walk([&](func::ReturnOp ret) {
    for (Value result : ret.getOperands())
      returns |= isa<BlockArgument>(train::getRootBuffer(result));
  });
  return returns;
}

/// True when every op between `op` and `func` is a loop or a branch of the
/// host's control flow (not a parallel loop: a kernel's own buffers stay).
static bool isInHostControlFlow(Operation *op, func::FuncOp func) {
  for (Operation *parent = op->getParentOp(); parent != func;
       parent = parent->getParentOp())
    if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ExecuteRegionOp,
             scf::IndexSwitchOp>(parent))
      return false;
  return true;
}

/// The name of the function whose parts `func` is one of, when `func` may
/// share one workspace with the other parts: a private function (as
/// dist-split-functions' parts are) called only from that one function,
/// in its host control flow (never two of them running at once), that
/// calls no function with a body (no part active inside another). Each
/// part's buffers are dead once it returns -- what it hands on is its
/// caller's, passed in -- so the parts' workspaces may be one, as large as
/// the largest: the step's memory is then its own intermediates and one
/// part's, not the sum of every part's.
static std::optional<std::string> getPartsGroup(func::FuncOp func,
                                                ModuleOp module) {
  if (!func.isPrivate())
    return std::nullopt;
  std::optional<SymbolTable::UseRange> uses = func.getSymbolUses(module);
  if (!uses || uses->empty())
    return std::nullopt;
  func::FuncOp caller;
  for (const SymbolTable::SymbolUse &use : *uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    auto parent = call ? call->getParentOfType<func::FuncOp>() : nullptr;
    if (!parent || parent == func || (caller && parent != caller) ||
        !isInHostControlFlow(call, parent))
      return std::nullopt;
    caller = parent;
  }
  bool callsBodies = false;
  func.walk([&](func::CallOp call) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
    callsBodies |= !callee || !callee.isDeclaration();
  });
  if (callsBodies)
    return std::nullopt;
  return caller.getSymName().str();
}

/// The results of each function the runner calls that it only reads (a
/// step's loss and metrics, which no argument takes back), by function
/// name, as the module's `train.step` records them: such a result may live
/// in the workspace, valid until the next call. State results may not: the
/// runner keeps them as the next call's arguments. (A function whose
/// results no longer match its record keeps them all out.)
static llvm::StringMap<llvm::SmallBitVector>
getReadOnlyResults(ModuleOp module) {
  llvm::StringMap<llvm::SmallBitVector> readOnly;
  if (!module->hasAttr(train::TrainDialect::kStepAttrName))
    return readOnly;
  FailureOr<train::StepSignature> step = train::readStepSignature(module);
  if (failed(step))
    return readOnly;
  auto add = [&](StringRef entry,
                 ArrayRef<train::StepSignature::Value> results) {
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.getNumResults() != results.size())
      return;
    llvm::SmallBitVector bits(results.size());
    for (const train::StepSignature::Value &result : results)
      bits[result.index] = result.role == train::Role::loss ||
                           result.role == train::Role::metric;
    readOnly[entry] = bits;
  };
  add(step->entry, step->results);
  for (const train::StepSignature::Program &program : step->programs)
    add(program.entry, program.results);
  if (step->eval)
    add(step->eval->entry, step->eval->results);
  return readOnly;
}

/// The buffer `alloc` allocates, with its one free, when the plan may place
/// it: a static, identity-layout buffer of the default memory space, freed
/// once in the same block -- or returned there as results in
/// `readOnlyResults` only, and not freed -- that the host never reads or
/// writes itself (a collective's address list), never returns otherwise or
/// yields, nor hands to a call that may keep it, and whose size `layout`
/// knows.
static std::optional<PlannedBuffer>
getPlannable(memref::AllocOp alloc, func::FuncOp func, const DataLayout &layout,
             SymbolTableCollection &symbols,
             const llvm::SmallBitVector &readOnlyResults) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !alloc.getSymbolOperands().empty() ||
      !isInHostControlFlow(alloc, func))
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat())
    return std::nullopt;
  PlannedBuffer buffer;
  buffer.alloc = alloc;
  bool plannable = true;
  train::forEachBufferUse(alloc.getResult(), [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto dealloc = dyn_cast<memref::DeallocOp>(owner)) {
      plannable &= !buffer.dealloc &&
                   dealloc.getMemref() == alloc.getResult() &&
                   dealloc->getBlock() == alloc->getBlock();
      buffer.dealloc = dealloc;
      return;
    }
    if (isa<memref::LoadOp, memref::StoreOp>(owner)) {
      plannable &= !isInHostControlFlow(owner, func);
      return;
    }
    if (auto call = dyn_cast<func::CallOp>(owner)) {
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      plannable &= callee && callee->hasAttr("distopt.sync_buffers") &&
                   !mayReturnArgument(callee);
      return;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(owner)) {
      plannable &= readOnlyResults.test(use.getOperandNumber()) &&
                   ret->getBlock() == alloc->getBlock() &&
                   (!buffer.returned || buffer.returned == ret);
      buffer.returned = ret;
      return;
    }
    // (An address taken as an index, as a grouped product's table takes
    // its operands', is used before the free, as the memory is: reusing
    // the memory after the free is what the allocator would do.)
    plannable &= !owner->hasTrait<OpTrait::IsTerminator>();
  });
  // Freed, or returned: not both.
  if (!plannable || !buffer.dealloc == !buffer.returned)
    return std::nullopt;
  uint64_t elementBytes = layout.getTypeSize(element).getFixedValue();
  buffer.bytes = type.getNumElements() * static_cast<int64_t>(elementBytes);
  return buffer;
}

/// Places each buffer at the lowest offset (a multiple of `alignment`)
/// where it overlaps no buffer already placed that is live at the same
/// time, the largest first; answers the workspace's size.
static int64_t placeBuffers(MutableArrayRef<PlannedBuffer> buffers,
                            int64_t alignment) {
  SmallVector<PlannedBuffer *> order;
  for (PlannedBuffer &buffer : buffers)
    order.push_back(&buffer);
  llvm::stable_sort(order, [](PlannedBuffer *a, PlannedBuffer *b) {
    return a->bytes > b->bytes;
  });
  SmallVector<PlannedBuffer *> placed;
  int64_t size = 0;
  for (PlannedBuffer *buffer : order) {
    SmallVector<PlannedBuffer *> live;
    for (PlannedBuffer *other : placed)
      if (other->overlapsInTime(*buffer))
        live.push_back(other);
    llvm::sort(live, [](PlannedBuffer *a, PlannedBuffer *b) {
      return a->offset < b->offset;
    });
    int64_t offset = 0;
    for (PlannedBuffer *other : live) {
      if (offset + buffer->bytes <= other->offset)
        break;
      offset = std::max<int64_t>(
          offset, llvm::alignTo(other->offset + other->bytes, alignment));
    }
    buffer->offset = offset;
    size = std::max(size, offset + buffer->bytes);
    placed.push_back(buffer);
  }
  return static_cast<int64_t>(llvm::alignTo(size, alignment));
}

/// The declaration of distopt_workspace(key, bytes) -> memref<?xi8>.
static func::FuncOp getWorkspaceFunction(ModuleOp module) {
  if (auto func = module.lookupSymbol<func::FuncOp>(kWorkspaceFunction))
    return func;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  MLIRContext *context = module.getContext();
  Type i64 = builder.getI64Type();
  auto type = FunctionType::get(
      context, {i64, i64},
      {MemRefType::get({ShapedType::kDynamic}, builder.getI8Type())});
  auto func =
      func::FuncOp::create(builder, module.getLoc(), kWorkspaceFunction, type);
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
  return func;
}

namespace {
struct DistPlanWorkspacePass
    : public mlir::train::impl::DistPlanWorkspacePassBase<
          DistPlanWorkspacePass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      // (At the module's location, without printing it.)
      emitError(getOperation().getLoc())
          << "dist-plan-workspace: alignment=" << alignment.getValue()
          << " is not a positive power of two";
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    llvm::StringMap<llvm::SmallBitVector> readOnly = getReadOnlyResults(module);
    SmallVector<FunctionPlan> plans;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isDeclaration())
        if (std::optional<FunctionPlan> plan =
                planFunction(func, symbols, readOnly))
          plans.push_back(std::move(*plan));
    // The key and size of each function's workspace: its own, or its
    // caller's parts' shared one (the largest part's size).
    llvm::StringMap<int64_t> partsSize;
    SmallVector<std::optional<std::string>> groups;
    for (FunctionPlan &plan : plans) {
      groups.push_back(getPartsGroup(plan.func, module));
      if (groups.back())
        partsSize[*groups.back()] =
            std::max(partsSize.lookup(*groups.back()), plan.size);
    }
    for (auto [plan, group] : llvm::zip_equal(plans, groups)) {
      std::string keyName =
          group ? *group + "/parts" : plan.func.getSymName().str();
      rewriteFunction(plan, llvm::xxh3_64bits(keyName),
                      group ? partsSize.lookup(*group) : plan.size);
    }
  }

  /// The buffers of `func` the plan places, at their offsets, and the size
  /// they need; none when nothing is placed.
  std::optional<FunctionPlan>
  planFunction(func::FuncOp func, SymbolTableCollection &symbols,
               const llvm::StringMap<llvm::SmallBitVector> &readOnly) {
    DenseMap<Operation *, int64_t> position;
    int64_t next = 0;
    func.walk<WalkOrder::PreOrder>(
        [&](Operation *op) { position[op] = next++; });
    DataLayout layout = DataLayout::closest(func);
    FunctionPlan plan;
    plan.func = func;
    llvm::SmallBitVector readOnlyResults = readOnly.lookup(func.getSymName());
    readOnlyResults.resize(func.getNumResults());
    func.walk([&](memref::AllocOp alloc) {
      if (std::optional<PlannedBuffer> buffer =
              getPlannable(alloc, func, layout, symbols, readOnlyResults)) {
        buffer->begin = position.lookup(alloc);
        buffer->end = buffer->dealloc ? position.lookup(buffer->dealloc)
                                      : position.lookup(buffer->returned);
        plan.buffers.push_back(*buffer);
      }
    });
    if (plan.buffers.empty())
      return std::nullopt;
    plan.size = placeBuffers(plan.buffers, alignment);
    return plan;
  }

  /// Replaces the planned buffers of `plan` by views of the workspace
  /// `key` names, of `size` bytes.
  void rewriteFunction(FunctionPlan &plan, uint64_t key, int64_t size) {
    func::FuncOp func = plan.func;
    func::FuncOp workspaceFunction = getWorkspaceFunction(getOperation());
    OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
    Location loc = func.getLoc();
    Value keyValue = arith::ConstantIntOp::create(
        builder, loc, static_cast<int64_t>(key), 64);
    Value sizeValue = arith::ConstantIntOp::create(builder, loc, size, 64);
    Value workspace = func::CallOp::create(builder, loc, workspaceFunction,
                                           ValueRange{keyValue, sizeValue})
                          .getResult(0);
    for (PlannedBuffer &buffer : plan.buffers) {
      builder.setInsertionPoint(buffer.alloc);
      Value offset = arith::ConstantIndexOp::create(
          builder, buffer.alloc.getLoc(), buffer.offset);
      auto view = memref::ViewOp::create(builder, buffer.alloc.getLoc(),
                                         buffer.alloc.getType(), workspace,
                                         offset, ValueRange());
      buffer.alloc.replaceAllUsesWith(view.getResult());
      buffer.alloc.erase();
      if (buffer.dealloc)
        buffer.dealloc.erase();
    }
    int64_t total = 0, returned = 0;
    for (const PlannedBuffer &buffer : plan.buffers) {
      total += buffer.bytes;
      returned += buffer.returned ? 1 : 0;
    }
    func->setAttr(
        "distopt.workspace",
        builder.getDictionaryAttr(
            {builder.getNamedAttr(
                 "key", builder.getI64IntegerAttr(static_cast<int64_t>(key))),
             builder.getNamedAttr("bytes", builder.getI64IntegerAttr(size)),
             builder.getNamedAttr(
                 "buffers", builder.getI64IntegerAttr(plan.buffers.size())),
             builder.getNamedAttr("buffer_bytes",
                                  builder.getI64IntegerAttr(total)),
             builder.getNamedAttr("results",
                                  builder.getI64IntegerAttr(returned))}));
  }
};
} // namespace
