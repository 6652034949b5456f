//===- VerifyPrograms.cpp - MPMD programs: matched, placed, no deadlock ---===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `dist-verify` on the programs of a pipelined or parameter-server step
// (functions with `dist.place`): every op placed, every send received with
// its type, and the programs deadlock-free. The deadlock check runs the
// programs' sends and receives together, as the runtime would with
// buffered (nonblocking) sends: a program stops at a receive whose send has
// not happened yet; when every unfinished program is stopped, the waits
// form a cycle, which the diagnostic spells out. A `dist.serve` serves each
// of its peers once per step, in the order their requests become possible
// (its cases talk to their own peer only, so another order of arrival
// cannot add a wait).
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/StepContract.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::dist;

namespace {
/// One program: its function, place and point-to-point ops in order.
struct Program {
  func::FuncOp func;
  PlaceAttr place;
  SmallVector<Operation *> transfers;
};
/// A transfer: (sending place, receiving place, channel).
using TransferKey = std::tuple<Attribute, Attribute, int64_t>;
} // namespace

/// `@train_step_pipe0 (pipe = 0)`.
static std::string describe(const Program &program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  func::FuncOp func = program.func;
  os << "@" << func.getSymName() << " (";
  llvm::interleaveComma(
      llvm::zip_equal(program.place.getAxes(), program.place.getCoords()), os,
      [&](auto pair) {
        os << std::get<0>(pair).getValue() << " = " << std::get<1>(pair);
      });
  os << ")";
  return text;
}

namespace {
/// verifyPrograms's phases over one module's programs: collect them, check
/// the loss, match the transfers, run them together, and spell out the
/// cycle of a deadlock.
class ProgramChecker {
public:
  explicit ProgramChecker(ModuleOp module) : module(module) {}

  /// Each placed function one program of its place, holding only
  /// fragments and transfers.
  LogicalResult collectPrograms();
  bool empty() const { return programs.empty(); }
  /// At most one program returns a loss.
  LogicalResult checkLosses();
  /// Every send has one receive of its type and the reverse.
  LogicalResult matchTransfers();
  /// Runs the transfers of every program together, as far as they go.
  void runTransfers();
  /// Fails with the cycle of waits when a program did not finish.
  LogicalResult checkFinished();

private:
  struct Cursor {
    size_t next = 0;
    /// In a dist.serve at `next`: the cases served, the one running and
    /// the position in it.
    DenseSet<unsigned> served;
    std::optional<unsigned> active;
    size_t position = 0;
  };
  /// Where a stopped program waits: the op, the channel and the program.
  struct Wait {
    Operation *op;
    int64_t channel;
    Attribute from;
  };

  static SmallVector<Operation *> caseTransfers(ServeOp serve, unsigned k) {
    SmallVector<Operation *> transfers;
    for (Operation &op : serve.getCases()[k].front())
      if (isa<SendOp, RecvOp>(op))
        transfers.push_back(&op);
    return transfers;
  }
  static TransferKey key(RecvOp recv, PlaceAttr at) {
    return {recv.getFrom(), at, static_cast<int64_t>(recv.getChannel())};
  }
  /// Runs `op` of `program`: false when it has to wait.
  bool step(Operation *op, const Program &program);
  /// Advances program `i` as far as it goes; true when it moved.
  bool advance(size_t i);
  Wait waitOf(size_t i) const;

  ModuleOp module;
  SmallVector<Program> programs;
  DenseMap<Attribute, size_t> programAt;
  SmallVector<Cursor> cursors;
  DenseSet<TransferKey> sent;
};
} // namespace

LogicalResult ProgramChecker::collectPrograms() {
  for (auto func : module.getOps<func::FuncOp>()) {
    auto place = func->getAttrOfType<PlaceAttr>(DistDialect::kPlaceAttrName);
    if (!place || func.isExternal())
      continue;
    if (auto [it, inserted] = programAt.try_emplace(place, programs.size());
        !inserted)
      return func.emitError()
             << "is a second program of " << place << " (the first is @"
             << programs[it->second].func.getSymName() << ")";
    Program program{func, place, {}};
    for (Operation &op : func.front()) {
      if (auto serve = dyn_cast<ServeOp>(op);
          serve && serve.getCount() != serve.getCases().size())
        return serve.emitError()
               << "serves " << serve.getCount() << " requests of "
               << serve.getCases().size()
               << " peers: dist-verify checks programs whose step serves "
                  "each peer once";
      if (isa<SendOp, RecvOp, ServeOp>(op))
        program.transfers.push_back(&op);
      else if (!isa<FragmentOp, func::ReturnOp>(op))
        return op.emitError() << "is not placed: a program of " << place
                              << " holds only dist.fragment, dist.send, "
                                 "dist.recv and dist.serve";
    }
    programs.push_back(std::move(program));
  }
  return success();
}

LogicalResult ProgramChecker::checkLosses() {
  // A pipeline's loss is on one program.
  unsigned losses = 0;
  for (const Program &program : programs)
    if (train::TrainingStep::isTrainingStep(program.func))
      for (const train::StepValue &result :
           train::TrainingStep::get(program.func).results)
        losses += result.role == train::Role::loss;
  if (losses > 1)
    return module.emitError() << "the programs return " << losses
                              << " losses: one program returns the step's loss";
  return success();
}

LogicalResult ProgramChecker::matchTransfers() {
  DenseMap<TransferKey, SendOp> sends;
  DenseMap<TransferKey, RecvOp> recvs;
  for (const Program &program : programs) {
    SmallVector<Operation *> all;
    func::FuncOp(program.func).walk([&](Operation *op) {
      if (isa<SendOp, RecvOp>(op))
        all.push_back(op);
    });
    for (Operation *op : all) {
      if (auto send = dyn_cast<SendOp>(op)) {
        TransferKey key{program.place, send.getTo(),
                        static_cast<int64_t>(send.getChannel())};
        if (!sends.try_emplace(key, send).second)
          return send.emitError() << "reuses channel " << send.getChannel()
                                  << " to " << send.getTo();
        continue;
      }
      auto recv = cast<RecvOp>(op);
      TransferKey key{recv.getFrom(), program.place,
                      static_cast<int64_t>(recv.getChannel())};
      if (!recvs.try_emplace(key, recv).second)
        return recv.emitError() << "reuses channel " << recv.getChannel()
                                << " from " << recv.getFrom();
      if (!programAt.count(recv.getFrom()))
        return recv.emitError() << "receives from " << recv.getFrom()
                                << ", which has no program";
    }
  }
  for (auto &[key, send] : sends) {
    RecvOp recv = recvs.lookup(key);
    if (!recv)
      return send.emitError()
             << "has no matching dist.recv (channel " << send.getChannel()
             << ") in the program of " << send.getTo();
    if (recv.getType() != send.getInput().getType()) {
      InFlightDiagnostic diag = recv.emitError()
                                << "receives " << recv.getType()
                                << " but its dist.send sends "
                                << send.getInput().getType();
      diag.attachNote(send.getLoc()) << "the send";
      return diag;
    }
  }
  for (auto &[key, recv] : recvs)
    if (!sends.count(key))
      return recv.emitError()
             << "has no matching dist.send (channel " << recv.getChannel()
             << ") in the program of " << recv.getFrom();
  return success();
}

bool ProgramChecker::step(Operation *op, const Program &program) {
  if (auto send = dyn_cast<SendOp>(op)) {
    sent.insert(
        {program.place, send.getTo(), static_cast<int64_t>(send.getChannel())});
    return true;
  }
  return sent.contains(key(cast<RecvOp>(op), program.place));
}

bool ProgramChecker::advance(size_t i) {
  const Program &program = programs[i];
  Cursor &cursor = cursors[i];
  bool progress = false;
  while (cursor.next < program.transfers.size()) {
    Operation *op = program.transfers[cursor.next];
    auto serve = dyn_cast<ServeOp>(op);
    if (!serve) {
      if (!step(op, program))
        break;
      ++cursor.next;
      progress = true;
      continue;
    }
    if (!cursor.active) {
      if (cursor.served.size() == serve.getCases().size()) {
        cursor.served.clear();
        ++cursor.next;
        progress = true;
        continue;
      }
      for (unsigned k = 0; k < serve.getCases().size(); ++k)
        if (!cursor.served.contains(k) &&
            sent.contains(
                {serve.getPeers()[k], program.place, serve.getChannels()[k]})) {
          cursor.active = k;
          cursor.position = 0;
          break;
        }
      if (!cursor.active)
        break;
      progress = true;
    }
    SmallVector<Operation *> transfers = caseTransfers(serve, *cursor.active);
    while (cursor.position < transfers.size() &&
           step(transfers[cursor.position], program)) {
      ++cursor.position;
      progress = true;
    }
    if (cursor.position < transfers.size())
      break;
    cursor.served.insert(*cursor.active);
    cursor.active.reset();
  }
  return progress;
}

void ProgramChecker::runTransfers() {
  cursors.assign(programs.size(), Cursor());
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < programs.size(); ++i)
      progress |= advance(i);
  }
}

ProgramChecker::Wait ProgramChecker::waitOf(size_t i) const {
  const Cursor &cursor = cursors[i];
  Operation *op = programs[i].transfers[cursor.next];
  auto serve = dyn_cast<ServeOp>(op);
  if (!serve) {
    auto recv = cast<RecvOp>(op);
    return {op, static_cast<int64_t>(recv.getChannel()), recv.getFrom()};
  }
  if (cursor.active) {
    auto recv =
        cast<RecvOp>(caseTransfers(serve, *cursor.active)[cursor.position]);
    return {recv, static_cast<int64_t>(recv.getChannel()), recv.getFrom()};
  }
  // Waiting for any unserved peer: the first names the cycle.
  unsigned k = 0;
  while (cursor.served.contains(k))
    ++k;
  return {op, serve.getChannels()[k], serve.getPeers()[k]};
}

LogicalResult ProgramChecker::checkFinished() {
  std::optional<size_t> blocked;
  for (auto [i, program] : llvm::enumerate(programs))
    if (cursors[i].next < program.transfers.size() && !blocked)
      blocked = i;
  if (!blocked)
    return success();
  // Follow the waits from a blocked program until one repeats: a cycle.
  SmallVector<size_t> chain;
  DenseMap<size_t, size_t> position;
  size_t i = *blocked;
  while (!position.count(i)) {
    position[i] = chain.size();
    chain.push_back(i);
    i = programAt.lookup(waitOf(i).from);
  }
  size_t start = position.lookup(i);
  std::string cycle;
  llvm::raw_string_ostream os(cycle);
  for (size_t k = start; k < chain.size(); ++k) {
    Wait wait = waitOf(chain[k]);
    os << (k == start ? "" : "; ") << describe(programs[chain[k]])
       << " waits at channel " << wait.channel << " for "
       << describe(programs[programAt.lookup(wait.from)]);
  }
  InFlightDiagnostic diag = waitOf(chain[start]).op->emitError()
                            << "the programs deadlock: " << cycle;
  for (size_t k = start + 1; k < chain.size(); ++k)
    diag.attachNote(waitOf(chain[k]).op->getLoc()) << "waiting here";
  return diag;
}

LogicalResult mlir::dist::verifyPrograms(ModuleOp module) {
  ProgramChecker checker(module);
  if (failed(checker.collectPrograms()))
    return failure();
  if (checker.empty())
    return success();
  if (failed(checker.checkLosses()) || failed(checker.matchTransfers()))
    return failure();
  checker.runTransfers();
  return checker.checkFinished();
}
