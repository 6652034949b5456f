//===- RunBindings.h - distopt._distopt.run ---------------------*- C++ -*-===//
//
// Part of the DistOpt project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_PYTHON_RUNBINDINGS_H
#define DISTOPT_PYTHON_RUNBINDINGS_H

#include <pybind11/pybind11.h>

namespace distopt::python {
/// Adds `run` and `check_output_target` to the extension module `m`;
/// failures raise `error` (distopt.DistOptError).
void bindRun(pybind11::module_ &m, pybind11::object error);
} // namespace distopt::python

#endif // DISTOPT_PYTHON_RUNBINDINGS_H
