# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""NumPy loop-nest reference of train_to_linalg_window_execution.mlir.

    window_reference.py STATE.npz DATA.npz OUT.npz [SH,SW [POOL [PAD]]]

Every sink parameter p comes back as p - lr * result: the result recovered
from it must equal the one computed here by direct loops over the
definitions (to 1e-4: the float32 update keeps about 1e-7 * |p| / lr).
SH,SW: the convolutions' strides (default 2,1, the test file's). POOL:
the pooling ops' KH,KW,SH,SW,PT,PB,PL,PR (default 3,2,2,2,1,1,1,0). PAD:
the convolutions' PT,PB,PL,PR (default 1,1,0,2).
"""

import itertools
import sys

import numpy as np

state, data, out = (np.load(path) for path in sys.argv[1:4])
x, w = data["x"].astype(np.float64), data["w"].astype(np.float64)
lr = 0.01
N, C, H, W = x.shape
F, Cg, KH, KW = w.shape
groups, Fg = C // Cg, F // (C // Cg)
(sh, sw) = (tuple(map(int, sys.argv[4].split(","))) if len(sys.argv) > 4
            else (2, 1))
(pt, pb, pl, pr) = (tuple(map(int, sys.argv[6].split(",")))
                    if len(sys.argv) > 6 else (1, 1, 0, 2))
(dh, dw) = (1, 2)
OH = (H + pt + pb - dh * (KH - 1) - 1) // sh + 1
OW = (W + pl + pr - dw * (KW - 1) - 1) // sw + 1


def conv_taps():
    """(n, f, oh, ow, c, ih, iw, kh, kw) of every in-bounds tap."""
    for n, f, oh, ow, c, kh, kw in itertools.product(
            range(N), range(F), range(OH), range(OW), range(Cg), range(KH),
            range(KW)):
        ih, iw = oh * sh + kh * dh - pt, ow * sw + kw * dw - pl
        if 0 <= ih < H and 0 <= iw < W:
            yield n, f, oh, ow, (f // Fg) * Cg + c, c, ih, iw, kh, kw


y = np.zeros((N, F, OH, OW))
for n, f, oh, ow, ci, c, ih, iw, kh, kw in conv_taps():
    y[n, f, oh, ow] += x[n, ci, ih, iw] * w[f, c, kh, kw]
# Both gradients with y as grad_output.
dx, dw_ = np.zeros_like(x), np.zeros_like(w)
for n, f, oh, ow, ci, c, ih, iw, kh, kw in conv_taps():
    dx[n, ci, ih, iw] += y[n, f, oh, ow] * w[f, c, kh, kw]
    dw_[f, c, kh, kw] += y[n, f, oh, ow] * x[n, ci, ih, iw]

# Pooling: kernel (3, 2), strides (2, 2), padding (1, 1, 1, 0) unless given.
pool = (tuple(map(int, sys.argv[5].split(","))) if len(sys.argv) > 5
        else (3, 2, 2, 2, 1, 1, 1, 0))
(KH, KW), (sh, sw), (pt, pb, pl, pr) = pool[:2], pool[2:4], pool[4:]
OH, OW = (H + pt + pb - KH) // sh + 1, (W + pl + pr - KW) // sw + 1
mx, av = np.zeros((N, C, OH, OW)), np.zeros((N, C, OH, OW))
mdx, adx = np.zeros_like(x), np.zeros_like(x)
for n, c, oh, ow in itertools.product(range(N), range(C), range(OH),
                                      range(OW)):
    taps = [(oh * sh + kh - pt, ow * sw + kw - pl)
            for kh in range(KH) for kw in range(KW)]
    taps = [(i, j) for i, j in taps if 0 <= i < H and 0 <= j < W]
    values = [x[n, c, i, j] for i, j in taps]
    best = taps[int(np.argmax(values))]  # the first maximum
    mx[n, c, oh, ow] = max(values)
    av[n, c, oh, ow] = sum(values) / len(taps)  # count_include_pad = false
    mdx[n, c][best] += mx[n, c, oh, ow]
    for i, j in taps:
        adx[n, c, i, j] += av[n, c, oh, ow] / len(taps)

failed = False
for name, value in [("conv", y), ("conv_dx", dx), ("conv_dw", dw_),
                    ("max", mx), ("max_dx", mdx), ("avg", av),
                    ("avg_dx", adx)]:
    got = (state[name].astype(np.float64) - out[name]) / lr
    if not np.allclose(got, value, rtol=1e-4, atol=1e-4):
        print(f"'{name}' differs from NumPy (max abs "
              f"{np.abs(got - value).max()})")
        failed = True
print("FAILED" if failed else "ok: every result equals NumPy")
sys.exit(1 if failed else 0)
