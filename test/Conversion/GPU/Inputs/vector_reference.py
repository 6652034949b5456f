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

import os
import sys

import numpy as np

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
        print(f"{run}: w, u, r and the loss equal NumPy")
sys.exit(1 if failed else 0)
