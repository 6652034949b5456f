# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""A torchvision model's training step in PyTorch eager, timed
(bench/resnet_time.py).

    torch_resnet.py MODEL STATE.npz BATCH.npz STEPS THREADS LR MOMENTUM

MODEL is a torchvision.models factory (resnet18). The parameters and the
batch-norm buffers come from STATE.npz (the names `python -m
distopt.export_torch` gives them), the batch from BATCH.npz (x, labels):
forward in train() mode, cross-entropy, backward, SGD with momentum (its
buffers start at zero, as the exported step's do). Prints one JSON line:
the step times in ms and the loss of step 1.
"""

import sys

import numpy as np
import torch
import torchvision

from timing import time_steps


def main():
    name, state_path, batch_path = sys.argv[1:4]
    steps, threads = int(sys.argv[4]), int(sys.argv[5])
    lr, momentum = float(sys.argv[6]), float(sys.argv[7])
    torch.set_num_threads(threads)
    state, batch = np.load(state_path), np.load(batch_path)
    model = getattr(torchvision.models, name)()
    tensors = dict(model.named_parameters())
    tensors.update(model.named_buffers())
    with torch.no_grad():
        for key, tensor in tensors.items():
            tensor.copy_(torch.from_numpy(state[key]))
    model.train()
    x = torch.from_numpy(batch["x"])
    labels = torch.from_numpy(batch["labels"])
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        return float(loss)

    time_steps(step, steps)


if __name__ == "__main__":
    torch.set_num_interop_threads(1)
    main()
