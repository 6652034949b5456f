# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks one PowerSGD step over 2 data-parallel replicas against a NumPy
(float64) computation of PowerSGD from each replica's gradient.

    check_powersgd.py STATE SINGLE HALF0 HALF1 RUN

Every optimizer is SGD with momentum and its buffers start at zero, so
after one step `<param>.momentum_buffer` is the reduced gradient. SINGLE
is the float32 single-device step; HALF0 and HALF1 the single-device step
on each replica's half of the batch repeated twice, so replica r's divided
gradient is g_r = buffer / 2. For each parameter with `<param>.powersgd.q`
in STATE (Q, and the errors E_0, E_1 stacked along dim 0 in
`<param>.powersgd.error`), with M_r = g_r + E_r viewed as n x m:

    P = orth(M_0 Q + M_1 Q)       (modified Gram-Schmidt, norm + 1e-8)
    Q' = M_0^T P + M_1^T P,  G' = P Q'^T,  E'_r = M_r - G' / 2

RUN's buffer must be G', its Q Q' and its error [E'_0; E'_1] within float32
accuracy (relative 1e-4 of the largest element); the other parameters'
buffers and the loss must be the float32 single-device ones; and G' must
differ from the exact gradient (the compression is lossy). Prints "ok:
..." or the failures and exits 1 on a failure.
"""

import sys

import numpy as np

EPSILON = 1e-8


def orthogonalize(p):
    p = p.copy()
    for i in range(p.shape[1]):
        p[:, i] /= np.linalg.norm(p[:, i]) + EPSILON
        for j in range(i + 1, p.shape[1]):
            p[:, j] -= np.dot(p[:, i], p[:, j]) * p[:, i]
    return p


def close(got, want, rtol=1e-4):
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol,
                                                   atol=rtol * scale)


def main():
    state, single, half0, half1, run = (np.load(p) for p in sys.argv[1:6])
    failures, compressed = [], []
    for name in single.files:
        if not name.endswith(".momentum_buffer"):
            continue
        param = name[: -len(".momentum_buffer")]
        halves = [half0[name].astype(np.float64) / 2,
                  half1[name].astype(np.float64) / 2]
        if param + ".powersgd.q" not in state.files:
            if not close(run[name], single[name], 1e-5):
                failures.append(f"'{name}' (all-reduced whole) differs from "
                                "the single-device run")
            continue
        compressed.append(param)
        shape = halves[0].shape
        n = shape[0]
        q = state[param + ".powersgd.q"].astype(np.float64)
        errors = np.split(state[param + ".powersgd.error"].astype(np.float64),
                          2)
        ms = [(g + e).reshape(n, -1) for g, e in zip(halves, errors)]
        p = orthogonalize(sum(m @ q for m in ms))
        new_q = sum(m.T @ p for m in ms)
        approx = p @ new_q.T
        new_errors = np.concatenate([(m - approx / 2).reshape(shape)
                                     for m in ms])
        checks = [(name, approx.reshape(shape)),
                  (param + ".powersgd.q", new_q),
                  (param + ".powersgd.error", new_errors)]
        for key, want in checks:
            if key not in run.files:
                failures.append(f"the run has no '{key}'")
            elif not close(run[key].astype(np.float64), want):
                worst = np.max(np.abs(run[key] - want))
                failures.append(f"'{key}' differs from PowerSGD computed in "
                                f"NumPy (max abs {worst})")
        exact = single[name].astype(np.float64)
        if close(approx.reshape(shape), exact, 1e-3):
            failures.append(f"'{name}': the low-rank gradient equals the "
                            "exact one: nothing was compressed")
    if not compressed:
        failures.append("no parameter has PowerSGD state")
    if not np.allclose(run["loss"], single["loss"], rtol=1e-6, atol=0):
        failures.append(f"loss {run['loss']} differs from the float32 loss "
                        f"{single['loss']}")
    for failure in failures:
        print(failure)
    if not failures:
        print(f"ok: PowerSGD of {', '.join(compressed)} equals NumPy's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
