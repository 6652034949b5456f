//===- DistOpt.cpp - DistOpt's C API --------------------------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// include/distopt-c/: MLIR's handle types, wrapped and unwrapped with MLIR's
// header-only helpers (mlir/CAPI/*.h), so the library needs none of MLIR's
// C API libraries.
//
//===----------------------------------------------------------------------===//

#include "distopt-c/DistOpt.h"
#include "distopt-c/Dialects.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/CostReport.h"
#include "distopt/Dialect/Train/IR/TrainDialect.h"
#include "distopt/InitAll.h"
#include "distopt/Support/DiagnosticText.h"
#include "distopt/Support/ParseSource.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Train, train, mlir::train::TrainDialect)
MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Dist, dist, mlir::dist::DistDialect)

namespace {
/// Sends every diagnostic of `context` raised while it lives to `callback`
/// (stderr when null), as text with its location and notes.
class CallbackDiagnostics {
public:
  CallbackDiagnostics(MLIRContext *context, MlirStringCallback callback,
                      void *userData)
      : handler(context, [=](const std::string &text) {
          if (callback)
            callback(wrap(StringRef(text)), userData);
          else
            llvm::errs() << text << "\n";
        }) {}

private:
  dist::DiagnosticTextHandler handler;
};
} // namespace

void distoptRegisterAllDialects(MlirDialectRegistry registry) {
  dist::registerAllDialects(*unwrap(registry));
}

void distoptRegisterAllPasses(void) { dist::registerAllPasses(); }

MlirContext distoptContextCreate(void) {
  DialectRegistry registry;
  dist::registerAllDialects(registry);
  dist::registerAllPasses();
  return wrap(new MLIRContext(registry));
}

void distoptContextDestroy(MlirContext context) { delete unwrap(context); }

MlirModule distoptModuleParse(MlirContext context, MlirStringRef source,
                              MlirStringRef bufferName,
                              MlirStringCallback diagnostics, void *userData) {
  MLIRContext *ctx = unwrap(context);
  CallbackDiagnostics capture(ctx, diagnostics, userData);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(unwrap(source), unwrap(bufferName)),
      llvm::SMLoc());
  // Refused with an error rather than crashing the caller's process.
  OwningOpRef<ModuleOp> module = dist::parseUserSource(sources, ctx);
  return wrap(module.release());
}

void distoptModuleDestroy(MlirModule module) {
  if (Operation *op = unwrap(module))
    op->erase();
}

MlirLogicalResult distoptModuleVerify(MlirModule module,
                                      MlirStringCallback diagnostics,
                                      void *userData) {
  ModuleOp op = unwrap(module);
  CallbackDiagnostics capture(op.getContext(), diagnostics, userData);
  return wrap(verify(op));
}

MlirLogicalResult distoptModuleRunPipeline(MlirModule module,
                                           MlirStringRef pipeline,
                                           MlirStringCallback diagnostics,
                                           void *userData) {
  ModuleOp op = unwrap(module);
  MLIRContext *context = op.getContext();
  CallbackDiagnostics capture(context, diagnostics, userData);
  dist::registerAllPasses();
  // The passes run on the module (anchored on builtin.module, as dist-opt's
  // are); "builtin.module(...)" around them is accepted too.
  StringRef text = unwrap(pipeline).trim();
  if (text.consume_front("builtin.module(") && !text.consume_back(")")) {
    emitError(UnknownLoc::get(context))
        << "invalid pass pipeline '" << unwrap(pipeline)
        << "': unbalanced 'builtin.module('";
    return mlirLogicalResultFailure();
  }
  PassManager pm(context, ModuleOp::getOperationName());
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(text, pm, errorStream))) {
    emitError(UnknownLoc::get(context))
        << "invalid pass pipeline '" << unwrap(pipeline) << "': " << error;
    return mlirLogicalResultFailure();
  }
  // On a clone, moved into the caller's module (whose handle stays valid)
  // only on success: a failing pass leaves the module as it was.
  OwningOpRef<ModuleOp> work(op.clone());
  if (failed(pm.run(*work)))
    return mlirLogicalResultFailure();
  op.getBodyRegion().takeBody(work->getBodyRegion());
  op->setAttrs(work.get()->getAttrDictionary());
  return mlirLogicalResultSuccess();
}

void distoptModulePrint(MlirModule module, bool generic,
                        MlirStringCallback callback, void *userData) {
  detail::CallbackOstream stream(callback, userData);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  unwrap(module)->print(stream, flags);
  stream.flush();
}

MlirLogicalResult distoptModuleCostReport(MlirModule module,
                                          MlirStringRef format,
                                          MlirStringCallback report,
                                          MlirStringCallback diagnostics,
                                          void *userData) {
  ModuleOp op = unwrap(module);
  CallbackDiagnostics capture(op.getContext(), diagnostics, userData);
  FailureOr<std::string> text = dist::renderCostReport(op, unwrap(format));
  if (failed(text))
    return mlirLogicalResultFailure();
  report(wrap(StringRef(*text)), userData);
  return mlirLogicalResultSuccess();
}
