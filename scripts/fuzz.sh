#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Runs the dist-fuzz libFuzzer target (tools/dist-fuzz) of a sanitizer build
# over a corpus seeded with every lit input, example and kept crash input.
#
#   scripts/fuzz.sh                  bounded: 120 s (CI; scripts/sanitize.sh)
#   scripts/fuzz.sh --seconds S      bounded: S seconds
#   scripts/fuzz.sh --runs N         bounded: N executions
#   scripts/fuzz.sh --hours H        long: H hours in a persistent corpus,
#                                    going on past findings, then minimizes
#                                    each one
#
# A bounded run fails on the first finding (crash, sanitizer report,
# timeout, out of memory) and prints the commands to reproduce and minimize
# it. Keep every finding as test/Fuzz/regressions/<name>.mlir (see
# docs/guides/testing.md): ctest's fuzz-regressions runs them all.
#
# Options: --build DIR (default $DISTOPT_ASAN_BUILD_DIR or <repo>/build-asan,
# configured and built by scripts/sanitize.sh), --jobs J (long mode's
# parallel workers, default all cores), --corpus DIR and --artifacts DIR
# (long mode's, default ~/.cache/distopt-fuzz/{corpus,artifacts}).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DISTOPT_ASAN_BUILD_DIR:-$root/build-asan}
mode=bounded seconds=120 runs="" hours="" jobs=$(nproc)
corpus="" artifacts=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; seconds=""; shift 2 ;;
    --hours) mode=long; hours=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --artifacts) artifacts=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
fuzz=$build/bin/dist-fuzz
if [ ! -x "$fuzz" ]; then
  echo "fuzz.sh: no $fuzz; build it with scripts/sanitize.sh build" >&2
  exit 2
fi
# shellcheck source=scripts/sanitizers/env.sh
source "$root/scripts/sanitizers/env.sh"

# Seeds: each `// -----` split of every lit input, example and kept crash
# input, without its comment lines (RUN, CHECK, expected-error: noise to the
# mutator).
seed_corpus() {
  local out=$1 f n
  mkdir -p "$out"
  while IFS= read -r f; do
    n=${f#"$root"/}
    n=${n//\//_}
    awk -v out="$out/${n%.mlir}" '
      /^\/\/ -----/ { if (file) close(file); part++; next }
      /^[ \t]*\/\// { next }
      { file = sprintf("%s.%d.mlir", out, part); print > file }
    ' "$f"
  done < <(find "$root/test" "$root/examples" -name '*.mlir' | sort)
  # A split holding nothing but blank lines is no seed.
  find "$out" -type f -size -2c -delete
  grep -L '[^[:space:]]' "$out"/* 2>/dev/null | xargs -r rm -f
}

common=(-timeout=60 -rss_limit_mb=4096 -print_final_stats=1
        "-dict=$root/tools/dist-fuzz/dist-fuzz.dict")

if [ "$mode" = bounded ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  seed_corpus "$work/corpus"
  mkdir -p "$work/artifacts"
  limit=(-max_total_time="$seconds")
  [ -z "$runs" ] || limit=(-runs="$runs")
  echo "== dist-fuzz: $(ls "$work/corpus" | wc -l) seeds, ${runs:+$runs runs}${seconds:+$seconds s}"
  set +e
  "$fuzz" "${common[@]}" "${limit[@]}" -artifact_prefix="$work/artifacts/" \
    "$work/corpus" 2>&1 | tee "$work/log" |
    grep -aE '^(#[0-9]+[[:space:]]+(INITED|DONE)|Done|stat::|==[0-9]+==ERROR|SUMMARY|INFO: seed corpus)'
  rc=${PIPESTATUS[0]}
  set -e
  found=$(ls "$work/artifacts")
  if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
    keep=${DISTOPT_FUZZ_FINDINGS:-$build/fuzz-findings}
    mkdir -p "$keep"
    cp "$work/artifacts/"* "$keep/" 2>/dev/null || true
    cp "$work/log" "$keep/fuzz.log"
    tail -60 "$work/log"
    echo "== dist-fuzz FOUND A BUG (exit $rc); inputs copied to $keep:"
    for a in $found; do
      echo "  reproduce: source $root/scripts/sanitizers/env.sh; DIST_FUZZ_VERBOSE=1 $fuzz $keep/$a"
      echo "  minimize:  $fuzz -minimize_crash=1 -runs=2000 -exact_artifact_path=$keep/$a.min $keep/$a"
    done
    echo "  then keep it: test/Fuzz/regressions/<what>.mlir (docs/guides/testing.md)"
    exit 1
  fi
  echo "== dist-fuzz: no finding"
  exit 0
fi

# Long mode: a persistent corpus that grows run after run, -fork workers
# that go on past findings; each finding is minimized at the end.
corpus=${corpus:-${DISTOPT_FUZZ_CORPUS:-$HOME/.cache/distopt-fuzz/corpus}}
artifacts=${artifacts:-${DISTOPT_FUZZ_ARTIFACTS:-$HOME/.cache/distopt-fuzz/artifacts}}
mkdir -p "$corpus" "$artifacts"
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
seed_corpus "$seeds"
total=$(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }')
echo "== dist-fuzz: $hours h, $jobs workers, corpus $corpus, findings $artifacts"
"$fuzz" "${common[@]}" -max_total_time="$total" -fork="$jobs" \
  -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -artifact_prefix="$artifacts/" "$corpus" "$seeds" 2>&1 |
  tee "$artifacts/fuzz-$(date +%Y%m%d-%H%M%S).log" |
  grep -a --line-buffered -E '^(#[0-9]+|INFO: fuzzed for|==[0-9]+==ERROR|SUMMARY)' || true
shopt -s nullglob
found=0
for a in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* \
         "$artifacts"/leak-* "$artifacts"/slow-unit-*; do
  case "$a" in *.min) continue ;; esac
  found=$((found + 1))
  [ -e "$a.min" ] || "$fuzz" -minimize_crash=1 -runs=2000 \
    -exact_artifact_path="$a.min" "$a" >/dev/null 2>&1 || true
  echo "finding: $a${a:+ (minimized: $a.min)}"
  echo "  reproduce: DIST_FUZZ_VERBOSE=1 $fuzz $a.min"
done
echo "== dist-fuzz: $found finding(s) in $artifacts"
[ "$found" -eq 0 ]
