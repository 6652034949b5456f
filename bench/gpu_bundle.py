#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Prepares, here, what bench/gpu_check.py measures on a lent GPU machine
that has no MLIR, MPI or DistOpt build (../.library/device/KINDS.md).

    bench/gpu_bundle.py [--out DIR] [--build DIR] [--steps adamw,block,resnet]

The lent machine gets the working tree plus at most 64 MiB of ignored
paths, so dist-opt and dist-run cannot go there. What can: each step
compiled ahead of time for CUDA (`dist-compile --device=cuda`: the kernels
in the library), examples/aot/run_step.c linked against it, libdistopt_cuda
and a libdistrt built without MPI (the build's lib/local/). Each step's
state is what the peer gets too: the transformer block's is carried (the
state and batch `dist-run --init-state --init-data --seed=1` writes), the
fused AdamW's and ResNet-18's are made there (bench/gpu_check.py: NumPy,
and torchvision's own initialisation for ResNet-18), as they are too large
to carry. The launch reports of the CUDA steps (what gpu_check measures
from dist-opt where it can run) are recorded in the manifest.

DIR (default bench/gpu_bundle, ignored by git) receives lib/, one folder
per step (libstep.so, libstep.h, run_step, inputs) and manifest.json. On
the lent machine:

    run(command="bash bench/gpu_check.sh $OUT/gc --bundle bench/gpu_bundle",
        carry=["bench/gpu_bundle"])

Fails (status 1, naming the step and the command) when a part cannot be
built, and when the bundle is larger than the 64 MiB the device tool
carries. The bundle is written into a temporary folder beside DIR and
renamed over it at the end: a failed run leaves the previous one intact.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gpu_check  # noqa: E402

CARRY_LIMIT = 64 << 20
ADAMW_PARAMS, ADAMW_ELEMENTS = 4, 1 << 25
# The AdamW step's hyper-parameter arguments (bench/gpu/adamw_step.py).
ADAMW_HYPER = {"lr": 1e-3}
ARGUMENT = re.compile(
    r"\*\w+ /\* (\w+) \"([^\"]+)\" (\w+)\[([^\]]*)\] \*/")


def fail(message):
    sys.exit(f"gpu_bundle: {message}")


def call(cmd, what, env=None, cwd=None):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          cwd=cwd)
    if done.returncode != 0:
        fail(f"{what} failed ({' '.join(cmd)}):\n"
             f"{(done.stdout + done.stderr).strip()[-3000:]}")
    return done.stdout


def arguments(header):
    """The step's arguments, in order, from the comments of its entry's
    prototype in the header dist-compile wrote."""
    text = open(header).read()
    entry = text[text.index("/* One step"):]
    entry = entry[:entry.index(");")]
    return [{"role": role, "name": name, "dtype": dtype,
             "shape": [int(d) for d in dims.split(",") if d.strip()]}
            for role, name, dtype, dims in ARGUMENT.findall(entry)]


def compile_step(build, mlir, folder, name):
    """dist-compile --device=cuda into FOLDER, then run_step linked with
    the bundle's libraries (found through $ORIGIN there)."""
    os.makedirs(folder)
    library = os.path.join(folder, "libstep.so")
    # (One device: the local backend, as the nccl one would need MPI.)
    call([os.path.join(build, "bin", "dist-compile"), mlir, "--device=cuda",
          "--backend=local", "-o", library], f"compiling the {name} step")
    call(["cc", "-std=c11", "-O2", f"-I{folder}",
          f"-I{os.path.join(ROOT, 'include')}",
          os.path.join(ROOT, "examples", "aot", "run_step.c"),
          # (-l: the library by its name, found through $ORIGIN there;
          # it has no soname to record instead of this path.)
          "-o", os.path.join(folder, "run_step"), f"-L{folder}", "-lstep",
          os.path.join(folder, "..", "lib", "libdistrt.so"),
          os.path.join(folder, "..", "lib", "libdistopt_cuda.so"),
          # The CUDA libraries are the lent machine's (gpu_check finds
          # them); here only their names are checked at link time.
          "-Wl,--allow-shlib-undefined",
          "-Wl,-rpath,$ORIGIN:$ORIGIN/../lib"],
         f"linking run_step for the {name} step")
    return arguments(os.path.join(folder, "libstep.h"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "gpu_bundle"))
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--steps", default="adamw,block,resnet",
                        help="comma-separated: adamw, block, resnet")
    args = parser.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    unknown = set(steps) - {"adamw", "block", "resnet"}
    if unknown:
        fail(f"unknown --steps {', '.join(sorted(unknown))} (adamw, block, "
             "resnet)")
    build = os.path.abspath(args.build)
    for tool in ("dist-opt", "dist-run", "dist-compile"):
        if not os.path.exists(os.path.join(build, "bin", tool)):
            fail(f"no {build}/bin/{tool}: run scripts/setup.sh build first")
    out = os.path.abspath(args.out)
    if os.path.lexists(out) and not os.path.isdir(out):
        fail(f"'{out}' exists and is not a folder: not replaced")
    for name in ("local/libdistrt.so", "libdistopt_cuda.so"):
        if not os.path.exists(os.path.join(build, "lib", name)):
            fail(f"no {build}/lib/{name}: build it (ninja -C {build}; "
                 "libdistopt_cuda needs the CUDA toolkit)")
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(dir=parent, prefix=".gpu_bundle.")
    os.chmod(work, 0o755)
    try:
        bundle(build, work, steps)
        previous = out + ".previous"
        if os.path.exists(out):
            os.rename(out, previous)
        os.rename(work, out)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(out) for f in files)
    print(f"gpu_bundle: wrote {out} ({size / 2**20:.1f} MiB; carry it with "
          f"the device tool's run: carry=[\"{os.path.relpath(out, ROOT)}\"])")


def bundle(build, work, steps):
    lib = os.path.join(work, "lib")
    os.makedirs(lib)
    shutil.copy2(os.path.join(build, "lib", "local", "libdistrt.so"), lib)
    shutil.copy2(os.path.join(build, "lib", "libdistopt_cuda.so"), lib)
    manifest = {"steps": {}, "commit": call(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], "git").strip()}
    budget = gpu_check.Budget(600)
    manifest["launches"] = gpu_check.check_launches(build, budget)
    with tempfile.TemporaryDirectory() as scratch:
        if "adamw" in steps:
            mlir = os.path.join(scratch, "adamw.mlir")
            call([sys.executable, os.path.join(HERE, "gpu", "adamw_step.py"),
                  mlir, "--params", str(ADAMW_PARAMS), "--elements",
                  str(ADAMW_ELEMENTS)], "writing the AdamW step")
            found = compile_step(build, mlir, os.path.join(work, "adamw"),
                                 "AdamW")
            for arg in found:
                if arg["role"] == "hyper":
                    arg["value"] = ADAMW_HYPER[arg["name"]]
            manifest["steps"]["adamw"] = {
                "arguments": found, "inputs": "random",
                "bytes": 24 * ADAMW_PARAMS * ADAMW_ELEMENTS}
        if "block" in steps:
            mlir = os.path.join(ROOT, "examples", "transformer_block.mlir")
            folder = os.path.join(work, "block")
            found = compile_step(build, mlir, folder, "transformer block")
            call([os.path.join(build, "bin", "dist-run"), mlir,
                  f"--init-state={folder}/state.npz",
                  f"--init-data={folder}/data.npz", "--seed=1"],
                 "writing the transformer block's state")
            manifest["steps"]["block"] = {"arguments": found,
                                          "inputs": "carried"}
        if "resnet" in steps:
            python = gpu_check.find_python()
            env = dict(os.environ, PYTHONPATH=os.path.join(
                build, "python_packages"))
            call([python, "-m", "distopt.export_torch",
                  "torchvision.models:resnet18",
                  f"--input-shape={gpu_check.RESNET_BATCH},3,"
                  f"{gpu_check.RESNET_SIZE},{gpu_check.RESNET_SIZE}",
                  "--optimizer=sgd", "--lr=0.1", "--momentum=0.9", "-o",
                  scratch], "exporting torchvision's ResNet-18", env=env)
            found = compile_step(build, os.path.join(scratch, "step.mlir"),
                                 os.path.join(work, "resnet"), "ResNet-18")
            # (The hyper-parameters the export chose travel as values.)
            exported = {}
            for name in ("state.npz", "batch.npz"):
                with numpy.load(os.path.join(scratch, name)) as arrays:
                    exported.update({k: arrays[k] for k in arrays.files})
            for arg in found:
                if arg["role"] == "hyper":
                    arg["value"] = exported[arg["name"]].tolist()
            manifest["steps"]["resnet"] = {"arguments": found,
                                           "inputs": "torchvision"}
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(work) for f in files)
    if size > CARRY_LIMIT:
        fail(f"the bundle is {size / 2**20:.1f} MiB, over the "
             f"{CARRY_LIMIT >> 20} MiB the device tool carries")
    with open(os.path.join(work, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
