//===- Module.cpp - distopt._distopt: the Python extension ----------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A pybind11 module over the C++ API: a context with every DistOpt dialect
// and pass, and modules to parse, verify, print, transform with a pass
// pipeline and report on. Diagnostics are collected and raised as
// distopt.DistOptError. The pure-Python package (distopt/) builds on it.
//
//===----------------------------------------------------------------------===//

#include "RunBindings.h"

#include "distopt/Analysis/Cluster.h"
#include "distopt/Dialect/Dist/Transforms/CostReport.h"
#include "distopt/InitAll.h"
#include "distopt/Support/DiagnosticText.h"
#include "distopt/Support/ParseSource.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

namespace py = pybind11;
using namespace mlir;

namespace {
/// The context every module of the process lives in: DistOpt's dialects,
/// its passes registered once. Multithreading off: Python calls one at a
/// time and the passes gain little on 2 cores.
std::shared_ptr<MLIRContext> getContext() {
  static std::shared_ptr<MLIRContext> context = [] {
    DialectRegistry registry;
    dist::registerAllDialects(registry);
    dist::registerAllPasses();
    auto created = std::make_shared<MLIRContext>(registry);
    created->disableMultithreading();
    return created;
  }();
  return context;
}

/// Collects the diagnostics raised while it lives as text, one per line.
class Diagnostics {
public:
  explicit Diagnostics(MLIRContext *context)
      : handler(context,
                [this](const std::string &each) { text += each + "\n"; }) {}
  const std::string &str() const { return text; }

private:
  std::string text;
  dist::DiagnosticTextHandler handler;
};

/// A module and the context that keeps it alive.
class PyModule {
public:
  PyModule(std::shared_ptr<MLIRContext> context, OwningOpRef<ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  static PyModule parse(const std::string &text, const std::string &name) {
    std::shared_ptr<MLIRContext> context = getContext();
    Diagnostics diagnostics(context.get());
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name),
                               llvm::SMLoc());
    // Input that would crash the parser (and the interpreter) is refused.
    OwningOpRef<ModuleOp> module =
        dist::parseUserSource(sources, context.get());
    if (!module)
      throw Error("cannot parse " + name, diagnostics.str());
    return PyModule(context, std::move(module));
  }

  void verify() {
    Diagnostics diagnostics(context.get());
    if (failed(mlir::verify(*module)))
      throw Error("the module does not verify", diagnostics.str());
  }

  /// Runs `pipeline` (the passes, or "builtin.module(...)" around them);
  /// returns the remarks and warnings it raised. It runs on a copy, which
  /// replaces the module only when every pass succeeded: a failed pipeline
  /// leaves the module as it was, not half rewritten.
  std::string runPipeline(const std::string &pipeline) {
    Diagnostics diagnostics(context.get());
    StringRef text = StringRef(pipeline).trim();
    if (text.consume_front("builtin.module(") && !text.consume_back(")"))
      throw Error("invalid pass pipeline '" + pipeline + "'",
                  "unbalanced 'builtin.module('\n");
    PassManager pm(context.get(), ModuleOp::getOperationName());
    std::string error;
    llvm::raw_string_ostream errorStream(error);
    if (failed(parsePassPipeline(text, pm, errorStream)))
      throw Error("invalid pass pipeline '" + pipeline + "'", error + "\n");
    OwningOpRef<ModuleOp> work(module->clone());
    if (failed(pm.run(*work)))
      throw Error("'" + pipeline + "' failed", diagnostics.str());
    module = std::move(work);
    return diagnostics.str();
  }

  std::string costReport(const std::string &format) {
    Diagnostics diagnostics(context.get());
    FailureOr<std::string> report = dist::renderCostReport(*module, format);
    if (failed(report))
      throw Error("no cost report", diagnostics.str());
    return *report;
  }

  std::string str(bool generic) {
    std::string text;
    llvm::raw_string_ostream os(text);
    OpPrintingFlags flags;
    if (generic)
      flags.printGenericOpForm();
    module->print(os, flags);
    return text;
  }

  PyModule clone() {
    return PyModule(context, OwningOpRef<ModuleOp>(module->clone()));
  }

  /// A failure with its diagnostics (raised as distopt.DistOptError).
  struct Error {
    Error(std::string what, std::string diagnostics)
        : what(std::move(what)), diagnostics(std::move(diagnostics)) {}
    std::string what, diagnostics;
  };

private:
  std::shared_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};
} // namespace

PYBIND11_MODULE(_distopt, m) {
  m.doc() = "DistOpt's compiler: parse, verify, distribute and lower "
            "training steps (see the distopt package)";
  static py::exception<PyModule::Error> error(m, "DistOptError");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const PyModule::Error &e) {
      std::string message = e.what;
      if (!e.diagnostics.empty())
        message += ":\n" + e.diagnostics;
      py::object type = error;
      py::object exception = type(message);
      exception.attr("diagnostics") = e.diagnostics;
      PyErr_SetObject(type.ptr(), exception.ptr());
    }
  });
  py::class_<PyModule>(m, "Module")
      .def_static("parse", &PyModule::parse, py::arg("text"),
                  py::arg("name") = "<string>",
                  "Parses MLIR text (a training step) into a module.")
      .def("verify", &PyModule::verify, "Runs the op verifiers.")
      .def("run_pipeline", &PyModule::runPipeline, py::arg("pipeline"),
           "Runs a pass pipeline in place; returns its remarks.")
      .def("cost_report", &PyModule::costReport, py::arg("format") = "json",
           "The --dist-cost-report text ('text' or 'json').")
      .def("to_string", &PyModule::str, py::arg("generic") = false)
      .def("clone", &PyModule::clone);
  m.def(
      "cluster_description",
      [](const std::string &presetOrText, const std::string &where) {
        // A preset's name, else the JSON text of a description: its
        // canonical form, every field checked.
        llvm::Expected<mlir::dist::ClusterSpec> cluster =
            where.empty() ? mlir::dist::getClusterPreset(presetOrText)
                          : mlir::dist::parseCluster(presetOrText, where);
        if (!cluster)
          throw py::value_error(llvm::toString(cluster.takeError()));
        return llvm::formatv("{0:2}", mlir::dist::toJSON(*cluster)).str();
      },
      py::arg("preset_or_text"), py::arg("where") = "",
      "A cluster description as canonical JSON: the preset named "
      "`preset_or_text` (where empty), else that JSON text checked "
      "(errors name `where` and the field).");
  m.def("cluster_presets", &mlir::dist::getClusterPresetNames,
        "The names of the cluster presets.");
  distopt::python::bindRun(m, error);
}
