//===- PlacementSource.cpp - where placed programs came from --------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Dialect/Dist/IR/PlacementSource.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::dist;

static constexpr llvm::StringLiteral kSourceName = "placement_source";

ModuleOp mlir::dist::getPlacementSource(ModuleOp module) {
  for (auto nested : module.getBody()->getOps<ModuleOp>())
    if (nested->hasAttr(DistDialect::kPlacementAttrName))
      return nested;
  return nullptr;
}

bool mlir::dist::isInPlacementSource(Operation *op) {
  for (auto module = op->getParentOfType<ModuleOp>(); module;
       module = module->getParentOfType<ModuleOp>())
    if (module->hasAttr(DistDialect::kPlacementAttrName))
      return true;
  return false;
}

/// Prints `module`'s attributes but its name and record (the module placed
/// again is the kept one, renamed) and its top-level ops but the kept
/// module, in generic form without locations.
static void printForFingerprint(ModuleOp module, raw_ostream &os) {
  OpPrintingFlags flags;
  flags.printGenericOpForm().enableDebugInfo(false).useLocalScope();
  NamedAttrList attrs(module->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  attrs.erase(DistDialect::kPlacementAttrName);
  os << attrs.getDictionary(module.getContext()) << '\n';
  for (Operation &op : module.getBody()->getOperations()) {
    if (op.hasAttr(DistDialect::kPlacementAttrName))
      continue;
    op.print(os, flags);
    os << '\n';
  }
}

std::string mlir::dist::fingerprintPlacedModule(ModuleOp module,
                                                ModuleOp source) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printForFingerprint(module, os);
  os << "placed from\n";
  printForFingerprint(source, os);
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true,
                         /*Width=*/16);
}

void mlir::dist::recordPlacement(ModuleOp module, ModuleOp source,
                                 StringRef pipeline) {
  MLIRContext *context = module.getContext();
  source->setAttr(
      DistDialect::kPlacementAttrName,
      DictionaryAttr::get(
          context,
          {NamedAttribute(StringAttr::get(context, "pipeline"),
                          StringAttr::get(context, pipeline)),
           NamedAttribute(StringAttr::get(context, "fingerprint"),
                          StringAttr::get(context, fingerprintPlacedModule(
                                                       module, source)))}));
}

void mlir::dist::keepPlacementSource(ModuleOp module,
                                     OwningOpRef<ModuleOp> source,
                                     StringRef pipeline) {
  // The kept module keeps its attributes (placing it again gives them back
  // to the programs' module) but its name, and is found by its
  // `dist.placement`.
  ModuleOp kept = source.release();
  kept.setSymName(kSourceName);
  recordPlacement(module, kept, pipeline);
  module.getBody()->push_back(kept);
}

void mlir::dist::erasePlacementSource(ModuleOp module) {
  if (ModuleOp source = getPlacementSource(module))
    source.erase();
}

LogicalResult mlir::dist::verifyPlacementAttr(Operation *op, Attribute attr) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  auto module = dyn_cast<ModuleOp>(op);
  if (!module || !isa_and_nonnull<ModuleOp>(op->getParentOp()))
    return op->emitOpError()
           << "'" << DistDialect::kPlacementAttrName
           << "' must be on a module nested in a module of placed programs";
  if (!dict || !dict.getAs<StringAttr>("pipeline") ||
      !dict.getAs<StringAttr>("fingerprint") || dict.size() != 2)
    return op->emitOpError()
           << "'" << DistDialect::kPlacementAttrName
           << "' must be a dictionary of two strings, 'pipeline' and "
              "'fingerprint'";
  return success();
}
