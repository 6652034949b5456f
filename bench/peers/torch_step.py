# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""One example's training step in PyTorch eager, timed (bench/step_time.py).

    torch_step.py MODEL STATE.npz DATA.npz STEPS THREADS WORLD PORT
                  [--device=cpu|cuda] [--mode=eager|compile]

The model and optimizer are the integration tests' reference
(test/Integration/Inputs/torch_reference.py, on PYTHONPATH). THREADS sets
PyTorch's intra-op pool (its OpenMP threads and its BLAS's) and one
inter-op thread; step_time.py also sets OMP_NUM_THREADS, MKL_NUM_THREADS
and OPENBLAS_NUM_THREADS to it (PyTorch 2.15's MKL runs on its OpenMP
team, so no thread spins on a core another one needs). WORLD=2 runs DistributedDataParallel
over gloo (one process per rank, spawned here). TORCH_FLUSH_DENORMAL=1
flushes subnormals as dist-run does. Rank 0 prints one JSON line: the step
times in ms (the whole step: zero_grad, forward, backward, optimizer) and
the first loss (averaged over the ranks). --device=cuda runs on the GPU
(FP32, TF32 off: the precision of DistOpt's products; each step's time
ends at a device synchronization), --mode=compile through torch.compile
(bench/gpu_check.py's peers).
"""

import json
import os
import sys
import time

import numpy as np
import torch
from torch_reference import Step, inputs, make_optimizer


def main(rank, model, state_path, data_path, steps, threads, world, port,
         device="cpu", mode="eager"):
    torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_flush_denormal(os.environ.get("TORCH_FLUSH_DENORMAL") == "1")
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        torch.distributed.init_process_group("gloo", rank=rank,
                                             world_size=world)
    state, data = np.load(state_path), np.load(data_path)
    step = Step(model, state).to(device)
    net = (torch.nn.parallel.DistributedDataParallel(step) if world > 1
           else step)
    if mode == "compile":
        net = torch.compile(net)
    x, y = (t.to(device) for t in inputs(model, data))
    batch = x.shape[0] // world
    x, y = (x[rank * batch:(rank + 1) * batch],
            y[rank * batch:(rank + 1) * batch])
    opt = make_optimizer(model, step, float(state["lr"]))
    times, first = [], None
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        loss = net(x, y)
        loss.backward()  # DDP: gradients averaged by bucketed all-reduces
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        if first is None:
            first = float(loss)
            if world > 1:
                total = torch.tensor([first])
                torch.distributed.all_reduce(total)
                first = float(total) / world
    if rank == 0:
        print(json.dumps({"times": times, "first_loss": first}))
    if world > 1:
        # Both ranks done before the group goes: a rank tearing gloo down
        # while the other still used it aborted ("terminate called without
        # an active exception") once in a bench run.
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    model, state, data = sys.argv[1:4]
    steps, threads, world, port = map(int, sys.argv[4:8])
    options = dict(arg[2:].split("=", 1) for arg in sys.argv[8:])
    unknown = set(options) - {"device", "mode"}
    if unknown or options.get("mode", "eager") not in ("eager", "compile"):
        sys.exit(f"torch_step.py: unknown options {sys.argv[8:]}")
    # The inter-op pool must be sized before any parallel work starts.
    torch.set_num_interop_threads(1)
    args = (model, state, data, steps, threads, world, port,
            options.get("device", "cpu"), options.get("mode", "eager"))
    if world == 1:
        main(0, *args)
    else:
        torch.multiprocessing.spawn(main, args=args, nprocs=world)
