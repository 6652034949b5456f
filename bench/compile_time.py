#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Compile time of every strategy pipeline of `dist-opt` on GPT-like steps.

For each depth L (default 12, 48, 96, 384) it generates a GPT-like training
step with bench/gen_gpt.py and times `dist-opt` (wall time, best of
--repeat runs, output written to a file) for each strategy of STRATEGIES
below, plus the baseline: parsing, `--train-verify` and printing the input.
It prints one row per (strategy, L): the ops in the program dist-opt writes,
the seconds, the milliseconds per layer, the milliseconds per layer above
the baseline at the same L (+ms/layer: the strategy passes' own share, and
the larger output) and the peak resident memory.

    python3 bench/compile_time.py                       # every strategy
    python3 bench/compile_time.py --strategies mirrored,zero-3 --layers 12,48
    python3 bench/compile_time.py --markdown /tmp/compile_time.md

A strategy whose pipeline `dist-opt` does not register is an error (the
script stops before timing anything) unless it is left out with
--strategies. Only the Python standard library is used.
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> --pass-pipeline of `dist-opt`. Device counts must divide the
# model's batch (and for sharded strategies its parameter dims and heads).
STRATEGIES = [
    ("mirrored", "builtin.module(dist-mirrored{replicas=8})"),
    ("multi-worker-mirrored",
     "builtin.module(dist-multi-worker-mirrored{hosts=2 devices=4})"),
    ("zero-1", "builtin.module(dist-zero{stage=1 replicas=8})"),
    ("zero-2", "builtin.module(dist-zero{stage=2 replicas=8})"),
    ("zero-3", "builtin.module(dist-zero{stage=3 replicas=8})"),
    ("tensor-parallel", "builtin.module(dist-tensor-parallel{size=4})"),
    ("hybrid", "builtin.module(dist-hybrid{dp=2 tp=4})"),
]
# Not in the default selection (much slower per layer): the CPU lowering of
# the single-device step down to the LLVM dialect.
OPTIONAL = [
    ("lower-cpu", "builtin.module(dist-lower-cpu)"),
]
# The baseline: parse, check the training step, print it again.
BASELINE = ("parse+verify", ["--train-verify"])

DEFAULT_LAYERS = "12,48,96,384"


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()}"


def run_timed(cmd, timeout):
    """Runs cmd; returns (seconds, peak RSS in MiB, exit code, stderr)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            _, status, usage = os.wait4(proc.pid, 0) if timeout is None \
                else _wait4_timeout(proc, timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    # ru_maxrss is in KiB on Linux.
    return seconds, usage.ru_maxrss / 1024, proc.returncode, stderr


def _wait4_timeout(proc, timeout):
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return pid, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.01)


OP_RE = re.compile(r'^\s*(%[^=]*=\s*)?"[A-Za-z_][\w$]*\.[\w$.]+"\(', re.M)


def count_ops(dist_opt, path):
    """Ops in the program at `path` (counted in the generic form, where
    every op is a quoted name at the start of a line), the module included."""
    out = subprocess.run([dist_opt, "--mlir-print-op-generic", path],
                         check=True, capture_output=True, text=True).stdout
    return len(OP_RE.findall(out))


def fail(message):
    sys.stderr.write(f"compile_time.py: error: {message}\n")
    sys.exit(1)


def main(argv=None):
    names = [name for name, _ in STRATEGIES]
    known = STRATEGIES + OPTIONAL
    parser = argparse.ArgumentParser(
        description="Time dist-opt's strategy pipelines on GPT-like "
                    "training steps of increasing depth.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="strategies:\n" + "\n".join(
            f"  {n:24} {p}" for n, p in known))
    parser.add_argument("--strategies", default=",".join(names),
                        help="comma-separated strategies (default: all but "
                             "the optional lower-cpu)")
    parser.add_argument("--layers", default=DEFAULT_LAYERS,
                        help=f"comma-separated depths (default {DEFAULT_LAYERS})")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per measurement, the best is kept")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--ffn", type=int, help="default 4 * hidden")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds allowed for one dist-opt run")
    parser.add_argument("--dist-opt", default=os.path.join(ROOT, "build", "bin",
                                                           "dist-opt"),
                        help="the dist-opt binary (default build/bin/dist-opt)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the table as Markdown to FILE")
    args = parser.parse_args(argv)

    selected = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = [s for s in selected if s not in [n for n, _ in known]]
    if unknown:
        parser.error(f"unknown strategies {', '.join(unknown)}; known: "
                     f"{', '.join(n for n, _ in known)}")
    strategies = [(n, p) for n, p in known if n in selected]
    try:
        layers = [int(x) for x in args.layers.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--layers must be comma-separated integers, got "
                     f"{args.layers!r}")
    if not layers or min(layers) < 1 or args.repeat < 1:
        parser.error("--layers and --repeat must be positive")
    if not os.access(args.dist_opt, os.X_OK):
        fail(f"{args.dist_opt} is not an executable; build dist-opt first "
             "or pass --dist-opt")

    # Every selected pipeline must be registered: no silent skipping.
    rejected = []
    for name, pipeline in strategies:
        check = subprocess.run(
            [args.dist_opt, f"--pass-pipeline={pipeline}", "-o", "-"],
            input="module {}\n", capture_output=True, text=True)
        if check.returncode:
            rejected.append(name)
            sys.stderr.write(f"strategy '{name}': dist-opt rejects its "
                             f"pipeline '{pipeline}':\n"
                             f"{check.stderr.rstrip()}\n")
    if rejected:
        rest = ",".join(n for n, _ in strategies if n not in rejected)
        fail(f"the pipeline of {', '.join(rejected)} is not registered in "
             f"{args.dist_opt} (or rejects its options); leave "
             f"{'it' if len(rejected) == 1 else 'them'} out explicitly"
             + (f" with --strategies {rest}" if rest else " with --strategies"))

    gen_flags = ["--hidden", str(args.hidden), "--heads", str(args.heads),
                 "--seq", str(args.seq), "--batch", str(args.batch),
                 "--vocab", str(args.vocab)]
    if args.ffn:
        gen_flags += ["--ffn", str(args.ffn)]
    runs = [(BASELINE[0], BASELINE[1])] + [
        (name, [f"--pass-pipeline={pipeline}"]) for name, pipeline in strategies]

    # (strategy, L, ops, seconds, ms per layer, ms per layer above the
    # baseline at the same L, peak MiB)
    rows = []
    header = (f"{'strategy':24} {'L':>5} {'ops':>8} {'seconds':>9} "
              f"{'ms/layer':>9} {'+ms/layer':>9} {'peak MiB':>9}")
    load_start = os.getloadavg()[0]
    print(f"machine: {machine()}")
    print(f"model: gen_gpt.py {' '.join(gen_flags)}; best of {args.repeat}")
    print(header)
    with tempfile.TemporaryDirectory(prefix="distopt-compile-time-") as tmp:
        for L in layers:
            model = os.path.join(tmp, f"gpt{L}.mlir")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "bench", "gen_gpt.py"),
                            "--layers", str(L), "--output", model] + gen_flags,
                           check=True)
            for name, flags in runs:
                out = os.path.join(tmp, "out.mlir")
                cmd = [args.dist_opt] + flags + [model, "-o", out]
                best, peak = None, 0.0
                for _ in range(args.repeat):
                    try:
                        seconds, rss, rc, stderr = run_timed(cmd, args.timeout)
                    except subprocess.TimeoutExpired:
                        fail(f"strategy '{name}' at L={L} ran past "
                             f"{args.timeout:.0f} s: {' '.join(cmd)}")
                    except OSError as e:
                        fail(f"strategy '{name}' at L={L}: cannot run "
                             f"{args.dist_opt} ({e}); was it being rebuilt?")
                    if rc:
                        fail(f"strategy '{name}' at L={L} failed (exit {rc}): "
                             f"{' '.join(cmd)}\n{stderr.rstrip()}")
                    best = seconds if best is None else min(best, seconds)
                    peak = max(peak, rss)
                try:
                    ops = count_ops(args.dist_opt, out)
                except (OSError, subprocess.CalledProcessError) as e:
                    fail(f"counting the ops of '{name}' at L={L}: {e}")
                if name == BASELINE[0]:
                    base = best
                extra = 1000 * (best - base) / L
                row = (name, L, ops, best, 1000 * best / L, extra, peak)
                rows.append(row)
                print(f"{name:24} {L:>5} {ops:>8} {best:>9.3f} "
                      f"{row[4]:>9.2f} {extra:>9.2f} {peak:>9.0f}",
                      flush=True)

    # Growth of the time per layer from the smallest to the largest depth.
    if len(layers) > 1:
        lo, hi = min(layers), max(layers)
        print(f"\nms/layer at L={hi} / ms/layer at L={lo} (1.0 = time "
              "linear in L):")
        for name, _ in runs:
            per = {r[1]: r[4] for r in rows if r[0] == name}
            print(f"  {name:24} x{per[hi] / per[lo]:.2f}")

    load = f"{load_start:.2f} before, {os.getloadavg()[0]:.2f} after"
    print(f"1-minute load average: {load}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"Machine: {machine()}. Model: `bench/gen_gpt.py "
                    f"{' '.join(gen_flags)}`; best of {args.repeat} runs; "
                    f"1-minute load average {load}.\n\n")
            f.write("| strategy | L | ops | seconds | ms / layer "
                    "| ms / layer above parse+verify | peak MiB |\n")
            f.write("|---|---:|---:|---:|---:|---:|---:|\n")
            for name, L, ops, sec, per, extra, peak in rows:
                extra_text = "" if name == BASELINE[0] else f"{extra:.2f}"
                f.write(f"| {name} | {L} | {ops} | {sec:.3f} | {per:.2f} "
                        f"| {extra_text} | {peak:.0f} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
