#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Step time of bf16 mixed-precision training steps against our float32
step and PyTorch's CPU autocast, same machine, same state and batch.

For examples/mlp.mlir, examples/digits_mlp.mlir (SGD with momentum) and
examples/transformer_block.mlir (AdamW), from the same random state and
batch (dist-run --init-state, seed 1):

  - DistOpt f32: `dist-run` of the example as it is;
  - DistOpt bf16: `dist-run` of `dist-opt --train-mixed-precision=compute=bf16`
    of it (products, elementwise work in bf16, f32 master weights; products
    through oneDNN's bf16 gemm where the CPU has avx512_bf16 / amx_bf16:
    distopt_cpu_sixteen_bit_info);
  - PyTorch f32: eager forward, backward, optimizer (the module
    bench/step_time.py times: test/Integration/Inputs/torch_reference.py);
  - PyTorch bf16: the same under `torch.autocast("cpu", dtype=torch.bfloat16)`
    (forward in autocast, backward and optimizer outside, as PyTorch's AMP
    recipe has it; f32 master weights).

One process, the same threads for every system (--threads, default 2:
OMP/MKL/OPENBLAS_NUM_THREADS, torch.set_num_threads). Runs are interleaved: each round runs every system
once per example; each run reports the median of its steps (the first,
with the JIT or tracing, left out); the table gives the median over rounds
and the spread (min-max), and the first loss of each system. The f32 first
losses must agree to 1e-5 relative and the bf16 ones with each other (and
with f32) to 5e-2: the script fails otherwise.

    python3 bench/mixed_precision.py                  # all, 3 rounds
    python3 bench/mixed_precision.py --rounds 5 --steps 50
    python3 bench/mixed_precision.py --examples transformer_block
    python3 bench/mixed_precision.py --threads 1      # a loaded machine
    python3 bench/mixed_precision.py --systems distopt-f32 distopt-bf16

PyTorch comes from bench/step_time.py's comparison environment
(bench/peers/env.py). Needs a build in build/.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")
REFERENCE = os.path.join(ROOT, "test", "Integration", "Inputs")
PEERS = os.path.join(HERE, "peers")

SYSTEMS = ["distopt-f32", "distopt-bf16", "torch-f32", "torch-bf16"]
LABELS = {"distopt-f32": "DistOpt f32", "distopt-bf16": "DistOpt bf16",
          "torch-f32": "PyTorch f32", "torch-bf16": "PyTorch autocast bf16"}
EXAMPLES = ["mlp", "digits_mlp", "transformer_block"]
THREADS = 2


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def thread_env(**extra):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(THREADS),
               MKL_NUM_THREADS=str(THREADS), OMP_NUM_THREADS=str(THREADS),
               DISTOPT_BENCH_THREADS=str(THREADS))
    env.pop("OMP_WAIT_POLICY", None)
    env.update(extra)
    return env


class Example:
    """One example's prepared files: state, batch, its bf16 step."""

    def __init__(self, name, work):
        self.name = name
        self.step = os.path.join(ROOT, "examples", name + ".mlir")
        self.mixed = os.path.join(work, name + "_bf16.mlir")
        self.state = os.path.join(work, name + "_state.npz")
        self.data = os.path.join(work, name + "_data.npz")
        self.cache = os.path.join(work, "cache")

    def prepare(self):
        run([os.path.join(BIN, "dist-run"), self.step,
             "--init-state=" + self.state, "--init-data=" + self.data,
             "--seed=1"])
        run([os.path.join(BIN, "dist-opt"), self.step,
             "--train-mixed-precision=compute=bf16", "-o", self.mixed])

    def measure(self, system, steps, python):
        """(median step ms, first loss)."""
        if system.startswith("distopt"):
            program = self.mixed if system == "distopt-bf16" else self.step
            out = run([os.path.join(BIN, "dist-run"), program,
                       "--state=" + self.state, "--data=" + self.data,
                       f"--steps={steps}", "--cache-dir=" + self.cache],
                      thread_env())
            found = re.findall(r"step \d+: loss ([-\d.e+]+) \(([\d.]+) ms\)",
                               out)
            times = [float(t) for _, t in found][1:]
            return statistics.median(times), float(found[0][0])
        out = run([python, os.path.abspath(__file__), "--peer", self.name,
                   self.state, self.data, str(steps),
                   str(int(system == "torch-bf16"))],
                  thread_env(PYTHONPATH=REFERENCE))
        result = json.loads(out.strip().splitlines()[-1])
        return statistics.median(result["times"][1:]), result["first_loss"]


def peer(name, state_path, data_path, steps, autocast):
    """PyTorch's step of `name` (in the comparison environment): prints one
    JSON line, the step times in ms and the first loss."""
    import numpy as np
    import torch
    from torch_reference import Step, inputs, make_optimizer

    torch.set_num_threads(int(os.environ["DISTOPT_BENCH_THREADS"]))
    torch.set_num_interop_threads(1)
    # examples/digits_mlp.mlir is examples/mlp.mlir's model on 64 pixels.
    model = "mlp" if name == "digits_mlp" else name
    state, data = np.load(state_path), np.load(data_path)
    step = Step(model, state)
    x, y = inputs(model, data)
    opt = make_optimizer(model, step, float(state["lr"]))
    times, first = [], None
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = step(x, y)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - start) * 1e3)
        if first is None:
            first = float(loss)
    print(json.dumps({"times": times, "first_loss": first}))


def spread(values):
    return (f"{statistics.median(values):.3f} "
            f"({min(values):.3f}-{max(values):.3f})")


def main():
    global THREADS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--examples", nargs="+", default=EXAMPLES,
                        choices=EXAMPLES)
    parser.add_argument("--systems", nargs="+", default=SYSTEMS,
                        choices=SYSTEMS)
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="threads of every system (default 2)")
    args = parser.parse_args()
    THREADS = args.threads
    python = sys.executable
    if any(s.startswith("torch") for s in args.systems):
        sys.path.insert(0, PEERS)
        import env as peer_env
        python = peer_env.python()
    times, losses = {}, {}
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as work:
        examples = [Example(e, work) for e in args.examples]
        for example in examples:
            example.prepare()
        for round_ in range(args.rounds):
            for example in examples:
                for system in args.systems:
                    ms, loss = example.measure(system, args.steps, python)
                    times.setdefault((example.name, system), []).append(ms)
                    losses[(example.name, system)] = loss
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    load.append(os.getloadavg())
    header = (["step"] + [f"{LABELS[s]} ms" for s in args.systems])
    ratios = []
    if {"distopt-bf16", "distopt-f32"} <= set(args.systems):
        ratios.append(("distopt-bf16", "distopt-f32", "bf16 / our f32"))
    if {"distopt-bf16", "torch-bf16"} <= set(args.systems):
        ratios.append(("distopt-bf16", "torch-bf16", "bf16 / PyTorch bf16"))
    header += [r[2] for r in ratios]
    header.append("first loss (" + " / ".join(LABELS[s] for s in
                                                args.systems) + ")")
    print(f"load average before: {load[0][0]:.2f}, after: {load[1][0]:.2f}; "
          f"{args.rounds} interleaved rounds of {args.steps} steps, "
          f"{THREADS} threads; median (min-max) over the rounds of each "
          "run's median step")
    print()
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 2) + "---|")
    failures = []
    for example in examples:
        name = example.name
        row = [name] + [spread(times[(name, s)]) for s in args.systems]
        for a, b, _ in ratios:
            ratio = (statistics.median(times[(name, a)]) /
                     statistics.median(times[(name, b)]))
            row.append(f"{ratio:.2f}x")
        firsts = {s: losses[(name, s)] for s in args.systems}
        row.append(" / ".join(f"{firsts[s]:.6f}" for s in args.systems))
        print("| " + " | ".join(row) + " |")
        f32 = [firsts[s] for s in firsts if s.endswith("f32")]
        if f32 and max(f32) - min(f32) > 1e-5 * abs(f32[0]):
            failures.append(f"{name}: the f32 first losses differ: {f32}")
        reference = f32[0] if f32 else None
        for s in firsts:
            if s.endswith("bf16") and reference is not None and \
                    abs(firsts[s] - reference) > 5e-2 * abs(reference):
                failures.append(f"{name}: {LABELS[s]}'s first loss "
                                f"{firsts[s]} is not within 5e-2 of the "
                                f"f32 one {reference}")
    if failures:
        sys.exit("mixed_precision.py: " + "; ".join(failures))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--peer":
        peer(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
             bool(int(sys.argv[6])))
    else:
        main()
