# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy reference of train_to_linalg_execution.mlir's step.

    execution_reference.py STATE.npz DATA.npz OUT.npz

Recomputes the updated `w` (sgd with a dropout mask drawn by Philox4x32-10),
`emb` (scatter_add) and the loss from the initial state and data, and
compares them with what dist-run wrote to OUT.npz (rtol 1e-5).
"""

import sys

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox4x32_10(counter, key):
    c, k = list(counter), list(key)
    for round in range(10):
        if round:
            k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 32) ^ c[3] ^ k[1],
             p0 & MASK]
    return c


# The Random123 known-answer test of philox4x32-10 (zero counter and key).
assert philox4x32_10([0] * 4, [0, 0]) == [
    0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]

state, data, out = (np.load(path) for path in sys.argv[1:4])
w, emb = state["w"].astype(np.float64), state["emb"].astype(np.float64)
x = data["x"].astype(np.float64)
lr, rate, seed = 0.01, 0.25, 1234567890123

keep = np.array([
    philox4x32_10([i & MASK, i >> 32, 0, 0], [seed & MASK, seed >> 32])[0]
    >= rate * 2**32 for i in range(x.size)]).reshape(x.shape)
expected = {"w": w - lr * np.where(keep, x / (1 - rate), 0)}

ids = np.array([3, 0, 3, 9, 7])
new_emb = emb.copy()
np.add.at(new_emb, ids, x[1:6, 2:10:2])
expected["emb"] = new_emb

cat = np.concatenate([emb[ids], x[0:4, 0:5].T], axis=1)
padded = np.pad(cat, ((1, 0), (0, 2)), constant_values=0.5)
shifted = padded - padded.max(1, keepdims=True)
log_softmax = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
iota = np.arange(6, dtype=np.float64)[:, None]
loss = (log_softmax * iota).sum() + 3 * ids.sum()

# batch_norm of x (channels: its 10 columns) and its backward op, in the
# textbook form (autograd-free): dx from the chain rule through mean and var.
gamma, beta = np.arange(1, 11) * 0.5, 0.25
mean, var = x.mean(0), x.var(0)
rstd = 1 / np.sqrt(var + 1e-5)
xhat = (x - mean) * rstd
y = xhat * gamma + beta
g = x
dxhat = g * gamma
dvar = (dxhat * (x - mean) * -0.5 * rstd**3).sum(0)
dmean = (-dxhat * rstd).sum(0) + dvar * (-2 * (x - mean)).mean(0)
dx = dxhat * rstd + dvar * 2 * (x - mean) / x.shape[0] + dmean / x.shape[0]
dgamma, dbeta = (g * xhat).sum(0), g.sum(0)
loss += (y * x).sum() + (x * dx).sum() + (dgamma * gamma).sum() + dbeta.sum()

failed = False
for name, value in expected.items():
    if not np.allclose(out[name], value, rtol=1e-5, atol=1e-6):
        print(f"'{name}' differs from NumPy (max abs "
              f"{np.abs(out[name] - value).max()})")
        failed = True
loss_name = [name for name in out.files if "loss" in name][0]
got = float(np.ravel(out[loss_name])[0])
if not np.isclose(got, loss, rtol=1e-5):
    print(f"loss {got} differs from NumPy {loss}")
    failed = True
print(f"kept {keep.sum()} of {keep.size}; "
      + ("FAILED" if failed else "ok: the step equals NumPy"))
sys.exit(1 if failed else 0)
