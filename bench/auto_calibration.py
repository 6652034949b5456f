#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""dist-auto's predictions against measured steps on this machine.

For each example, `dist-opt --dist-auto="cluster=cpu explain=..."` lists
every plan for the 2 ranks of the cpu preset with its predicted step time;
each plan that was built is then applied by hand (its `strategy` pipeline)
and run under `mpirun -np 2 dist-run` (one thread per rank, the median of
`--steps` steps, the first left out). The table gives predicted and
measured milliseconds per plan, whether the plan dist-auto chose is the
fastest measured, and Spearman's rank correlation of predicted and
measured times per example and over all plans (each example's times
ranked within it).

    python3 bench/auto_calibration.py                      # every example
    python3 bench/auto_calibration.py --examples mlp --steps 30

Needs a build in build/ and mpirun.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")
EXAMPLES = ("mlp", "mlp_adam", "digits_mlp", "embedding_classifier",
            "transformer_block", "transformer_stack")


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def ranks(values):
    """Average ranks (1-based) of `values`, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = sum((a - mx) ** 2 for a in rx) ** 0.5
    sy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (sx * sy) if sx and sy else float("nan")


def measure(example, strategy, work, steps, env):
    path = os.path.join(work, "plan.mlir")
    src = os.path.join(ROOT, "examples", example + ".mlir")
    run([os.path.join(BIN, "dist-opt"), src,
         f"--pass-pipeline=builtin.module({strategy})", "-o", path])
    out = run(["mpirun", "-np", "2", os.path.join(BIN, "dist-run"), path,
               f"--state={work}/state.npz", f"--data={work}/data.npz",
               f"--steps={steps}"], env=env)
    times = [float(t) for t in re.findall(r"step \d+: loss [-\d.naif]+ \(([\d.]+) ms\)", out)]
    return statistics.median(times[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", nargs="+", default=EXAMPLES)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    all_pred, all_meas = [], []
    print("| example | plan | predicted ms | measured ms | chosen |")
    print("| --- | --- | ---: | ---: | --- |")
    summary = []
    for example in args.examples:
        with tempfile.TemporaryDirectory() as work:
            src = os.path.join(ROOT, "examples", example + ".mlir")
            run([os.path.join(BIN, "dist-run"), src, f"--init-state={work}/state.npz",
                 f"--init-data={work}/data.npz", "--seed=1"])
            explain = os.path.join(work, "plans.json")
            run([os.path.join(BIN, "dist-opt"), src,
                 f"--dist-auto=cluster=cpu explain={explain}",
                 "-o", os.path.join(work, "auto.mlir")])
            with open(explain) as f:
                plans = [p for p in json.load(f)["plans"] if "refused" not in p]
            pred, meas = [], []
            for i, plan in enumerate(plans):
                ms = measure(example, plan["strategy"], work, args.steps, env)
                pred.append(plan["step_time_s"] * 1e3)
                meas.append(ms)
                print(f"| {example} | `{plan['strategy']}` | {pred[-1]:.3f} | "
                      f"{ms:.2f} | {'yes' if i == 0 else ''} |", flush=True)
            rho = spearman(pred, meas)
            best = min(range(len(meas)), key=lambda i: meas[i])
            summary.append((example, len(plans), rho, meas[0] / meas[best]))
            all_pred += ranks(pred)
            all_meas += ranks(meas)
    print()
    print("| example | plans | Spearman rho | chosen / fastest measured |")
    print("| --- | ---: | ---: | ---: |")
    for example, n, rho, ratio in summary:
        print(f"| {example} | {n} | {rho:.2f} | {ratio:.2f}x |")
    print(f"\nall plans (ranks within each example): Spearman rho "
          f"{spearman(all_pred, all_meas):.2f}")


if __name__ == "__main__":
    main()
