#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The installed package, used as an embedding compiler would: installs the
# build tree BUILD into a fresh prefix, builds test/Install/consumer against
# it with find_package(DistOpt) (C++ and C), runs both on an example step
# with a strategy, and runs the installed dist-opt and dist-run.
#
#   test/Install/consumer.sh BUILD WORKDIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for path in lib/cmake/distopt/DistOptConfig.cmake lib/cmake/distopt/DistOptTargets.cmake \
            include/distopt/InitAll.h include/distopt-c/DistOpt.h \
            include/distopt/Dialect/Dist/IR/DistOps.td include/distopt/Dialect/Dist/IR/DistOps.h.inc \
            lib/libDistOptCAPI.so lib/libdistrt.so lib/libdistopt_cpu.so bin/dist-opt bin/dist-run; do
  test -e "$prefix/$path" || { echo "not installed: $path"; exit 1; }
done
# Nothing points back into the build tree.
if grep -rl "$build" "$prefix/lib/cmake" > /dev/null; then
  echo "the installed package refers to the build tree:"; grep -rl "$build" "$prefix/lib/cmake"; exit 1
fi

cmake -S "$src/test/Install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log" || { cat "$work/build.log"; exit 1; }

step="$src/examples/mlp.mlir"
"$work/consumer/consumer" "$step" "dist-mirrored{replicas=2}" > "$work/cpp.mlir"
grep -q "dist.all_reduce" "$work/cpp.mlir"
grep -q "dist.mesh @mesh" "$work/cpp.mlir"
echo "ok: C++ consumer: a mirrored step with $(grep -o 'dist.all_reduce' "$work/cpp.mlir" | wc -l) all-reduce"

"$work/consumer/consumer-c" "$step" "builtin.module(dist-mirrored{replicas=2})" > "$work/c.out"
grep -q "dist.all_reduce" "$work/c.out"
grep -q '"functions"' "$work/c.out"
echo "ok: C consumer: mirrored step and its JSON cost report"
if "$work/consumer/consumer-c" "$step" "dist-mirrored{replicas=0}" > "$work/c_bad.out"; then
  echo "a bad strategy option succeeded"; exit 1
fi
grep "diagnostic:" "$work/c_bad.out" | head -1
# A pipeline that fails after a pass rewrote the module leaves it unchanged.
if "$work/consumer/consumer-c" "$step" \
    "dist-mirrored{replicas=2},dist-zero{stage=1 replicas=2}" > "$work/c_half.out"; then
  echo "distributing a distributed step succeeded"; exit 1
fi
grep -q "already distributed" "$work/c_half.out"
grep -q "train.sgd" "$work/c_half.out"
if grep -q "dist.all_reduce\|dist.mesh" "$work/c_half.out"; then
  echo "a failed pipeline left the module half-rewritten"; exit 1
fi
echo "ok: C consumer: a failed pipeline leaves the module unchanged"

# The C API trains a step in the consumer's process: from the npz files,
# and from the state it handed back as arrays, to the same bits.
"$prefix/bin/dist-run" "$step" --init-state="$work/run_state.npz" \
  --init-data="$work/run_data.npz" --seed=3 > "$work/init.log"
"$work/consumer/consumer-run" "$step" "$work/run_state.npz" "$work/run_data.npz" \
  > "$work/run.out" || { cat "$work/run.out"; exit 1; }
grep -q "^diagnostic: --steps takes a count (an integer >= 0), not 'two'" "$work/run.out"
grep -q "^diagnostic: unknown run option 'no-such'" "$work/run.out"
grep -q '"event":"step"' "$work/run.out"
tail -1 "$work/run.out" | grep -qx ok
echo "ok: C consumer: a step trained through the C API ($(grep -c '"event":"step"' "$work/run.out") steps streamed)"

# The installed tools run from the prefix alone.
"$prefix/bin/dist-opt" "$step" --dist-mirrored=replicas=2 -o "$work/tool.mlir"
"$prefix/bin/dist-run" "$step" --init-state="$work/state.npz" --init-data="$work/data.npz" --seed=1 > /dev/null
"$prefix/bin/dist-run" "$step" --state="$work/state.npz" --data="$work/data.npz" --steps=2 | tail -1
echo "ok: installed package"
