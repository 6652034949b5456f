# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""One convolution layer's step in PyTorch eager, timed (bench/conv_time.py).

    torch_conv.py STATE.npz DATA.npz STEPS STRIDE PAD GROUPS THREADS

y = conv2d(x, w), y.backward(g) (both gradients), loss = sum(y * g) +
sum(dx), SGD on the filter: the step conv_time.py writes in the train
dialect. Prints one JSON line: the step times in ms and the loss of step 1.
"""

import sys

import numpy as np
import torch

from timing import time_steps


def main():
    state_path, data_path = sys.argv[1:3]
    steps, stride, pad, groups, threads = map(int, sys.argv[3:8])
    torch.set_num_threads(threads)
    state, data = np.load(state_path), np.load(data_path)
    w = torch.tensor(state["w"], requires_grad=True)
    x = torch.tensor(data["x"], requires_grad=True)
    g = torch.tensor(data["g"])
    lr = float(state["lr"])

    def step():
        w.grad = x.grad = None
        y = torch.nn.functional.conv2d(x, w, stride=stride, padding=pad,
                                       groups=groups)
        y.backward(g)
        loss = float((y * g).sum() + x.grad.sum())
        with torch.no_grad():
            w.sub_(lr * w.grad)
        return loss

    time_steps(step, steps)


if __name__ == "__main__":
    torch.set_num_interop_threads(1)
    main()
