#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# AddressSanitizer + UndefinedBehaviorSanitizer build of DistOpt's own code
# (clang-22; Debian's libMLIR stays uninstrumented), then, under the
# sanitizers: the gtest unit tests, the lit suite without the integration
# tests, a few dist-run integration runs (one process and mpirun -np 2,
# compared), the fuzz-regressions test, and a bounded fuzzing run of
# dist-fuzz (scripts/fuzz.sh) seeded with every lit input.
#
#   scripts/sanitize.sh          all of it (what CI runs)
#   scripts/sanitize.sh build    only install what is missing, configure, build
#
# Fails on the first failing test or sanitizer report. Environment:
#   DISTOPT_ASAN_BUILD_DIR  build directory (default: <repo>/build-asan)
#   DISTOPT_JOBS            parallel build jobs (default: all cores)
#   DISTOPT_FUZZ_SECONDS    fuzzing time (default: 120)
# The runs' sanitizer settings are scripts/sanitizers/env.sh; the reasons,
# and how to reproduce a report, are in docs/guides/testing.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DISTOPT_ASAN_BUILD_DIR:-$root/build-asan}
jobs=${DISTOPT_JOBS:-$(nproc)}
job=${1:-all}
llvm=/usr/lib/llvm-22

case "$job" in
  all|build) ;;
  *) echo "usage: $0 [build]" >&2; exit 2 ;;
esac

start=$SECONDS
phase_start=$SECONDS
phase() {
  echo "== $* ($((SECONDS - start)) s so far)"
}

# --- system packages (scripts/setup.sh's, plus clang and its runtimes) ------
phase "system packages"
source "$root/scripts/packages.sh"
install_packages "${distopt_packages[@]}" clang-22 libclang-rt-22-dev \
  python3-psutil

# --- configure and build ----------------------------------------------------
# -O1 with line tables: readable reports, a fast enough build on 2 cores.
# No NDEBUG: the project's assertions and MLIR's inline ones (cast<>, ...)
# run in its code.
# Paths below the repository hash relative, and the line tables' build
# directory does not count, so a fresh clone elsewhere (CI) hits the cache.
# (As scripts/setup.sh, the launcher carries it for a plain `ninja` later.)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
launcher="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=true;ccache"
if [ ! -f "$build/build.ninja" ]; then
  phase "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    -DMLIR_DIR=$llvm/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=$llvm/bin/lit \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" \
    "-DDISTOPT_SANITIZE=address;undefined" \
    -DDISTOPT_ENABLE_FUZZER=ON \
    -DDISTOPT_BUILD_PYTHON=OFF
elif [ "$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' \
          "$build/CMakeCache.txt")" != "$launcher" ]; then
  # (A build directory configured before the launcher carried the setting.)
  phase "reconfiguring $build: compiler launcher $launcher"
  cmake "$build" "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
fi
phase "building $build"
cmake --build "$build" -j "$jobs"
[ "$job" = build ] && exit 0

# shellcheck source=scripts/sanitizers/env.sh
source "$root/scripts/sanitizers/env.sh"

# --- tests ------------------------------------------------------------------
phase "unit tests and fuzz regressions (ctest -L 'unit|fuzz')"
ctest --test-dir "$build" -L 'unit|fuzz' --output-on-failure -j "$jobs"

# (A test that hangs under the sanitizers fails by name after 15 minutes,
# instead of holding CI to its limit: lit's --timeout needs psutil.)
phase "lit without the integration tests"
"$llvm/bin/lit" -s -j "$jobs" --timeout=900 --filter-out "Integration/" \
  "$build/test"

phase "integration runs: examples/mlp.mlir on one process and mirrored/ZeRO-2 under mpirun -np 2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$build/bin
"$bin/dist-run" "$root/examples/mlp.mlir" --init-state="$work/state.npz" \
  --init-data="$work/data.npz" --seed=1
"$bin/dist-run" "$root/examples/mlp.mlir" --state="$work/state.npz" \
  --data="$work/data.npz" --steps=3 --out="$work/single.npz"
"$bin/dist-opt" "$root/examples/mlp.mlir" --dist-mirrored=replicas=2 \
  -o "$work/mirrored.mlir"
"$bin/dist-opt" "$root/examples/mlp.mlir" "--dist-zero=stage=2 replicas=2" \
  -o "$work/zero2.mlir"
for s in mirrored zero2; do
  mpirun -np 2 "$bin/dist-run" "$work/$s.mlir" --state="$work/state.npz" \
    --data="$work/data.npz" --steps=3 --out="$work/$s.npz"
done
/usr/bin/python3 "$root/test/Integration/Inputs/compare_runs.py" 1e-5 1e-6 \
  "$work/single.npz" "$work/mirrored.npz" "$work/zero2.npz"

phase "fuzzing dist-fuzz for ${DISTOPT_FUZZ_SECONDS:-120} s"
"$root/scripts/fuzz.sh" --build "$build" --seconds "${DISTOPT_FUZZ_SECONDS:-120}"

phase "sanitizer build: all passed"
