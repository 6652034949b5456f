//===- GPURewrites.cpp - dist-map-to-gpu's rewrites of ops ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The rewrites dist-map-to-gpu makes so that fewer launches do the same
// work: scalar producers recomputed by their readers (inline-scalars),
// pointwise chains as one op (fuse-pointwise), a level's products as one
// grouped library call (group-products).
//
//===----------------------------------------------------------------------===//

#include "GPURewrites.h"
#include "distopt/Runtime/ProductGroup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

using namespace mlir;
using namespace mlir::train;

//===----------------------------------------------------------------------===//
// Scalar producers recomputed by their consumers
//===----------------------------------------------------------------------===//

/// The most body ops of a scalar op its consumers recompute.
static constexpr size_t kMaxInlinedScalarOps = 16;

/// True when `op` is a scalar op its consumers may recompute: no loops,
/// 0-d buffers and scalars only, at least one output, its body a few pure
/// ops without regions that reads no output.
static bool isInlinableScalar(linalg::GenericOp op) {
  if (op.getNumLoops() != 0 || op.getNumDpsInits() == 0)
    return false;
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<MemRefType>(operand.getType());
        type && type.getRank() != 0)
      return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.payloadUsesValueFromOperand(&init))
      return false;
  Block &body = op.getRegion().front();
  if (body.getOperations().size() > kMaxInlinedScalarOps + 1)
    return false;
  return llvm::all_of(body.without_terminator(), [](Operation &nested) {
    return nested.getNumRegions() == 0 && isPure(&nested);
  });
}

/// `consumer` with `producer`'s body at the start of its own and every
/// input that is one of `producer`'s outputs replaced by the value the
/// producer yields for it (the producer's inputs, 0-d, become inputs of
/// the new op). Erases `consumer`; returns the new op.
static linalg::GenericOp inlineScalar(RewriterBase &rewriter,
                                      linalg::GenericOp producer,
                                      linalg::GenericOp consumer) {
  DenseMap<Value, unsigned> produced;
  for (auto [index, init] : llvm::enumerate(producer.getDpsInits()))
    produced.try_emplace(init, index);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : consumer.getDpsInputOperands())
    if (!produced.count(input->get())) {
      inputs.push_back(input->get());
      maps.push_back(consumer.getMatchingIndexingMap(input));
    }
  size_t firstProducerInput = inputs.size();
  AffineMap scalar =
      AffineMap::get(consumer.getNumLoops(), 0, consumer.getContext());
  for (Value input : producer.getDpsInputs()) {
    inputs.push_back(input);
    maps.push_back(scalar);
  }
  for (OpOperand &init : consumer.getDpsInitsMutable())
    maps.push_back(consumer.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(consumer);
  auto fused = linalg::GenericOp::create(
      rewriter, consumer.getLoc(), TypeRange(), inputs, consumer.getDpsInits(),
      maps, consumer.getIteratorTypesArray());
  fused->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value operand : fused->getOperands()) {
    argTypes.push_back(getElementTypeOrSelf(operand.getType()));
    argLocs.push_back(operand.getLoc());
  }
  Block *block =
      rewriter.createBlock(&fused.getRegion(), {}, argTypes, argLocs);
  IRMapping mapping;
  Block &producerBody = producer.getRegion().front();
  for (unsigned i = 0, e = producer.getNumDpsInputs(); i < e; ++i)
    mapping.map(producerBody.getArgument(i),
                block->getArgument(firstProducerInput + i));
  for (Operation &op : producerBody.without_terminator())
    rewriter.clone(op, mapping);
  auto yield = cast<linalg::YieldOp>(producerBody.getTerminator());
  Block &consumerBody = consumer.getRegion().front();
  unsigned next = 0;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    BlockArgument arg = consumerBody.getArgument(input->getOperandNumber());
    if (auto it = produced.find(input->get()); it != produced.end())
      mapping.map(arg, mapping.lookupOrDefault(yield.getOperand(it->second)));
    else
      mapping.map(arg, block->getArgument(next++));
  }
  for (unsigned i = 0, e = consumer.getNumDpsInits(); i < e; ++i)
    mapping.map(consumerBody.getArgument(consumer.getNumDpsInputs() + i),
                block->getArgument(inputs.size() + i));
  for (Operation &op : consumerBody)
    rewriter.clone(op, mapping);
  rewriter.eraseOp(consumer);
  return fused;
}

/// True when the buffers `producer` writes are allocations of the function
/// that nothing but `producer`, frees and views uses (not an argument, a
/// global or a returned buffer, which the caller sees).
static bool isOutputDead(linalg::GenericOp producer) {
  bool dead = true;
  for (Value init : producer.getDpsInits()) {
    Value root = train::getRootBuffer(init);
    if (!root.getDefiningOp<memref::AllocOp>() &&
        !root.getDefiningOp<memref::AllocaOp>())
      return false;
    train::forEachBufferUse(init, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      dead &= user == producer || isa<memref::DeallocOp>(user) ||
              isa<ViewLikeOpInterface>(user);
    });
  }
  return dead;
}

/// Recomputes the inlinable scalar ops of `block` in their consumers: the
/// later generics that read one of its outputs as an input, up to the
/// first op that writes its inputs or outputs (or may: an op with other
/// effects than a generic's or a product's), none of which writes them
/// itself; erases a producer whose outputs nothing else reads. The
/// producer's buffers must be of known, distinct classes.
void mlir::train::inlineScalars(Block &block, BufferAliasing &aliasing) {
  IRRewriter rewriter(block.getParentOp()->getContext());
  // Inlines `producer` into its consumers; true when it had some.
  auto inlineInConsumers = [&](linalg::GenericOp producer) {
    DenseSet<const void *> inputs, outputs;
    for (Value input : producer.getDpsInputs())
      if (isa<MemRefType>(input.getType()))
        inputs.insert(aliasing.getClass(input));
    for (Value init : producer.getDpsInits())
      outputs.insert(aliasing.getClass(init));
    if (inputs.contains(nullptr) || outputs.contains(nullptr) ||
        llvm::any_of(outputs,
                     [&](const void *key) { return inputs.contains(key); }))
      return false;
    DenseSet<Value> produced(producer.getDpsInits().begin(),
                             producer.getDpsInits().end());
    auto touches = [&](const Footprint &footprint) {
      return llvm::any_of(footprint.writes, [&](const void *key) {
        return !key || inputs.contains(key) || outputs.contains(key);
      });
    };
    SmallVector<linalg::GenericOp> consumers;
    for (Operation *op = producer->getNextNode(); op; op = op->getNextNode()) {
      Footprint footprint;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        footprint.add(generic, aliasing);
        if (touches(footprint))
          break;
        if (llvm::any_of(generic.getDpsInputs(),
                         [&](Value v) { return produced.contains(v); }))
          consumers.push_back(generic);
        continue;
      }
      if (isLibraryCall(*op)) {
        footprint.add(cast<func::CallOp>(op), aliasing);
        if (touches(footprint))
          break;
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        const void *key = aliasing.getClass(dealloc.getMemref());
        if (!key || inputs.contains(key) || outputs.contains(key))
          break;
        continue;
      }
      if (isa<memref::AllocOp>(op) || (isPure(op) && op->getNumRegions() == 0))
        continue;
      break;
    }
    for (linalg::GenericOp consumer : consumers)
      inlineScalar(rewriter, producer, consumer);
    if (!consumers.empty() && isOutputDead(producer)) {
      // The producer, then its allocations (and their frees) if nothing
      // else is left using them.
      SmallVector<Value> roots;
      for (Value init : producer.getDpsInits())
        roots.push_back(train::getRootBuffer(init));
      rewriter.eraseOp(producer);
      for (Value root : roots) {
        Operation *alloc = root.getDefiningOp();
        if (!alloc || !llvm::all_of(root.getUsers(), [](Operation *user) {
              return isa<memref::DeallocOp>(user);
            }))
          continue;
        for (Operation *user : llvm::make_early_inc_range(root.getUsers()))
          rewriter.eraseOp(user);
        rewriter.eraseOp(alloc);
      }
    }
    return !consumers.empty();
  };
  // Until no producer has a consumer left (each round removes the reads
  // of one producer's outputs; a chain, as step -> bias correction ->
  // update, takes a round per link).
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation &op : block) {
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (generic && isInlinableScalar(generic) && inlineInConsumers(generic)) {
        changed = true;
        break;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Pointwise chains as one op
//===----------------------------------------------------------------------===//

/// True when `op` works point by point: all its loops parallel over a static
/// space, each output written through a permutation of them (one point per
/// element), a body of pure ops without regions.
static bool isPointwise(linalg::GenericOp op) {
  if (op.getNumLoops() == 0 || op.getNumReductionLoops() != 0 ||
      !op.hasPureBufferSemantics() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isPermutation())
      return false;
  return llvm::all_of(op.getRegion().front().without_terminator(),
                      [](Operation &nested) {
                        return isPure(&nested) && nested.getNumRegions() == 0;
                      });
}

/// `consumer`'s inputs that read one of `producer`'s outputs at the point
/// that wrote it (the same buffer value, the same indexing map): their
/// input positions and the producer's output each reads.
static SmallVector<std::pair<unsigned, unsigned>>
getForwardedInputs(linalg::GenericOp producer, linalg::GenericOp consumer) {
  SmallVector<std::pair<unsigned, unsigned>> forwarded;
  for (OpOperand *input : consumer.getDpsInputOperands())
    for (OpOperand &init : producer.getDpsInitsMutable())
      if (input->get() == init.get() &&
          consumer.getMatchingIndexingMap(input) ==
              producer.getMatchingIndexingMap(&init))
        forwarded.push_back(
            {input->getOperandNumber(),
             init.getOperandNumber() - producer.getNumDpsInputs()});
  return forwarded;
}

/// One generic doing, at each point, what `producer` and then `consumer`
/// (pointwise, on the same space) do there: the producer's inputs, then
/// the consumer's other inputs; both's outputs; the values the consumer
/// read from the producer's outputs are the ones the producer just
/// yielded. Built at `consumer`; erases both and returns it.
static linalg::GenericOp
fusePointwisePair(RewriterBase &rewriter, linalg::GenericOp producer,
                  linalg::GenericOp consumer,
                  ArrayRef<std::pair<unsigned, unsigned>> forwarded) {
  DenseMap<unsigned, unsigned> forwardedFrom(forwarded.begin(),
                                             forwarded.end());
  SmallVector<Value> inputs(producer.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *input : producer.getDpsInputOperands())
    maps.push_back(producer.getMatchingIndexingMap(input));
  // (A consumer's input the producer reads too, through the same map, is
  // the producer's.)
  DenseMap<unsigned, unsigned> sharedWith;
  SmallVector<OpOperand *> producerOperands = producer.getDpsInputOperands();
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (forwardedFrom.count(input->getOperandNumber()))
      continue;
    AffineMap map = consumer.getMatchingIndexingMap(input);
    auto shared = llvm::find_if(producerOperands, [&](OpOperand *other) {
      return other->get() == input->get() &&
             producer.getMatchingIndexingMap(other) == map;
    });
    if (shared != producerOperands.end()) {
      sharedWith[input->getOperandNumber()] = (*shared)->getOperandNumber();
      continue;
    }
    inputs.push_back(input->get());
    maps.push_back(map);
  }
  SmallVector<Value> outputs(producer.getDpsInits());
  llvm::append_range(outputs, consumer.getDpsInits());
  for (OpOperand &init : producer.getDpsInitsMutable())
    maps.push_back(producer.getMatchingIndexingMap(&init));
  for (OpOperand &init : consumer.getDpsInitsMutable())
    maps.push_back(consumer.getMatchingIndexingMap(&init));
  unsigned producerInputs = producer.getNumDpsInputs();
  unsigned consumerInputs = inputs.size() - producerInputs;
  rewriter.setInsertionPoint(consumer);
  auto fused = linalg::GenericOp::create(
      rewriter, consumer.getLoc(), TypeRange(), inputs, outputs, maps,
      producer.getIteratorTypesArray(),
      [&](OpBuilder &builder, Location loc, ValueRange args) {
        IRMapping mapping;
        Block &first = producer.getRegion().front();
        ValueRange producerOutputs =
            args.drop_front(producerInputs + consumerInputs)
                .take_front(producer.getNumDpsInits());
        for (auto [arg, value] :
             llvm::zip(first.getArguments(),
                       llvm::concat<Value>(args.take_front(producerInputs),
                                           producerOutputs)))
          mapping.map(arg, value);
        for (Operation &op : first.without_terminator())
          builder.clone(op, mapping);
        SmallVector<Value> yielded;
        for (Value value : first.getTerminator()->getOperands())
          yielded.push_back(mapping.lookupOrDefault(value));
        Block &second = consumer.getRegion().front();
        unsigned next = producerInputs;
        for (OpOperand *input : consumer.getDpsInputOperands()) {
          BlockArgument arg = second.getArgument(input->getOperandNumber());
          if (auto it = forwardedFrom.find(input->getOperandNumber());
              it != forwardedFrom.end())
            mapping.map(arg, yielded[it->second]);
          else if (auto it = sharedWith.find(input->getOperandNumber());
                   it != sharedWith.end())
            mapping.map(arg, args[it->second]);
          else
            mapping.map(arg, args[next++]);
        }
        for (auto [index, init] : llvm::enumerate(consumer.getDpsInits())) {
          (void)init;
          mapping.map(second.getArgument(consumer.getNumDpsInputs() + index),
                      args[producerInputs + consumerInputs +
                           producer.getNumDpsInits() + index]);
        }
        for (Operation &op : second.without_terminator())
          builder.clone(op, mapping);
        for (Value value : second.getTerminator()->getOperands())
          yielded.push_back(mapping.lookupOrDefault(value));
        linalg::YieldOp::create(builder, loc, yielded);
      });
  rewriter.eraseOp(consumer);
  rewriter.eraseOp(producer);
  return fused;
}

/// Fuses each pointwise generic of `block` with the next generic when that
/// one, pointwise on the same space, reads one of its outputs at the point
/// that wrote it (a bias added, then the activation of the sum, which the
/// backward reads too): one op, so one point member, computing both and
/// storing both. Only allocations, frees (which then follow the fused op)
/// and pure ops may stand between them;
/// the consumer must read nothing else the producer writes and write
/// nothing the producer reads or writes (known, distinct buffer classes).
void mlir::train::fusePointwise(Block &block, BufferAliasing &aliasing) {
  IRRewriter rewriter(block.getParentOp()->getContext());
  // The fused op, or null.
  auto tryFuse = [&](linalg::GenericOp producer) -> linalg::GenericOp {
    if (!isPointwise(producer))
      return nullptr;
    Operation *op = producer->getNextNode();
    SmallVector<Operation *> frees;
    while (op && !isa<linalg::GenericOp>(op) &&
           (isa<memref::AllocOp, memref::DeallocOp>(op) ||
            (isPure(op) && op->getNumRegions() == 0))) {
      if (isa<memref::DeallocOp>(op))
        frees.push_back(op);
      op = op->getNextNode();
    }
    auto consumer = dyn_cast_or_null<linalg::GenericOp>(op);
    if (!consumer || !isPointwise(consumer) ||
        consumer.getStaticLoopRanges() != producer.getStaticLoopRanges())
      return nullptr;
    SmallVector<std::pair<unsigned, unsigned>> forwarded =
        getForwardedInputs(producer, consumer);
    if (forwarded.empty())
      return nullptr;
    Footprint first, second;
    first.add(producer, aliasing);
    if (first.reads.contains(nullptr))
      return nullptr;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()) ||
          llvm::is_contained(llvm::make_first_range(forwarded),
                             input->getOperandNumber()))
        continue;
      const void *key = aliasing.getClass(input->get());
      if (!key || first.writes.contains(key))
        return nullptr;
    }
    for (Value init : consumer.getDpsInits()) {
      const void *key = aliasing.getClass(init);
      if (!key || first.reads.contains(key))
        return nullptr;
    }
    // (A body capturing a buffer is not pointwise: isPointwise's pure ops
    // load nothing.)
    // The consumer's operands are defined before it, the producer's before
    // the producer: the fused op goes where the consumer was.
    linalg::GenericOp fused =
        fusePointwisePair(rewriter, producer, consumer, forwarded);
    // (A free between them, of what the producer read, now follows.)
    for (Operation *free : llvm::reverse(frees))
      free->moveAfter(fused);
    return fused;
  };
  // (A fused op may fuse with the next one again: a chain.)
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    linalg::GenericOp fused = generic ? tryFuse(generic) : nullptr;
    op = fused ? fused.getOperation() : op->getNextNode();
  }
}

//===----------------------------------------------------------------------===//
// A level's products as one grouped call
//===----------------------------------------------------------------------===//

/// The product functions that group, by element type, and their groups'.
static constexpr std::pair<StringLiteral, StringLiteral> kGroupedProducts[] = {
    {"distopt_matmul_f32", "distopt_matmul_group_f32"},
    {"distopt_matmul_bf16", "distopt_matmul_group_bf16"},
    {"distopt_matmul_f16", "distopt_matmul_group_f16"}};

/// The index in kGroupedProducts of the product function `callee`, or
/// none when its products do not group.
static std::optional<size_t> getGroupedProduct(StringRef callee) {
  for (auto [index, names] : llvm::enumerate(kGroupedProducts))
    if (callee == names.first)
      return index;
  return std::nullopt;
}

SmallVector<SmallVector<func::CallOp>>
mlir::train::getGroupableProducts(ArrayRef<Operation *> calls) {
  SmallVector<SmallVector<func::CallOp>> products(std::size(kGroupedProducts));
  for (Operation *op : calls) {
    auto call = cast<func::CallOp>(op);
    std::optional<size_t> kind = getGroupedProduct(call.getCallee());
    if (!kind || call.getNumOperands() != 11)
      continue;
    if (llvm::all_of(call.getOperands().take_front(3), [](Value operand) {
          auto unranked = operand.getDefiningOp<memref::CastOp>();
          auto type = unranked
                          ? dyn_cast<MemRefType>(unranked.getSource().getType())
                          : MemRefType();
          return type && type.getRank() >= 2 && type.isStrided();
        }))
      products[*kind].push_back(call);
  }
  return products;
}

/// Replaces `products` (independent distopt_matmul_f32 calls) by one
/// distopt_matmul_group_f32 call at `builder`, of a table the host writes
/// (distopt/Runtime/ProductGroup.h) and frees after it; erases them.
void mlir::train::groupProducts(OpBuilder &builder,
                                MutableArrayRef<func::CallOp> products) {
  Location loc = products.front().getLoc();
  Type i64 = builder.getI64Type();
  DenseMap<int64_t, Value> indices;
  auto index = [&](int64_t value) {
    Value &constant = indices[value];
    if (!constant)
      constant = arith::ConstantIndexOp::create(builder, loc, value);
    return constant;
  };
  auto tableType = MemRefType::get(
      {static_cast<int64_t>(products.size()), DISTOPT_PRODUCT_WORDS}, i64);
  Value table = memref::AllocOp::create(builder, loc, tableType);
  auto store = [&](Value value, int64_t row, int64_t word) {
    if (value.getType().isIndex())
      value = arith::IndexCastOp::create(builder, loc, i64, value);
    else if (value.getType() != i64)
      value = arith::ExtSIOp::create(builder, loc, i64, value);
    memref::StoreOp::create(builder, loc, value, table,
                            ValueRange{index(row), index(word)});
  };
  for (auto [row, call] : llvm::enumerate(products)) {
    for (auto [word, scalar] :
         llvm::enumerate(call.getOperands().drop_front(3)))
      store(scalar, row, DISTOPT_PRODUCT_BATCH + word);
    for (auto [operand, value] :
         llvm::enumerate(call.getOperands().take_front(3))) {
      Value view = value.getDefiningOp<memref::CastOp>().getSource();
      auto type = cast<MemRefType>(view.getType());
      int64_t rank = type.getRank();
      auto metadata =
          memref::ExtractStridedMetadataOp::create(builder, loc, view);
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, view);
      Value offsetBytes =
          arith::MulIOp::create(builder, loc, metadata.getOffset(),
                                index(type.getElementTypeBitWidth() / 8));
      int64_t first =
          DISTOPT_PRODUCT_OPERANDS + operand * DISTOPT_PRODUCT_OPERAND_WORDS;
      store(arith::AddIOp::create(builder, loc, pointer, offsetBytes), row,
            first + DISTOPT_PRODUCT_ADDRESS);
      store(metadata.getSizes()[rank - 2], row, first + DISTOPT_PRODUCT_ROWS);
      store(metadata.getSizes()[rank - 1], row,
            first + DISTOPT_PRODUCT_COLUMNS);
      store(metadata.getStrides()[rank - 2], row,
            first + DISTOPT_PRODUCT_ROW_STRIDE);
      store(rank > 2 ? metadata.getStrides()[rank - 3] : index(0), row,
            first + DISTOPT_PRODUCT_BATCH_STRIDE);
    }
  }
  Value rows = memref::CastOp::create(
      builder, loc,
      MemRefType::get({ShapedType::kDynamic, DISTOPT_PRODUCT_WORDS}, i64),
      table);
  std::optional<size_t> kind = getGroupedProduct(products.front().getCallee());
  assert(kind && "not a groupable product");
  func::CallOp::create(
      builder, loc,
      getLibraryFunction(products.front()->getParentOfType<ModuleOp>(),
                         kGroupedProducts[*kind].second, rows.getType()),
      rows);
  memref::DeallocOp::create(builder, loc, table);
  // The calls, then what only they used (a cast may be two operands of
  // one call, or of two: each erased once).
  SetVector<Operation *> defs;
  for (func::CallOp call : products) {
    for (Value operand : call.getOperands())
      if (Operation *def = operand.getDefiningOp())
        defs.insert(def);
    call.erase();
  }
  for (Operation *def : defs)
    if (def->use_empty() && isPure(def))
      def->erase();
}
