//===- Run.cpp - running a training step from C ---------------------------===//
//
// Part of the DistOpt project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// include/distopt-c/Run.h over the runner library: the options go through
// setRunOption() (the names and checks of dist-run), the run through
// runner::run() with an observer that forwards the events as JSON text.
//
//===----------------------------------------------------------------------===//

#include "distopt-c/Run.h"

#include "distopt/Runner/Npz.h"
#include "distopt/Runner/Run.h"
#include "distopt/Runner/RunOptions.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace distopt::runner;

namespace {
/// What a DistoptRun handle points to.
struct CRun {
  RunConfig config;
  std::vector<std::pair<std::string, Array>> results;
  uint64_t stepsDone = 0;
  bool stoppedEarly = false;
};

CRun *unwrap(DistoptRun run) { return static_cast<CRun *>(run.ptr); }

/// Reports `message` to `diagnostics` (stderr when null) and fails.
MlirLogicalResult failWith(const std::string &message,
                           MlirStringCallback diagnostics, void *userData) {
  if (diagnostics)
    diagnostics(mlirStringRefCreate(message.data(), message.size()), userData);
  else
    llvm::errs() << message << "\n";
  return mlirLogicalResultFailure();
}

/// Forwards the run's events to the C callbacks.
class CallbackObserver : public RunObserver {
public:
  CallbackObserver(MlirStringCallback events,
                   DistoptEpochCallback continueAfterEpoch, void *userData)
      : events(events), epochCallback(continueAfterEpoch), userData(userData) {}

  void onEvent(const llvm::json::Object &event) override {
    if (!events)
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(llvm::json::Object(event));
    events(mlirStringRefCreate(text.data(), text.size()), userData);
  }

  llvm::Expected<bool> continueAfterEpoch(uint64_t epoch) override {
    return !epochCallback || epochCallback(intptr_t(epoch), userData);
  }

private:
  MlirStringCallback events;
  DistoptEpochCallback epochCallback;
  void *userData;
};

const Array *getResult(DistoptRun run, intptr_t index) {
  CRun *state = unwrap(run);
  if (index < 0 || size_t(index) >= state->results.size())
    return nullptr;
  return &state->results[index].second;
}
} // namespace

DistoptRun distoptRunCreate(void) { return DistoptRun{new CRun()}; }

void distoptRunDestroy(DistoptRun run) { delete unwrap(run); }

MlirLogicalResult distoptRunSetOption(DistoptRun run, MlirStringRef name,
                                      MlirStringRef value,
                                      MlirStringCallback diagnostics,
                                      void *userData) {
  if (llvm::Error error =
          setRunOption(unwrap(run)->config, unwrap(name), unwrap(value)))
    return failWith(takeErrorMessage(std::move(error)), diagnostics, userData);
  return mlirLogicalResultSuccess();
}

MlirLogicalResult distoptRunSetArray(DistoptRun run, DistoptArrayKind kind,
                                     MlirStringRef name, MlirStringRef dtype,
                                     intptr_t rank, const int64_t *shape,
                                     const void *data,
                                     MlirStringCallback diagnostics,
                                     void *userData) {
  std::string arrayName = unwrap(name).str();
  Array array;
  array.dtype = unwrap(dtype).str();
  if (array.dtype != "<f4" && array.dtype != "<f8" && array.dtype != "<i4" &&
      array.dtype != "<i8")
    return failWith("array '" + arrayName + "': dtype '" + array.dtype +
                        "' is not one of <f4, <f8, <i4, <i8",
                    diagnostics, userData);
  if (rank < 0 || (rank > 0 && !shape))
    return failWith("array '" + arrayName + "': no shape", diagnostics,
                    userData);
  for (intptr_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return failWith("array '" + arrayName + "': extent " +
                          std::to_string(shape[i]) + " of dimension " +
                          std::to_string(i) + " is negative",
                      diagnostics, userData);
    array.shape.push_back(shape[i]);
  }
  int64_t bytes = array.getNumElements() * (array.dtype[2] == '4' ? 4 : 8);
  if (bytes && !data)
    return failWith("array '" + arrayName + "': no data", diagnostics,
                    userData);
  const char *begin = static_cast<const char *>(data);
  array.bytes.assign(begin, begin + bytes);
  RunConfig &config = unwrap(run)->config;
  std::optional<Arrays> &arrays =
      kind == DistoptArrayData ? config.data : config.state;
  if (!arrays)
    arrays.emplace();
  (*arrays)[arrayName] = std::move(array);
  return mlirLogicalResultSuccess();
}

MlirLogicalResult distoptRunExecute(DistoptRun run, MlirModule module,
                                    MlirStringCallback events,
                                    DistoptEpochCallback continueAfterEpoch,
                                    MlirStringCallback diagnostics,
                                    void *userData) {
  CRun *state = unwrap(run);
  state->results.clear();
  state->stepsDone = 0;
  state->stoppedEarly = false;
  RunConfig config = state->config;
  std::string text;
  llvm::raw_string_ostream os(text);
  unwrap(module).print(os);
  config.moduleText = std::move(text);
  if (config.modulePath.empty())
    config.modulePath = "<C API module>";
  // Arrays set one by one complete or replace those of the npz option
  // (a trained state handed back with the file's hyperparameters).
  for (auto [path, arrays, what] :
       {std::tuple(&config.statePath, &config.state, "<state arrays>"),
        std::tuple(&config.dataPath, &config.data, "<data arrays>")}) {
    if (!*arrays)
      continue;
    if (path->empty()) {
      *path = what;
      continue;
    }
    Arrays fromFile;
    std::string error;
    if (!readNpz(*path, fromFile, error))
      return failWith(error, diagnostics, userData);
    for (auto &[name, array] : **arrays)
      fromFile[name] = std::move(array);
    *arrays = std::move(fromFile);
  }
  // The library's own printing of losses stays off: the caller has events.
  config.print = false;
  CallbackObserver observer(events, continueAfterEpoch, userData);
  llvm::Expected<RunResult> result = distopt::runner::run(config, &observer);
  if (!result)
    return failWith(takeErrorMessage(result.takeError()), diagnostics,
                    userData);
  for (auto &[name, array] : result->state)
    state->results.emplace_back(name, std::move(array));
  state->results.emplace_back("loss", makeFloatArray(result->losses));
  llvm::sort(state->results,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  state->stepsDone = result->stepsDone;
  state->stoppedEarly = result->stoppedEarly;
  return mlirLogicalResultSuccess();
}

intptr_t distoptRunGetNumResults(DistoptRun run) {
  return unwrap(run)->results.size();
}

MlirStringRef distoptRunGetResultName(DistoptRun run, intptr_t index) {
  CRun *state = unwrap(run);
  if (!getResult(run, index))
    return mlirStringRefCreate(nullptr, 0);
  const std::string &name = state->results[index].first;
  return mlirStringRefCreate(name.data(), name.size());
}

MlirStringRef distoptRunGetResultDtype(DistoptRun run, intptr_t index) {
  const Array *array = getResult(run, index);
  return array ? mlirStringRefCreate(array->dtype.data(), array->dtype.size())
               : mlirStringRefCreate(nullptr, 0);
}

intptr_t distoptRunGetResultRank(DistoptRun run, intptr_t index) {
  const Array *array = getResult(run, index);
  return array ? intptr_t(array->shape.size()) : -1;
}

const int64_t *distoptRunGetResultShape(DistoptRun run, intptr_t index) {
  const Array *array = getResult(run, index);
  return array ? array->shape.data() : nullptr;
}

const void *distoptRunGetResultData(DistoptRun run, intptr_t index) {
  const Array *array = getResult(run, index);
  return array ? array->bytes.data() : nullptr;
}

intptr_t distoptRunGetStepsDone(DistoptRun run) {
  return unwrap(run)->stepsDone;
}

bool distoptRunStoppedEarly(DistoptRun run) {
  return unwrap(run)->stoppedEarly;
}
