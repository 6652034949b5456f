//===- RunOptions.h - RunConfig from dist-run's option names ----*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A front end that takes options by name (the C API, Python's
// `_distopt.run(options=...)`) sets a RunConfig through setRunOption():
// dist-run's names without the dashes ("steps", "checkpoint-dir", ...) and
// its values as text, checked as dist-run's command line checks them.
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_RUNOPTIONS_H
#define DISTOPT_RUNNER_RUNOPTIONS_H

#include "distopt/Runner/Run.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace distopt::runner {

/// Sets option `name` (dist-run's, without "--"; "module", "state" and
/// "data" name files) of `config` to `value`: booleans "true"/"false"
/// ("1"/"0"), counts and seconds as numbers. An error names the option and
/// the value when either is not one dist-run takes.
llvm::Error setRunOption(RunConfig &config, llvm::StringRef name,
                         llvm::StringRef value);

/// The option names setRunOption() takes, in dist-run's order.
llvm::ArrayRef<llvm::StringRef> getRunOptionNames();

/// The checks dist-run makes of its options together (--data with
/// --dataset, --epochs without a dataset, --control without epochs, ...);
/// run() makes them first.
llvm::Error checkRunConfig(const RunConfig &config);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_RUNOPTIONS_H
