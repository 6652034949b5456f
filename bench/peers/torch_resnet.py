# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""A torchvision model's training step in PyTorch, timed
(bench/resnet_time.py, bench/gpu_check.py).

    torch_resnet.py MODEL STATE.npz BATCH.npz STEPS THREADS LR MOMENTUM
                    [--device=cpu|cuda] [--mode=eager|compile]

MODEL is a torchvision.models factory (resnet18). The parameters and the
batch-norm buffers come from STATE.npz (the names `python -m
distopt.export_torch` gives them), the batch from BATCH.npz (x, labels):
forward in train() mode, cross-entropy, backward, SGD with momentum (its
buffers start at zero, as the exported step's do). --device=cuda runs on
the GPU (FP32: TF32 off in products and convolutions, the precision of
DistOpt's; each step ends at the loss's read-back, a device
synchronization), --mode=compile through torch.compile. Prints one JSON
line: the step times in ms and the loss of step 1.
"""

import sys

import numpy as np
import torch
import torchvision

from timing import time_steps


def main(args, device, mode):
    name, state_path, batch_path = args[0:3]
    steps, threads = int(args[3]), int(args[4])
    lr, momentum = float(args[5]), float(args[6])
    torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    state, batch = np.load(state_path), np.load(batch_path)
    model = getattr(torchvision.models, name)()
    tensors = dict(model.named_parameters())
    tensors.update(model.named_buffers())
    with torch.no_grad():
        for key, tensor in tensors.items():
            tensor.copy_(torch.from_numpy(state[key]))
    model.to(device).train()
    net = torch.compile(model) if mode == "compile" else model
    x = torch.from_numpy(batch["x"]).to(device)
    labels = torch.from_numpy(batch["labels"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(x), labels)
        loss.backward()
        optimizer.step()
        return float(loss)  # on CUDA: waits for the step's kernels

    time_steps(step, steps)


if __name__ == "__main__":
    torch.set_num_interop_threads(1)
    options = dict(arg[2:].split("=", 1) for arg in sys.argv[8:]
                   if arg.startswith("--") and "=" in arg)
    if (len(options) != len(sys.argv[8:]) or
            set(options) - {"device", "mode"} or
            options.get("device", "cpu") not in ("cpu", "cuda") or
            options.get("mode", "eager") not in ("eager", "compile")):
        sys.exit(f"torch_resnet.py: unknown options {sys.argv[8:]}")
    main(sys.argv[1:8], options.get("device", "cpu"),
         options.get("mode", "eager"))
