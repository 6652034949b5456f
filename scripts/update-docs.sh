#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Copies the references generated from ODS (<build>/docs, target mlir-doc)
# into their subdirectories of docs/reference/ (Dialects/, Interfaces/,
# Passes/). With --check, only compares and fails when they are stale (run
# by ctest as `docs-up-to-date`). Files directly in docs/reference/ come
# from other generators (model-coverage.md: bench/model_zoo.py) and are
# left alone.
#
#   scripts/update-docs.sh [--check] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
build=${1:-$root/build}
generated="$build/docs"
committed="$root/docs/reference"

if [ ! -d "$generated" ]; then
  echo "error: no generated docs in '$generated' (build the mlir-doc target)" >&2
  exit 1
fi
# Only the generated Markdown files count.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
(cd "$generated" && find . -name '*.md' -exec cp --parents {} "$stage" \;)

# The subdirectories either side has: the ODS references.
subdirs=$( { (cd "$stage" && find . -mindepth 1 -maxdepth 1 -type d)
             [ -d "$committed" ] && (cd "$committed" && find . -mindepth 1 -maxdepth 1 -type d)
           } | sort -u)

if [ $check -eq 1 ]; then
  stale=0
  for dir in $subdirs; do
    if [ ! -d "$committed/$dir" ] || [ ! -d "$stage/$dir" ]; then
      echo "Only in one of $committed and the generated docs: ${dir#./}" >&2
      stale=1
    elif ! diff -r -u "$committed/$dir" "$stage/$dir"; then
      stale=1
    fi
  done
  if [ $stale -ne 0 ]; then
    echo "error: docs/reference is stale; run scripts/update-docs.sh" >&2
    exit 1
  fi
  echo "docs/reference matches the ODS definitions"
  exit 0
fi
mkdir -p "$committed"
for dir in $subdirs; do
  rm -rf "${committed:?}/$dir"
done
cp -r "$stage"/. "$committed"/
echo "updated $committed"
