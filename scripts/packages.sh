# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Sourced by scripts/setup.sh and scripts/sanitize.sh: the Debian packages
# the build needs, and an installer for those that are missing.

# LLVM/MLIR 22, the build tools, GoogleTest, MPICH (distrt's backend),
# libzip (dist-run's .npz files), OpenBLAS, LIBXSMM (the convolution
# kernels) and LLVM's OpenMP runtime (the CPU kernels and parallel loops),
# NumPy (tests),
# the Python package's build (headers, pybind11, venv) and pytest,
# scikit-learn (the digits dataset) and matplotlib (scripts/plot_metrics.py).
distopt_packages=(cmake ninja-build ccache python3 python3-numpy libgtest-dev
                  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
                  libmpich-dev mpich libzip-dev pkg-config libopenblas-dev
                  libomp-22-dev libxsmm-dev libdnnl2
                  python3-dev python3-venv pybind11-dev python3-pytest
                  python3-sklearn python3-matplotlib clang-format-22)

# install_packages NAME...: apt-get installs the ones not installed yet.
install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}
