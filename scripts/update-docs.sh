#!/usr/bin/env bash
# Copies the references generated from ODS (<build>/docs, target mlir-doc)
# into docs/reference/. With --check, only compares and fails when
# docs/reference/ is stale (run by ctest as `docs-up-to-date`).
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

if [ $check -eq 1 ]; then
  if ! diff -r -u "$committed" "$stage"; then
    echo "error: docs/reference is stale; run scripts/update-docs.sh" >&2
    exit 1
  fi
  echo "docs/reference matches the ODS definitions"
  exit 0
fi
rm -rf "$committed"
mkdir -p "$committed"
cp -r "$stage"/. "$committed"/
echo "updated $committed"
