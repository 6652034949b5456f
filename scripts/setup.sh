#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# DistOpt set-up: installs what is missing (apt), configures (Ninja, ccache,
# the shared libMLIR.so), builds, then runs one job:
#
#   scripts/setup.sh example   examples/mlp.mlir: a summary, the mirrored
#                              program's cost report, and training it on one
#                              device and under mpirun on 2 processes; then
#                              examples/train_digits.sh (a dataset, eval,
#                              checkpoints, a killed rank and a resume)
#   scripts/setup.sh test      every test (ctest: lit + gtest + docs check),
#                              then the sanitizer build and the fuzzer
#                              (scripts/sanitize.sh)
#   scripts/setup.sh build     only build
#
# Idempotent and fast when everything is present. Environment:
#   DISTOPT_BUILD_DIR  build directory (default: <repo>/build)
#   DISTOPT_JOBS       parallel build jobs (default: all cores)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DISTOPT_BUILD_DIR:-$root/build}
jobs=${DISTOPT_JOBS:-$(nproc)}
job=${1:-build}
llvm=/usr/lib/llvm-22

case "$job" in
  example|test|build) ;;
  *) echo "usage: $0 [example|test|build]" >&2; exit 2 ;;
esac

# --- system packages --------------------------------------------------------
source "$root/scripts/packages.sh"
install_packages "${distopt_packages[@]}" g++ python3-torch

# --- configure and build ----------------------------------------------------
# Paths below the repository hash relative, so clones elsewhere (CI) hit the
# same ccache entries. The launcher carries the setting, so a later plain
# `ninja` in the build directory (the edit-build loop) fills the cache for
# a fresh clone too.
export CCACHE_BASEDIR="$root"
launcher="env;CCACHE_BASEDIR=$root;ccache"
if [ ! -f "$build/build.ninja" ]; then
  echo "== configuring $build"
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=$llvm/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=$llvm/bin/lit \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
elif [ "$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' \
          "$build/CMakeCache.txt")" != "$launcher" ]; then
  # (A build directory configured before the launcher carried the setting.)
  echo "== reconfiguring $build: compiler launcher $launcher"
  cmake "$build" "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
fi
echo "== building"
cmake --build "$build" -j "$jobs"

# --- Python front ends: PyTorch, JAX, Keras 3 -------------------------------
# A current torch from PyPI in the set-up's venv (Debian's 1.13 lacks
# torch.export / AOTAutograd's joint export), and jax / optax / keras (the
# JAX and Keras front ends), timm / transformers (the model zoo), tqdm and
# tensorboard (fit's progress bar and event files);
# wheels cached outside the repository, so a fresh clone on the same machine
# installs from the cache.
venv=$build/venv
if [ -x "$venv/bin/python" ] && ! KERAS_BACKEND=jax "$venv/bin/python" -c \
    "import torch, torchvision, jax, optax, keras, timm, transformers, tqdm, sklearn, tensorboard
assert torch.__version__.startswith('2.15.0') and jax.__version__ == '0.10.2'
assert keras.__version__ == '3.15.1'" 2>/dev/null; then
  echo "== pip install the front ends' packages into $venv (python-bindings/requirements-*.txt)"
  # (pip's own cache keeps nothing behind this machine's proxy: keep the
  # wheels themselves, and install from them without the network.)
  wheels=${XDG_CACHE_HOME:-$HOME/.cache}/distopt-wheels
  requirements=(-r "$root/python-bindings/requirements-torch.txt"
                -r "$root/python-bindings/requirements-frontends.txt")
  start=$(date +%s)
  if ! "$venv/bin/python" -m pip install --quiet --no-index \
      --find-links "$wheels" "${requirements[@]}" 2>/dev/null; then
    "$venv/bin/python" -m pip download --quiet -d "$wheels" "${requirements[@]}"
    "$venv/bin/python" -m pip install --quiet --no-index \
      --find-links "$wheels" "${requirements[@]}"
  fi
  echo "== front-end packages installed in $(( $(date +%s) - start )) s (wheels: $wheels)"
fi

# --- the job ----------------------------------------------------------------
case "$job" in
  example)
    echo "== dist-opt --train-verify --train-summary examples/mlp.mlir"
    work=$(mktemp -d)
    "$build/bin/dist-opt" --train-verify --train-summary "$root/examples/mlp.mlir" -o "$work/verified.mlir"
    echo "== dist-opt --dist-mirrored=replicas=2 --dist-cost-report examples/mlp.mlir"
    trap 'rm -rf "$work"' EXIT
    "$build/bin/dist-opt" --dist-mirrored=replicas=2 --dist-cost-report \
      "$root/examples/mlp.mlir" -o "$work/mlp_mirrored.mlir"
    echo "== dist-run --init-state/--init-data (random state and batch, seed 1)"
    "$build/bin/dist-run" "$root/examples/mlp.mlir" --init-state="$work/state.npz" \
      --init-data="$work/data.npz" --seed=1
    echo "== dist-run examples/mlp.mlir, one device, 5 steps"
    "$build/bin/dist-run" "$root/examples/mlp.mlir" --state="$work/state.npz" \
      --data="$work/data.npz" --steps=5 --out="$work/single.npz"
    echo "== mpirun -np 2 dist-run (mirrored over 2 processes), 5 steps"
    mpirun -np 2 "$build/bin/dist-run" "$work/mlp_mirrored.mlir" \
      --state="$work/state.npz" --data="$work/data.npz" --steps=5 \
      --out="$work/mirrored.npz"
    echo "== examples/train_digits.sh: scikit-learn's digits, 10 epochs, 2 processes"
    bash "$root/examples/train_digits.sh" "$build" "$work/digits"
    ;;
  test)
    # Every C/C++ source as clang-format-22 writes it, every source with its
    # SPDX license line.
    echo "== scripts/check-format.sh"
    bash "$root/scripts/check-format.sh"
    echo "== ctest"
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
    # DistOpt's code under AddressSanitizer + UBSan, and the fuzzer (a build
    # of its own: docs/guides/testing.md).
    echo "== scripts/sanitize.sh"
    bash "$root/scripts/sanitize.sh"
    ;;
esac
