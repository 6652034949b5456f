#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The first thing to run when a GPU is lent: every GPU measurement of
DistOpt in one script, within a time budget (bench/gpu_check.sh).

    bench/gpu_check.py [--out DIR] [--budget SECONDS] [--build DIR]

It builds nothing: it runs what the set-up built (build/: dist-opt,
dist-run, libdistopt_cuda) and the PyTorch it finds (the set-up's venv, or
the machine's own). Every part is timed and bounded; one that fails or runs
out of time is recorded as such and the rest still run. Without a CUDA
device it says so, runs the checks that need none, and exits 0; with one,
it exits 1 when a part failed (after writing what the others measured).

Always (no GPU needed):
  - launches: what one call of the transformer block's and the MLP's CUDA
    step enqueues (dist-lower-cuda{report}: kernel launches, cuBLAS calls,
    device allocations, host copies and waits, the workspace that holds
    the intermediates), against the budget of 40
    launches and no host copy for the block;
  - the `gpu` test label (ctest -L gpu: test/GPU; without a device, the
    no-device messages and the device-resident state through
    --gpu-mapped's stand-in device);
  - without a device, with --bundle: each step of the bundle run as the
    lent machine will run it (its run_step, 3 steps, --graph) on the
    build's fake CUDA driver (test/lib/FakeCuda, docs/guides/fake-cuda.md),
    which checks every copy, cuBLAS operand and capture against CUDA's
    rules: a bundle that would break on the GPU breaks here first.

With a CUDA device:
  - HBM bandwidth of the fused AdamW kernel (bench/gpu/adamw_step.py: all
    updates one launch, 24 bytes per element) against the device-to-device
    copy rate (cudaMemcpy through PyTorch, bytes read and written);
  - a 4096^3 FP32 GEMM through DistOpt's product call (libdistopt_cuda's
    distopt_matmul_f32, cuBLAS underneath) against PyTorch's (cuBLAS), TF32
    off in both;
  - the transformer block's step (dist-run --device=cuda, state resident)
    against PyTorch CUDA eager and torch.compile (bench/peers/torch_step.py
    --device=cuda), same state and batch;
  - torchvision's ResNet-18 step (batch 32, 224 x 224, SGD with momentum;
    exported by `python -m distopt.export_torch`, run by dist-run
    --device=cuda) against PyTorch CUDA eager and torch.compile
    (bench/peers/torch_resnet.py --device=cuda), same state and batch;
  - NCCL all-reduce bus bandwidth on the GPUs present (PyTorch's
    torch.distributed over NCCL; one GPU: nothing to measure, said so).

Writes DIR/gpu_check.json and DIR/gpu_check.md (a table for
bench/README.md). DIR defaults to bench/gpu_check_out.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LAUNCH_BUDGET = 40


class Budget:
    """The seconds left of the whole check."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return max(0.0, self.end - time.monotonic())


def cuda_devices():
    """(count, [names], reason): the driver's devices, or 0 and why not."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return 0, [], f"no CUDA driver ({error})"
    if driver.cuInit(0) != 0:
        return 0, [], "cuInit failed: the driver sees no usable device"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return 0, [], "the driver reports no CUDA device"
    names = []
    for i in range(count.value):
        device = ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        driver.cuDeviceGet(ctypes.byref(device), i)
        driver.cuDeviceGetName(name, 256, device)
        names.append(name.value.decode())
    return count.value, names, ""


def run(cmd, budget, limit, env=None, cwd=None):
    """(returncode, output) of `cmd` within min(limit, what is left)."""
    timeout = max(1.0, min(limit, budget.left()))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=timeout)
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        out = (expired.stdout or b"") + (expired.stderr or b"")
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return None, out + f"\n(stopped after {timeout:.0f} s)"


REPORT = re.compile(
    r"per call: (\d+) kernel launches, (\d+) library calls, (\d+) "
    r"collectives \((\d+) launches\), (\d+) device allocations, (\d+) frees, "
    r"(\d+) host-device copies, (\d+) host waits"
    r"(?:; (\d+) buffers in workspaces of (\d+) bytes)?")


def check_launches(build, budget):
    """The launch report of the examples' CUDA steps."""
    found = {}
    for example in ("transformer_block", "mlp"):
        with tempfile.TemporaryDirectory() as work:
            code, out = run([os.path.join(build, "bin", "dist-opt"),
                             os.path.join(ROOT, "examples", example + ".mlir"),
                             "--dist-lower-cuda=format=isa report=true", "-o",
                             os.path.join(work, "out.mlir")], budget, 120)
        match = REPORT.search(out)
        if code != 0 or not match:
            found[example] = {"error": out.strip()[-2000:]}
            continue
        keys = ["kernels", "library_calls", "collectives", "launches",
                "allocations", "frees", "host_copies", "host_waits",
                "workspace_buffers", "workspace_bytes"]
        found[example] = dict(zip(keys, (int(g or 0)
                                         for g in match.groups())))
    block = found.get("transformer_block", {})
    if "launches" in block:
        block["budget"] = LAUNCH_BUDGET
        block["within_budget"] = (block["launches"] <= LAUNCH_BUDGET and
                                  block["host_copies"] == 0)
    return found


def check_tests(build, budget):
    """ctest -L gpu: its summary line and the failed tests."""
    code, out = run(["ctest", "--test-dir", build, "-L", "gpu",
                     "--output-on-failure"], budget, 150)
    summary = re.search(r"\d+% tests passed, \d+ tests failed out of \d+",
                        out)
    return {"passed": code == 0,
            "summary": summary.group(0) if summary else out.strip()[-300:],
            "failed": re.findall(r"^\s+DISTOPT :: (\S+)", out, re.MULTILINE)}


def find_python():
    """The set-up's venv Python (PyTorch 2.15, a CUDA build), else python3."""
    venv = os.path.join(ROOT, "build", "venv", "bin", "python")
    return venv if os.path.exists(venv) else shutil.which("python3")


def torch_part(python, budget, code, limit):
    """Runs a PyTorch snippet; its last line is JSON."""
    rc, out = run([python, "-c", code], budget, limit)
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"error": out.strip()[-1500:], "returncode": rc}


COPY_RATE = r"""
import json, torch
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
for _ in range(3):
    b.copy_(a)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(10):
    b.copy_(a)
end.record()
end.synchronize()
ms = start.elapsed_time(end) / 10
print(json.dumps({"bytes": 2 * n, "ms": ms, "gb_per_s": 2 * n / ms / 1e6,
                  "torch": torch.__version__,
                  "device": torch.cuda.get_device_name()}))
"""

TORCH_GEMM = r"""
import json, torch
torch.backends.cuda.matmul.allow_tf32 = False
n = 4096
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
for _ in range(3):
    c = a @ b
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(10):
    c = a @ b
end.record()
end.synchronize()
ms = start.elapsed_time(end) / 10
print(json.dumps({"ms": ms, "tflops": 2 * n ** 3 / ms / 1e9}))
"""

NCCL_BUS = r"""
import json, os, torch, torch.distributed as dist, torch.multiprocessing as mp
def main(rank, world, out):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29511"
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    x = torch.ones(1 << 28, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        dist.all_reduce(x)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / 10
    if rank == 0:
        size = x.numel() * 4
        with open(out, "w") as f:
            json.dump({"bytes": size, "ms": ms, "algbw_gb_per_s": size / ms / 1e6,
                       "busbw_gb_per_s": size / ms / 1e6 * 2 * (world - 1) / world,
                       "gpus": world}, f)
    dist.destroy_process_group()
world = torch.cuda.device_count()
out = "/tmp/distopt_nccl_bus.json"
mp.spawn(main, args=(world, out), nprocs=world)
print(open(out).read())
"""


def cuda_library_dirs(python):
    """The folders that hold CUDA's libraries (cuBLAS, cuBLASLt) on this
    machine: the toolkit's, and those of the NVIDIA wheels PyTorch uses."""
    dirs = [os.path.join(home, sub) for home in
            (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda")
            if home for sub in ("lib64", "lib")]
    code = ("import glob, os, nvidia\n"
            "print('\\n'.join(d for p in nvidia.__path__ for d in "
            "glob.glob(os.path.join(p, '*', 'lib')) + "
            "glob.glob(os.path.join(p, 'lib'))))")
    try:
        done = subprocess.run([python, "-c", code], capture_output=True,
                              text=True, timeout=30)
        dirs += done.stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def distopt_gemm(library, cuda_dirs):
    """distopt_matmul_f32 (LIBRARY: libdistopt_cuda) on 4096^3, timed by the
    host around a synchronized loop. cuBLAS and cuBLASLt are loaded first
    from CUDA_DIRS where they are there (a running Python's library path
    is fixed at its start)."""
    for folder in cuda_dirs:
        for name in sorted(os.listdir(folder)):
            if re.fullmatch(r"libcublas(Lt)?\.so\.\d+", name):
                ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(library)
    lib.distopt_cuda_alloc.restype = ctypes.c_void_p
    lib.distopt_cuda_alloc.argtypes = [ctypes.c_size_t]
    lib.distopt_cuda_last_error.restype = ctypes.c_char_p
    n = 4096
    bufs = [lib.distopt_cuda_alloc(n * n * 4) for _ in range(3)]
    if not all(bufs):
        return {"error": lib.distopt_cuda_last_error().decode()}

    class Ranked(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * 2),
                    ("strides", ctypes.c_int64 * 2)]

    class Unranked(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]

    ranked = [Ranked(b, b, 0, (n, n), (n, 1)) for b in bufs]
    unranked = [Unranked(2, ctypes.cast(ctypes.pointer(r), ctypes.c_void_p))
                for r in ranked]
    matmul = lib._mlir_ciface_distopt_matmul_f32
    matmul.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 4 + \
        [ctypes.c_int32] * 4

    def call():
        matmul(*(ctypes.addressof(u) for u in unranked), 1, n, n, n, 0, 0, 0, 0)

    for _ in range(3):
        call()
    lib.distopt_cuda_synchronize()
    start = time.perf_counter()
    for _ in range(10):
        call()
    if lib.distopt_cuda_synchronize() != 0:
        return {"error": lib.distopt_cuda_last_error().decode()}
    ms = (time.perf_counter() - start) * 1e3 / 10
    return {"ms": ms, "tflops": 2 * n ** 3 / ms / 1e9}


STEP_LINE = re.compile(r"step (\d+): loss ([-\d.naif]+) \(([\d.]+) ms\)")


def step_times(code, out, graphs, skip):
    """The median of a runner's step lines after the first SKIP, its first
    loss, and whether the step replayed from a CUDA graph or, with the
    reason the runner gave, ran launch by launch."""
    lines = STEP_LINE.findall(out)
    if code != 0 or len(lines) <= skip:
        return {"error": out.strip()[-1500:]}
    times = [float(ms) for _, _, ms in lines]
    refused = re.search(r"runs launch by launch, not as a captured graph: "
                        r"(.*)", out)
    graph = ("off" if not graphs else
             f"launch by launch: {refused.group(1)}" if refused else "replayed")
    return {"ms": statistics.median(times[skip:]), "steps": len(times),
            "first_loss": float(lines[0][1]), "graph": graph}


def dist_run_times(build, budget, mlir, state, data, work, steps, graphs=True,
                   limit=240):
    """Median step ms (the first, with the compile and the state's upload,
    left out) of dist-run --device=cuda on STATE and DATA, the first loss,
    and whether the step replayed from a CUDA graph (--step-graphs) or,
    with the reason dist-run gave, ran launch by launch."""
    code, out = run([os.path.join(build, "bin", "dist-run"), mlir,
                     f"--state={state}", f"--data={data}", f"--steps={steps}",
                     "--device=cuda",
                     f"--step-graphs={'true' if graphs else 'false'}",
                     f"--cache-dir={work}/cache"], budget, limit)
    return step_times(code, out, graphs, skip=1)


def run_step_times(bundle, step, budget, python, env, work, steps,
                   graphs=True, limit=240):
    """As dist_run_times, for STEP of a bundle (bench/gpu_bundle.py): its
    inputs written into WORK/inputs once (bench/gpu/make_inputs.py, which
    also writes the peers' .npz files there), then its run_step (--graph:
    captured at the second step, replayed after it)."""
    inputs = os.path.join(work, "inputs")
    if not os.path.isdir(inputs):
        code, out = run([python, os.path.join(HERE, "gpu", "make_inputs.py"),
                         bundle, step, inputs], budget, 120)
        if code != 0:
            return {"error": out.strip()[-1500:]}
    code, out = run([os.path.join(bundle, step, "run_step"), inputs, inputs,
                     str(steps), os.path.join(work, "out")] +
                    (["--graph"] if graphs else []), budget, limit, env=env)
    # (With --graph the second step is the capture's.)
    return step_times(code, out, graphs, skip=2 if graphs else 1)


def dist_run_step(build, budget, mlir, work, steps, graphs=True):
    """dist_run_times from the state and batch dist-run writes to
    WORK/state.npz and WORK/data.npz."""
    state, data = os.path.join(work, "state.npz"), os.path.join(work, "data.npz")
    if not os.path.exists(state):
        code, out = run([os.path.join(build, "bin", "dist-run"), mlir,
                         f"--init-state={state}", f"--init-data={data}",
                         "--seed=1"], budget, 60)
        if code != 0:
            return {"error": out.strip()[-1500:]}
    return dist_run_times(build, budget, mlir, state, data, work, steps, graphs)


def peer_step(python, budget, script, args, limit, env=None):
    """Median step ms (the first five left out: warm-up, torch.compile's
    compilation) and the first loss of a PyTorch peer (bench/peers), which
    prints them as its last line."""
    code, out = run([python, os.path.join(HERE, "peers", script)] + args,
                    budget, limit, env=env)
    try:
        result = json.loads(out.strip().splitlines()[-1])
        return {"ms": statistics.median(result["times"][5:]),
                "first_loss": result["first_loss"]}
    except (IndexError, ValueError, KeyError, statistics.StatisticsError):
        return {"error": out.strip()[-1500:], "returncode": code}


RESNET_BATCH, RESNET_SIZE, RESNET_STEPS = 32, 224, 20
# Forward multiply-adds of one 224 x 224 image (torchvision's figure),
# times 2 for FLOPs and 3 for the forward and backward.
RESNET_FLOPS = 3 * 2 * 1.814e9


def resnet_peers(budget, python, state, batch):
    """bench/peers/torch_resnet.py, eager and compiled, on STATE and BATCH."""
    found = {}
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "peers"))
    for mode in ("eager", "compile"):
        found[f"resnet_torch_{mode}"] = peer_step(
            python, budget, "torch_resnet.py",
            ["resnet18", state, batch, str(RESNET_STEPS), "8", "0.1", "0.9",
             "--device=cuda", f"--mode={mode}"], 240, env=env)
    return found


def check_resnet(build, budget, python, bundle=None, env=None):
    """torchvision's ResNet-18 step (batch RESNET_BATCH, RESNET_SIZE^2,
    cross-entropy, SGD with momentum 0.9), exported by
    `python -m distopt.export_torch` and run by dist-run --device=cuda (or
    a bundle's run_step, on the state torchvision initialises there),
    against PyTorch CUDA eager and torch.compile (bench/peers/
    torch_resnet.py) on the same state and batch."""
    found = {}
    with tempfile.TemporaryDirectory() as work:
        if bundle:
            found["resnet_distopt"] = run_step_times(
                bundle, "resnet", budget, python, env, work, RESNET_STEPS,
                limit=300)
            inputs = os.path.join(work, "inputs")
            found.update(resnet_peers(budget, python,
                                      os.path.join(inputs, "state.npz"),
                                      os.path.join(inputs, "batch.npz")))
        else:
            env = dict(os.environ, PYTHONPATH=os.path.join(
                ROOT, "build", "python_packages"))
            code, out = run([python, "-m", "distopt.export_torch",
                             "torchvision.models:resnet18",
                             f"--input-shape={RESNET_BATCH},3,{RESNET_SIZE},"
                             f"{RESNET_SIZE}", "--optimizer=sgd", "--lr=0.1",
                             "--momentum=0.9", "-o", work], budget, 120,
                            env=env)
            step, state, batch = (os.path.join(work, name) for name in
                                  ("step.mlir", "state.npz", "batch.npz"))
            if code != 0 or not os.path.exists(step):
                return {"resnet_distopt": {"error": out.strip()[-1500:]}}
            found["resnet_distopt"] = dist_run_times(
                build, budget, step, state, batch, work, RESNET_STEPS,
                limit=300)
            found.update(resnet_peers(budget, python, state, batch))
    for part in found.values():
        if "ms" in part:
            part["images_per_s"] = RESNET_BATCH / part["ms"] * 1e3
            part["tflops"] = (RESNET_FLOPS * RESNET_BATCH *
                              (RESNET_SIZE / 224) ** 2 / part["ms"] / 1e9)
    return found


def check_gpu(build, budget, python, bundle=None):
    """The measurements that need a device: DistOpt's steps through
    dist-run from BUILD, or through the run_step programs of BUNDLE."""
    found = {}
    cuda_dirs = cuda_library_dirs(python)
    env = None
    if bundle:
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(
            [os.path.join(bundle, "lib")] + cuda_dirs +
            [os.environ.get("LD_LIBRARY_PATH", "")]))
    found["copy"] = torch_part(python, budget, COPY_RATE, 60)
    params, elements = 4, 1 << 25
    with tempfile.TemporaryDirectory() as work:
        if bundle:
            step = run_step_times(bundle, "adamw", budget, python, env, work,
                                  12, graphs=False)
        else:
            mlir = os.path.join(work, "adamw.mlir")
            subprocess.run([sys.executable,
                            os.path.join(HERE, "gpu", "adamw_step.py"), mlir,
                            "--params", str(params), "--elements",
                            str(elements)], check=True)
            step = dist_run_step(build, budget, mlir, work, 12)
        if "ms" in step:
            moved = 24 * params * elements
            step["bytes"] = moved
            step["gb_per_s"] = moved / step["ms"] / 1e6
            copy = found["copy"].get("gb_per_s")
            if copy:
                step["of_copy_rate"] = step["gb_per_s"] / copy
        found["adamw"] = step
    library = (os.path.join(bundle, "lib", "libdistopt_cuda.so") if bundle
               else os.path.join(build, "lib", "libdistopt_cuda.so"))
    try:
        found["gemm_distopt"] = distopt_gemm(library, cuda_dirs)
    except OSError as error:
        found["gemm_distopt"] = {"error": str(error)}
    found["gemm_torch"] = torch_part(python, budget, TORCH_GEMM, 60)
    block = os.path.join(ROOT, "examples", "transformer_block.mlir")
    with tempfile.TemporaryDirectory() as work:
        if bundle:
            found["block_distopt"] = run_step_times(
                bundle, "block", budget, python, env, work, 30)
            found["block_distopt_launches"] = run_step_times(
                bundle, "block", budget, python, env, work, 30, graphs=False)
            state, data = (os.path.join(work, "inputs", name)
                           for name in ("state.npz", "data.npz"))
        else:
            found["block_distopt"] = dist_run_step(build, budget, block, work,
                                                   30)
            found["block_distopt_launches"] = dist_run_step(
                build, budget, block, work, 30, graphs=False)
            state, data = (os.path.join(work, name)
                           for name in ("state.npz", "data.npz"))
        peers = dict(os.environ, PYTHONPATH=os.path.join(
            ROOT, "test", "Integration", "Inputs"))
        for mode in ("eager", "compile"):
            found[f"block_torch_{mode}"] = peer_step(
                python, budget, "torch_step.py",
                ["transformer_block", state, data, "30", "8", "1", "0",
                 "--device=cuda", f"--mode={mode}"], 180, env=peers)
    found.update(check_resnet(build, budget, python, bundle, env))
    count, _, _ = cuda_devices()
    if count < 2:
        found["nccl"] = {"skipped": f"{count} GPU: no all-reduce across GPUs "
                                    "to measure"}
    else:
        found["nccl"] = torch_part(python, budget, NCCL_BUS, 120)
    return found


def check_fake(build, bundle, budget, python):
    """Without a GPU: each step of BUNDLE run as the lent machine will run
    it (run_step, 3 steps, --graph) on the fake CUDA driver the build has
    (test/lib/FakeCuda, docs/guides/fake-cuda.md), which checks every copy,
    product and capture against CUDA's rules: what would break on the GPU
    breaks here, before any device time is spent. Kernels do not run there,
    so nothing is timed."""
    fake = os.path.join(build, "test", "fake-cuda")
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        return {"summary": f"not run: no fake CUDA driver in {fake}"}
    found = {}
    with tempfile.TemporaryDirectory(prefix="gpu_check_fake_") as work:
        for step in ("adamw", "block", "resnet"):
            program = os.path.join(bundle, step, "run_step")
            if not os.access(program, os.X_OK):
                continue
            inputs, out = (os.path.join(work, step, name)
                           for name in ("inputs", "out"))
            os.makedirs(out)
            code, text = run([python, os.path.join(HERE, "gpu", "make_inputs.py"),
                              bundle, step, inputs], budget, 120)
            if code != 0:
                found[step] = {"error": text.strip()[-800:]}
                continue
            report = os.path.join(work, step, "fake.json")
            env = dict(os.environ, LD_LIBRARY_PATH=fake,
                       DISTOPT_FAKE_CUDA_REPORT=report)
            code, text = run([program, inputs, inputs, "3", out, "--graph"],
                             budget, 120, env=env)
            try:
                with open(report) as f:
                    fake_report = json.load(f)
            except (OSError, ValueError):
                fake_report = None
            if code != 0 or fake_report is None:
                found[step] = {"error": f"run_step exited {code}: "
                               + text.strip()[-800:]}
                continue
            graphs = fake_report["graphs"]
            entry = {"violations": fake_report["violations"][:5],
                     "graph_nodes": graphs[0]["nodes"] if graphs else None,
                     "allocations_after_capture":
                         fake_report["allocations_after_capture"]}
            if entry["violations"] or entry["allocations_after_capture"]:
                entry["error"] = ("; ".join(entry["violations"]) or
                                  "allocations after the last capture")
            found[step] = entry
    failed = sorted(step for step, entry in found.items() if "error" in entry)
    found["summary"] = (f"{len(found) - len(failed)} of {len(found)} steps "
                        "clean" + (f" ({', '.join(failed)} failed)"
                                   if failed else ""))
    return found


def write(path, text):
    """Writes `path` through a temporary beside it, renamed over it; refuses
    a target that exists and is not a regular file."""
    if os.path.lexists(path) and not os.path.isfile(path):
        sys.exit(f"gpu_check: '{path}' exists and is not a regular file: "
                 "not replaced")
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                                     prefix=".gpu_check.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def markdown(result):
    lines = ["| check | DistOpt | peer | figure |", "|---|---|---|---|"]
    block = result["launches"].get("transformer_block", {})
    if "launches" in block:
        lines.append(
            f"| transformer block CUDA step: launches (kernels + cuBLAS) | "
            f"{block['launches']} ({block['kernels']} + "
            f"{block['library_calls']}) | budget {LAUNCH_BUDGET} | "
            f"{block['allocations']} allocations, {block['host_copies']} host "
            f"copies, {block['host_waits']} host waits per step; "
            f"{block['workspace_buffers']} buffers in a workspace of "
            f"{block['workspace_bytes'] / 2**20:.1f} MiB kept across steps |")
    if result.get("bundle"):
        bundle = result["bundle"]
        lines.append(f"| bundle (bench/gpu_bundle.py) | commit "
                     f"{bundle['commit']} | | steps compiled ahead of time: "
                     f"{', '.join(bundle['steps'])}; the launch report is "
                     f"the bundle's |")
    tests = result["tests"]
    lines.append(f"| ctest -L gpu | {tests['summary']} | | "
                 f"{', '.join(tests['failed']) or 'no failed test'} |")
    fake = result.get("fake")
    if fake:
        steps = "; ".join(
            f"{step}: " + (entry["error"][:80] if "error" in entry else
                           f"graph of {entry['graph_nodes']} nodes")
            for step, entry in fake.items() if isinstance(entry, dict))
        lines.append(f"| the bundle on the fake CUDA driver (no GPU) | "
                     f"{fake['summary']} | | {steps or '-'} |")
    gpu = result.get("gpu")
    if not gpu:
        lines.append(f"| GPU measurements | not run: {result['device']} | | |")
        return "\n".join(lines) + "\n"

    def cell(part, key, unit, scale=1.0):
        value = gpu.get(part, {}).get(key)
        return f"{value * scale:.1f} {unit}" if value is not None else \
            gpu.get(part, {}).get("error", gpu.get(part, {}).get("skipped",
                                                              "-"))[:80]

    adamw = gpu.get("adamw", {})
    lines.append(f"| fused AdamW HBM bandwidth | {cell('adamw', 'gb_per_s', 'GB/s')}"
                 f" | D2D copy {cell('copy', 'gb_per_s', 'GB/s')} | "
                 f"{adamw.get('of_copy_rate', 0) * 100:.0f}% of the copy rate |")
    lines.append(f"| FP32 GEMM 4096^3 | {cell('gemm_distopt', 'tflops', 'TFLOP/s')} "
                 f"| cuBLAS via PyTorch {cell('gemm_torch', 'tflops', 'TFLOP/s')} | |")
    lines.append(f"| transformer block step | {cell('block_distopt', 'ms', 'ms')} "
                 f"({gpu.get('block_distopt', {}).get('graph', '-')[:80]}; "
                 f"{cell('block_distopt_launches', 'ms', 'ms')} launch by "
                 f"launch) | eager {cell('block_torch_eager', 'ms', 'ms')}, "
                 f"torch.compile {cell('block_torch_compile', 'ms', 'ms')} | |")
    resnet = gpu.get("resnet_distopt", {})
    lines.append(f"| ResNet-18 step (batch {RESNET_BATCH}, {RESNET_SIZE}^2, "
                 f"SGD momentum) | {cell('resnet_distopt', 'ms', 'ms')} "
                 f"({cell('resnet_distopt', 'images_per_s', 'images/s')}; "
                 f"{resnet.get('graph', '-')[:80]}) | eager "
                 f"{cell('resnet_torch_eager', 'ms', 'ms')}, torch.compile "
                 f"{cell('resnet_torch_compile', 'ms', 'ms')} | first loss "
                 f"{resnet.get('first_loss', '-')} / "
                 f"{gpu.get('resnet_torch_eager', {}).get('first_loss', '-')} "
                 f"(PyTorch) |")
    lines.append(f"| NCCL all-reduce bus bandwidth | | "
                 f"{cell('nccl', 'busbw_gb_per_s', 'GB/s')} | |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "gpu_check_out"))
    parser.add_argument("--budget", type=float, default=240,
                        help="seconds for the whole check (default 240)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--bundle", help="a folder from bench/gpu_bundle.py: "
                        "the steps compiled ahead of time, for a machine with "
                        "no DistOpt build (the lent GPU machine)")
    args = parser.parse_args()
    budget = Budget(args.budget)
    bundle = manifest = None
    if args.bundle:
        bundle = os.path.abspath(args.bundle)
        try:
            with open(os.path.join(bundle, "manifest.json")) as f:
                manifest = json.load(f)
        except (OSError, ValueError) as error:
            sys.exit(f"gpu_check: --bundle {args.bundle}: no readable "
                     f"manifest.json ({error}): make it with "
                     "bench/gpu_bundle.py")
        missing = [f"{step}/run_step" for step in ("adamw", "block", "resnet")
                   if not os.access(os.path.join(bundle, step, "run_step"),
                                    os.X_OK)]
        if missing:
            print(f"gpu_check: the bundle has no {', '.join(missing)}: "
                  "those parts will fail", flush=True)
    elif not os.path.exists(os.path.join(args.build, "bin", "dist-opt")):
        sys.exit(f"gpu_check: no {args.build}/bin/dist-opt: run "
                 "scripts/setup.sh build first (gpu_check builds nothing), "
                 "or give --bundle (bench/gpu_bundle.py) on a machine "
                 "without a build")
    count, names, reason = cuda_devices()
    result = {"device": (f"{count} x {names[0]}" if count else
                         f"no GPU: {reason}")}
    print(f"gpu_check: {result['device']}", flush=True)
    if manifest:
        # (What dist-opt reported where the bundle was made.)
        result["launches"] = manifest["launches"]
        result["bundle"] = {"commit": manifest.get("commit"),
                            "steps": sorted(manifest["steps"])}
    else:
        result["launches"] = check_launches(args.build, budget)
    print(f"gpu_check: launches {json.dumps(result['launches'])}", flush=True)
    if os.path.exists(os.path.join(args.build, "CTestTestfile.cmake")):
        result["tests"] = check_tests(args.build, budget)
    else:
        result["tests"] = {"passed": None, "failed": [],
                           "summary": f"not run: no build in {args.build}"}
    print(f"gpu_check: ctest -L gpu: {result['tests']['summary']}", flush=True)
    if count:
        result["gpu"] = check_gpu(args.build, budget, find_python(), bundle)
    else:
        if bundle:
            result["fake"] = check_fake(args.build, bundle, budget,
                                        find_python())
            print(f"gpu_check: the bundle on the fake CUDA driver: "
                  f"{result['fake']['summary']}", flush=True)
        print("gpu_check: no CUDA device, so no GPU figures: only the checks "
              "above ran", flush=True)
    result["seconds_left"] = round(budget.left(), 1)
    os.makedirs(args.out, exist_ok=True)
    table = markdown(result)
    write(os.path.join(args.out, "gpu_check.json"),
          json.dumps(result, indent=1, sort_keys=True) + "\n")
    write(os.path.join(args.out, "gpu_check.md"), table)
    print(table, end="")
    failed = sorted(part for part, found in result.get("gpu", {}).items()
                    if "error" in found)
    failed += sorted(f"fake {step}" for step, found in
                     result.get("fake", {}).items()
                     if isinstance(found, dict) and "error" in found)
    if failed:
        print(f"gpu_check: failed parts (their errors are in "
              f"gpu_check.json): {', '.join(failed)}", flush=True)
    ok = (result["tests"]["passed"] is not False and not failed and
          "error" not in json.dumps(result["launches"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
