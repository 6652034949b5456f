# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of vector_access_execution.mlir's step.

    vector_reference.py STATE.npz DATA.npz OUT.npz [OUT.npz ...]

Recomputes the updated `w`, `u`, `r` (sgd by the squares of two column
slices of `x`, and by `z`) and the loss (the sum of the slices' product)
in float64 from the initial state and data, and compares each run in
OUT.npz with them (rtol 1e-5).
"""

import sys

import numpy as np
from reference_check import check

state, data = np.load(sys.argv[1]), np.load(sys.argv[2])
x, z = (data[name].astype(np.float64) for name in ("x", "z"))
lr = float(data["lr"]) if "lr" in data else float(state["lr"])
a, b = x[:, 4:68], x[:, 1:65]
expected = {
    "w": state["w"] - lr * a * a,
    "u": state["u"] - lr * b * b,
    "r": state["r"] - lr * z,
    "loss": (a * b).sum(),
}
check(expected, sys.argv[3:])
