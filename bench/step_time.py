#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Step time of the compiled training steps against PyTorch, TensorFlow and
TensorFlow + XLA, same machine, same state and batch.

For examples/mlp.mlir (SGD with momentum), examples/mlp_adam.mlir (AdamW)
and examples/transformer_block.mlir (pre-LN attention + MLP block, AdamW),
from the same random state and batch (dist-run --init-state, seed 1):

  - DistOpt: `dist-run` of the step (dist-lower-cpu; its timer covers the
    whole step: inputs bound, results copied back, buffers freed); on two
    processes `mpirun -np 2 dist-run` of `--dist-mirrored=replicas=2`;
  - PyTorch eager (bench/peers/torch_step.py): forward, backward, the
    optimizer; DistributedDataParallel over gloo on two processes;
  - TensorFlow graph mode and TensorFlow + XLA (`jit_compile=True`)
    (bench/peers/tf_step.py), MultiWorkerMirroredStrategy on two processes.

Threads are set explicitly and equally: 2 per process on one process, 1 per
process on two (OMP/MKL/OPENBLAS_NUM_THREADS, which dist-run's OpenMP team
reads, torch.set_num_threads, TensorFlow's intra-/inter-op pools).
OMP_WAIT_POLICY stays at its default: no system oversubscribes the cores
(PyTorch 2.15's MKL and DistOpt's OpenBLAS calls run on their own OpenMP
teams, TensorFlow on its Eigen pool), and PASSIVE waits measured slower for
both OpenMP users (transformer block: PyTorch 41-42 vs 30-34 ms, DistOpt
38 vs 28.5 ms). Runs are interleaved: each
round runs every system once per configuration; each run reports the
median of its steps (the first, with the JIT or tracing, left out); the
table gives the median over rounds and the spread (min-max), the load
average before and after, and the first loss of every system (the same
forward pass: the script fails when they differ by more than 1e-5
relative).

    python3 bench/step_time.py                       # all, 3 rounds
    python3 bench/step_time.py --rounds 5 --steps 50
    python3 bench/step_time.py --examples transformer_block --procs 1
    python3 bench/step_time.py --systems distopt torch

PyTorch and TensorFlow come from a virtual environment this script creates
on first use (bench/peers/env.py: tensorflow-cpu 2.21.0, torch 2.15.0 from
PyPI, under ~/.cache/distopt-bench). Needs a build in build/ and mpirun.
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
REFERENCE = os.path.join(ROOT, "test", "Integration", "Inputs")
PEERS = os.path.join(HERE, "peers")
sys.path.insert(0, PEERS)

import env as peer_env  # noqa: E402

SYSTEMS = ["distopt", "torch", "tf", "xla"]
LABELS = {"distopt": "DistOpt", "torch": "PyTorch eager",
          "tf": "TF graph", "xla": "TF + XLA"}


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def thread_env(threads, **extra):
    """The environment every system runs in: the same thread counts."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("OMP_WAIT_POLICY", None)
    env.update(extra)
    return env


def dist_run_times(cmd, threads):
    """(median step ms, first loss) of a dist-run command; the first step
    (which includes the JIT) is left out."""
    out = run(cmd, thread_env(threads))
    steps = re.findall(r"step \d+: loss ([-\d.]+) \(([\d.]+) ms\)", out)
    losses = [float(l) for l, _ in steps]
    times = [float(t) for _, t in steps][1:]
    return statistics.median(times), losses[0]


def peer_times(python, script, args, threads, pythonpath=None):
    env = thread_env(threads)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = run([python, os.path.join(PEERS, script), *map(str, args)], env)
    result = json.loads(out.strip().splitlines()[-1])
    return statistics.median(result["times"][1:]), result["first_loss"]


class Config:
    """One (example, processes) pair and its prepared files."""

    def __init__(self, example, procs, work):
        self.example, self.procs = example, procs
        self.threads = 2 if procs == 1 else 1
        self.step = os.path.join(ROOT, "examples", example + ".mlir")
        self.state = os.path.join(work, example + "_state.npz")
        self.data = os.path.join(work, example + "_data.npz")
        self.program = self.step
        if procs > 1:
            self.program = os.path.join(work, f"{example}_mirrored{procs}.mlir")
        self.cache = os.path.join(work, "cache")

    def prepare(self):
        if not os.path.exists(self.state):
            run([os.path.join(BIN, "dist-run"), self.step,
                 "--init-state=" + self.state, "--init-data=" + self.data,
                 "--seed=1"])
        if self.procs > 1:
            run([os.path.join(BIN, "dist-opt"), self.step,
                 f"--dist-mirrored=replicas={self.procs}", "-o", self.program])

    def measure(self, system, steps, python, port):
        if system == "distopt":
            cmd = [os.path.join(BIN, "dist-run"), self.program,
                   "--state=" + self.state, "--data=" + self.data,
                   f"--steps={steps}", "--cache-dir=" + self.cache]
            if self.procs > 1:
                cmd = ["mpirun", "-np", str(self.procs)] + cmd
            return dist_run_times(cmd, self.threads)
        if system == "torch":
            return peer_times(python, "torch_step.py",
                              [self.example, self.state, self.data, steps,
                               self.threads, self.procs, port],
                              self.threads, pythonpath=REFERENCE)
        if self.procs == 1:
            return peer_times(python, "tf_step.py",
                              [self.example, self.state, self.data, steps,
                               self.threads, 1, 0, port, int(system == "xla")],
                              self.threads)
        # One process per TensorFlow worker; rank 0 reports.
        procs = []
        for rank in range(self.procs):
            procs.append(subprocess.Popen(
                [python, os.path.join(PEERS, "tf_step.py"), self.example,
                 self.state, self.data, str(steps), str(self.threads),
                 str(self.procs), str(rank), str(port),
                 str(int(system == "xla"))],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=thread_env(self.threads)))
        outs = [p.communicate() for p in procs]
        for p, (out, err) in zip(procs, outs):
            if p.returncode != 0:
                sys.exit(f"tf_step.py ({system}, {self.procs} processes) "
                         f"failed:\n{out}{err}")
        result = json.loads(outs[0][0].strip().splitlines()[-1])
        return statistics.median(result["times"][1:]), result["first_loss"]


def spread(values):
    return (f"{statistics.median(values):.3f} "
            f"({min(values):.3f}-{max(values):.3f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--examples", nargs="+",
                        default=["mlp", "mlp_adam", "transformer_block"],
                        choices=["mlp", "mlp_adam", "transformer_block"])
    parser.add_argument("--procs", nargs="+", type=int, default=[1, 2],
                        choices=[1, 2])
    parser.add_argument("--systems", nargs="+", default=SYSTEMS,
                        choices=SYSTEMS)
    parser.add_argument("--torch-flush-denormals", action="store_true",
                        help="run PyTorch with torch.set_flush_denormal(True),"
                        " as dist-run (and TensorFlow on CPUs) runs")
    args = parser.parse_args()
    if args.torch_flush_denormals:
        os.environ["TORCH_FLUSH_DENORMAL"] = "1"
    python = (peer_env.python() if set(args.systems) - {"distopt"}
              else sys.executable)
    times, losses = {}, {}
    load = [os.getloadavg()]
    port = 29600
    with tempfile.TemporaryDirectory() as work:
        configs = [Config(e, p, work) for e in args.examples
                   for p in args.procs]
        for config in configs:
            config.prepare()
        for round_ in range(args.rounds):
            for config in configs:
                for system in args.systems:
                    port += 10
                    ms, loss = config.measure(system, args.steps, python, port)
                    key = (config.example, config.procs, system)
                    times.setdefault(key, []).append(ms)
                    losses[key] = loss
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    load.append(os.getloadavg())
    peers = [s for s in args.systems if s != "distopt"]
    header = ["step", "processes"] + [f"{LABELS[s]} ms" for s in args.systems]
    if "distopt" in args.systems and peers:
        header.append("DistOpt / best peer")
    header.append("first loss (" + " / ".join(LABELS[s] for s in
                                                args.systems) + ")")
    print(f"load average before: {load[0][0]:.2f}, after: {load[1][0]:.2f}; "
          f"{args.rounds} interleaved rounds of {args.steps} steps; median "
          "(min-max) over the rounds of each run's median step")
    print()
    print("| " + " | ".join(header) + " |")
    print("|---|---:|" + "---:|" * (len(header) - 3) + "---|")
    mismatched = False
    for config in configs:
        key = (config.example, config.procs)
        row = [config.example, str(config.procs)]
        row += [spread(times[key + (s,)]) for s in args.systems]
        if "distopt" in args.systems and peers:
            best = min(statistics.median(times[key + (s,)]) for s in peers)
            row.append(f"{statistics.median(times[key + ('distopt',)]) / best:.2f}x")
        firsts = [losses[key + (s,)] for s in args.systems]
        agree = max(firsts) - min(firsts) <= 1e-5 * abs(firsts[0])
        mismatched |= not agree
        row.append(" / ".join(f"{loss:.6f}" for loss in firsts) +
                   ("" if agree else " **MISMATCH**"))
        print("| " + " | ".join(row) + " |")
    if mismatched:
        sys.exit("step_time.py: the first losses differ by more than 1e-5 "
                 "(relative): the systems did not compute the same step")


if __name__ == "__main__":
    main()
