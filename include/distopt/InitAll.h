//===- InitAll.h - the dialects DistOpt's tools load ------------*- C++ -*-===//

#ifndef DISTOPT_INITALL_H
#define DISTOPT_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::dist {

/// The project's dialects, the upstream ones training steps are combined
/// with, what the CPU lowering produces, and the bufferization models.
void registerAllDialects(DialectRegistry &registry);

} // namespace mlir::dist

#endif // DISTOPT_INITALL_H
