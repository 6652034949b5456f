# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of degenerate_maps_execution.mlir (one step).

    degenerate_maps_reference.py STATE.npz DATA.npz OUT.npz
"""

import sys

import numpy as np

state, data, out = (np.load(p) for p in sys.argv[1:4])
g, emb, lr = (state[k].astype(np.float64) for k in ("g", "emb", "lr"))
x = data["x"].astype(np.float64)

# layer_norm over every dim (epsilon 1e-5), bias zero.
mean = x.mean()
rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean() + 1e-5)
xhat = (x - mean) * rstd
h = xhat * g
logits = h[1] + emb[3]
ls = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
loss = -ls[2]
p = np.exp(ls)
dlogits = p - np.eye(6)[2]
dh = np.zeros_like(x)
dh[1] = dlogits
# layer_norm backward over every dim.
dg = dh * xhat
gy = dh * g
dx = rstd * (gy - gy.mean() - xhat * (gy * xhat).mean())
g_new = g - lr * dg
demb = np.zeros_like(emb)
demb[3] = dx[0]
emb_new = emb - lr * demb

failed = False
for name, want in (("g", g_new), ("emb", emb_new), ("loss", np.array([loss]))):
    got = out[name]
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        print(f"'{name}' differs from NumPy: max abs {np.max(np.abs(got - want))}")
        failed = True
print("FAILED" if failed else "ok: equals NumPy")
sys.exit(1 if failed else 0)
