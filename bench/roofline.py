#!/usr/bin/env python3
"""Where a compiled step's time goes, against the machine's roofs.

Runs `dist-run --profile` on a step (default examples/transformer_block.mlir,
seed 1) and puts each op family's time, FLOPs and bytes next to two
measured roofs:

  - the sgemm rate: a 1024 x 1024 x 1024 product run by dist-run itself
    (OpenBLAS through dist-matmul-to-blas, the same call the step makes),
    with the step's BLAS threads;
  - the memory bandwidth: a STREAM-like loop (NumPy's `add` of two 64 MiB
    arrays into a third, one thread, the best of 10), 3 x 64 MiB per pass.

For each family: its share of the step, its arithmetic intensity (FLOP per
byte of its buffers, each counted once), the rate it reached and the
attainable one, min(sgemm rate, intensity x bandwidth), i.e. how far from
its roof it runs. Bytes are each op's buffers counted once: a lower bound of
its traffic, so the bandwidth column is an upper bound of what it had to
move.

    python3 bench/roofline.py
    python3 bench/roofline.py --step examples/mlp.mlir --threads 1

Needs a build in build/ (dist-run) and NumPy.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_RUN = os.path.join(ROOT, "build", "bin", "dist-run")

PEAK_STEP = """func.func @train_step(
    %w: tensor<1024x1024xf32> {train.role = #train.role<param>, train.name = "w"},
    %x: tensor<1024x1024xf32> {train.role = #train.role<input>, train.name = "x"})
    -> (tensor<1024x1024xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.matmul %x, %w : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %l = train.reduce %y {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<1024x1024xf32>) -> tensor<f32>
  return %w, %l : tensor<1024x1024xf32>, tensor<f32>
}
"""

ROW = re.compile(r"^\| (\S+) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| "
                 r"([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$")
HEADER = re.compile(r"profile of rank 0, (\d+) step\(s\): ([\d.]+) ms per "
                    r"step, ([\d.]+)% of it inside (\d+) profiled ops")


def run(cmd, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def profile(step, work, steps, threads, tag):
    """(header fields, {family: row fields}) of dist-run --profile."""
    state = os.path.join(work, tag + "_state.npz")
    data = os.path.join(work, tag + "_data.npz")
    run([DIST_RUN, step, "--init-state=" + state, "--init-data=" + data,
         "--seed=1"], threads)
    out = run([DIST_RUN, step, "--state=" + state, "--data=" + data,
               f"--steps={steps}", "--profile"], threads)
    header = HEADER.search(out)
    if not header:
        sys.exit(f"no profile in dist-run's output:\n{out}")
    rows = {}
    for line in out.splitlines():
        match = ROW.match(line)
        if match:
            name, *fields = match.groups()
            rows[name] = [float(f) for f in fields]
    return header.groups(), rows


def stream_bandwidth():
    """GB/s of c = a + b over 64 MiB arrays (3 arrays per pass), best of 10."""
    n = 16 * 1024 * 1024
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.empty(
        n, np.float32)
    best = float("inf")
    for _ in range(10):
        start = time.perf_counter()
        np.add(a, b, out=c)
        best = min(best, time.perf_counter() - start)
    return 3 * 4 * n / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--step", default=os.path.join(
        ROOT, "examples", "transformer_block.mlir"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2,
                        help="OpenBLAS threads (the step's and the peak's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        peak_step = os.path.join(work, "peak.mlir")
        with open(peak_step, "w") as f:
            f.write(PEAK_STEP)
        _, peak_rows = profile(peak_step, work, 5, args.threads, "peak")
        sgemm = peak_rows["train.matmul"][6]
        bandwidth = stream_bandwidth()
        (steps, step_ms, inside, ops), rows = profile(
            args.step, work, args.steps, args.threads, "step")
    print(f"step: {os.path.relpath(args.step, ROOT)}, {args.threads} BLAS "
          f"thread(s), {steps} profiled steps: {step_ms} ms per step, "
          f"{inside}% inside {ops} profiled ops")
    print(f"roofs: sgemm {sgemm:.1f} GFLOP/s (1024^3 product through "
          f"dist-run), memory {bandwidth:.1f} GB/s (one-thread add of "
          "64 MiB arrays)")
    print()
    print("| family | ms/step | % of step | FLOP/byte | GFLOP/s | GB/s | "
          "attainable GFLOP/s | % of attainable |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (_, _, ms, share, mflop, mb, gflops, gbs) in rows.items():
        intensity = mflop / mb if mb else float("inf")
        attainable = min(sgemm, intensity * bandwidth)
        of_roof = (f"{100 * gflops / attainable:.0f}%" if mflop and attainable
                   else "-")
        print(f"| {name} | {ms:.3f} | {share:.1f} | {intensity:.2f} | "
              f"{gflops:.1f} | {gbs:.1f} | {attainable:.1f} | {of_roof} |")


if __name__ == "__main__":
    main()
