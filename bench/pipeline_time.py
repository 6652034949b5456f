#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Pipeline step time on the transformer stack against the simulated bubble.

For each schedule and microbatch count, compiles the stack with
--dist-pipeline, asks --dist-cost-report (JSON) for the simulated bubble,
runs it under mpirun with dist-run --trace and measures, over the steps
after the first (which includes compilation):

  - the step time (median of dist-run's printed step times),
  - the measured bubble: per step, (P * span - sum of the units' busy time)
    / busy time, the simulation's definition, from the trace (the span runs
    from the step's first unit to its last on any rank);

and the single-device step for reference.

    python3 bench/pipeline_time.py [--build build] [--steps 20] [--stages 2]

Needs NumPy only to make the inputs (dist-run --init-state writes them).
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
STACK = os.path.join(ROOT, "examples", "transformer_stack.mlir")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def step_times(output):
    times = [float(m) for m in re.findall(r"step \d+: loss \S+ \(([\d.]+) ms\)", output)]
    return times[1:]  # the first step includes the JIT's compilation


def measured_bubble(trace_path, ranks, steps):
    events = [e for e in json.load(open(trace_path))["traceEvents"]
              if e.get("ph") == "X" and e["cat"] in ("F", "B", "W", "U")]
    # Units by rank in time order; a step ends with each rank's U.
    per_rank = {r: sorted((e for e in events if e["tid"] == r), key=lambda e: e["ts"])
                for r in range(ranks)}
    # A rank runs one U per stage it holds (V with interleaving): the step
    # ends with the last.
    steps_of = {}
    for r, units in per_rank.items():
        per_step = sum(e["cat"] == "U" for e in units) // steps
        step, seen, out = 0, 0, []
        for e in units:
            out.append((step, e))
            if e["cat"] == "U":
                seen += 1
                if seen % per_step == 0:
                    step += 1
        steps_of[r] = out
    fractions = []
    for s in range(1, steps):  # skip the first step (compilation)
        units = [e for r in steps_of for (k, e) in steps_of[r] if k == s]
        if not units:
            continue
        begin = min(e["ts"] for e in units)
        end = max(e["ts"] + e["dur"] for e in units)
        busy = sum(e["dur"] for e in units)
        fractions.append((ranks * (end - begin) - busy) / busy)
    return statistics.median(fractions)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--mpirun", default="mpirun")
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "dist-opt")
    drun = os.path.join(args.build, "bin", "dist-run")
    p = args.stages
    work = tempfile.mkdtemp(prefix="pipeline-time-")
    state, data = os.path.join(work, "state.npz"), os.path.join(work, "data.npz")
    run([drun, STACK, f"--init-state={state}", f"--init-data={data}", "--seed=1"])
    out = run([drun, STACK, f"--state={state}", f"--data={data}",
               f"--steps={args.steps}"]).stdout
    single = statistics.median(step_times(out))
    print(f"transformer stack, {p} stages on {p} processes, {args.steps} steps "
          f"(medians, first step left out); load average {os.getloadavg()[0]:.2f}")
    print(f"single device: {single:.2f} ms per step\n")
    print(f"{'schedule':<22} {'M':>3} {'step ms':>8} {'vs single':>9} "
          f"{'simulated bubble':>17} {'measured bubble':>16}")
    configs = []
    for m in (p, 2 * p, 4 * p):
        for schedule in ("gpipe", "1f1b", "zb-h1"):
            configs.append((schedule, m, 1))
        configs.append(("interleaved", m, 2))
    for schedule, m, v in configs:
        mlir = os.path.join(work, f"{schedule}{m}.mlir")
        options = f"stages={p} microbatches={m} schedule={schedule} virtual-stages={v}"
        try:
            run([opt, STACK, f"--dist-pipeline={options}", "-o", mlir])
        except subprocess.CalledProcessError as e:
            print(f"{schedule:<22} {m:>3} refused: {e.stderr.strip().splitlines()[-1]}")
            continue
        report = json.loads(run([opt, mlir, "--dist-cost-report=format=json",
                                 "-o", mlir + ".reported"]).stdout)["pipeline"]
        trace = os.path.join(work, f"{schedule}{m}.json")
        out = run([args.mpirun, "-np", str(p), drun, mlir, f"--state={state}",
                   f"--data={data}", f"--steps={args.steps}", f"--trace={trace}"]).stdout
        ms = statistics.median(step_times(out))
        name = schedule + (f" (V={v})" if v > 1 else "")
        print(f"{name:<22} {m:>3} {ms:>8.2f} {ms / single:>8.2f}x "
              f"{report['bubble_fraction']:>17.3f} {measured_bubble(trace, p, args.steps):>16.3f}")


if __name__ == "__main__":
    sys.exit(main())
