#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Time of `dist-lower-cuda` by how the kernels are grouped and compiled.

For each model, side by side in one run: `dist-opt MODEL --dist-lower-cuda`
with the step's kernels in one gpu.module (`kernel-modules=1`), in 16
modules compiled one after the other (`--mlir-disable-threading`: what
upstream `gpu-module-to-binary` does), in 16 modules compiled in parallel
(the default, `dist-gpu-module-to-binary`), and one module per kernel
compiled in parallel (`merge-kernels=false`). Each as wall seconds and CPU
seconds (the CPU time is what a loaded machine does not inflate), the
share of `dist-gpu-module-to-binary` (`--mlir-timing`), the number of
binaries and the slowest binary's NVPTX + ptxas time (what the target
records on each object, LLVMIRToISATimeInMs and ISAToBinaryTimeInMs: the
parallel compile's critical path).

    python3 bench/cuda_compile_time.py                 # block and gpt12
    python3 bench/cuda_compile_time.py --models gpt12 --repeat 2

Models: `block` (examples/transformer_block.mlir) and `gptN`
(bench/gen_gpt.py --layers N, its defaults otherwise). Needs ptxas (the
CUDA toolkit), no GPU.
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VARIANTS = [
    ("one module", ["--dist-lower-cuda=kernel-modules=1"]),
    ("16 modules, serial", ["--dist-lower-cuda=kernel-modules=16",
                            "--mlir-disable-threading"]),
    ("16 modules, parallel (default)", ["--dist-lower-cuda"]),
    ("a module per kernel, parallel", ["--dist-lower-cuda=merge-kernels=false"]),
]


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def model_path(name, dist_dir, work):
    if name == "block":
        return os.path.join(ROOT, "examples", "transformer_block.mlir")
    match = re.fullmatch(r"gpt(\d+)", name)
    if not match:
        sys.exit(f"cuda_compile_time: unknown model '{name}' (block or gptN)")
    path = os.path.join(work, f"{name}.mlir")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_gpt.py"),
                    "--layers", match.group(1), "--output", path], check=True)
    return path


def lower(dist_opt, model, flags, out):
    """Returns (wall s, CPU s, binary-pass s, binaries, slowest object ms)."""
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run([dist_opt, model, *flags, "--mlir-timing", "-o", out],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"cuda_compile_time: {' '.join(flags)} failed:\n"
                 f"{done.stderr[-2000:]}")
    binary = 0.0
    for line in done.stderr.splitlines():
        if line.rstrip().endswith("DistGPUModuleToBinaryPass"):
            binary = float(line.split()[0])  # (the wall column)
    text = open(out).read()
    binaries = len(re.findall(r"^\s*gpu\.binary @", text, re.M))
    slowest = 0
    for props in re.findall(r"properties = \{([^}]*)\}", text):
        times = [int(t) for t in re.findall(r"TimeInMs = (\d+)", props)]
        slowest = max(slowest, sum(times))
    return wall, cpu, binary, binaries, slowest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="block,gpt12")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each variant (the fastest is kept)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    dist_opt = os.path.join(args.build, "bin", "dist-opt")
    if not os.access(dist_opt, os.X_OK):
        sys.exit(f"cuda_compile_time: no {dist_opt} (build first)")
    print(f"cuda_compile_time: {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}")
    print("| model | kernels in | wall s | CPU s | binary pass s | binaries "
          "| slowest binary s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "lowered.mlir")
        for name in args.models.split(","):
            model = model_path(name, dist_opt, work)
            for label, flags in VARIANTS:
                runs = [lower(dist_opt, model, flags, out)
                        for _ in range(args.repeat)]
                wall, cpu, binary, binaries, slowest = min(runs)
                print(f"| {name} | {label} | {wall:.1f} | {cpu:.1f} | "
                      f"{binary:.1f} | {binaries} | {slowest / 1000:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
