# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of test/Integration/mlp_step_cpu.mlir's step.

Reads the values mlir-runner printed (printMemrefF32, in the order loss,
fc1.weight, fc1.bias, fc2.weight, fc2.bias, fc1 momentum buffer), computes
the same step independently and fails unless every value matches to
relative 1e-5 (absolute 1e-7 near zero).
"""

import os
import re
import sys

import numpy as np

# The state, the batch and the NumPy step are those of Inputs/mlp_npz.py
# (the same numbers as the constants of mlp_step_cpu.mlir).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "Inputs"))
from mlp_npz import STATE, step  # noqa: E402

state, loss = step(STATE)
names = ["loss", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
         "fc1.weight.momentum_buffer"]
expected = [np.array([loss])] + [state[name] for name in names[1:]]

text = open(sys.argv[1]).read()
# Each printMemrefF32 prints a header line then the data.
blocks = re.split(r"Unranked Memref[^\n]*\n", text)[1:]
if len(blocks) != len(expected):
    sys.exit(f"expected {len(expected)} printed tensors, got {len(blocks)}")
failed = False
for name, want, block in zip(names, expected, blocks):
    got = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?",
                                                 block)], np.float64)
    want = want.astype(np.float64).ravel()
    if got.size != want.size or not np.allclose(got, want, rtol=1e-5,
                                                atol=1e-7):
        print(f"{name}: got {got}, want {want}")
        failed = True
    else:
        print(f"{name}: ok ({want.size} values)")
sys.exit(1 if failed else 0)
