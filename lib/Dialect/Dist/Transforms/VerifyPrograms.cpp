//===- VerifyPrograms.cpp - MPMD programs: matched, placed, no deadlock ---===//
//
// `dist-verify` on the programs of a pipelined or parameter-server step
// (functions with `dist.place`): every op placed, every send received with
// its type, and the programs deadlock-free. The deadlock check runs the
// programs' sends and receives together, as the runtime would with
// buffered (nonblocking) sends: a program stops at a receive whose send has
// not happened yet; when every unfinished program is stopped, the waits
// form a cycle, which the diagnostic spells out.
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

LogicalResult mlir::dist::verifyPrograms(ModuleOp module) {
  SmallVector<Program> programs;
  DenseMap<Attribute, size_t> programAt;
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
      if (isa<SendOp, RecvOp>(op))
        program.transfers.push_back(&op);
      else if (!isa<FragmentOp, func::ReturnOp>(op))
        return op.emitError()
               << "is not placed: a program of " << place
               << " holds only dist.fragment, dist.send and dist.recv";
    }
    programs.push_back(std::move(program));
  }
  if (programs.empty())
    return success();
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

  // Matching.
  DenseMap<TransferKey, SendOp> sends;
  DenseMap<TransferKey, RecvOp> recvs;
  for (const Program &program : programs) {
    for (Operation *op : program.transfers) {
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
      InFlightDiagnostic diag =
          recv.emitError() << "receives " << recv.getType()
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

  // Deadlock: run the transfers of every program together.
  SmallVector<size_t> next(programs.size(), 0);
  DenseSet<TransferKey> sent;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto [i, program] : llvm::enumerate(programs)) {
      for (; next[i] < program.transfers.size(); ++next[i], progress = true) {
        Operation *op = program.transfers[next[i]];
        if (auto send = dyn_cast<SendOp>(op)) {
          sent.insert({program.place, send.getTo(),
                       static_cast<int64_t>(send.getChannel())});
          continue;
        }
        auto recv = cast<RecvOp>(op);
        if (!sent.contains({recv.getFrom(), program.place,
                            static_cast<int64_t>(recv.getChannel())}))
          break;
      }
    }
  }
  std::optional<size_t> blocked;
  for (auto [i, program] : llvm::enumerate(programs))
    if (next[i] < program.transfers.size() && !blocked)
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
    auto recv = cast<RecvOp>(programs[i].transfers[next[i]]);
    i = programAt.lookup(recv.getFrom());
  }
  size_t start = position.lookup(i);
  std::string cycle;
  llvm::raw_string_ostream os(cycle);
  for (size_t k = start; k < chain.size(); ++k) {
    const Program &program = programs[chain[k]];
    auto recv = cast<RecvOp>(program.transfers[next[chain[k]]]);
    os << (k == start ? "" : "; ") << describe(program) << " waits at channel "
       << recv.getChannel() << " for "
       << describe(programs[programAt.lookup(recv.getFrom())]);
  }
  InFlightDiagnostic diag =
      programs[chain[start]].transfers[next[chain[start]]]->emitError()
      << "the programs deadlock: " << cycle;
  for (size_t k = start + 1; k < chain.size(); ++k)
    diag.attachNote(programs[chain[k]].transfers[next[chain[k]]]->getLoc())
        << "waiting here";
  return diag;
}
