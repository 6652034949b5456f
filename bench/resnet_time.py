#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Step time of torchvision's ResNet-18 (imported from PyTorch) against
PyTorch eager, same machine, same state and batch.

`python -m distopt.export_torch torchvision.models:resnet18` (the set-up's
venv, build/venv) exports one training step (forward in train mode,
cross-entropy, backward, SGD with momentum 0.9) with its state and a random
batch; `dist-run` runs it (dist-lower-cpu: stride-1 convolutions through
the batch-reduce kernels, strided ones as im2col products) and PyTorch
eager runs torchvision's resnet18 loaded with the same state
(bench/peers/torch_resnet.py), with the same threads (bench/step_time.py's
environment: OMP/MKL/OPENBLAS_NUM_THREADS, torch.set_num_threads). Runs
are interleaved over --rounds rounds; each run's median step (the first,
with dist-run's JIT, left out), then the median over the rounds with the
spread (min-max). The losses of step 1 must agree to 1e-4 relative.

    python3 bench/resnet_time.py                      # batch 8, 224x224
    python3 bench/resnet_time.py --batch 8 --size 112 --threads 1 2

Needs a build in build/ and the set-up's venv (scripts/setup.sh build).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from step_time import BIN, ROOT, dist_run_times, peer_times

VENV_PYTHON = os.path.join(ROOT, "build", "venv", "bin", "python")
LR, MOMENTUM = 0.1, 0.9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=224,
                        help="image height and width")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not os.path.exists(VENV_PYTHON):
        sys.exit(f"no {VENV_PYTHON}: run scripts/setup.sh build first")
    ours, theirs, losses = {}, {}, {}
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(
            [VENV_PYTHON, "-m", "distopt.export_torch",
             "torchvision.models:resnet18",
             f"--input-shape={args.batch},3,{args.size},{args.size}",
             "--optimizer=sgd", f"--lr={LR}", f"--momentum={MOMENTUM}",
             "-o", work],
            check=True, env=dict(os.environ, PYTHONPATH=os.path.join(
                ROOT, "build", "python_packages")))
        step, state, batch = (os.path.join(work, name) for name in
                              ("step.mlir", "state.npz", "batch.npz"))
        cache = os.path.join(work, "cache")
        for round_ in range(args.rounds):
            for threads in args.threads:
                ms, loss = dist_run_times(
                    [os.path.join(BIN, "dist-run"), step, "--state=" + state,
                     "--data=" + batch, f"--steps={args.steps}",
                     "--cache-dir=" + cache], threads)
                ours.setdefault(threads, []).append(ms)
                ms, their_loss = peer_times(
                    VENV_PYTHON, "torch_resnet.py",
                    ["resnet18", state, batch, args.steps, threads, LR,
                     MOMENTUM], threads)
                theirs.setdefault(threads, []).append(ms)
                if abs(loss - their_loss) > 1e-4 * abs(their_loss):
                    sys.exit(f"first losses differ: {loss} (dist-run) vs "
                             f"{their_loss} (PyTorch)")
                losses[threads] = (loss, their_loss)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    flops = 3 * 2 * 1.814e9 * args.batch * (args.size / 224) ** 2
    print(f"ResNet-18, batch {args.batch}, {args.size}x{args.size}, SGD "
          f"momentum {MOMENTUM}; {os.getloadavg()[0]:.2f} load average "
          "after the runs")
    print()
    print("| threads | dist-run ms | PyTorch ms | ratio | GFLOP/s (ours) | "
          "loss after step 1 (ours / PyTorch) |")
    print("|---:|---:|---:|---:|---:|---|")
    for threads in args.threads:
        a, b = statistics.median(ours[threads]), statistics.median(
            theirs[threads])
        la, lb = losses[threads]
        print(f"| {threads} | {a:.1f} ({min(ours[threads]):.1f}-"
              f"{max(ours[threads]):.1f}) | {b:.1f} "
              f"({min(theirs[threads]):.1f}-{max(theirs[threads]):.1f}) | "
              f"{a / b:.2f}x | {flops / a / 1e6:.1f} | {la:.6g} / {lb:.6g} |")


if __name__ == "__main__":
    main()
