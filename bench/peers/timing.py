# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The timing loop of the single-process PyTorch peers (torch_conv.py,
torch_resnet.py): runs `step` (which returns the step's loss as a float)
`steps` times and prints one JSON line, the step times in ms and the loss
of step 1, which bench/step_time.py's peer_times reads."""

import json
import time


def time_steps(step, steps):
    times, first = [], None
    for _ in range(steps):
        start = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - start) * 1e3)
        if first is None:
            first = loss
    print(json.dumps({"times": times, "first_loss": first}))
