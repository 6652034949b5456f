//===- RunBindings.cpp - distopt._distopt.run: training in this process ---===//
//
// Part of the DistOpt project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// `_distopt.run(module_text, state, data, options, on_event)`: the runner
// library's run() on NumPy arrays, in this process (no dist-run, no
// files): the options by dist-run's names (setRunOption), the events to a
// Python callable as dicts while the step trains (the GIL released
// between them), the final state and the losses back as arrays. And the
// one safe writer's check and in-place open for distopt.output.
//
//===----------------------------------------------------------------------===//

#include "RunBindings.h"

#include "distopt/Runner/Run.h"
#include "distopt/Runner/RunOptions.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <cstring>

namespace py = pybind11;
using namespace distopt::runner;

namespace {
// NumPy arrays cross through Python's buffer protocol and NumPy's own
// functions, not pybind11/numpy.h: Debian's pybind11 2.10 predates NumPy
// 2's array layout (the venv's NumPy is 2.4), and reads item sizes of 0.

/// `value` as runner arrays: a C-ordered copy of its elements, its NumPy
/// dtype string and shape; throws TypeError for any other dtype.
Array toArray(const py::handle &value, const std::string &name,
              const char *what) {
  py::module_ numpy = py::module_::import("numpy");
  py::object array;
  try {
    // (asarray keeps a 0-d array 0-d; ascontiguousarray makes it 1-d.)
    array = numpy.attr("asarray")(value, py::arg("order") = "C");
  } catch (py::error_already_set &) {
    throw py::type_error(std::string(what) + " '" + name + "' is not an array");
  }
  Array out;
  out.dtype = py::str(array.attr("dtype").attr("str"));
  if (out.dtype != "<f4" && out.dtype != "<f8" && out.dtype != "<i4" &&
      out.dtype != "<i8")
    throw py::type_error(std::string(what) + " '" + name + "' has dtype " +
                         py::str(array.attr("dtype")).cast<std::string>() +
                         ": the runner takes float32, float64, int32 or "
                         "int64");
  for (py::handle extent : array.attr("shape"))
    out.shape.push_back(extent.cast<int64_t>());
  py::buffer_info info = py::buffer(array).request();
  const char *data = static_cast<const char *>(info.ptr);
  out.bytes.assign(data, data + info.size * info.itemsize);
  return out;
}

Arrays toArrays(const py::dict &dict, const char *what) {
  Arrays arrays;
  for (auto [key, value] : dict) {
    std::string name = py::str(key);
    arrays[name] = toArray(value, name, what);
  }
  return arrays;
}

/// A writable NumPy array holding a copy of `array`.
py::object toNumPy(const Array &array) {
  py::object bytes = py::reinterpret_steal<py::object>(
      PyByteArray_FromStringAndSize(array.bytes.data(), array.bytes.size()));
  if (!bytes)
    throw py::error_already_set();
  py::tuple shape(array.shape.size());
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape[i] = py::int_(array.shape[i]);
  return py::module_::import("numpy")
      .attr("frombuffer")(bytes, py::arg("dtype") = array.dtype)
      .attr("reshape")(shape);
}

/// Raises `error` (DistOptError) with the runner's message of `failure`.
[[noreturn]] void raise(const py::object &error, llvm::Error failure) {
  std::string message = takeErrorMessage(std::move(failure));
  PyErr_SetString(error.ptr(), message.c_str());
  throw py::error_already_set();
}

py::dict toDict(const Arrays &arrays) {
  py::dict out;
  for (const auto &[name, array] : arrays)
    out[py::str(name)] = toNumPy(array);
  return out;
}

/// This build's dist-run: its lib directory holds the runtime libraries
/// the step links, and it keys the compile cache.
std::string getToolPath() {
  return py::str(py::module_::import("distopt._config").attr("DIST_RUN"));
}

/// Hands each event to the Python callable (holding the GIL); an exception
/// it raises, or a pending KeyboardInterrupt, is kept and stops the run at
/// the next chance (nothing throws through the runner).
class PythonObserver : public RunObserver {
public:
  explicit PythonObserver(py::object callback)
      : callback(std::move(callback)) {}

  void onEvent(const llvm::json::Object &event) override {
    py::gil_scoped_acquire gil;
    if (pending)
      return;
    if (PyErr_CheckSignals() != 0) {
      pending = std::make_unique<py::error_already_set>();
      return;
    }
    if (callback.is_none())
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(llvm::json::Object(event));
    try {
      py::object dict = py::module_::import("json").attr("loads")(text);
      py::object answer = callback(dict);
      if (dict["event"].cast<std::string>() == "epoch_end")
        lastAnswer = answer.is_none() || answer.cast<bool>();
    } catch (py::error_already_set &error) {
      pending = std::make_unique<py::error_already_set>(std::move(error));
    }
  }

  llvm::Expected<bool> continueAfterEpoch(uint64_t) override {
    return !pending && lastAnswer;
  }

  bool stopRequested() override {
    if (pending)
      return true;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0)
      pending = std::make_unique<py::error_already_set>();
    return pending != nullptr;
  }

  /// Raises what the callback raised (or the KeyboardInterrupt), if any.
  void rethrow() {
    if (pending) {
      std::unique_ptr<py::error_already_set> error = std::move(pending);
      throw std::move(*error);
    }
  }

private:
  py::object callback;
  std::unique_ptr<py::error_already_set> pending;
  bool lastAnswer = true;
};

py::dict run(const std::string &moduleText, const py::object &state,
             const py::object &data, const py::dict &options,
             const py::object &onEvent, const py::object &error) {
  RunConfig config;
  config.moduleText = moduleText;
  config.modulePath = "<module>";
  if (!state.is_none()) {
    config.state = toArrays(state.cast<py::dict>(), "state array");
    config.statePath = "<state arrays>";
  }
  if (!data.is_none()) {
    config.data = toArrays(data.cast<py::dict>(), "data array");
    config.dataPath = "<data arrays>";
  }
  config.print = false;
  config.toolPath = getToolPath();
  for (auto [key, value] : options) {
    std::string name = py::str(key);
    std::string text = py::isinstance<py::bool_>(value)
                           ? (value.cast<bool>() ? "true" : "false")
                           : py::str(value).cast<std::string>();
    if (llvm::Error failure = setRunOption(config, name, text))
      throw py::value_error(takeErrorMessage(std::move(failure)));
  }
  PythonObserver observer(onEvent);
  std::optional<llvm::Expected<RunResult>> result;
  {
    py::gil_scoped_release release;
    result.emplace(distopt::runner::run(config, &observer));
  }
  observer.rethrow();
  if (!*result)
    raise(error, result->takeError());
  RunResult &done = **result;
  py::dict arrays = toDict(done.state);
  py::list evaluations;
  for (const EvaluationRecord &record : done.evaluations) {
    py::dict each;
    each["step"] = record.step;
    each["epoch"] = record.epoch ? py::cast(*record.epoch) : py::none();
    each["loss"] = record.loss;
    each["accuracy"] =
        record.accuracy ? py::cast(*record.accuracy) : py::none();
    each["samples"] = record.samples;
    evaluations.append(each);
  }
  py::dict out;
  out["state"] = arrays;
  out["loss"] = toNumPy(makeFloatArray(done.losses));
  out["evaluations"] = evaluations;
  out["resumed_from"] =
      done.resumedFrom ? py::cast(*done.resumedFrom) : py::none();
  out["steps_done"] = done.stepsDone;
  out["stopped_early"] = done.stoppedEarly;
  return out;
}
} // namespace

void distopt::python::bindRun(py::module_ &m, py::object error) {
  m.def(
      "run",
      [error](const std::string &moduleText, const py::object &state,
              const py::object &data, const py::dict &options,
              const py::object &onEvent) {
        return run(moduleText, state, data, options, onEvent, error);
      },
      py::arg("module_text"), py::arg("state") = py::none(),
      py::arg("data") = py::none(), py::arg("options") = py::dict(),
      py::arg("on_event") = py::none(),
      "Trains the step in this process as dist-run does (options by "
      "dist-run's names); calls on_event(dict) for every event (False on an "
      "'epoch_end' stops the run); returns {'state', 'loss', 'evaluations', "
      "'resumed_from', 'steps_done', 'stopped_early'}.");
  m.def(
      "init",
      [error](const std::string &moduleText, uint64_t seed, bool withData) {
        RunConfig config;
        config.moduleText = moduleText;
        config.modulePath = "<module>";
        config.toolPath = getToolPath();
        config.print = false;
        config.seed = seed;
        std::optional<llvm::Expected<std::pair<Arrays, Arrays>>> made;
        {
          py::gil_scoped_release release;
          made.emplace(initStateAndData(config, withData));
        }
        if (!*made)
          raise(error, made->takeError());
        return py::make_tuple(toDict((*made)->first),
                              withData ? py::object(toDict((*made)->second))
                                       : py::object(py::none()));
      },
      py::arg("module_text"), py::arg("seed") = 0, py::arg("with_data") = true,
      "dist-run --init-state / --init-data in this process: (state, batch "
      "or None) as dicts of arrays.");
  m.def(
      "read_checkpoint",
      [error](const std::string &directory) {
        std::string exported;
        llvm::Expected<Arrays> arrays =
            readNewestCheckpoint(directory, &exported);
        if (!arrays)
          raise(error, arrays.takeError());
        return py::make_tuple(toDict(*arrays), exported);
      },
      py::arg("checkpoint_dir"),
      "The newest complete checkpoint of the directory as global arrays "
      "(and 'loss'), and its own directory (dist-run --export's reading).");
  m.def(
      "export_checkpoint",
      [error](const std::string &directory, const std::string &outPath) {
        llvm::Expected<std::string> exported =
            exportCheckpoint(directory, outPath);
        if (!exported)
          raise(error, exported.takeError());
        return *exported;
      },
      py::arg("checkpoint_dir"), py::arg("out"),
      "dist-run --export in this process: the newest complete checkpoint "
      "written to the npz `out` through the safe writer; returns the "
      "checkpoint's directory.");
  m.def(
      "check_output_target",
      [error](const std::string &what, const std::string &path,
              const std::string &kind,
              const std::vector<std::pair<std::string, std::string>> &inputs) {
        OutputKind outputKind = kind == "directory" ? OutputKind::directory
                                : kind == "stream"  ? OutputKind::stream
                                                    : OutputKind::file;
        if (kind != "file" && kind != "directory" && kind != "stream")
          throw py::value_error("kind must be file, directory or stream, "
                                "not '" +
                                kind + "'");
        if (llvm::Error failure =
                distopt::checkOutputTarget(what, path, outputKind, inputs)) {
          std::string message = llvm::toString(std::move(failure));
          PyErr_SetString(error.ptr(), message.c_str());
          throw py::error_already_set();
        }
      },
      py::arg("what"), py::arg("path"), py::arg("kind") = "file",
      py::arg("inputs") = std::vector<std::pair<std::string, std::string>>(),
      "The one safe writer's check (SafeOutput.h): raises DistOptError "
      "naming `what` and `path` unless a `kind` output can be written "
      "there; `inputs`: (what, path) pairs it must not be.");
  m.def(
      "open_output_in_place",
      [error](const std::string &what, const std::string &path, bool append,
              const std::string &kind) {
        if (kind != "file" && kind != "stream")
          throw py::value_error("kind must be file or stream, not '" + kind +
                                "'");
        llvm::Expected<int> fd = distopt::openOutputInPlace(
            what, path, append,
            kind == "stream" ? OutputKind::stream : OutputKind::file);
        if (!fd) {
          std::string message = llvm::toString(fd.takeError());
          PyErr_SetString(error.ptr(), message.c_str());
          throw py::error_already_set();
        }
        return *fd;
      },
      py::arg("what"), py::arg("path"), py::arg("append"),
      py::arg("kind") = "file",
      "The one safe writer's in-place open (SafeOutput.h "
      "openOutputInPlace): a descriptor for a log written in place, "
      "checked before and on the open file; raises DistOptError.");
}
