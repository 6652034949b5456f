#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Start-up time of dist-run with and without the compile cache.

For the transformer block example and GPT-like steps of L layers
(bench/gen_gpt.py), times `dist-run MODULE --steps=1` three ways: with
`--cache=false` (compiled every time, as before the cache), with a fresh
`--cache-dir` (compiled, then linked into the cache: the first run), and
again with that directory (loaded: a restarted run). Prints one row per
model: the seconds of each (best of --repeat) and the speed-up of a
restart. Only the Python standard library is used.

    python3 bench/compile_cache.py
    python3 bench/compile_cache.py --layers 12,48 --repeat 3
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--layers", default="2,12",
                        help="GPT depths (comma-separated; default 2,12)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    dist_run = os.path.join(args.build, "bin", "dist-run")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; best of {args.repeat}")
    print(f"{'model':24} {'no cache s':>11} {'first run s':>12} "
          f"{'restart s':>10} {'speed-up':>9}")
    with tempfile.TemporaryDirectory(prefix="distopt-cache-bench-") as tmp:
        models = [("transformer_block",
                   os.path.join(ROOT, "examples", "transformer_block.mlir"))]
        for L in (int(x) for x in args.layers.split(",") if x):
            path = os.path.join(tmp, f"gpt{L}.mlir")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "bench", "gen_gpt.py"),
                            "--layers", str(L), "--output", path], check=True)
            models.append((f"gpt L={L}", path))
        for name, module in models:
            state, data = (os.path.join(tmp, f"{name}.{k}.npz".replace(" ", ""))
                           for k in ("state", "data"))
            subprocess.run([dist_run, module, f"--init-state={state}",
                            f"--init-data={data}"], check=True,
                           capture_output=True)
            run = [dist_run, module, f"--state={state}", f"--data={data}",
                   "--steps=1"]
            uncached, first, restart = [], [], []
            for r in range(args.repeat):
                cache = os.path.join(tmp, f"cache-{r}-{name}".replace(" ", ""))
                uncached.append(timed(run + ["--cache=false"]))
                first.append(timed(run + [f"--cache-dir={cache}"]))
                restart.append(timed(run + [f"--cache-dir={cache}"]))
            u, f, s = min(uncached), min(first), min(restart)
            print(f"{name:24} {u:11.2f} {f:12.2f} {s:10.2f} {u / s:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
