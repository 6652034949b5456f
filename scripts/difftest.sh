#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Long-running differential testing: random training steps under every
# strategy, over a range of seeds, for hours (see scripts/difftest/README.md).
#
#   scripts/difftest.sh [FIRST [LAST]] [run.py options...]
#
#   scripts/difftest.sh                      # seeds 1000 up, until stopped
#   scripts/difftest.sh 1000 1999            # one thousand seeds (about 6 h on 2 idle cores)
#   scripts/difftest.sh 0 99999 --time-limit 8 --strategies 'hybrid*,zero*'
#
# Environment: BUILD (default: the checkout's build), OUT (default
# $TMPDIR/difftest-out/<date>, /tmp when TMPDIR is unset).
# Everything goes to $OUT/log: one line per seed and strategy, each failing
# seed's reproduce commands as it happens, a summary at the end. The failing
# seeds' steps, state, data and outputs stay in $OUT/seed<N>. The exit
# status is 1 when anything failed. The fixed CI seeds are in
# test/Integration/difftest.test. PYTHON picks the interpreter (it needs
# NumPy; default /usr/bin/python3).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
first=1000
last=999999
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then first=$1; shift; fi
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then last=$1; shift; fi
build="${BUILD:-$(cd "$here/.." && pwd)/build}"
out="${OUT:-${TMPDIR:-/tmp}/difftest-out/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
echo "difftest: seeds $first-$last, build $build, results in $out/log"
"${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}" "$here/difftest/run.py" --build "$build" --seeds "$first-$last" \
    --workdir "$out" --no-print-step "$@" 2>&1 | tee "$out/log"
status=${PIPESTATUS[0]}
echo
fails=$(grep -E '^seed +[0-9]+ +[^ ]+ +FAIL' "$out/log")
echo "difftest: $(printf '%s' "$fails" | grep -c .) failing configuration(s); see $out/log"
printf '%s\n' "$fails" | grep . | sed 's/^/  /' | head -50
exit "$status"
