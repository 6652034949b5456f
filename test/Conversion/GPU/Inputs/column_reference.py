# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of column_reductions_execution.mlir's step.

    column_reference.py STATE.npz DATA.npz OUT.npz [OUT.npz ...]

Recomputes the updated `w`, `b`, `v` (sgd by a column sum, a maximum over
the middle loop, a sum of squares) and the loss in float64 from the initial
state and data, and compares each run in OUT.npz with them (rtol 1e-5).
"""

import sys

import numpy as np
from reference_check import check

state, data = np.load(sys.argv[1]), np.load(sys.argv[2])
x, y, z = (data[name].astype(np.float64) for name in ("x", "y", "z"))
lr = float(data["lr"]) if "lr" in data else float(state["lr"])
sq = (z * z).sum(axis=(0, 1))
expected = {
    "w": state["w"] - lr * x.sum(axis=0),
    "b": state["b"] - lr * y.max(axis=1),
    "v": state["v"] - lr * sq,
    "loss": sq.sum(),
}
check(expected, sys.argv[3:])
