#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The first thing to run when a GPU is lent (bench/gpu_check.py): at most
# four minutes, no network, nothing built. Without a GPU it says so, runs
# the checks that need none (the CUDA steps' launch reports, ctest -L gpu,
# a bundle's run_steps on the fake CUDA driver)
# and exits 0 when they pass.
#
#   bench/gpu_check.sh [OUT_DIR] [--budget SECONDS]
#
# OUT_DIR (default bench/gpu_check_out) receives gpu_check.json and
# gpu_check.md; record the table in bench/README.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/bench/gpu_check_out}
shift $(( $# > 0 ? 1 : 0 ))
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
# The whole check is bounded: 4 minutes of its own budget, and a hard stop
# 30 s after it.
exec timeout 270 "$python" "$root/bench/gpu_check.py" --out "$out" "$@"
