#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Export, lowering and compile times of one model under several strategies.

For each model: the export (PyTorch models through
`distopt.torch.export_train_step`, timed in this process, with the share of
AOTAutograd's trace), then for each strategy (single-device, a pipeline, a
parameter server) the strategy pass (`dist-opt`), the MLIR lowering
(`dist-opt --dist-lower-cpu`) and the cold compile of `dist-run --steps=1`
with a fresh compile cache (under `mpirun` for placed programs), side by
side in one run so that the ratios are fair on a shared machine. Each time
is given as wall seconds and as CPU seconds (this process's children,
every rank included): the CPU time is what a loaded machine does not
inflate.

    flock /tmp/distopt-mpi.lock build/venv/bin/python bench/export_time.py
    build/venv/bin/python bench/export_time.py --models resnet18 \\
        --strategies single --opt-levels 0,3

Models: `transformer_stack` (examples/transformer_stack.mlir, no export),
`resnet18`, `resnet50`, `efficientnet_b0` (torchvision, 10 classes,
batch 2 at 64x64 by default) and `gpt2` (transformers' GPT2LMHeadModel,
12 layers, --gpt-width wide, 4 heads, 32 tokens of a 512-word vocabulary).
"""

import argparse
import datetime
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STRATEGIES = {
    "single": (None, 1),
    "pipeline": ("--dist-pipeline=stages=2 microbatches=4", 2),
    "ps": ("--dist-parameter-server=ps=1 workers=1", 2),
}


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd, env=None, mpi=False):
    """Runs `cmd`; returns (wall s, CPU s of it and its children)."""
    cpu = children_cpu()
    start = time.perf_counter()
    # MPICH's mpirun fails at start-up now and then with stdin at /dev/null:
    # an open pipe instead (../shared/TOOLCHAIN.md).
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          input="" if mpi else None)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n"
                 f"{done.stderr[-2000:]}")
    return wall, children_cpu() - cpu


def build_model(name, args):
    import torch
    torch.manual_seed(0)
    if name in ("resnet18", "resnet50", "efficientnet_b0"):
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=10)
        x = torch.randn(args.batch, 3, args.size, args.size)
        return model, x, torch.randint(0, 10, (args.batch,))
    if name == "gpt2":
        import transformers
        transformers.logging.set_verbosity_error()
        config = transformers.GPT2Config(
            n_layer=12, n_embd=args.gpt_width, n_head=4, n_positions=64,
            vocab_size=512)

        class LM(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gpt = transformers.GPT2LMHeadModel(config)

            def forward(self, ids):
                return self.gpt(input_ids=ids).logits.reshape(-1, 512)

        return (LM(), torch.randint(0, 512, (args.batch, 32)),
                torch.randint(0, 512, (args.batch * 32,)))
    sys.exit(f"unknown model '{name}'")


def export(name, args, directory):
    """The step in `directory`; returns (total s, trace s, CPU s)."""
    if name == "transformer_stack":
        return None
    import cProfile
    import pstats
    import distopt.torch
    model, x, y = build_model(name, args)
    profile = cProfile.Profile()
    cpu = time.process_time()
    start = time.perf_counter()
    profile.enable()
    step = distopt.torch.export_train_step(model, x, y)
    profile.disable()
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu
    step.save(directory)
    trace = 0.0
    for (path, _, function), stat in pstats.Stats(profile).stats.items():
        if function == "aot_export_module":
            trace = max(trace, stat[3])
    return total, trace, cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", default="transformer_stack")
    parser.add_argument("--strategies", default="single,pipeline,ps")
    parser.add_argument("--opt-levels", default="3")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--gpt-width", type=int, default=256)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--markdown", help="also write the table here")
    args = parser.parse_args(argv)
    dist_opt = os.path.join(args.build, "bin", "dist-opt")
    dist_run = os.path.join(args.build, "bin", "dist-run")
    strategies = [s for s in args.strategies.split(",") if s]
    for s in strategies:
        if s not in STRATEGIES:
            sys.exit(f"unknown strategy '{s}' (expected one of "
                     f"{', '.join(STRATEGIES)})")
    header = (f"{datetime.date.today()}, {platform.machine()}, "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} before")
    rows = ["| model | export s (trace s) | strategy | -O | strategy pass s "
            "| lowering s | cold compile + 1 step s (CPU s) | vs single |",
            "|---|---:|---|---:|---:|---:|---:|---:|"]
    print(header, flush=True)
    with tempfile.TemporaryDirectory(prefix="distopt-export-time-") as tmp:
        for name in (m for m in args.models.split(",") if m):
            work = os.path.join(tmp, name)
            os.makedirs(work)
            exported = export(name, args, work)
            if exported:
                step = os.path.join(work, "step.mlir")
                state = os.path.join(work, "state.npz")
                data = os.path.join(work, "batch.npz")
                export_text = f"{exported[0]:.1f} ({exported[1]:.1f})"
                print(f"{name}: export {exported[0]:.1f} s wall, "
                      f"{exported[2]:.1f} s CPU, AOTAutograd "
                      f"{exported[1]:.1f} s", flush=True)
            else:
                step = os.path.join(ROOT, "examples", f"{name}.mlir")
                state = os.path.join(work, "state.npz")
                data = os.path.join(work, "batch.npz")
                subprocess.run([dist_run, step, f"--init-state={state}",
                                f"--init-data={data}", "--seed=3"],
                               check=True, capture_output=True)
                export_text = "-"
            for opt in (int(o) for o in args.opt_levels.split(",") if o):
                single = None
                for strategy in strategies:
                    option, ranks = STRATEGIES[strategy]
                    module, pass_s = step, None
                    if option:
                        module = os.path.join(work, f"{strategy}.mlir")
                        pass_s, _ = timed([dist_opt, step, option, "-o",
                                           module])
                    lower_s, _ = timed([dist_opt, module, "--dist-lower-cpu",
                                        "-o", os.path.join(work, "low.mlir")])
                    env = dict(os.environ, DISTOPT_CACHE_DIR=os.path.join(
                        work, f"cache-{strategy}-{opt}"))
                    run = [dist_run, module, f"--state={state}",
                           f"--data={data}", "--steps=1", f"--opt-level={opt}"]
                    if ranks > 1:
                        run = [args.mpirun, "-np", str(ranks)] + run
                    wall, cpu = timed(run, env=env, mpi=ranks > 1)
                    if strategy == "single":
                        single = wall
                    ratio = f"{wall / single:.2f}x" if single else ""
                    row = (f"| {name} | {export_text} | {strategy} | {opt} | "
                           f"{'' if pass_s is None else f'{pass_s:.2f}'} | "
                           f"{lower_s:.2f} | {wall:.1f} ({cpu:.1f}) | "
                           f"{ratio} |")
                    rows.append(row)
                    print(row, flush=True)
    footer = f"load {os.getloadavg()[0]:.2f} after"
    print(footer)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(header + "; " + footer + "\n\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
