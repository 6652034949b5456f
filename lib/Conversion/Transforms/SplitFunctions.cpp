//===- SplitFunctions.cpp - a large step as a sequence of calls -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Cuts the body of a large function into consecutive parts, each outlined
// into a private function, so that analyses superlinear in a function's
// size (one-shot bufferization's alias sets, LLVM's code generation) see
// bounded pieces.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <functional>

namespace mlir::train {
#define GEN_PASS_DEF_DISTSPLITFUNCTIONSPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

/// True when `op`, given operands that are all recreated, can be computed
/// again in each part that reads it: no side effects, no call, no buffer.
static bool isRecreatable(Operation *op) {
  if (!isMemoryEffectFree(op) || isa<CallOpInterface>(op))
    return false;
  return llvm::all_of(op->getResultTypes(), [](Type type) {
    return isa<RankedTensorType>(type) || type.isIntOrIndexOrFloat();
  });
}

/// True when `op` is a static slice of a tensor (a padded value's interior,
/// dist-rematerialize-fills) or a static reshape (a convolution's grouped
/// [n, g, c, h, w] view): each part reading it takes the whole tensor and
/// slices or reshapes it again, rather than receiving the view, which
/// bufferization would copy into a buffer of its own at the boundary (a
/// function's arguments and results have the identity layout; ResNet-18:
/// every ReLU output kept for the backward pass, ~7 ms per step), or, when
/// the part also returns the tensor itself, clone as a second result
/// aliasing the first (ResNet-18: 15 padded images, ~60 MB per step).
static bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(op) &&
         op->getNumOperands() == 1;
}

/// True when `op` is a reshape whose result the function returns (directly
/// or through other views): a step returning an optimizer update made on a
/// reshaped view of the parameter. It stays in the part that computes its
/// source, where the update's reshape and its inverse fold back into the
/// parameter itself, which the part then updates in place instead of
/// returning a clone (94 MB of ResNet-18's parameters and momenta per
/// step).
static bool isReturnedReshape(Operation *op) {
  if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    return false;
  std::function<bool(Operation *)> returned = [&](Operation *view) {
    return llvm::any_of(view->getUsers(), [&](Operation *user) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        return true;
      return isView(user) && returned(user);
    });
  };
  return returned(op);
}

/// True when `value` exists only to be written into: every use is the
/// destination of an op (e.g. the zero fill of a product's output, which
/// dist-matmul-to-blas folds into the product's sgemm call only within one
/// function).
static bool isOnlyDestination(Value value) {
  return !value.use_empty() &&
         llvm::all_of(value.getUses(), [](OpOperand &use) {
           auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
           return dps && dps.isDpsInit(&use);
         });
}

/// True when `value` may be passed from one part to a later one: a tensor
/// that is not only a destination, or a scalar that is not a call's result
/// (a nonblocking collective's request must stay in the part that waits
/// for it).
static bool mayCross(Value value) {
  Type type = value.getType();
  if (isa<RankedTensorType>(type))
    return !isOnlyDestination(value);
  if (!type.isIntOrIndexOrFloat())
    return false;
  Operation *def = value.getDefiningOp();
  return !def || !isa<CallOpInterface>(def);
}

namespace {
/// One part: the top-level ops [begin, end] of the body.
struct Part {
  unsigned begin, end;
};

class Splitter {
public:
  Splitter(func::FuncOp func, SymbolTable &symbols, unsigned opsPerFunction)
      : func(func), symbols(symbols), opsPerFunction(opsPerFunction) {}

  /// Plans the parts; false when the function stays whole.
  bool plan();
  void outline();

private:
  void outline(const Part &part, unsigned index);

  func::FuncOp func;
  SymbolTable &symbols;
  unsigned opsPerFunction;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, unsigned> position;
  /// Ops each part recomputes instead of taking their results as
  /// arguments: constants, empty tensors, and what is computed from them
  /// alone (fills of a product's output, broadcasts of a constant).
  DenseSet<Operation *> recreated;
  /// Static slices each part reading them makes again from their source
  /// (isView), which it takes as an argument. Unlike recreated ops, ops
  /// reading them are not recreated.
  DenseSet<Operation *> views;

  /// True when each part reading `op`'s results makes `op` again.
  bool isCopied(Operation *op) const {
    return recreated.contains(op) || views.contains(op);
  }
  SmallVector<Part> parts;
};
} // namespace

bool Splitter::plan() {
  if (!func.getBody().hasOneBlock())
    return false;
  Block &block = func.getBody().front();
  for (Operation &op : block.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
    bool fromRecreated = true;
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def ? def->getBlock() == &block && !recreated.contains(def)
                : operand.getParentBlock() == &block)
          fromRecreated = false;
      }
    });
    if (fromRecreated && isRecreatable(&op))
      recreated.insert(&op);
    else if (isView(&op) && !isReturnedReshape(&op))
      views.insert(&op);
  }
  unsigned end = ops.size(); // The terminator's position.
  // Values that must not cross a cut, by the position of their last use.
  SmallVector<unsigned> expiring(end + 1, 0);
  unsigned live = 0, weight = 0, begin = 0;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (!isCopied(op)) {
      for (Value result : op->getResults()) {
        // (A returned reshape stays in its source's part: no cut between.)
        if (mayCross(result) &&
            llvm::none_of(result.getUsers(), isReturnedReshape))
          continue;
        unsigned last = i;
        for (Operation *user : result.getUsers()) {
          Operation *top = block.findAncestorOpInBlock(*user);
          last = std::max(
              last, top == block.getTerminator() ? end : position.lookup(top));
        }
        if (last > i) {
          ++live;
          ++expiring[last];
        }
      }
    }
    live -= expiring[i];
    if (!isCopied(op))
      op->walk([&](Operation *) { ++weight; });
    if (weight >= opsPerFunction && live == 0 && i + 1 < end) {
      parts.push_back({begin, unsigned(i)});
      begin = i + 1;
      weight = 0;
    }
  }
  if (parts.empty())
    return false;
  parts.push_back({begin, end - 1});
  return true;
}

void Splitter::outline() {
  for (auto [index, part] : llvm::enumerate(parts))
    outline(part, index);
  // A view the function itself still reads (its terminator: a step
  // returning an update made on a reshaped view) follows the call that now
  // computes its source (views of views in order).
  for (Operation *op : ops) {
    if (!views.contains(op) || op->use_empty())
      continue;
    Operation *def = op->getOperand(0).getDefiningOp();
    if (def && def->getBlock() == op->getBlock() && op->isBeforeInBlock(def))
      op->moveAfter(def);
  }
  // What the parts recreated and the function no longer reads (readers
  // first).
  for (Operation *op : llvm::reverse(ops))
    if (isCopied(op) && op->use_empty())
      op->erase();
}

void Splitter::outline(const Part &part, unsigned index) {
  MLIRContext *context = func.getContext();
  Block &block = func.getBody().front();
  auto inside = [&](Operation *op) {
    Operation *top = block.findAncestorOpInBlock(*op);
    if (!top || top == block.getTerminator())
      return false;
    unsigned at = position.lookup(top);
    return at >= part.begin && at <= part.end;
  };

  // What the part reads from before it (arguments, or ops it recreates,
  // with the recreated ops they read) and what later ops read from it
  // (results).
  // A value later ops read (a view counts through its readers).
  std::function<bool(Value)> isReadOutside = [&](Value value) {
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      if (views.contains(user))
        return isReadOutside(user->getResult(0));
      return !inside(user);
    });
  };
  SetVector<Value> inputs;
  DenseSet<Operation *> needed;
  SmallVector<Operation *> worklist;
  SmallVector<Value> outputs;
  auto read = [&](Operation *op) {
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Operation *def = operand.getDefiningOp();
        // A value of `op`'s own regions (a recreated linalg.generic's body,
        // read by a later part) comes with it.
        if (def && op->isProperAncestor(def))
          continue;
        if (def && isCopied(def)) {
          if (needed.insert(def).second)
            worklist.push_back(def);
          continue;
        }
        if (def ? inside(def) : operand.getParentBlock() != &block)
          continue;
        inputs.insert(operand);
      }
    });
  };
  for (unsigned i = part.begin; i <= part.end; ++i) {
    if (isCopied(ops[i]))
      continue; // Stays in the function; each reader recreates it.
    read(ops[i]);
    for (Value result : ops[i]->getResults())
      if (isReadOutside(result))
        outputs.push_back(result);
  }
  while (!worklist.empty())
    read(worklist.pop_back_val());
  SmallVector<Operation *> clones(needed.begin(), needed.end());
  llvm::sort(clones, [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  });

  OpBuilder builder(context);
  builder.setInsertionPoint(func);
  auto type =
      FunctionType::get(context, ValueRange(inputs.getArrayRef()).getTypes(),
                        ValueRange(outputs).getTypes());
  auto outlined = func::FuncOp::create(
      builder, func.getLoc(),
      (func.getSymName() + "_part" + Twine(index)).str(), type);
  outlined.setPrivate();
  // LLVM would inline a part back into its only caller.
  outlined->setAttr("passthrough", builder.getStrArrayAttr({"noinline"}));
  // Its nonblocking collectives complete inside it: the caller may free
  // the buffers it passes once it returns (dist-buffer-deallocation).
  outlined->setAttr("distopt.sync_buffers", UnitAttr::get(context));
  symbols.insert(outlined);
  Block *body = outlined.addEntryBlock();

  // The call takes the ops' place; the ops move into the part, then the
  // copied ops go first, or (a slice of a value the part computes) right
  // after what they read.
  Operation *next = ops[part.end]->getNextNode();
  builder.setInsertionPointToEnd(body);
  func::ReturnOp::create(builder, func.getLoc(), outputs);
  for (unsigned i = part.begin; i <= part.end; ++i)
    if (!isCopied(ops[i]))
      ops[i]->moveBefore(body->getTerminator());
  Operation *start = &body->front();
  IRMapping mapping;
  for (Operation *op : clones) {
    Operation *after = nullptr;
    for (Value operand : op->getOperands()) {
      Operation *def = mapping.lookupOrDefault(operand).getDefiningOp();
      if (def && def->getBlock() == body &&
          (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (after)
      builder.setInsertionPointAfter(after);
    else
      builder.setInsertionPoint(start);
    builder.clone(*op, mapping);
  }
  auto inOutlined = [&](OpOperand &use) {
    return outlined->isProperAncestor(use.getOwner());
  };
  for (auto [input, argument] : llvm::zip(inputs, body->getArguments()))
    Value(input).replaceUsesWithIf(argument, inOutlined);
  for (Operation *op : clones)
    for (Value result : op->getResults())
      result.replaceUsesWithIf(mapping.lookup(result), inOutlined);

  builder.setInsertionPoint(next);
  auto call = func::CallOp::create(builder, ops[part.begin]->getLoc(), outlined,
                                   inputs.getArrayRef());
  for (auto [output, result] : llvm::zip(outputs, call.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !outlined->isProperAncestor(use.getOwner());
    });
}

namespace {
struct DistSplitFunctionsPass
    : public mlir::train::impl::DistSplitFunctionsPassBase<
          DistSplitFunctionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (opsPerFunction == 0)
      return;
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      Splitter splitter(func, symbols, opsPerFunction);
      if (splitter.plan())
        splitter.outline();
    }
  }
};
} // namespace
