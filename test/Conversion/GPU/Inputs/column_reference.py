# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of column_reductions_execution.mlir's step.

    column_reference.py STATE.npz DATA.npz OUT.npz [OUT.npz ...]

Recomputes the updated `w`, `b`, `v` (sgd by a column sum, a maximum over
the middle loop, a sum of squares) and the loss in float64 from the initial
state and data, and compares each run in OUT.npz with them (rtol 1e-5).
"""

import os
import sys

import numpy as np

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
failed = False
for path in sys.argv[3:]:
    out = np.load(path)
    run = os.path.splitext(os.path.basename(path))[0]
    differs = False
    for name, want in expected.items():
        got = out[name].astype(np.float64)
        if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            print(f"{run}: {name} differs from NumPy by "
                  f"{np.abs(got - want).max():.3g}")
            differs = True
    failed |= differs
    if not differs:
        print(f"{run}: w, b, v and the loss equal NumPy")
sys.exit(1 if failed else 0)
