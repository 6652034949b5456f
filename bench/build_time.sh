#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Times a clean build (compiler cache disabled), a clean build with a warm
# ccache and the rebuild after touching one file (recompiled, not served from
# the cache), in a scratch build directory.
#
#   bash bench/build_time.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-/tmp/distopt-build-time}
llvm=/usr/lib/llvm-22

configure() {
  rm -rf "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=$llvm/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=$llvm/bin/lit \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    >/dev/null
}

seconds() { # runs "$@" and prints the wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.1f}')"
}

echo "machine: $(nproc) cores, $(g++ --version | head -1)"
configure
echo "clean build, no compiler cache:      $(CCACHE_DISABLE=1 seconds ninja -C "$build")s"
configure
ninja -C "$build" >/dev/null # fills the cache
configure
echo "clean build, warm ccache:            $(seconds ninja -C "$build")s"
# Touched files must really recompile: bypass the cache.
touch "$root/lib/Dialect/Train/IR/TrainOps.cpp"
echo "rebuild after touching TrainOps.cpp: $(CCACHE_DISABLE=1 seconds ninja -C "$build")s"
touch "$root/lib/Dialect/Train/IR/TrainShardingRules.cpp"
echo "rebuild after touching TrainShardingRules.cpp: $(CCACHE_DISABLE=1 seconds ninja -C "$build")s"
touch "$root/tools/dist-opt/dist-opt.cpp"
echo "rebuild after touching dist-opt.cpp: $(CCACHE_DISABLE=1 seconds ninja -C "$build")s"
