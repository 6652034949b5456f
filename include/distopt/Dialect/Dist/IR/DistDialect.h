//===- DistDialect.h - dist dialect -----------------------------*- C++ -*-===//

#ifndef DISTOPT_DIALECT_DIST_IR_DISTDIALECT_H
#define DISTOPT_DIALECT_DIST_IR_DISTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "distopt/Dialect/Dist/IR/DistOpsDialect.h.inc"

#endif // DISTOPT_DIALECT_DIST_IR_DISTDIALECT_H
