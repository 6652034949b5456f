//===- StepReport.cpp - what a CUDA step enqueues per call ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Counts, per call of each public host function of a CUDA step (after
// dist-gpu-host), the work it enqueues on the device: kernel launches,
// library calls (cuBLAS products), collectives, stream-ordered allocations
// and frees, copies between host and device, host waits (a started
// collective's wait is the step's stream waiting for the communication
// stream, counted apart), and the
// workspaces its functions keep across calls (dist-plan-workspace's
// hoisted buffers: not an allocation per call). Calls of the
// step's own parts are followed and loops of constant trip count
// multiplied, so the counts are those of one call of the step, as the
// device sees them.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::train {
#define GEN_PASS_DEF_DISTGPUSTEPREPORTPASS
#include "distopt/Conversion/Passes.h.inc"
} // namespace mlir::train

using namespace mlir;

namespace {
/// What one call of a host function enqueues.
struct StepCounts {
  int64_t kernels = 0, libraryCalls = 0, collectives = 0, allocations = 0,
          frees = 0, hostCopies = 0, hostWaits = 0;
  /// Collectives started (the nccl backend's communication stream runs
  /// them while the step's stream goes on) and their waits (the step's
  /// stream waiting for the communication stream, not the host).
  int64_t startedCollectives = 0, collectiveWaits = 0;
  /// Calls answering a function's workspace (no allocation after the
  /// first).
  int64_t workspaceCalls = 0;
  /// Lookups of constant globals' device copies (copied once per process).
  int64_t constantCalls = 0;
  /// Loops whose trip count is not a constant, counted once.
  int64_t unknownLoops = 0;

  void add(const StepCounts &other, int64_t times) {
    kernels += times * other.kernels;
    libraryCalls += times * other.libraryCalls;
    collectives += times * other.collectives;
    allocations += times * other.allocations;
    frees += times * other.frees;
    hostCopies += times * other.hostCopies;
    hostWaits += times * other.hostWaits;
    startedCollectives += times * other.startedCollectives;
    collectiveWaits += times * other.collectiveWaits;
    workspaceCalls += times * other.workspaceCalls;
    constantCalls += times * other.constantCalls;
    unknownLoops += other.unknownLoops;
  }
};

/// True for a runtime call that moves data between devices (distrt's
/// collectives and transfers, blocking or started).
bool isCollective(StringRef callee) {
  if (!callee.consume_front("distrt_mlir_"))
    return false;
  return llvm::any_of(ArrayRef<StringRef>{"all_reduce", "all_gather",
                                          "reduce_scatter", "all_to_all",
                                          "broadcast", "send", "recv"},
                      [&](StringRef kind) { return callee.starts_with(kind); });
}

/// True when `memref` is host memory: a global or a host allocation.
bool isHostMemory(Value memref) {
  Operation *def = memref.getDefiningOp();
  return def &&
         isa<memref::GetGlobalOp, memref::AllocOp, memref::AllocaOp>(def);
}

class Counter {
public:
  explicit Counter(ModuleOp module) : symbols(module) {}

  /// The counts of one call of `func`; fails on a recursive call.
  FailureOr<StepCounts> count(func::FuncOp func) {
    if (auto it = done.find(func); it != done.end())
      return it->second;
    if (!active.insert(func).second)
      return func.emitOpError("calls itself, so a call's work is unbounded");
    StepCounts counts;
    if (failed(countRegion(func.getBody(), counts)))
      return failure();
    active.erase(func);
    return done[func] = counts;
  }

private:
  LogicalResult countRegion(Region &region, StepCounts &counts) {
    for (Block &block : region)
      for (Operation &op : block)
        if (failed(countOp(op, counts)))
          return failure();
    return success();
  }

  LogicalResult countOp(Operation &op, StepCounts &counts) {
    if (isa<gpu::LaunchFuncOp>(op)) {
      ++counts.kernels;
      return success();
    }
    if (isa<gpu::AllocOp>(op)) {
      ++counts.allocations;
      return success();
    }
    if (isa<gpu::DeallocOp>(op)) {
      ++counts.frees;
      return success();
    }
    if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
      if (isHostMemory(copy.getSrc()) || isHostMemory(copy.getDst()))
        ++counts.hostCopies;
      return success();
    }
    if (auto wait = dyn_cast<gpu::WaitOp>(op)) {
      // `gpu.wait` without a result blocks the host.
      if (!wait.getAsyncToken())
        ++counts.hostWaits;
      return success();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && !callee.isDeclaration()) {
        FailureOr<StepCounts> inner = count(callee);
        if (failed(inner))
          return failure();
        counts.add(*inner, 1);
        return success();
      }
      // (libdistopt_cuda's distopt_cuda_<f>, as dist-gpu-host renames the
      // calls, counts as distopt_<f>.)
      std::string calleeName = call.getCallee().str();
      if (StringRef(calleeName).starts_with("distopt_cuda_"))
        calleeName.erase(strlen("distopt_"), strlen("cuda_"));
      StringRef name = calleeName;
      if (name == "distopt_workspace")
        ++counts.workspaceCalls;
      else if (name == "distopt_constant")
        ++counts.constantCalls;
      else if (name.starts_with("distopt_"))
        ++counts.libraryCalls;
      else if (isCollective(name)) {
        ++counts.collectives;
        if (name.contains("_start_"))
          ++counts.startedCollectives;
      } else if (name == "distrt_mlir_wait") {
        ++counts.collectiveWaits;
      }
      return success();
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      StepCounts body;
      if (failed(countRegion(loop.getRegion(), body)))
        return failure();
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips)
        ++counts.unknownLoops;
      counts.add(body, trips ? trips->getSExtValue() : 1);
      return success();
    }
    // Other regions (branches, kernels' detached bodies): once each.
    for (Region &region : op.getRegions())
      if (!isa<gpu::LaunchOp>(op) && failed(countRegion(region, counts)))
        return failure();
    return success();
  }

public:
  /// The bytes and buffers of the workspaces of `func` and of every
  /// function it calls (each workspace once, however many functions share
  /// it -- a step's parts do -- and however often they are called: a
  /// workspace persists across calls).
  std::pair<int64_t, int64_t> getWorkspace(func::FuncOp func) {
    DenseSet<Operation *> seen;
    SmallVector<func::FuncOp> work = {func};
    // Each shared workspace's size, by its key; the bytes of those without
    // one.
    llvm::MapVector<int64_t, int64_t> sizes;
    int64_t bytes = 0, buffers = 0;
    while (!work.empty()) {
      func::FuncOp next = work.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      if (auto workspace =
              next->getAttrOfType<DictionaryAttr>("distopt.workspace")) {
        auto size = workspace.getAs<IntegerAttr>("bytes");
        if (auto key = workspace.getAs<IntegerAttr>("key"); key && size)
          sizes[key.getInt()] = std::max(sizes[key.getInt()], size.getInt());
        else if (size)
          bytes += size.getInt();
        if (auto count = workspace.getAs<IntegerAttr>("buffers"))
          buffers += count.getInt();
      }
      next.walk([&](func::CallOp call) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
            callee && !callee.isDeclaration())
          work.push_back(callee);
      });
    }
    for (int64_t size : llvm::make_second_range(sizes))
      bytes += size;
    return {bytes, buffers};
  }

private:
  SymbolTable symbols;
  DenseMap<Operation *, StepCounts> done;
  DenseSet<Operation *> active;
};

struct DistGPUStepReportPass
    : public mlir::train::impl::DistGPUStepReportPassBase<
          DistGPUStepReportPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Counter counter(module);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isDeclaration() || func.isPrivate())
        continue;
      FailureOr<StepCounts> counts = counter.count(func);
      if (failed(counts))
        return signalPassFailure();
      InFlightDiagnostic remark = func.emitRemark();
      remark << "per call: " << counts->kernels << " kernel launches, "
             << counts->libraryCalls << " library calls, "
             << counts->collectives << " collectives ("
             << counts->kernels + counts->libraryCalls + counts->collectives
             << " launches), " << counts->allocations << " device allocations, "
             << counts->frees << " frees, " << counts->hostCopies
             << " host-device copies, " << counts->hostWaits << " host waits";
      auto [bytes, buffers] = counter.getWorkspace(func);
      if (buffers)
        remark << "; " << buffers << " buffers in workspaces of " << bytes
               << " bytes kept across calls (" << counts->workspaceCalls
               << " lookups)";
      if (counts->constantCalls)
        remark << "; " << counts->constantCalls
               << " constants read from their device copies (copied once)";
      if (counts->startedCollectives)
        remark << "; " << counts->startedCollectives
               << " collectives started on the communication stream, "
               << counts->collectiveWaits << " waits for them on the step's";
      if (counts->unknownLoops)
        remark << " (" << counts->unknownLoops
               << " loop(s) of unknown trip count counted once)";
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
