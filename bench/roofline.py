#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Where a compiled step's time goes, against the machine's roofs.

Runs `dist-run --profile` on a step (default examples/transformer_block.mlir,
seed 1) and puts each op family's time, FLOPs and bytes next to two
measured roofs:

  - the sgemm rate: a 1024 x 1024 x 1024 product run by dist-run itself
    (OpenBLAS through dist-matmul-to-blas, the same call the step makes,
    split over the step's threads);
  - the memory bandwidth: a STREAM-like add of two 64 MiB arrays into a
    third (3 x 64 MiB per pass), also run by dist-run, i.e. a loop the
    compiler generated, on the step's threads.

Both roofs come from one profiled step (PEAK_STEP) with the same
`--num-threads` as the measured step.

For each family: its share of the step, its arithmetic intensity (FLOP per
byte of its buffers, each counted once), the rate it reached and the
attainable one, min(sgemm rate, intensity x bandwidth), i.e. how far from
its roof it runs. Bytes are each op's buffers counted once: a lower bound of
its traffic, so the bandwidth column is an upper bound of what it had to
move.

    python3 bench/roofline.py
    python3 bench/roofline.py --step examples/mlp.mlir --threads 1

Needs a build in build/ (dist-run).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_RUN = os.path.join(ROOT, "build", "bin", "dist-run")

PEAK_STEP = """func.func @train_step(
    %w: tensor<1024x1024xf32> {train.role = #train.role<param>, train.name = "w"},
    %a: tensor<4096x4096xf32> {train.role = #train.role<param>, train.name = "a"},
    %x: tensor<1024x1024xf32> {train.role = #train.role<input>, train.name = "x"},
    %b: tensor<4096x4096xf32> {train.role = #train.role<input>, train.name = "b"})
    -> (tensor<1024x1024xf32> {train.role = #train.role<param>, train.name = "w"},
        tensor<4096x4096xf32> {train.role = #train.role<param>, train.name = "a"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  %y = train.matmul %x, %w : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %l = train.reduce %y {dims = array<i64: 0, 1>, kind = #train.reduce_kind<sum>} : (tensor<1024x1024xf32>) -> tensor<f32>
  %c = train.add %a, %b : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %w, %c, %l : tensor<1024x1024xf32>, tensor<4096x4096xf32>, tensor<f32>
}
"""

ROW = re.compile(r"^\| (\S+) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| "
                 r"([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$")
HEADER = re.compile(r"profile of rank 0, (\d+) step\(s\): ([\d.]+) ms per "
                    r"step, ([\d.]+)% of it inside (\d+) profiled ops")


def run(cmd, threads):
    result = subprocess.run(cmd + [f"--num-threads={threads}"],
                            capture_output=True, text=True)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--step", default=os.path.join(
        ROOT, "examples", "transformer_block.mlir"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2,
                        help="dist-run --num-threads (the step's and the "
                        "roofs')")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        peak_step = os.path.join(work, "peak.mlir")
        with open(peak_step, "w") as f:
            f.write(PEAK_STEP)
        _, peak_rows = profile(peak_step, work, 5, args.threads, "peak")
        sgemm = peak_rows["train.matmul"][6]
        bandwidth = peak_rows["train.add"][7]
        (steps, step_ms, inside, ops), rows = profile(
            args.step, work, args.steps, args.threads, "step")
    print(f"step: {os.path.relpath(args.step, ROOT)}, {args.threads} "
          f"thread(s), {steps} profiled steps: {step_ms} ms per step, "
          f"{inside}% inside {ops} profiled ops")
    print(f"roofs: sgemm {sgemm:.1f} GFLOP/s (1024^3 product through "
          f"dist-run), memory {bandwidth:.1f} GB/s (add of 64 MiB arrays "
          "through dist-run), same threads")
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
