# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of threads_execution.mlir: the products and loops of
one step on 1, 2 and 3 threads equal NumPy (float64) and each other.

    threads_reference.py STATE.npz DATA.npz OUT1.npz OUT2.npz OUT3.npz
"""

import sys

import numpy as np

state, data = np.load(sys.argv[1]), np.load(sys.argv[2])
outs = [np.load(p) for p in sys.argv[3:]]
d = {k: data[k].astype(np.float64) for k in data.files}
s = d["s"]
e = np.exp(s - s.max(axis=1, keepdims=True))
want = {
    "p_batched": d["a"] @ d["b"],
    "p_shared": d["x3"] @ d["w"].T,
    "p_rows": d["x"] @ d["w"].T,
    "p_cols": (d["x"] @ d["w"].T) @ d["w2"],
    "p_tlhs": d["u"].T @ ((d["x"] @ d["w"].T) @ d["w2"]),
    "p_trhs": d["v"] @ d["w3"].T,
    "p_tbatched": np.transpose(d["at"], (0, 2, 1)) @ np.transpose(d["bt"], (0, 2, 1)),
    "p_softmax": e / e.sum(axis=1, keepdims=True),
    "p_rowsum": s.sum(axis=1),
    "p_colsum": s.sum(axis=0),
    "p_transpose": s.T,
    "p_gelu": 0.5 * s * (1.0 + np.tanh(0.79788456 * (s + 0.044715 * s**3))),
    "loss": np.array([s.sum()]),
}

failed = False
for threads, out in enumerate(outs, start=1):
    for name, value in want.items():
        got = out[name]
        if got.shape != value.shape:
            print(f"{threads} thread(s): '{name}' has shape {got.shape}, "
                  f"not {value.shape}")
            failed = True
        elif np.max(np.abs(got - value)) > 1e-5 * max(np.max(np.abs(value)), 1):
            # fp32 sums of up to 250 terms, relative to the largest value.
            print(f"{threads} thread(s): '{name}' differs from NumPy: max "
                  f"abs {np.max(np.abs(got - value))} (largest "
                  f"{np.max(np.abs(value))})")
            failed = True
    # The split changes no result beyond rounding, relative to the largest
    # value (bitwise equal on an Intel machine; OpenBLAS's kernels for AMD
    # EPYC split the products' sums by thread: 2.5e-7 of the largest).
    for name in want:
        scale = max(np.max(np.abs(outs[0][name])), 1)
        if np.max(np.abs(out[name] - outs[0][name])) > 1e-6 * scale:
            print(f"{threads} thread(s): '{name}' differs from 1 thread: "
                  f"max abs {np.max(np.abs(out[name] - outs[0][name]))}")
            failed = True
sys.exit(1 if failed else 0)
