//===- Agreement.h - the ranks agree on what they run -----------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Every rank of a job must run the same module with the same options on the
// same inputs: a rank with another --steps would wait forever in a
// collective the others never start again, one with other state would
// silently train another model. At start-up each rank hashes each item and
// the ranks compare the hashes (an all-gather over the world).
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_RUNNER_AGREEMENT_H
#define DISTOPT_RUNNER_AGREEMENT_H

#include "distopt/Runner/Npz.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace distopt::runner {

/// One thing every rank must hold the same: `what` ("--state") and `noun`
/// ("contents", "value", "text") name it in messages.
struct AgreementItem {
  std::string what;
  std::string noun;
  uint64_t hash;
};

uint64_t hashText(llvm::StringRef text);
/// A hash of the names, types, shapes and bytes of `arrays`.
uint64_t hashArrays(const Arrays &arrays);
/// A hash of the files `names` (".npy" appended) of dataset `directory`:
/// each name and its bytes (header and data: dtype, shape, contents), in
/// one pass over them (xxh3, several GB/s once cached). False with `error`
/// set when one cannot be read.
bool hashDataset(llvm::StringRef directory, llvm::ArrayRef<std::string> names,
                 uint64_t &hash, std::string &error);
/// `hash` as a data fingerprint: "xxh3:" and 16 hex digits.
std::string formatFingerprint(uint64_t hash);

/// Compares `items` across the ranks (every rank passes the same items in
/// the same order); on a mismatch fails with "ranks disagree on WHAT: rank
/// R's NOUN differ(s) from rank 0's", for the first item that differs.
llvm::Error checkRanksAgree(llvm::ArrayRef<AgreementItem> items);

} // namespace distopt::runner

#endif // DISTOPT_RUNNER_AGREEMENT_H
