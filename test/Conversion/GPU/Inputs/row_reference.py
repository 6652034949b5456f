# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of row_reductions_execution.mlir's step.

    row_reference.py STATE.npz DATA.npz OUT.npz [OUT.npz ...]

Recomputes the updated `a`, `b`, `c`, `u`, `s`, `d` (sgd by row sums,
maxima, minima, a plain gradient, a softmax and float64 row sums) and the
loss in float64 from the initial state and data, and compares each run in
OUT.npz with them (rtol 1e-5).
"""

import sys

import numpy as np
from reference_check import check

state, data = np.load(sys.argv[1]), np.load(sys.argv[2])
arrays = {**{k: state[k] for k in state.files}, **{k: data[k] for k in data.files}}
x, y, z, g, t, e = (arrays[name].astype(np.float64) for name in "xyzgte")
lr, lr64 = float(arrays["lr"]), float(arrays["lr64"])
rows = x.sum(axis=1)
soft = np.exp(t - t.max(axis=1, keepdims=True))
soft /= soft.sum(axis=1, keepdims=True)
expected = {
    "a": arrays["a"] - lr * rows,
    "b": arrays["b"] - lr * y.max(axis=1),
    "c": arrays["c"] - lr * z.min(axis=1),
    "u": arrays["u"] - lr * g,
    "s": arrays["s"] - lr * soft,
    "d": arrays["d"] - lr64 * e.sum(axis=1),
    "loss": rows.sum(),
}
check(expected, sys.argv[3:])
