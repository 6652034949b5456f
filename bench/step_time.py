#!/usr/bin/env python3
"""Time of one compiled training step against PyTorch eager, same machine.

For examples/mlp.mlir (SGD with momentum), examples/mlp_adam.mlir
(AdamW) and examples/transformer_block.mlir (pre-LN attention + MLP block,
AdamW): the same random state and batch (dist-run --init-state, seed 1)
run by

  - dist-run (the step JIT-compiled with dist-lower-cpu: matmuls through
    OpenBLAS, the rest as loops), median of the step times it prints;
  - PyTorch eager (forward, backward, torch.optim.SGD/AdamW), median over
    the same number of steps;

on one process, and on 2 processes: `mpirun -np 2 dist-run` of the
`--dist-mirrored=replicas=2` step against PyTorch DDP with gloo. Both use
the same number of BLAS / intra-op threads per process (--threads, default
2 for one process, 1 per process for two). The first-step losses of both
are printed so that the comparison is of the same computation.

    python3 bench/step_time.py                 # prints a Markdown table
    python3 bench/step_time.py --steps 100
    python3 bench/step_time.py --examples transformer_block

Needs /usr/bin/python3 with Debian's python3-torch and a build in build/.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
REFERENCE = os.path.join(ROOT, "test", "Integration", "Inputs")


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def dist_run_times(cmd, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = run(cmd, env)
    steps = re.findall(r"step \d+: loss ([-\d.]+) \(([\d.]+) ms\)", out)
    losses = [float(l) for l, _ in steps]
    times = [float(t) for _, t in steps][1:]  # the first includes warm-up
    return statistics.median(times), losses[0]


TORCH_STEP = r'''
import os, sys, time, statistics
import numpy as np
import torch
from torch_reference import Step, inputs, make_optimizer


def main(rank, world, model, state_path, data_path, steps, threads):
    torch.set_num_threads(threads)
    # dist-run flushes subnormals by default; PyTorch does not unless asked.
    torch.set_flush_denormal(os.environ.get("TORCH_FLUSH_DENORMAL") == "1")
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = "29533"
        torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    s, d = np.load(state_path), np.load(data_path)
    step = Step(model, s)
    net = (torch.nn.parallel.DistributedDataParallel(step) if world > 1
           else step)
    x, y = inputs(model, d)
    batch = x.shape[0] // world
    x, y = x[rank * batch:(rank + 1) * batch], y[rank * batch:(rank + 1) * batch]
    opt = make_optimizer(model, step, float(s["lr"]))
    times, first = [], None
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        loss = net(x, y)
        loss.backward()  # DDP: gradients averaged by bucketed all-reduces
        opt.step()
        times.append((time.perf_counter() - start) * 1e3)
        if first is None:
            first = float(loss)
            if world > 1:
                t = torch.tensor([first])
                torch.distributed.all_reduce(t)
                first = float(t) / world
    if rank == 0:
        print(statistics.median(times[1:]), first)

def _spawned(rank, *rest):
    main(rank, *rest)

if __name__ == "__main__":
    args = sys.argv[1:]
    world = int(args[0])
    rest = (world, args[1], args[2], args[3], int(args[4]), int(args[5]))
    if world == 1:
        main(0, *rest)
    else:
        torch.multiprocessing.spawn(_spawned, args=rest, nprocs=world)
'''


def torch_times(state, data, model, world, steps, threads, workdir):
    script = os.path.join(workdir, "torch_step.py")
    with open(script, "w") as f:
        f.write(TORCH_STEP)
    # The PyTorch model and optimizer are the integration tests' reference.
    env = dict(os.environ, PYTHONPATH=REFERENCE)
    out = run(["/usr/bin/python3", script, str(world), model, state, data,
               str(steps), str(threads)], env)
    median, first = out.split()
    return float(median), float(first)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--torch-flush-denormals", action="store_true",
                        help="run PyTorch with torch.set_flush_denormal(True),"
                        " as dist-run runs by default")
    parser.add_argument("--examples", nargs="+",
                        default=["mlp", "mlp_adam", "transformer_block"],
                        choices=["mlp", "mlp_adam", "transformer_block"])
    args = parser.parse_args()
    if args.torch_flush_denormals:
        os.environ["TORCH_FLUSH_DENORMAL"] = "1"
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for example in args.examples:
            step = os.path.join(ROOT, "examples", example + ".mlir")
            state = os.path.join(work, example + "_state.npz")
            data = os.path.join(work, example + "_data.npz")
            run([os.path.join(BIN, "dist-run"), step, "--init-state=" + state,
                 "--init-data=" + data, "--seed=1"])
            ours, our_loss = dist_run_times(
                [os.path.join(BIN, "dist-run"), step, "--state=" + state,
                 "--data=" + data, "--steps=" + str(args.steps)], 2)
            theirs, their_loss = torch_times(state, data, example, 1, args.steps,
                                             2, work)
            rows.append((example, 1, ours, theirs, our_loss, their_loss))
            mirrored = os.path.join(work, example + "_mirrored.mlir")
            run([os.path.join(BIN, "dist-opt"), step,
                 "--dist-mirrored=replicas=2", "-o", mirrored])
            ours, our_loss = dist_run_times(
                ["mpirun", "-np", "2", os.path.join(BIN, "dist-run"), mirrored,
                 "--state=" + state, "--data=" + data,
                 "--steps=" + str(args.steps)], 1)
            theirs, their_loss = torch_times(state, data, example, 2, args.steps,
                                             1, work)
            rows.append((example, 2, ours, theirs, our_loss, their_loss))
    print("| step | processes | dist-run ms | PyTorch ms | ratio | "
          "first loss (ours / PyTorch) |")
    print("|---|---:|---:|---:|---:|---|")
    for example, procs, ours, theirs, our_loss, their_loss in rows:
        print(f"| {example} | {procs} | {ours:.3f} | {theirs:.3f} | "
              f"{ours / theirs:.2f}x | {our_loss:.6f} / {their_loss:.6f} |")


if __name__ == "__main__":
    main()
